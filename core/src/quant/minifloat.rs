//! float8 (E4M3FN, E5M2), float4 (E2M1) and IEEE half conversions, bit-exact with ONNX's
//! reference (which casts with `ml_dtypes`) and with numpy's `float16`.
//!
//! Encoding rounds to nearest, ties to even (RNE), on the exact value of the `f32` input.
//! Overflow and special values follow ONNX `Cast` / `QuantizeLinear` (`saturate` attribute):
//!
//! | input | E4M3FN, saturate | E4M3FN, no saturate | E5M2, saturate | E5M2, no saturate | E2M1 (always saturates) |
//! |---|---|---|---|---|---|
//! | ±Inf | ±448 | NaN (sign kept) | ±57344 | ±Inf | ±6 |
//! | rounds above max | ±448 | NaN (sign kept) | ±57344 | ±Inf | ±6 |
//! | NaN | NaN | NaN | NaN | NaN | no encoding (`None`) |
//! | -0.0 | -0 | -0 | -0 | -0 | -0 |
//!
//! Only integer bit manipulation and exact `f32` operations are used (a quotient by a power of
//! two and `rintf` of a value below 2^12), so the result is the same on every target.

/// 2^e as an `f32`, for `e` in [-126, 127] (a normal number: exact).
#[inline(always)]
#[allow(clippy::manual_clamp)] // `clamp` asserts min <= max: a panic path on the device
pub(crate) fn pow2f(e: i32) -> f32 {
    let e = if e < -126 {
        -126
    } else if e > 127 {
        127
    } else {
        e
    };
    f32::from_bits(((e + 127) as u32) << 23)
}

/// A small binary float format: `man` mantissa bits, exponent bias `bias` (so the smallest
/// normal exponent is `1 - bias`).
#[derive(Clone, Copy)]
struct Format {
    man: u32,
    bias: i32,
}

/// Rounds `|x|` (finite, non-negative) to the nearest value of `fmt` with unbounded exponent
/// range above (ties to even), and returns it as an exact `f32` (possibly +Inf when it rounds
/// above `f32::MAX`).
#[inline]
fn round_abs(ax: f32, fmt: Format) -> f32 {
    if ax == 0.0 {
        return 0.0;
    }
    let emin = 1 - fmt.bias;
    // Unbiased exponent of ax (f32 subnormals are far below every target's range: they all
    // round to 0 below, since their quantum exponent is emin - man >= -24).
    let e = ((ax.to_bits() >> 23) & 0xFF) as i32 - 127;
    let qexp = if e > emin { e } else { emin } - fmt.man as i32;
    // ax / 2^qexp < 2^(man + 1): exact, and rintf is exact on it.
    let r = libm::rintf(ax / pow2f(qexp));
    r * pow2f(qexp)
}

/// Encodes the exact value `v` (non-negative, representable in `fmt`, not above its largest
/// finite value) as exponent and mantissa fields, without the sign.
#[inline]
fn fields(v: f32, fmt: Format) -> u32 {
    if v == 0.0 {
        return 0;
    }
    let emin = 1 - fmt.bias;
    let e = ((v.to_bits() >> 23) & 0xFF) as i32 - 127;
    if e < emin {
        // Subnormal in the target: v = m * 2^(emin - man), m < 2^man.
        (v / pow2f(emin - fmt.man as i32)) as u32
    } else {
        let mant = (v.to_bits() >> (23 - fmt.man)) & ((1 << fmt.man) - 1);
        (((e + fmt.bias) as u32) << fmt.man) | mant
    }
}

const E4M3: Format = Format { man: 3, bias: 7 };
const E5M2: Format = Format { man: 2, bias: 15 };
const E2M1: Format = Format { man: 1, bias: 1 };
const F16: Format = Format { man: 10, bias: 15 };

/// `f32` to float8 E4M3FN bits (see the module table for `saturate`).
pub fn f32_to_f8e4m3fn(x: f32, saturate: bool) -> u8 {
    let sign = ((x.to_bits() >> 24) & 0x80) as u8;
    if x.is_nan() {
        return sign | 0x7F;
    }
    let ax = x.abs();
    let v = if ax.is_infinite() { f32::INFINITY } else { round_abs(ax, E4M3) };
    if v > 448.0 {
        return sign | if saturate { 0x7E } else { 0x7F };
    }
    sign | fields(v, E4M3) as u8
}

/// float8 E4M3FN bits to `f32` (exact). `0x7F`/`0xFF` are NaN.
pub fn f8e4m3fn_to_f32(b: u8) -> f32 {
    let exp = ((b >> 3) & 0x0F) as i32;
    let man = (b & 0x07) as i32;
    let mag = if exp == 0x0F && man == 0x07 {
        f32::NAN
    } else if exp == 0 {
        man as f32 * pow2f(-9)
    } else {
        (8 + man) as f32 * pow2f(exp - 10)
    };
    if b & 0x80 != 0 { -mag } else { mag }
}

/// `f32` to float8 E5M2 bits (see the module table for `saturate`).
pub fn f32_to_f8e5m2(x: f32, saturate: bool) -> u8 {
    let sign = ((x.to_bits() >> 24) & 0x80) as u8;
    if x.is_nan() {
        return sign | 0x7E;
    }
    let ax = x.abs();
    let v = if ax.is_infinite() { f32::INFINITY } else { round_abs(ax, E5M2) };
    if v > 57344.0 {
        return sign | if saturate { 0x7B } else { 0x7C };
    }
    sign | fields(v, E5M2) as u8
}

/// float8 E5M2 bits to `f32` (exact; infinities and NaNs as IEEE).
pub fn f8e5m2_to_f32(b: u8) -> f32 {
    let exp = ((b >> 2) & 0x1F) as i32;
    let man = (b & 0x03) as i32;
    let mag = if exp == 0x1F {
        if man == 0 { f32::INFINITY } else { f32::NAN }
    } else if exp == 0 {
        man as f32 * pow2f(-16)
    } else {
        (4 + man) as f32 * pow2f(exp - 17)
    };
    if b & 0x80 != 0 { -mag } else { mag }
}

/// `f32` to float4 E2M1 bits (the low nibble), saturating to ±6; `None` for NaN, which E2M1
/// cannot represent.
pub fn f32_to_f4e2m1(x: f32) -> Option<u8> {
    if x.is_nan() {
        return None;
    }
    let sign = ((x.to_bits() >> 28) & 0x08) as u8;
    let ax = x.abs();
    let v = if ax.is_infinite() { f32::INFINITY } else { round_abs(ax, E2M1) };
    if v > 6.0 {
        return Some(sign | 0x07);
    }
    Some(sign | fields(v, E2M1) as u8)
}

/// float4 E2M1 bits (the low nibble of `n`) to `f32` (exact).
pub fn f4e2m1_to_f32(n: u8) -> f32 {
    let exp = ((n >> 1) & 0x03) as i32;
    let man = (n & 0x01) as i32;
    let mag = if exp == 0 { man as f32 * 0.5 } else { (2 + man) as f32 * pow2f(exp - 2) };
    if n & 0x08 != 0 { -mag } else { mag }
}

/// `f32` to IEEE binary16 bits, rounding to nearest even (as numpy's `astype(float16)`):
/// overflow gives ±Inf, NaN stays NaN (quiet, sign kept).
pub fn f32_to_f16_bits(x: f32) -> u16 {
    let sign = ((x.to_bits() >> 16) & 0x8000) as u16;
    if x.is_nan() {
        return sign | 0x7E00 | ((x.to_bits() >> 13) & 0x03FF) as u16;
    }
    let ax = x.abs();
    let v = if ax.is_infinite() { f32::INFINITY } else { round_abs(ax, F16) };
    if v > 65504.0 {
        return sign | 0x7C00;
    }
    sign | fields(v, F16) as u16
}

/// IEEE binary16 bits to `f32` (exact).
pub fn f16_bits_to_f32(h: u16) -> f32 {
    let exp = ((h >> 10) & 0x1F) as i32;
    let man = (h & 0x03FF) as i32;
    let mag = if exp == 0x1F {
        if man == 0 { f32::INFINITY } else { f32::NAN }
    } else if exp == 0 {
        man as f32 * pow2f(-24)
    } else {
        (1024 + man) as f32 * pow2f(exp - 25)
    };
    if h & 0x8000 != 0 { -mag } else { mag }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4m3fn_named_values() {
        // From the ONNX backend test cases (QuantizeLinear e4m3fn, scale 2): x/2 = 0, 0.5, 1, 5e4, 100.
        assert_eq!(f32_to_f8e4m3fn(0.0, true), 0);
        assert_eq!(f32_to_f8e4m3fn(0.5, true), 48);
        assert_eq!(f32_to_f8e4m3fn(1.0, true), 56);
        assert_eq!(f32_to_f8e4m3fn(5e4, true), 126);
        assert_eq!(f32_to_f8e4m3fn(100.0, true), 108); // tie between 96 and 104 -> 96 (even)
        assert_eq!(f32_to_f8e4m3fn(5e4, false), 127);
        assert_eq!(f32_to_f8e4m3fn(464.0, false), 126); // tie 448 / 480(NaN) -> 448
        assert_eq!(f32_to_f8e4m3fn(465.0, false), 127);
        assert_eq!(f32_to_f8e4m3fn(f32::NEG_INFINITY, true), 0xFE);
        assert_eq!(f32_to_f8e4m3fn(-0.0, true), 0x80);
        assert_eq!(f32_to_f8e4m3fn(libm::exp2f(-10.0), true), 0); // half the smallest subnormal
        assert_eq!(f32_to_f8e4m3fn(1.5 * libm::exp2f(-9.0), true), 2);
        assert!(f8e4m3fn_to_f32(0x7F).is_nan());
        assert_eq!(f8e4m3fn_to_f32(126), 448.0);
        assert_eq!(f8e4m3fn_to_f32(237), -104.0);
    }

    #[test]
    fn every_code_round_trips() {
        for b in 0..=255u8 {
            let v = f8e4m3fn_to_f32(b);
            if !v.is_nan() {
                assert_eq!(f32_to_f8e4m3fn(v, false), b, "e4m3fn {b:#x}");
            }
            let w = f8e5m2_to_f32(b);
            if !w.is_nan() {
                assert_eq!(f32_to_f8e5m2(w, false), b, "e5m2 {b:#x}");
            }
        }
        for n in 0..16u8 {
            assert_eq!(f32_to_f4e2m1(f4e2m1_to_f32(n)), Some(n));
        }
        for h in (0..=0xFFFFu32).step_by(7) {
            let v = f16_bits_to_f32(h as u16);
            if !v.is_nan() {
                assert_eq!(f32_to_f16_bits(v), h as u16);
            }
        }
    }

    #[test]
    fn e5m2_and_e2m1_saturation() {
        assert_eq!(f32_to_f8e5m2(61439.0, false), 123);
        assert_eq!(f32_to_f8e5m2(61440.0, false), 124); // tie rounds to even: infinity
        assert_eq!(f32_to_f8e5m2(61440.0, true), 123);
        assert_eq!(f32_to_f8e5m2(f32::INFINITY, true), 123);
        assert_eq!(f32_to_f4e2m1(5.0), Some(6)); // tie 4 / 6 -> 4
        assert_eq!(f32_to_f4e2m1(5.0001), Some(7));
        assert_eq!(f32_to_f4e2m1(-100.0), Some(15));
        assert_eq!(f32_to_f4e2m1(0.25), Some(0));
        assert_eq!(f32_to_f4e2m1(f32::NAN), None);
        assert_eq!(f32_to_f16_bits(65520.0), 0x7C00);
        assert_eq!(f32_to_f16_bits(65519.0), 0x7BFF);
    }
}
