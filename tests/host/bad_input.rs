//! The bad-input table of `docs/ROBUSTNESS.md`, one test (or more) per row: every input that
//! reaches microquant from a user (a `.mq` model, an ONNX or TFLite model, calibration data, run
//! inputs, an `.npy` file) is answered with the exact typed error the table lists, never a
//! panic, a hang, an out-of-memory or garbage.
//!
//! Hostile ONNX and TFLite files are built here byte by byte (a minimal protobuf writer and a
//! minimal flatbuffer writer), so each row's file is exactly the damage it names and nothing
//! else; no generator, no committed binaries.

use microquant::Error;
use microquant::compile::{CompileOptions, compile};
use microquant::graph::{ConvertError, ConvertErrorKind as Kind};
use microquant::interp::Interpreter;
use microquant::model::{AlignedBytes, Model};

fn repo(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

// ---------------------------------------------------------------------------------------------
// .mq models
// ---------------------------------------------------------------------------------------------

/// A small real model: `tests/golden/models/tiny_m0_int8.tflite` (a TFLite Micro oracle model)
/// compiled to `.mq` (6.6 KB: conv, depthwise, pooling, fully connected, softmax).
fn small_mq() -> Vec<u8> {
    let tflite = std::fs::read(repo("tests/golden/models/tiny_m0_int8.tflite")).unwrap();
    compile(&microquant::tflite::import(&tflite).unwrap(), &CompileOptions::default()).unwrap().bytes
}

fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Recomputes the CRC-32 field (bytes 16..20: CRC of the file with that field read as zeros),
/// so that a test reaches the check after the CRC.
fn reseal(b: &mut [u8]) {
    put32(b, 16, 0);
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(b);
    put32(b, 16, crc);
}

fn parse(b: &[u8]) -> Result<(), Error> {
    Model::parse(&AlignedBytes::new(b)).map(|_| ())
}

#[test]
fn mq_truncated_at_every_length_is_truncated() {
    let full = small_mq();
    let n = full.len() as u64;
    for len in 0..full.len() {
        let e = parse(&full[..len]).unwrap_err();
        let needed = if len < 64 { 64 } else { n };
        assert_eq!(e, Error::Truncated { needed, actual: len as u64 }, "truncated to {len} bytes");
    }
    assert_eq!(parse(&full), Ok(()));
}

#[test]
fn mq_every_single_bit_flip_is_caught() {
    let full = small_mq();
    let stored = le32(&full, 16);
    let mut b = full.clone();
    let mut counts = [0usize; 5];
    for byte in 0..full.len() {
        for bit in 0..8 {
            b[byte] ^= 1 << bit;
            let e = parse(&b).unwrap_err();
            // Fields checked before the CRC answer with their own error; every other bit is
            // caught by the CRC (CRC-32 detects every single-bit error).
            let ok = match byte {
                0..4 => e == Error::BadMagic,
                4..6 => matches!(e, Error::UnsupportedVersion { supported: 1, .. }),
                8..12 => e == Error::BadHeader { reason: "header length is not 64" },
                12..16 => matches!(e, Error::Truncated { actual, .. } if actual == full.len() as u64),
                16..20 => {
                    matches!(e, Error::CrcMismatch { stored: s, .. } if s == stored ^ (1 << (8 * (byte - 16) + bit)))
                }
                _ => matches!(e, Error::CrcMismatch { stored: s, .. } if s == stored),
            };
            assert!(ok, "bit {bit} of byte {byte}: {e:?}");
            counts[match byte {
                0..4 => 0,
                4..6 => 1,
                8..12 => 2,
                12..16 => 3,
                _ => 4,
            }] += 1;
            b[byte] ^= 1 << bit;
        }
    }
    assert_eq!(counts.iter().sum::<usize>(), full.len() * 8);
    assert_eq!(b, full);
}

#[test]
fn mq_wrong_magic() {
    let mut b = small_mq();
    b[..4].copy_from_slice(b"TFL3");
    assert_eq!(parse(&b), Err(Error::BadMagic));
    // An ONNX or TFLite file given as a .mq.
    let tflite = std::fs::read(repo("tests/golden/models/tiny_m0_int8.tflite")).unwrap();
    assert_eq!(parse(&tflite), Err(Error::BadMagic));
}

#[test]
fn mq_newer_format_version() {
    let mut b = small_mq();
    b[4..6].copy_from_slice(&2u16.to_le_bytes());
    reseal(&mut b);
    assert_eq!(parse(&b), Err(Error::UnsupportedVersion { found: 2, supported: 1 }));
    // A newer minor version (additions a version-1 reader may ignore) is read.
    let mut b = small_mq();
    b[6..8].copy_from_slice(&7u16.to_le_bytes());
    reseal(&mut b);
    let a = AlignedBytes::new(&b);
    assert_eq!(Model::parse(&a).unwrap().format_version(), (1, 7));
}

/// Header offsets (docs/FORMAT.md).
const TENSORS_OFF: usize = 28;
const N_TENSORS: usize = 32;
const OPS_OFF: usize = 36;
const N_OPS: usize = 40;
const IO_OFF: usize = 44;
const STRINGS_LEN: usize = 52;

/// The first constant tensor's record offset in the file.
fn first_const_record(b: &[u8]) -> usize {
    let (off, n) = (le32(b, TENSORS_OFF) as usize, le32(b, N_TENSORS) as usize);
    (0..n).map(|i| off + 56 * i).find(|&r| b[r + 2] == 1).expect("a constant tensor")
}

#[test]
fn mq_offsets_and_lengths_outside_the_file() {
    let full = small_mq();
    let len = full.len() as u32;
    let mutate = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = full.clone();
        f(&mut b);
        reseal(&mut b);
        parse(&b).unwrap_err()
    };
    // Tensor table past the end (aligned, so the bounds check answers).
    let off = len.div_ceil(16) * 16;
    assert_eq!(
        mutate(&|b| put32(b, TENSORS_OFF, off)),
        Error::OutOfBounds { what: "tensor table", offset: off as u64, len: 56 * le32(&full, N_TENSORS) as u64 }
    );
    // Op count far beyond the file.
    assert_eq!(
        mutate(&|b| put32(b, N_OPS, 1_000_000)),
        Error::OutOfBounds { what: "op table", offset: le32(&full, OPS_OFF) as u64, len: 40_000_000 }
    );
    // String table longer than the file.
    assert!(matches!(mutate(&|b| put32(b, STRINGS_LEN, u32::MAX)), Error::OutOfBounds { what: "string table", .. }));
    // IO table with u32::MAX inputs.
    assert!(matches!(
        mutate(&|b| {
            let io = le32(b, IO_OFF) as usize;
            put32(b, io, u32::MAX)
        }),
        Error::OutOfBounds { what: "io table", .. }
    ));
    // A constant tensor's data offset past the end.
    let r = first_const_record(&full);
    let byte_len = le32(&full, r + 32) as u64;
    assert_eq!(
        mutate(&|b| put32(b, r + 28, len)),
        Error::OutOfBounds { what: "tensor data", offset: len as u64, len: byte_len }
    );
    // ... or at u32::MAX (offset + length overflows).
    assert_eq!(
        mutate(&|b| put32(b, r + 28, u32::MAX)),
        Error::OutOfBounds { what: "tensor data", offset: u32::MAX as u64, len: byte_len }
    );
    // A misaligned table offset.
    assert_eq!(mutate(&|b| put32(b, TENSORS_OFF, 8)), Error::Misaligned { what: "tensor table", offset: 8 });
}

#[test]
fn mq_shape_whose_element_count_overflows() {
    let full = small_mq();
    let r = first_const_record(&full);
    let mut b = full.clone();
    b[r + 1] = 6; // rank 6
    for k in 0..6 {
        put32(&mut b, r + 4 + 4 * k, u32::MAX);
    }
    reseal(&mut b);
    let index = ((r - le32(&full, TENSORS_OFF) as usize) / 56) as u32;
    assert_eq!(parse(&b), Err(Error::BadTensor { index, reason: "element count overflows" }));
    // A shape that does not overflow but disagrees with the byte length.
    let mut b = full.clone();
    put32(&mut b, r + 4, le32(&full, r + 4) + 1);
    reseal(&mut b);
    assert_eq!(parse(&b), Err(Error::BadTensor { index, reason: "byte length does not match the shape" }));
}

/// Finds the first op of `kind` in the op table.
fn op_record(b: &[u8], kind: microquant::model::OpKind) -> (usize, u32) {
    let (off, n) = (le32(b, OPS_OFF) as usize, le32(b, N_OPS));
    (0..n)
        .map(|i| (off + 40 * i as usize, i))
        .find(|&(r, _)| u16::from_le_bytes([b[r], b[r + 1]]) == kind.code())
        .expect("op kind in the model")
}

fn interp_err(b: &[u8]) -> Error {
    let a = AlignedBytes::new(b);
    let mut arena = vec![0u128; 64 * 1024 / 16];
    match Interpreter::new(&a, bytemuck::cast_slice_mut(&mut arena)) {
        Ok(_) => panic!("accepted"),
        Err(e) => e,
    }
}

#[test]
fn mq_op_with_the_wrong_number_of_inputs() {
    use microquant::model::OpKind;
    let full = small_mq();
    let (r, index) = op_record(&full, OpKind::FullyConnected);
    // FULLY_CONNECTED with one input (input count field at +8).
    let mut b = full.clone();
    b[r + 8..r + 10].copy_from_slice(&1u16.to_le_bytes());
    reseal(&mut b);
    assert_eq!(interp_err(&b), Error::BadOp { index, reason: "wrong number of inputs for its kind" });
    // ... or with two outputs (the output list then reads past its entries: still in the file).
    let mut b = full.clone();
    b[r + 10..r + 12].copy_from_slice(&2u16.to_le_bytes());
    reseal(&mut b);
    let e = interp_err(&b);
    assert!(matches!(e, Error::BadOp { index: i, .. } if i == index), "expected BadOp on op {index}, got {e:?}");
}

#[test]
fn mq_unknown_and_unsupported_op_kinds() {
    use microquant::model::OpKind;
    let full = small_mq();
    let (r, index) = op_record(&full, OpKind::Softmax);
    // A code this reader does not know.
    let mut b = full.clone();
    b[r..r + 2].copy_from_slice(&999u16.to_le_bytes());
    reseal(&mut b);
    assert_eq!(parse(&b), Err(Error::UnsupportedOp { index, code: 999 }));
    // A known kind the interpreter does not run (DEQUANTIZE): refused at load, named.
    let mut b = full.clone();
    b[r..r + 2].copy_from_slice(&OpKind::Dequantize.code().to_le_bytes());
    reseal(&mut b);
    assert_eq!(interp_err(&b), Error::UnsupportedOp { index, code: OpKind::Dequantize.code() });
}

#[test]
fn arena_one_byte_too_small() {
    let a = AlignedBytes::new(&small_mq());
    let needed = Model::parse(&a).unwrap().arena_len();
    let mut words = vec![0u128; needed / 16 + 1];
    let arena: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
    assert_eq!(
        Interpreter::new(&a, &mut arena[..needed - 1]).err(),
        Some(Error::ArenaTooSmall { needed, available: needed - 1 })
    );
    let mut it = Interpreter::new(&a, &mut arena[..needed]).unwrap();
    it.input_i8(0).unwrap().fill(3);
    it.invoke().unwrap();
    // A misaligned arena start costs its padding, which the error counts.
    let mut words = vec![0u128; needed / 16 + 2];
    let arena: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
    assert_eq!(
        Interpreter::new(&a, &mut arena[1..needed + 1]).err(),
        Some(Error::ArenaTooSmall { needed: needed + 15, available: needed })
    );
    assert!(Interpreter::new(&a, &mut arena[1..needed + 16]).is_ok());
}

/// A declared arena larger than any tensor or scratch buffer reaches is refused by the reader,
/// before a caller (the npm package, the CLI's `run`) allocates it: up to 4 GiB otherwise.
#[test]
fn mq_arena_larger_than_its_tensors_reach() {
    let mut b = small_mq();
    let planned = le32(&b, 24);
    assert_eq!(planned as usize, Model::parse(&AlignedBytes::new(&b)).unwrap().arena_len());
    for declared in [planned + 16, u32::MAX] {
        put32(&mut b, 24, declared);
        reseal(&mut b);
        assert_eq!(
            parse(&b),
            Err(Error::BadHeader { reason: "the planned arena is larger than its tensors and scratch buffers reach" })
        );
    }
    // Every model the converter writes declares exactly what its buffers reach.
    put32(&mut b, 24, planned);
    reseal(&mut b);
    assert!(parse(&b).is_ok());
}

#[test]
fn mq_misaligned_model_buffer() {
    let b = small_mq();
    let mut words = vec![0u32; b.len() / 4 + 2];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
    bytes[1..=b.len()].copy_from_slice(&b);
    assert_eq!(
        Model::parse(&bytes[1..=b.len()]).err(),
        Some(Error::Misaligned { what: "model buffer (needs 4-byte alignment)", offset: 0 })
    );
}

// ---------------------------------------------------------------------------------------------
// Run inputs of the wrong shape or dtype
// ---------------------------------------------------------------------------------------------

#[test]
fn run_input_of_the_wrong_dtype_or_shape() {
    // The interpreter's typed accessors check the dtype: an int16 input read as int8.
    use microquant::model::{ElementType, ModelBuilder, TensorSpec};
    let mut b = ModelBuilder::new();
    let x = b.add_tensor(TensorSpec::activation("x", ElementType::I16, &[1, 4]).per_tensor(0.5, 0));
    b.set_io(&[x], &[x]);
    b.set_arena_offsets(&[(x, 0)], 16);
    let a = AlignedBytes::new(&b.finish().unwrap());
    let mut arena = vec![0u128; 2];
    let mut it = Interpreter::new(&a, bytemuck::cast_slice_mut(&mut arena)).unwrap();
    assert_eq!(it.input_i8(0).err(), Some(Error::BadTensor { index: 0, reason: "model input is not int8" }));
    assert_eq!(it.output_i8(0).err(), Some(Error::BadTensor { index: 0, reason: "model output is not int8" }));
    assert_eq!(it.input_bytes(0).unwrap().len(), 8);
    let a = AlignedBytes::new(&small_mq());
    let mut arena = vec![0u128; 64 * 1024 / 16];
    let mut it = Interpreter::new(&a, bytemuck::cast_slice_mut(&mut arena)).unwrap();
    assert_eq!(it.input_i8(1).err(), Some(Error::BadIndex { what: "model input", index: 1 }));
    let n = it.input_i8(0).unwrap().len();
    assert_eq!(n, it.input_info(0).unwrap().dims().iter().product::<u32>() as usize);

    // Float data of the wrong length for an ONNX model's input (what the CLI and npm package
    // check before running): the layout conversion refuses it, naming the shape.
    let imported = microquant::onnx::import(&std::fs::read(repo("tests/golden/peers/cnn_nchw.onnx")).unwrap()).unwrap();
    let io = &imported.inputs[0];
    let e = io.to_graph_layout(&[0f32; 63]).unwrap_err();
    assert_eq!(e.kind(), Kind::InvalidGraph);
    assert_eq!(e.to_string(), format!("invalid graph: '{}' has shape {:?}, got 63 values", io.name, io.model_shape));
    // The float executor refuses a wrong-length input too.
    let ex = microquant::float::FloatExecutor::new(&imported.graph).unwrap();
    let e = ex.run(&[&[0f32; 63]]).unwrap_err();
    assert_eq!(e.kind(), Kind::InvalidGraph, "{e}");
    let e = ex.run(&[]).unwrap_err();
    assert_eq!(e.kind(), Kind::InvalidGraph, "{e}");
}

// ---------------------------------------------------------------------------------------------
// Calibration data
// ---------------------------------------------------------------------------------------------

fn calib_graph() -> (microquant::graph::Graph, usize) {
    let imported = microquant::onnx::import(&std::fs::read(repo("tests/golden/peers/cnn_nhwc.onnx")).unwrap()).unwrap();
    let n = imported.graph.tensors[imported.graph.inputs[0].0 as usize].num_elements().unwrap();
    (imported.graph, n)
}

fn convert(g: &microquant::graph::Graph, samples: &[Vec<Vec<f32>>]) -> Result<(), ConvertError> {
    microquant::ptq::convert(g, samples, None, &Default::default(), &mut |_| {}).map(|_| ())
}

fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i % 17) as f32 / 8.0 - 1.0).collect()
}

#[test]
fn calibration_with_no_samples() {
    let (g, _) = calib_graph();
    let e = convert(&g, &[]).unwrap_err();
    assert_eq!(e.kind(), Kind::InvalidGraph);
    assert!(e.to_string().contains("no calibration samples"), "{e}");
}

#[test]
fn calibration_with_nan_and_infinities() {
    let (g, n) = calib_graph();
    for (what, bad) in [("NaN", f32::NAN), ("+Inf", f32::INFINITY), ("-Inf", f32::NEG_INFINITY)] {
        let mut x = ramp(n);
        x[5] = bad;
        let e = convert(&g, &[vec![ramp(n)], vec![x]]).unwrap_err();
        assert_eq!(e.kind(), Kind::InvalidGraph, "{what}");
        assert_eq!(
            e.to_string(),
            "invalid graph: observer: non-finite value (NaN or Inf) at index 5 (tensor 0 \"x\")",
            "{what}"
        );
    }
}

#[test]
fn calibration_with_the_wrong_shape() {
    let (g, n) = calib_graph();
    assert_eq!(n, 64);
    let e = convert(&g, &[vec![ramp(n)], vec![ramp(n - 1)]]).unwrap_err();
    assert_eq!(e.kind(), Kind::InvalidGraph);
    assert_eq!(e.to_string(), "invalid graph: input 0 has 63 values, its shape [1, 8, 8, 1] needs 64 (tensor 0 \"x\")");
    // Two inputs for a one-input model.
    let e = convert(&g, &[vec![ramp(n), ramp(n)]]).unwrap_err();
    assert_eq!(e.kind(), Kind::InvalidGraph, "{e}");
}

// ---------------------------------------------------------------------------------------------
// ONNX: a minimal protobuf writer
// ---------------------------------------------------------------------------------------------

mod pb {
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    /// Field `f` as a varint.
    pub fn int(out: &mut Vec<u8>, f: u32, v: i64) {
        varint(out, u64::from(f) << 3);
        varint(out, v as u64);
    }
    /// Field `f` as length-delimited bytes (strings, messages).
    pub fn bytes(out: &mut Vec<u8>, f: u32, v: &[u8]) {
        varint(out, (u64::from(f) << 3) | 2);
        varint(out, v.len() as u64);
        out.extend_from_slice(v);
    }
    pub fn msg(out: &mut Vec<u8>, f: u32, body: impl FnOnce(&mut Vec<u8>)) {
        let mut m = Vec::new();
        body(&mut m);
        bytes(out, f, &m);
    }
}

/// `ValueInfoProto` of a float tensor with `dims`.
fn onnx_value(out: &mut Vec<u8>, field: u32, name: &str, dims: &[i64]) {
    pb::msg(out, field, |v| {
        pb::bytes(v, 1, name.as_bytes());
        pb::msg(v, 2, |t| {
            pb::msg(t, 1, |tt| {
                pb::int(tt, 1, 1); // FLOAT
                pb::msg(tt, 2, |s| {
                    for &d in dims {
                        pb::msg(s, 1, |dim| pb::int(dim, 1, d));
                    }
                });
            });
        });
    });
}

/// An ONNX model (IR 8, opset 17): input `x` of `dims`, nodes `(op, inputs, outputs)`, output
/// `y` (shape left to inference), and `extra_nodes` copies of a dead `Relu` node.
fn onnx_model(dims: &[i64], nodes: &[(&str, &[&str], &[&str])], extra_nodes: usize) -> Vec<u8> {
    let mut m = Vec::new();
    pb::int(&mut m, 1, 8); // ir_version
    pb::msg(&mut m, 8, |o| pb::int(o, 2, 17)); // opset_import { version: 17 }
    let mut node_bytes = Vec::new();
    for (i, (op, ins, outs)) in nodes.iter().enumerate() {
        pb::msg(&mut node_bytes, 1, |n| {
            for s in *ins {
                pb::bytes(n, 1, s.as_bytes());
            }
            for s in *outs {
                pb::bytes(n, 2, s.as_bytes());
            }
            pb::bytes(n, 3, format!("node{i}").as_bytes());
            pb::bytes(n, 4, op.as_bytes());
        });
    }
    let mut dead = Vec::new();
    pb::msg(&mut dead, 1, |n| {
        pb::bytes(n, 1, b"x");
        pb::bytes(n, 2, b"dead");
        pb::bytes(n, 4, b"Relu");
    });
    pb::msg(&mut m, 7, |g| {
        g.extend_from_slice(&node_bytes);
        for _ in 0..extra_nodes {
            g.extend_from_slice(&dead);
        }
        pb::bytes(g, 2, b"g");
        onnx_value(g, 11, "x", dims);
        pb::msg(g, 12, |v| pb::bytes(v, 1, b"y"));
    });
    m
}

fn onnx_err(b: &[u8]) -> ConvertError {
    microquant::onnx::import(b).expect_err("refused")
}

#[test]
fn onnx_builder_makes_valid_models() {
    // The writer itself is right: a Relu model imports.
    let g = microquant::onnx::import(&onnx_model(&[1, 4], &[("Relu", &["x"], &["y"])], 0)).unwrap().graph;
    assert_eq!(g.nodes.len(), 1);
}

#[test]
fn onnx_unsupported_op_names_op_and_node() {
    let e = onnx_err(&onnx_model(&[1, 4], &[("Relu", &["x"], &["h"]), ("Einsum", &["h"], &["y"])], 0));
    assert_eq!(e.kind(), Kind::UnsupportedOp);
    assert_eq!(
        e.to_string(),
        "unsupported op: ONNX op \"Einsum\" (domain ai.onnx, opset 17) is not supported on activations (operator 1 Einsum \"node1\")"
    );
}

#[test]
fn onnx_op_with_the_wrong_number_of_inputs() {
    // Add with one input.
    let e = onnx_err(&onnx_model(&[1, 4], &[("Add", &["x"], &["y"])], 0));
    assert_eq!(e.kind(), Kind::Malformed, "{e}");
    assert_eq!(e.to_string(), "malformed model: input 1 is missing (operator 0 Add \"node0\")");
    // Relu with no input at all.
    let e = onnx_err(&onnx_model(&[1, 4], &[("Relu", &[], &["y"])], 0));
    assert!(e.to_string().contains("input 0 is missing"), "{e}");
}

#[test]
fn onnx_tensor_of_2_pow_40_elements_is_refused_before_allocating() {
    let e = onnx_err(&onnx_model(&[1, 1 << 20, 1 << 20], &[("Relu", &["x"], &["y"])], 0));
    assert_eq!(e.kind(), Kind::Unsupported);
    assert!(e.to_string().contains("[1, 1048576, 1048576] has more than 2^26 elements"), "{e}");
}

#[test]
fn onnx_shape_whose_element_count_overflows() {
    let e = onnx_err(&onnx_model(&[1, 1 << 40, 1 << 40], &[("Relu", &["x"], &["y"])], 0));
    assert_eq!(e.kind(), Kind::Unsupported);
    assert!(e.to_string().contains("more than 2^26 elements"), "{e}");
}

#[test]
fn onnx_graph_with_millions_of_nodes_is_refused() {
    let bytes = onnx_model(&[1, 4], &[("Relu", &["x"], &["y"])], 2_000_000);
    let e = onnx_err(&bytes);
    assert_eq!(e.kind(), Kind::Unsupported);
    assert_eq!(e.to_string(), "unsupported model feature: the graph has 2000001 nodes, more than the 65536 supported");
}

#[test]
fn onnx_truncated_and_garbage() {
    let full = onnx_model(&[1, 4], &[("Relu", &["x"], &["y"])], 0);
    for len in 0..full.len() {
        // Every prefix: an error, never a panic (some prefixes are valid protobuf without a graph).
        assert!(microquant::onnx::import(&full[..len]).is_err(), "prefix {len}");
    }
    let e = onnx_err(b"\xff\xff\xff\xff");
    assert!(matches!(e.kind(), Kind::Malformed | Kind::Truncated), "{e}");
}

// ---------------------------------------------------------------------------------------------
// TFLite: a minimal flatbuffer writer
// ---------------------------------------------------------------------------------------------

/// Writes flatbuffers front to back: a table's vtable right before it, children after their
/// parent (offsets are patched once the child is placed).
mod fb {
    pub struct Buf {
        pub b: Vec<u8>,
    }
    /// A pending offset field at `at`, to point at a child.
    #[derive(Clone, Copy)]
    pub struct Slot(usize);
    /// What a table field holds.
    pub enum F {
        U32(u32),
        I32(i32),
        U8(u8),
        Off,
    }
    impl Buf {
        pub fn new(ident: &[u8; 4]) -> (Self, Slot) {
            let mut b = vec![0u8; 8];
            b[4..8].copy_from_slice(ident);
            (Self { b }, Slot(0))
        }
        fn align(&mut self) {
            while !self.b.len().is_multiple_of(4) {
                self.b.push(0);
            }
        }
        fn put(&mut self, at: usize, v: u32) {
            self.b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        /// Points `slot` at the current end.
        fn point(&mut self, slot: Slot) {
            let here = self.b.len();
            self.put(slot.0, (here - slot.0) as u32);
        }
        /// A table with `fields` (index = field id); returns the slots of its `Off` fields in order.
        pub fn table(&mut self, slot: Slot, fields: &[Option<F>]) -> Vec<Slot> {
            self.align();
            // vtable: size, table size, one u16 per field.
            let vt = self.b.len();
            let n = fields.len();
            let mut vt_bytes = vec![0u8; 4 + 2 * n];
            while !(vt + vt_bytes.len()).is_multiple_of(4) {
                vt_bytes.push(0);
            }
            self.b.extend_from_slice(&vt_bytes);
            let table = self.b.len();
            self.point(slot);
            self.b.extend_from_slice(&((table - vt) as i32).to_le_bytes());
            let mut slots = Vec::new();
            for (i, f) in fields.iter().enumerate() {
                let Some(f) = f else { continue };
                let at = self.b.len() - table;
                self.b[vt + 4 + 2 * i..vt + 6 + 2 * i].copy_from_slice(&(at as u16).to_le_bytes());
                match f {
                    F::U32(v) => self.b.extend_from_slice(&v.to_le_bytes()),
                    F::I32(v) => self.b.extend_from_slice(&v.to_le_bytes()),
                    F::U8(v) => self.b.extend_from_slice(&[*v, 0, 0, 0]),
                    F::Off => {
                        slots.push(Slot(self.b.len()));
                        self.b.extend_from_slice(&[0; 4]);
                    }
                }
            }
            let size = self.b.len() - table;
            self.b[vt..vt + 2].copy_from_slice(&((4 + 2 * n) as u16).to_le_bytes());
            self.b[vt + 2..vt + 4].copy_from_slice(&(size as u16).to_le_bytes());
            slots
        }
        pub fn ints(&mut self, slot: Slot, v: &[i32]) {
            self.align();
            self.point(slot);
            self.b.extend_from_slice(&(v.len() as u32).to_le_bytes());
            for x in v {
                self.b.extend_from_slice(&x.to_le_bytes());
            }
        }
        pub fn string(&mut self, slot: Slot, s: &str) {
            self.align();
            self.point(slot);
            self.b.extend_from_slice(&(s.len() as u32).to_le_bytes());
            self.b.extend_from_slice(s.as_bytes());
            self.b.push(0);
        }
        /// A vector of `n` table offsets; returns their slots.
        pub fn tables(&mut self, slot: Slot, n: usize) -> Vec<Slot> {
            self.align();
            self.point(slot);
            self.b.extend_from_slice(&(n as u32).to_le_bytes());
            let start = self.b.len();
            self.b.resize(start + 4 * n, 0);
            (0..n).map(|i| Slot(start + 4 * i)).collect()
        }
        /// Points every slot at one table placed next (shared, as flatbuffers allow).
        pub fn shared_table(&mut self, slots: &[Slot], fields: &[Option<F>]) -> Vec<Slot> {
            let (first, rest) = slots.split_first().unwrap();
            let inner = self.table(*first, fields);
            let target = first.0 + u32::from_le_bytes(self.b[first.0..first.0 + 4].try_into().unwrap()) as usize;
            for s in rest {
                self.put(s.0, (target - s.0) as u32);
            }
            inner
        }
    }
}

/// One operator of [`tflite_model`]: builtin code, input and output tensor indices.
struct TOp<'a> {
    code: i32,
    inputs: &'a [i32],
    outputs: &'a [i32],
}

/// A float32 TFLite model (schema 3): tensors of `shapes` (no data), graph input 0 and output
/// `last`, the operators in order; `repeat` copies of the last operator (sharing one table).
fn tflite_model(shapes: &[&[i32]], ops: &[TOp], repeat: usize) -> Vec<u8> {
    use fb::F;
    let (mut b, root) = fb::Buf::new(b"TFL3");
    // Model: version(0), operator_codes(1), subgraphs(2), description(3), buffers(4).
    let s = b.table(root, &[Some(F::U32(3)), Some(F::Off), Some(F::Off), None, Some(F::Off)]);
    let (codes, subgraphs, buffers) = (s[0], s[1], s[2]);
    let code_slots = b.tables(codes, ops.len());
    for (slot, op) in code_slots.iter().zip(ops) {
        // OperatorCode: deprecated_builtin_code(0) byte, custom_code(1), version(2), builtin_code(3).
        let dep = op.code.min(127) as u8;
        b.table(*slot, &[Some(F::U8(dep)), None, Some(F::I32(1)), Some(F::I32(op.code))]);
    }
    let sg = b.tables(subgraphs, 1);
    // SubGraph: tensors(0), inputs(1), outputs(2), operators(3).
    let s = b.table(sg[0], &[Some(F::Off), Some(F::Off), Some(F::Off), Some(F::Off)]);
    let (tensors, inputs, outputs, operators) = (s[0], s[1], s[2], s[3]);
    let t_slots = b.tables(tensors, shapes.len());
    for (i, (slot, shape)) in t_slots.iter().zip(shapes).enumerate() {
        // Tensor: shape(0), type(1) = FLOAT32, buffer(2) = 0, name(3).
        let s = b.table(*slot, &[Some(F::Off), Some(F::U8(0)), Some(F::U32(0)), Some(F::Off)]);
        b.ints(s[0], shape);
        b.string(s[1], &format!("t{i}"));
    }
    b.ints(inputs, &[0]);
    b.ints(outputs, &[shapes.len() as i32 - 1]);
    let n = ops.len() + repeat;
    let o_slots = b.tables(operators, n);
    for (k, op) in ops.iter().enumerate() {
        let slots: &[fb::Slot] = if k + 1 == ops.len() { &o_slots[k..] } else { &o_slots[k..=k] };
        // Operator: opcode_index(0), inputs(1), outputs(2).
        let s = b.shared_table(slots, &[Some(F::U32(k as u32)), Some(F::Off), Some(F::Off)]);
        b.ints(s[0], op.inputs);
        b.ints(s[1], op.outputs);
    }
    let bufs = b.tables(buffers, 1);
    b.table(bufs[0], &[]);
    b.b
}

const ADD: i32 = 0;
const RELU: i32 = 19;
const EXP: i32 = 47;

fn tflite_err(b: &[u8]) -> ConvertError {
    microquant::tflite::import(b).expect_err("refused")
}

/// The message of the error importing the model [`tflite_model`] builds, after checking its kind.
fn tflite_refused(shapes: &[&[i32]], ops: &[TOp], repeat: usize, kind: Kind) -> String {
    let e = tflite_err(&tflite_model(shapes, ops, repeat));
    assert_eq!(e.kind(), kind, "{e}");
    e.to_string()
}

#[test]
fn tflite_builder_makes_valid_models() {
    let b = tflite_model(&[&[1, 4], &[1, 4]], &[TOp { code: RELU, inputs: &[0], outputs: &[1] }], 0);
    let g = microquant::tflite::import(&b).unwrap();
    assert_eq!(g.nodes.len(), 1);
}

#[test]
fn tflite_unsupported_op_names_op_and_operator() {
    let e = tflite_refused(
        &[&[1, 4], &[1, 4], &[1, 4]],
        &[TOp { code: RELU, inputs: &[0], outputs: &[1] }, TOp { code: EXP, inputs: &[1], outputs: &[2] }],
        0,
        Kind::UnsupportedOp,
    );
    assert_eq!(e, "unsupported op: EXP is not supported (operator 1 EXP)");
}

#[test]
fn tflite_op_with_the_wrong_number_of_inputs() {
    let e =
        tflite_refused(&[&[1, 4], &[1, 4]], &[TOp { code: ADD, inputs: &[0], outputs: &[1] }], 0, Kind::InvalidGraph);
    assert_eq!(e, "invalid graph: Add takes 2..=2 inputs, got 1 (node 0 ADD \"t1\")");
}

#[test]
fn tflite_tensor_of_2_pow_40_elements_is_refused_before_allocating() {
    let e = tflite_refused(
        &[&[1 << 20, 1 << 20], &[1 << 20, 1 << 20]],
        &[TOp { code: RELU, inputs: &[0], outputs: &[1] }],
        0,
        Kind::Unsupported,
    );
    assert!(e.contains("shape [1048576, 1048576] has more than 2^26 elements"), "{e}");
}

#[test]
fn tflite_shape_whose_element_count_overflows() {
    let big = i32::MAX;
    let e = tflite_refused(
        &[&[big, big, big], &[big, big, big]],
        &[TOp { code: RELU, inputs: &[0], outputs: &[1] }],
        0,
        Kind::Malformed,
    );
    assert!(e.contains("shape [2147483647, 2147483647, 2147483647] overflows"), "{e}");
}

#[test]
fn tflite_graph_with_millions_of_operators_is_refused() {
    let e = tflite_refused(
        &[&[1, 4], &[1, 4]],
        &[TOp { code: RELU, inputs: &[0], outputs: &[1] }],
        2_000_000,
        Kind::Unsupported,
    );
    assert_eq!(e, "unsupported model feature: the subgraph declares 2000001 operators, more than the 65536 supported");
}

#[test]
fn tflite_truncated_at_every_length() {
    let full = std::fs::read(repo("tests/golden/models/tiny_m0_int8.tflite")).unwrap();
    for len in 0..full.len() {
        assert!(microquant::tflite::import(&full[..len]).is_err(), "prefix {len}");
    }
    let e = tflite_err(&full[..6]);
    assert_eq!(e.kind(), Kind::Truncated);
    let mut b = full.clone();
    // An older TFLite identifier in the file-identifier slot.
    b[4..8].copy_from_slice(b"TFL2");
    assert_eq!(tflite_err(&b).kind(), Kind::WrongFileIdentifier);
}

// ---------------------------------------------------------------------------------------------
// .npy
// ---------------------------------------------------------------------------------------------

#[path = "../support/npy_v1.rs"]
#[allow(dead_code)]
mod npy_v1;
use npy_v1::npy_v1 as npy;

/// Core's reader (`microquant::npy`: the CLI's and the npm package's) on `b`, as shape and
/// float32 data, or the message a user sees (the CLI and the package add the file's name so).
fn npy_parse(b: &[u8]) -> Result<(Vec<usize>, Vec<f32>), String> {
    microquant::npy::Npy::parse(b).map(|a| (a.shape().to_vec(), a.to_f32())).map_err(|e| format!("x.npy: {e}"))
}

#[test]
fn npy_valid_file_reads() {
    let body: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(npy_parse(&npy("<f4", "(2,)", &body)).unwrap(), (vec![2], vec![1.5, -2.0]));
}

#[test]
fn npy_files_numpy_wrote_read_and_write_back_byte_for_byte() {
    // Written by NumPy's np.save (tests/gen/peers, tests/gen/qdq): float32 samples and int64
    // labels. Core's writer, given what its reader got, writes the same bytes as NumPy.
    let f32_file = std::fs::read(repo("tests/golden/qdq/conv_bn_calib.npy")).unwrap();
    let a = microquant::npy::Npy::parse(&f32_file).unwrap();
    assert_eq!((a.shape(), a.descr()), (&[32, 3, 8, 8][..], "<f4"));
    assert_eq!(microquant::npy::to_bytes_f32(a.shape(), &a.to_f32()), f32_file);
    let labels = std::fs::read(repo("tests/golden/peers/calib_labels.npy")).unwrap();
    let l = microquant::npy::Npy::parse(&labels).unwrap();
    assert_eq!((l.shape(), l.descr()), (&[200][..], "<i8"));
    let v = l.to_i64().unwrap();
    assert!(v.iter().all(|c| (0..10).contains(c)) && v.len() == 200);
}

#[test]
fn npy_unsupported_dtype() {
    for (descr, size) in [("<c8", 8), ("<f2", 2), ("<U4", 16), ("|O", 8)] {
        let e = npy_parse(&npy(descr, "(1,)", &vec![0; size])).unwrap_err();
        assert_eq!(
            e,
            format!("x.npy: dtype \"{descr}\" is not supported (float32, float64 and integers of 8 to 64 bits)"),
            "{descr}"
        );
    }
}

#[test]
fn npy_lying_header() {
    // The header promises 2^40 float32 values; the file has 8 bytes of data: refused before
    // allocating anything for them.
    let e = npy_parse(&npy("<f4", "(1048576, 1048576)", &[0; 8])).unwrap_err();
    assert_eq!(
        e,
        "x.npy: shape [1048576, 1048576] of <f4 needs 4398046511104 bytes of data from byte 128, the file has 8"
    );
    // An element count that overflows.
    let e = npy_parse(&npy("<f4", "(4294967296, 4294967296)", &[0; 8])).unwrap_err();
    assert_eq!(e, "x.npy: shape [4294967296, 4294967296] is too large");
    // A header length past the end of the file.
    let mut b = npy("<f4", "(1,)", &[0; 4]);
    b[8..10].copy_from_slice(&u16::MAX.to_le_bytes());
    let e = npy_parse(&b).unwrap_err();
    assert_eq!(e, "x.npy: the header (bytes 10..65545) runs past the end of the file (132 bytes)");
    // Truncated at every length.
    let full = npy("<f4", "(2, 3)", &[0; 24]);
    for len in 0..full.len() {
        assert!(npy_parse(&full[..len]).is_err(), "prefix {len}");
    }
}

/// An int4-weight op runs its int8 kernel on the filter unpacked into the front of its scratch:
/// a file whose op has less scratch than that is refused at load, naming the op (the W4A8 TFLite
/// model of `tests/golden/int4_models/`: conv and depthwise; fully connected layers read their
/// int4 weights packed).
#[test]
fn mq_int4_op_without_scratch_for_its_unpacked_filter() {
    use microquant::model::OpKind;
    let tflite = std::fs::read(format!("{}/golden/int4_models/w4a8_cnn.tflite", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let graph = microquant::tflite::import(&tflite).unwrap();
    let full = compile(&graph, &CompileOptions::default()).unwrap().bytes;
    for kind in [OpKind::Conv2d, OpKind::DepthwiseConv2d] {
        let (r, index) = op_record(&full, kind);
        // Scratch length at +28: the planner reserved the unpacked filter's bytes and more.
        assert!(le32(&full, r + 28) >= 4, "{kind:?}: the planner left no scratch for the unpacked filter");
        let mut b = full.clone();
        put32(&mut b, r + 28, 2);
        reseal(&mut b);
        assert_eq!(
            interp_err(&b),
            Error::BadOp { index, reason: "scratch smaller than the unpacked int4 filter" },
            "{kind:?}"
        );
    }
}
