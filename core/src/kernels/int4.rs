//! Packed int4 weights, as TFLite stores an `INT4` tensor and as the `_s4` kernels read it.
//!
//! A tensor of `n` int4 values (each in [-8, 7]) takes `ceil(n / 2)` bytes: flattened in
//! row-major order, element `2 i` in the low nibble of byte `i` and element `2 i + 1` in its high
//! nibble; an odd count leaves the last high nibble unused (0 when we write it). This is TFLite's
//! `tensor_utils::UnpackDenseInt4IntoInt8` read backwards; the packing is of the whole tensor,
//! so with an odd row length a row may start in a high nibble.
//!
//! The kernels ([`conv_s4`](crate::kernels::conv_s4), [`depthwise_conv_s4`](crate::kernels::depthwise_conv_s4),
//! [`fully_connected_s4`](crate::kernels::fully_connected_s4)) are the reference: they read the
//! weights packed, a nibble at a time, and need no scratch. The interpreter does what TFLite
//! Micro does: at every invoke it unpacks the op's filter into the front of the op's scratch
//! ([`unpacked_scratch_len`] bytes, reserved by the planner) and runs the int8 kernel, with its
//! fast paths (Arm DSP, Helium, wasm simd128, the host's), on it. Both feed the same int8
//! arithmetic, so the outputs are the same bit for bit; the weights still take half the flash,
//! the arena holds one unpacked filter at a time, and unpacking costs about one instruction per
//! weight per invoke.

use crate::Error;

/// The bytes `elements` packed int4 values take: `ceil(elements / 2)`.
#[inline]
pub const fn packed_len(elements: usize) -> usize {
    elements / 2 + elements % 2
}

/// The int4 value at element `index` of `packed`, sign-extended (0 past the end: the kernels
/// check lengths first, so it never happens there).
#[inline(always)]
pub fn weight(packed: &[u8], index: usize) -> i32 {
    let byte = packed.get(index >> 1).copied().unwrap_or(0);
    // The wanted nibble into the high half, then an arithmetic shift back down.
    let high = if index & 1 == 0 { byte << 4 } else { byte & 0xF0 };
    ((high as i8) >> 4) as i32
}

/// Packs int8 values in [-8, 7] two per byte (the layout above) into `out`, which must have
/// [`packed_len`]`(values.len())` bytes.
///
/// # Errors
/// [`Error::LengthMismatch`] for another `out` length; [`Error::BadKernelArgument`] for a value
/// outside [-8, 7].
pub fn pack(values: &[i8], out: &mut [u8]) -> Result<(), Error> {
    if out.len() != packed_len(values.len()) {
        return Err(Error::LengthMismatch { expected: packed_len(values.len()), actual: out.len() });
    }
    if values.iter().any(|&v| !(-8..=7).contains(&v)) {
        return Err(Error::BadKernelArgument { kernel: "int4::pack", reason: "value outside [-8, 7]" });
    }
    for (byte, pair) in out.iter_mut().zip(values.chunks(2)) {
        let lo = pair.first().map_or(0, |&v| v as u8 & 0x0F);
        let hi = pair.get(1).map_or(0, |&v| v as u8 & 0x0F);
        *byte = lo | (hi << 4);
    }
    Ok(())
}

/// Bytes of scratch an int4 filter of `weights` values takes unpacked, ahead of the int8
/// kernel's own scratch: `weights` rounded up to a multiple of 4 (saturating), so that the
/// kernel's part stays word aligned.
#[inline]
pub const fn unpacked_scratch_len(weights: usize) -> usize {
    match weights.checked_next_multiple_of(4) {
        Some(n) => n,
        None => usize::MAX,
    }
}

/// Unpacks `out.len()` int4 values from `packed` into int8 values (two per byte, no index
/// arithmetic per value: the interpreter runs it on every int4 filter at every invoke).
///
/// # Errors
/// [`Error::LengthMismatch`] unless `packed` has [`packed_len`]`(out.len())` bytes.
pub fn unpack(packed: &[u8], out: &mut [i8]) -> Result<(), Error> {
    if packed.len() != packed_len(out.len()) {
        return Err(Error::LengthMismatch { expected: packed_len(out.len()), actual: packed.len() });
    }
    // Four values (two bytes) at a time in a word: each byte spread to every other byte, its
    // high nibble moved up into the byte after, then every byte whose nibble has bit 3 set
    // gets 0xF0 (the sign): `0x08 * 0x1E = 0xF0` stays inside its byte.
    let tail = packed.get((out.len() - out.len() % 4) / 2..).unwrap_or(&[]);
    let mut quads = out.chunks_exact_mut(4);
    for (quad, two) in (&mut quads).zip(packed.chunks_exact(2)) {
        let (Ok(quad), Ok(two)) = (<&mut [i8; 4]>::try_from(quad), <[u8; 2]>::try_from(two)) else { continue };
        let h = u32::from(u16::from_le_bytes(two));
        let spread = (h | (h << 8)) & 0x00FF_00FF;
        let nibbles = (spread & 0x000F_000F) | ((spread << 4) & 0x0F00_0F00);
        let signed = nibbles | ((nibbles & 0x0808_0808) * 0x1E);
        *quad = signed.to_le_bytes().map(|b| b as i8);
    }
    // The last 1 to 3 values (1 or 2 bytes).
    for (k, v) in quads.into_remainder().iter_mut().enumerate() {
        let Some(&byte) = tail.get(k / 2) else { continue };
        *v = if k % 2 == 0 { ((byte << 4) as i8) >> 4 } else { (byte as i8) >> 4 };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn nibbles_low_first_and_sign_extended() {
        // 0x8F: element 0 = 0xF = -1, element 1 = 0x8 = -8; 0x07: element 2 = 7, element 3 = 0.
        let packed = [0x8Fu8, 0x07];
        let got: Vec<i32> = (0..4).map(|i| weight(&packed, i)).collect();
        assert_eq!(got, [-1, -8, 7, 0]);
        assert_eq!(weight(&packed, 4), 0);
    }

    #[test]
    fn pack_unpack_round_trip_every_value() -> Result<(), Error> {
        let values: Vec<i8> = (-8..=7).chain((-8..=7).rev()).chain([3]).collect();
        let mut packed = vec![0u8; packed_len(values.len())];
        pack(&values, &mut packed)?;
        assert_eq!(packed.len(), 17);
        assert_eq!(packed[16], 3, "odd count: the last high nibble is 0");
        let mut back = vec![0i8; values.len()];
        unpack(&packed, &mut back)?;
        assert_eq!(back, values);
        // Every byte, at both ends of an even and an odd count, against `weight`.
        let bytes: Vec<u8> = (0..=255).collect();
        for n in [512usize, 511, 510, 509, 3, 2, 1] {
            let mut out = vec![0i8; n];
            unpack(bytes.get(..packed_len(n)).unwrap_or(&[]), &mut out)?;
            assert!(out.iter().enumerate().all(|(i, &v)| v as i32 == weight(&bytes, i)));
        }
        Ok(())
    }

    #[test]
    fn unpacked_scratch_keeps_words_aligned() {
        assert_eq!([0, 1, 4, 5, 8].map(unpacked_scratch_len), [0, 4, 4, 8, 8]);
        assert_eq!(unpacked_scratch_len(usize::MAX), usize::MAX);
    }

    #[test]
    fn pack_rejects_out_of_range_and_bad_lengths() {
        let mut out = [0u8; 1];
        assert!(matches!(pack(&[8, 0], &mut out), Err(Error::BadKernelArgument { .. })));
        assert!(matches!(pack(&[1, 2, 3], &mut out), Err(Error::LengthMismatch { expected: 2, actual: 1 })));
        assert!(matches!(unpack(&[0u8; 2], &mut [0i8; 2]), Err(Error::LengthMismatch { .. })));
    }
}
