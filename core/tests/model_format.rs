//! The `.mq` reader against damaged and hostile files: every failure is a typed error, never a
//! panic (bad-input table rows of docs/ROBUSTNESS.md).
#![cfg(feature = "alloc")]

use microquant::Error;
use microquant::model::{AlignedBytes, ElementType, Model, ModelBuilder, OpKind, OpSpec, TensorSpec};

/// A small but complete model: input -> FULLY_CONNECTED (const weights, bias, per-channel) -> output.
fn small_model() -> Vec<u8> {
    let mut b = ModelBuilder::new();
    let x = b.add_tensor(TensorSpec::activation("input", ElementType::I8, &[1, 4]).per_tensor(0.25, -1));
    let w = b.add_tensor(
        TensorSpec::const_i8("weights", &[3, 4], &[1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12]).per_channel(
            vec![0.01, 0.02, 0.03],
            vec![0, 0, 0],
            0,
        ),
    );
    let bias = b.add_tensor(TensorSpec::const_i32("bias", &[3], &[100, -200, 300]));
    let y = b.add_tensor(TensorSpec::activation("output", ElementType::I8, &[1, 3]).per_tensor(0.5, 3));
    b.add_op(OpSpec {
        kind: OpKind::FullyConnected,
        name: "fc".into(),
        inputs: vec![Some(x), Some(w), Some(bias)],
        outputs: vec![y],
        params: vec![1, 2, 3],
        in_place: false,
        scratch_len: 0,
    });
    b.set_io(&[x], &[y]);
    b.set_arena_offsets(&[(x, 0), (y, 16)], 32);
    b.add_meta("producer", "microquant tests");
    b.finish().unwrap()
}

#[test]
fn round_trip() {
    let bytes = AlignedBytes::new(&small_model());
    let m = Model::parse(&bytes).unwrap();
    assert_eq!(m.num_tensors(), 4);
    assert_eq!(m.num_ops(), 1);
    assert_eq!(m.arena_len(), 32);
    assert_eq!(m.meta_value("producer"), Some("microquant tests"));
    let w = m.tensor(1).unwrap();
    assert_eq!(w.dims(), &[3, 4]);
    assert_eq!(w.const_data::<i8>().unwrap()[3], -4);
    let b = m.tensor(2).unwrap();
    assert_eq!(b.const_data::<i32>().unwrap(), &[100, -200, 300]);
    let op = m.op(0).unwrap();
    assert_eq!(op.kind, OpKind::FullyConnected);
    assert_eq!(bytemuck_words(op.params()), vec![1, 2, 3]);
    assert_eq!(m.op_macs(0).unwrap(), 12);
    assert_eq!(m.input_index(0).unwrap(), 0);
    assert_eq!(m.output_index(0).unwrap(), 3);
}

fn bytemuck_words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn every_truncation_is_an_error() {
    let full = small_model();
    for len in 0..full.len() {
        let bytes = AlignedBytes::new(&full[..len]);
        match Model::parse(&bytes) {
            Err(Error::Truncated { .. }) => {}
            other => panic!("length {len}: expected Truncated, got {other:?}"),
        }
    }
}

#[test]
fn every_single_bit_flip_is_caught() {
    let full = small_model();
    let mut caught = 0;
    for byte in 0..full.len() {
        for bit in 0..8 {
            let mut bad = full.clone();
            bad[byte] ^= 1 << bit;
            let bytes = AlignedBytes::new(&bad);
            match Model::parse(&bytes) {
                Err(_) => caught += 1,
                Ok(_) => panic!("flip of bit {bit} in byte {byte} was not detected"),
            }
        }
    }
    assert_eq!(caught, full.len() * 8);
}

#[test]
fn wrong_magic_and_newer_version() {
    let mut bad = small_model();
    bad[0] = b'X';
    assert_eq!(Model::parse(&AlignedBytes::new(&bad)).err(), Some(Error::BadMagic));
    let mut newer = small_model();
    newer[4..6].copy_from_slice(&2u16.to_le_bytes());
    let newer = AlignedBytes::new(&newer);
    let e = Model::parse(&newer).err().unwrap();
    assert_eq!(e, Error::UnsupportedVersion { found: 2, supported: 1 });
    assert_eq!(e.to_string(), "unsupported .mq format version 2 (this reader supports version 1)");
}

/// Recomputes the CRC after an edit, to reach the checks behind it.
fn fix_crc(b: &mut [u8]) {
    let c = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    let mut d = c.digest();
    d.update(&b[..16]);
    d.update(&[0; 4]);
    d.update(&b[20..]);
    let crc = d.finalize();
    b[16..20].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn offsets_outside_the_file_are_errors_even_with_a_valid_crc() {
    let full = small_model();
    // Tensor table offset far away.
    let mut bad = full.clone();
    bad[28..32].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    fix_crc(&mut bad);
    assert!(matches!(Model::parse(&AlignedBytes::new(&bad)), Err(Error::OutOfBounds { .. })));
    // A dimension that makes the element count overflow.
    let mut bad = full.clone();
    let t0 = 64; // first tensor record
    bad[t0 + 4..t0 + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    bad[t0 + 8..t0 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    bad[t0 + 1] = 6;
    for k in 2..6 {
        bad[t0 + 4 + 4 * k..t0 + 8 + 4 * k].copy_from_slice(&u32::MAX.to_le_bytes());
    }
    fix_crc(&mut bad);
    assert!(matches!(Model::parse(&AlignedBytes::new(&bad)), Err(Error::BadTensor { index: 0, .. })));
    // An unknown op kind.
    let mut bad = full.clone();
    let ops_off = u32::from_le_bytes(bad[36..40].try_into().unwrap()) as usize;
    bad[ops_off..ops_off + 2].copy_from_slice(&999u16.to_le_bytes());
    fix_crc(&mut bad);
    assert_eq!(Model::parse(&AlignedBytes::new(&bad)).err(), Some(Error::UnsupportedOp { index: 0, code: 999 }));
}

#[test]
fn misaligned_buffer_is_an_error() {
    let full = small_model();
    let mut shifted = vec![0u8; full.len() + 1];
    shifted[1..].copy_from_slice(&full);
    let holder = AlignedBytes::new(&shifted);
    assert!(matches!(Model::parse(&holder[1..]), Err(Error::Misaligned { .. })));
}

/// A stripped model: no names, no metadata, no per-channel scales, the stripped flag and format
/// 1.1; everything the interpreter reads unchanged; stripping it again changes nothing.
#[test]
fn strip_keeps_what_the_device_reads() {
    use microquant::model::{Quant, Storage, strip};
    let full_bytes = small_model();
    let lean_bytes = strip(&full_bytes).unwrap();
    assert!(lean_bytes.len() < full_bytes.len());
    let (full, lean) = (AlignedBytes::new(&full_bytes), AlignedBytes::new(&lean_bytes));
    let (f, l) = (Model::parse(&full).unwrap(), Model::parse(&lean).unwrap());
    assert!(!f.is_stripped() && l.is_stripped());
    assert_eq!((f.format_version(), l.format_version()), ((1, 0), (1, 1)));
    assert_eq!((l.num_meta(), l.meta_value("producer")), (0, None));
    assert_eq!((f.num_tensors(), f.num_ops(), f.arena_len()), (l.num_tensors(), l.num_ops(), l.arena_len()));
    assert_eq!(f.single_rounding(), l.single_rounding());
    for i in 0..f.num_tensors() as u32 {
        let (a, b) = (f.tensor(i).unwrap(), l.tensor(i).unwrap());
        assert_eq!(b.name(), "");
        assert_eq!((a.dtype, a.dims(), a.byte_len, a.const_bytes()), (b.dtype, b.dims(), b.byte_len, b.const_bytes()));
        match (a.quant, b.quant) {
            (Quant::PerChannel { scales, axis, .. }, Quant::PerChannelStripped { channels, axis: ax }) => {
                assert_eq!((scales.len(), axis), (channels as usize, ax));
            }
            (x, y) => assert_eq!(x, y),
        }
        if let (Storage::Arena(x), Storage::Arena(y)) = (a.storage, b.storage) {
            assert_eq!(x, y);
        }
    }
    for i in 0..f.num_ops() as u32 {
        let (a, b) = (f.op(i).unwrap(), l.op(i).unwrap());
        assert_eq!(b.name(), "");
        assert_eq!(
            (a.kind, a.flags, a.params(), a.scratch_offset, a.scratch_len),
            (b.kind, b.flags, b.params(), b.scratch_offset, b.scratch_len)
        );
        let ins = |o: &microquant::model::OpInfo| (0..o.num_inputs()).map(|k| o.input(k).unwrap()).collect::<Vec<_>>();
        assert_eq!(ins(&a), ins(&b));
    }
    assert_eq!((f.input_index(0), f.output_index(0)), (l.input_index(0), l.output_index(0)));
    assert_eq!(strip(&lean_bytes).unwrap(), lean_bytes, "stripping is idempotent");
}

/// Damage to a stripped file is found as in a full one, with typed errors.
#[test]
fn damaged_stripped_files_are_typed_errors() {
    let lean = microquant::model::strip(&small_model()).unwrap();
    for n in 0..lean.len() {
        assert!(Model::parse(&AlignedBytes::new(&lean[..n])).is_err(), "truncated to {n}");
    }
    for i in 0..lean.len() {
        let mut bad = lean.clone();
        bad[i] ^= 0x10;
        let e = Model::parse(&AlignedBytes::new(&bad)).err();
        assert!(e.is_some(), "bit flip at {i} not caught");
    }
    // An unknown quantization kind behind a valid CRC.
    let mut bad = lean.clone();
    bad[64 + 56 + 3] = 9; // tensor 1's quantization kind
    fix_crc(&mut bad);
    assert_eq!(
        Model::parse(&AlignedBytes::new(&bad)).err(),
        Some(Error::BadTensor { index: 1, reason: "unknown quantization kind" })
    );
    // A stripped per-channel count that does not match its axis.
    let mut bad = lean.clone();
    bad[64 + 56 + 44] = 4;
    fix_crc(&mut bad);
    assert!(matches!(Model::parse(&AlignedBytes::new(&bad)), Err(Error::BadTensor { index: 1, .. })));
}

/// The prevalidated path (an embedded model validated at build time): the CRC still checked
/// against the stored one and against the one validated; a damaged byte is refused.
#[test]
fn prevalidated_checks_the_crc() {
    let lean = microquant::model::strip(&small_model()).unwrap();
    let bytes = AlignedBytes::new(&lean);
    let crc = Model::parse(&bytes).unwrap().crc();
    assert_eq!(crc, microquant::model::crc32(&[&lean[..16], &[0; 4], &lean[20..]].concat()));
    let m = Model::parse_prevalidated(&bytes, crc).unwrap();
    assert_eq!((m.num_inputs(), m.num_outputs(), m.num_tensors()), (1, 1, 4));
    assert_eq!(
        Model::parse_prevalidated(&bytes, crc ^ 1).err(),
        Some(Error::CrcMismatch { stored: crc ^ 1, computed: crc })
    );
    let mut bad = lean.clone();
    bad[lean.len() - 5] ^= 1;
    assert!(matches!(Model::parse_prevalidated(&AlignedBytes::new(&bad), crc), Err(Error::CrcMismatch { .. })));
    assert!(matches!(Model::parse_prevalidated(&bytes[..lean.len() - 4], crc), Err(Error::Truncated { .. })));
}
