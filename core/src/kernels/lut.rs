//! Lookup tables: TFLite's `LUTPopulate` (int8 256-entry tables and int16 513-entry tables with
//! interpolation), the lookups, and the float functions the tables are generated from.
//!
//! TFLite generates some tables from float math at prepare time (the TFLite interpreter's int8
//! logistic and tanh, both runtimes' int16 softmax). To reproduce such a table bit for bit, the
//! same float operations must run in the same order, and the transcendental functions must
//! return the same bits as the C library the oracle used. Rust's `f32`/`f64` arithmetic is IEEE
//! 754 with no fused multiply-add and no excess precision, so the arithmetic matches; the
//! functions here are implementations of the algorithms of glibc (the oracle's C library on
//! Linux x86-64, glibc 2.27 to 2.40):
//!
//! - [`expf`]: glibc's `expf` (from Arm's optimized-routines: a 32-entry table of `2^(i/32)` and a
//!   cubic polynomial evaluated in `f64`), in the variant glibc selects on x86-64 CPUs with FMA
//!   (the multiply-adds fused);
//! - [`tanhf`] with [`expm1f`]: glibc's `tanhf`/`expm1f` (the fdlibm single-precision
//!   algorithms);
//! - `f64` `exp` is `libm::exp` (fdlibm, within 1 ulp; a table entry rounds it to 16 bits, so
//!   an ulp never shows).
//!
//! Tables are built once on the prepare side (host or device); the kernels only index them.
#![forbid(unsafe_code)]

use super::tensor::PerTensorQuant;

/// Size of an int8 lookup table: one entry per input value.
pub const LUT_S8_LEN: usize = 256;
/// Size of an int16 lookup table: 512 segments and the end point.
pub const LUT_S16_LEN: usize = 513;

/// An int8 → int8 table indexed by the input reinterpreted as `u8` (TFLite's order:
/// `[0, 1, ..., 127, -128, ..., -1]`).
pub type LutS8 = [i8; LUT_S8_LEN];

/// TFLite's `LUTPopulate<int8_t>`: `lut[x] = clamp(trunc(round(f(s_in · (x − zp_in)) ·
/// (1 / s_out)) + zp_out), −128, 127)`, all in `f32`, rounding half away from zero.
pub fn lut_populate_s8(input: PerTensorQuant, output: PerTensorQuant, f: impl Fn(f32) -> f32) -> LutS8 {
    let mut lut = [0i8; LUT_S8_LEN];
    let inverse_scale = 1.0f32 / output.scale;
    for val in -128i32..=127 {
        let dequantized = input.scale * (val.wrapping_sub(input.zero_point)) as f32;
        let transformed = f(dequantized);
        let rescaled = libm::roundf(transformed * inverse_scale);
        let quantized = (rescaled + output.zero_point as f32) as i32;
        let clamped = crate::requant::clamp_i32(quantized, -128, 127);
        if let Some(e) = lut.get_mut(val as i8 as u8 as usize) {
            *e = clamped as i8;
        }
    }
    lut
}

/// Applies an int8 table: `output[i] = lut[input[i] as u8]`. The lengths must be equal (the
/// shorter one bounds the loop).
#[inline]
pub fn lut_lookup_s8(lut: &LutS8, input: &[i8], output: &mut [i8]) {
    for (o, &x) in output.iter_mut().zip(input) {
        *o = lut[x as u8 as usize];
    }
}

/// TFLite's `LUTLookup(int16_t, const int16_t* lut)`: the top 9 bits of the input pick a
/// segment, the low 7 bits interpolate linearly, rounding half up.
#[inline]
pub fn lut_lookup_s16(value: i16, lut: &[i16; LUT_S16_LEN]) -> i16 {
    let index = (256 + (value as i32 >> 7)) as usize; // 0..=511
    let offset = (value & 0x7f) as i32;
    let base = lut.get(index).copied().unwrap_or(0);
    let next = lut.get(index + 1).copied().unwrap_or(0);
    // C++ stores the difference in an int16_t.
    let slope = (next as i32 - base as i32) as i16 as i32;
    let delta = (slope * offset + 64) >> 7;
    (base as i32 + delta) as i16
}

macro_rules! lut_populate_s16_impl {
    ($name:ident, $t:ty, $round:path, $doc:literal) => {
        #[doc = $doc]
        ///
        /// Samples `f` at the 512 segment starts of the input range, corrects each sample by
        /// half the error of linear interpolation at the segment midpoint, and stores
        /// `f(input_max)` last; the output range `[-32768, 32767]` maps to the output scale.
        pub fn $name(
            input_scale: $t,
            input_zero_point: i32,
            output_scale: $t,
            output_zero_point: i32,
            f: impl Fn($t) -> $t,
        ) -> [i16; LUT_S16_LEN] {
            let mut lut = [0i16; LUT_S16_LEN];
            let input_min = input_scale * (-32768i32).wrapping_sub(input_zero_point) as $t;
            let input_max = input_scale * 32767i32.wrapping_sub(input_zero_point) as $t;
            let output_min = output_scale * (-32768i32).wrapping_sub(output_zero_point) as $t;
            let output_max = output_scale * 32767i32.wrapping_sub(output_zero_point) as $t;
            let nb_steps = 512i32;
            let step = (input_max - input_min) / nb_steps as $t;
            let half_step = step / 2 as $t;
            let output_scaling_inv = 65536 as $t / (output_max - output_min);
            let table_min = -32768 as $t;
            let table_max = 32767 as $t;
            let clamp = |v: $t| -> i16 {
                let v = if v > table_min { v } else { table_min };
                let v = if v < table_max { v } else { table_max };
                v as i16
            };
            for (i, e) in (0..nb_steps).zip(lut.iter_mut()) {
                let val = f(input_min + i as $t * step);
                let val_midpoint = f(input_min + i as $t * step + half_step);
                let val_next = f(input_min + (i + 1) as $t * step);
                let sample_val = $round(val * output_scaling_inv);
                let midpoint_interp_val =
                    $round((val_next * output_scaling_inv + $round(val * output_scaling_inv)) / 2 as $t);
                let midpoint_val = $round(val_midpoint * output_scaling_inv);
                let midpoint_err = midpoint_interp_val - midpoint_val;
                let bias = $round(midpoint_err / 2 as $t);
                *e = clamp(sample_val - bias);
            }
            if let Some(last) = lut.get_mut(LUT_S16_LEN - 1) {
                *last = clamp($round(f(input_max) * output_scaling_inv));
            }
            lut
        }
    };
}

lut_populate_s16_impl!(
    lut_populate_s16_f32,
    f32,
    libm::roundf,
    "TFLite's `LUTPopulate<int16_t>` with `float` arithmetic (`LUTPopulateInt16<float>`), as \
     TFLite Micro builds its int16 tables."
);
lut_populate_s16_impl!(
    lut_populate_s16_f64,
    f64,
    libm::round,
    "TFLite's `LUTPopulate<int16_t>` with `double` arithmetic (`LUTPopulateInt16<double>`), as \
     the TFLite interpreter builds its int16 softmax tables."
);

// --- float functions ------------------------------------------------------------------------

/// `2^(i/32)` rounded to `f64`, minus `i << 47` in its bit pattern, so that adding `k << 47` for
/// `k ≡ i (mod 32)` scales it by `2^(k div 32)` (Arm optimized-routines' `exp2f` data).
const EXP2F_TAB: [u64; 32] = [
    0x3ff0000000000000,
    0x3fefd9b0d3158574,
    0x3fefb5586cf9890f,
    0x3fef9301d0125b51,
    0x3fef72b83c7d517b,
    0x3fef54873168b9aa,
    0x3fef387a6e756238,
    0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715,
    0x3feef1a7373aa9cb,
    0x3feedea64c123422,
    0x3feece086061892d,
    0x3feebfdad5362a27,
    0x3feeb42b569d4f82,
    0x3feeab07dd485429,
    0x3feea47eb03a5585,
    0x3feea09e667f3bcd,
    0x3fee9f75e8ec5f74,
    0x3feea11473eb0187,
    0x3feea589994cce13,
    0x3feeace5422aa0db,
    0x3feeb737b0cdc5e5,
    0x3feec49182a3f090,
    0x3feed503b23e255d,
    0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47,
    0x3fef199bdd85529c,
    0x3fef3720dcef9069,
    0x3fef5818dcfba487,
    0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da,
    0x3fefd0765b6e4540,
];

/// Whether [`expf`] fuses its multiply-adds (glibc's `__expf_fma`, chosen on x86-64 CPUs with
/// FMA and AVX2) or rounds each product (the generic build).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpfVariant {
    /// Each product rounded separately (glibc generic, musl).
    Plain,
    /// Multiply-adds fused, as GCC contracts them in glibc's `e_expf-fma.c`.
    Fused,
}

/// `e^x` in `f32` by the algorithm of glibc's `expf` (Arm optimized-routines, ≤ 0.502 ulp), in
/// the given variant. Overflow gives `+∞`, underflow `0.0`, NaN propagates.
pub fn expf_variant(x: f32, variant: ExpfVariant) -> f32 {
    const SHIFT: f64 = 6755399441055744.0; // 0x1.8p52
    let inv_ln2_n = f64::from_bits(0x40471547652b82fe); // 32 / ln 2
    let c0 = f64::from_bits(0x3ebc6af84b912394);
    let c1 = f64::from_bits(0x3f2ebfce50fac4f3);
    let c2 = f64::from_bits(0x3f962e42ff0c52d6);
    let abstop = (x.to_bits() >> 20) & 0x7ff;
    if abstop >= (88.0f32.to_bits() >> 20) {
        if x == f32::NEG_INFINITY {
            return 0.0;
        }
        if abstop >= (f32::INFINITY.to_bits() >> 20) {
            return x + x;
        }
        if x > f32::from_bits(0x42b17217) {
            return f32::INFINITY;
        }
        if x < f32::from_bits(0xc2cff1b4) {
            return 0.0;
        }
    }
    let xd = x as f64;
    let fused = variant == ExpfVariant::Fused;
    // x·32/ln2 = k + r, |r| ≤ 1/2; k by the round-to-nearest trick of adding 1.5·2^52.
    let (kd_shifted, z) = if fused {
        (libm::fma(inv_ln2_n, xd, SHIFT), 0.0)
    } else {
        let z = inv_ln2_n * xd;
        (z + SHIFT, z)
    };
    let ki = kd_shifted.to_bits();
    let kd = kd_shifted - SHIFT;
    let r = if fused { libm::fma(inv_ln2_n, xd, -kd) } else { z - kd };
    let t = EXP2F_TAB.get((ki % 32) as usize).copied().unwrap_or(0).wrapping_add(ki << 47);
    let s = f64::from_bits(t);
    let y = if fused {
        let z = libm::fma(c0, r, c1);
        let r2 = r * r;
        let y = libm::fma(c2, r, 1.0);
        libm::fma(z, r2, y)
    } else {
        let z = c0 * r + c1;
        let r2 = r * r;
        let y = c2 * r + 1.0;
        z * r2 + y
    };
    (y * s) as f32
}

/// `e^x` as the oracle's C library computes it: [`expf_variant`] with [`ExpfVariant::Fused`]
/// (glibc on an x86-64 CPU with FMA, where the golden data was generated).
pub fn expf(x: f32) -> f32 {
    expf_variant(x, ExpfVariant::Fused)
}

/// `e^x − 1` in `f32` by fdlibm's single-precision algorithm, as glibc's `expm1f`.
pub fn expm1f(x: f32) -> f32 {
    const O_THRESHOLD: f32 = f32::from_bits(0x42b17180); // 8.8721679688e+01
    const LN2_HI: f32 = f32::from_bits(0x3f317180); // 6.9313812256e-01
    const LN2_LO: f32 = f32::from_bits(0x3717f7d1); // 9.0580006145e-06
    const INVLN2: f32 = f32::from_bits(0x3fb8aa3b); // 1.4426950216e+00
    const Q1: f32 = f32::from_bits(0xbd088889); // -3.3333335072e-02
    const Q2: f32 = f32::from_bits(0x3ad00d01); // 1.5873016091e-03
    const Q3: f32 = f32::from_bits(0xb8a670cd); // -7.9365076090e-05
    const Q4: f32 = f32::from_bits(0x36867e54); // 4.0082177293e-06
    const Q5: f32 = f32::from_bits(0xb457edbb); // -2.0109921195e-07
    let bits = x.to_bits();
    let negative = bits & 0x8000_0000 != 0;
    let hx = bits & 0x7fff_ffff;
    // Huge and non-finite arguments.
    if hx >= 0x4195b844 {
        // |x| >= 27 ln 2
        if hx >= 0x42b17218 {
            if hx > 0x7f80_0000 {
                return x + x; // NaN
            }
            if hx == 0x7f80_0000 {
                return if negative { -1.0 } else { x };
            }
            if x > O_THRESHOLD {
                return f32::INFINITY;
            }
        }
        if negative {
            return -1.0;
        }
    }
    // Argument reduction: x = k ln2 + (hi - lo), c the rounding error of hi - lo.
    let (xr, c, k): (f32, f32, i32) = if hx > 0x3eb17218 {
        // |x| > ln2 / 2
        let (hi, lo, k) = if hx < 0x3F851592 {
            // and |x| < 1.5 ln2
            if negative { (x + LN2_HI, -LN2_LO, -1) } else { (x - LN2_HI, LN2_LO, 1) }
        } else {
            let k = (INVLN2 * x + if negative { -0.5 } else { 0.5 }) as i32;
            let t = k as f32;
            (x - t * LN2_HI, t * LN2_LO, k)
        };
        let xr = hi - lo;
        (xr, (hi - xr) - lo, k)
    } else if hx < 0x33000000 {
        return x; // |x| < 2^-25
    } else {
        (x, 0.0, 0)
    };
    let x = xr;
    let hfx = 0.5f32 * x;
    let hxs = x * hfx;
    let r1 = 1.0f32 + hxs * (Q1 + hxs * (Q2 + hxs * (Q3 + hxs * (Q4 + hxs * Q5))));
    let t = 3.0f32 - r1 * hfx;
    let mut e = hxs * ((r1 - t) / (6.0f32 - x * t));
    if k == 0 {
        return x - (x * e - hxs);
    }
    e = x * (e - c) - c;
    e -= hxs;
    if k == -1 {
        return 0.5f32 * (x - e) - 0.5;
    }
    if k == 1 {
        return if x < -0.25 { -2.0f32 * (e - (x + 0.5)) } else { 1.0f32 + 2.0 * (x - e) };
    }
    let add_exponent = |y: f32| f32::from_bits((y.to_bits() as i32).wrapping_add(k.wrapping_shl(23)) as u32);
    if k <= -2 || k > 56 {
        let y = add_exponent(1.0f32 - (e - x));
        return y - 1.0;
    }
    if k < 23 {
        let t = f32::from_bits((0x3f80_0000i32 - (0x0100_0000i32 >> k)) as u32); // 1 - 2^-k
        add_exponent(t - (e - x))
    } else {
        let t = f32::from_bits(((0x7f - k) << 23) as u32); // 2^-k
        let y = x - (e + t) + 1.0;
        add_exponent(y)
    }
}

/// `tanh(x)` in `f32` by fdlibm's single-precision algorithm, as glibc's `tanhf` (2.27–2.40).
pub fn tanhf(x: f32) -> f32 {
    let jx = x.to_bits() as i32;
    let ix = jx & 0x7fff_ffff;
    if ix >= 0x7f80_0000 {
        // ±inf -> ±1, NaN -> NaN
        return if jx >= 0 { 1.0 / x + 1.0 } else { 1.0 / x - 1.0 };
    }
    let z = if ix < 0x41b0_0000 {
        // |x| < 22
        if ix == 0 {
            return x;
        }
        if ix < 0x2400_0000 {
            return x * (1.0 + x); // |x| < 2^-55
        }
        let ax = f32::from_bits(ix as u32);
        if ix >= 0x3f80_0000 {
            let t = expm1f(2.0 * ax);
            1.0f32 - 2.0 / (t + 2.0)
        } else {
            let t = expm1f(-2.0 * ax);
            -t / (t + 2.0)
        }
    } else {
        1.0f32 // 1 - tiny
    };
    if jx >= 0 { z } else { -z }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp2f_table_is_two_to_the_i_over_32() {
        for (i, &t) in EXP2F_TAB.iter().enumerate() {
            let v = f64::from_bits(t.wrapping_add((i as u64) << 47));
            let want = libm::exp2(i as f64 / 32.0);
            assert!(((v - want) / want).abs() < 2.3e-16, "entry {i}: {v} vs {want}");
        }
    }

    #[test]
    fn expf_is_within_one_ulp_of_exact() {
        for variant in [ExpfVariant::Plain, ExpfVariant::Fused] {
            let mut x = -103.0f32;
            while x < 88.7 {
                let got = expf_variant(x, variant) as f64;
                let want = libm::exp(x as f64);
                let ulp = libm::ldexp(1.0, libm::ilogb(want) - 23);
                if want > 1.2e-38 {
                    assert!((got - want).abs() <= 0.51 * ulp, "{variant:?} expf({x}) = {got}, exact {want}");
                }
                x += 0.0137;
            }
            assert_eq!(expf_variant(0.0, variant), 1.0);
            assert_eq!(expf_variant(f32::NEG_INFINITY, variant), 0.0);
            assert_eq!(expf_variant(100.0, variant), f32::INFINITY);
            assert_eq!(expf_variant(-110.0, variant), 0.0);
            assert!(expf_variant(f32::NAN, variant).is_nan());
        }
    }

    #[test]
    #[allow(clippy::excessive_precision)]
    fn fdlibm_constants_are_the_published_bit_patterns() {
        // fdlibm states each constant as a decimal and its bits; both must name the same float.
        let pairs = [
            (8.8721679688e+01f32, 0x42b17180u32),
            (6.9313812256e-01, 0x3f317180),
            (9.0580006145e-06, 0x3717f7d1),
            (1.4426950216e+00, 0x3fb8aa3b),
            (-3.3333335072e-02, 0xbd088889),
            (1.5873016091e-03, 0x3ad00d01),
            (-7.9365076090e-05, 0xb8a670cd),
            (4.0082177293e-06, 0x36867e54),
            (-2.0109921195e-07, 0xb457edbb),
        ];
        for (dec, bits) in pairs {
            assert_eq!(dec.to_bits(), bits, "{dec:e}");
        }
    }

    #[test]
    fn tanhf_and_expm1f_are_within_one_ulp() {
        let mut x = -12.0f32;
        while x < 12.0 {
            let got = tanhf(x) as f64;
            let want = libm::tanh(x as f64);
            let ulp = libm::ldexp(1.0, libm::ilogb(want.abs().max(1e-30)) - 23);
            assert!((got - want).abs() <= 2.0 * ulp, "tanhf({x}) = {got}, exact {want}");
            let got = expm1f(x) as f64;
            let want = libm::expm1(x as f64);
            let ulp = libm::ldexp(1.0, libm::ilogb(want.abs().max(1e-30)) - 23);
            assert!((got - want).abs() <= 2.0 * ulp, "expm1f({x}) = {got}, exact {want}");
            x += 0.00731;
        }
        assert_eq!(tanhf(30.0), 1.0);
        assert_eq!(tanhf(-30.0), -1.0);
        assert_eq!(tanhf(0.0), 0.0);
        assert_eq!(expm1f(-100.0), -1.0);
    }

    #[test]
    fn s8_lut_order_and_values() {
        // Identity with equal scales and zero points: lut[x as u8] == x.
        let q = PerTensorQuant::new(0.1, 3);
        let lut = lut_populate_s8(q, q, |v| v);
        for x in -128i32..=127 {
            assert_eq!(lut[x as i8 as u8 as usize] as i32, x);
        }
        let mut out = [0i8; 4];
        lut_lookup_s8(&lut, &[-128, -1, 0, 127], &mut out);
        assert_eq!(out, [-128, -1, 0, 127]);
    }

    #[test]
    fn s16_lut_follows_a_linear_function() {
        // f(x) = x on matching scales: TFLite maps [-32768, 32767] onto 65536 steps of the output
        // range, so entries sit within one step of the input; the interpolation is monotonic.
        let s = 1.0f32 / 32768.0;
        let lut = lut_populate_s16_f32(s, 0, s, 0, |v| v);
        let mut prev = i16::MIN;
        for v in i16::MIN..=i16::MAX {
            let y = lut_lookup_s16(v, &lut);
            assert!((y as i32 - v as i32).abs() <= 1, "{v} -> {y}");
            assert!(y >= prev);
            prev = y;
        }
        let lut64 = lut_populate_s16_f64(s as f64, 0, s as f64, 0, |v| v);
        assert!((lut_lookup_s16(12345, &lut64) as i32 - 12345).abs() <= 1);
    }
}
