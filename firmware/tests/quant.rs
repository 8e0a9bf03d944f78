//! The quantization core on the device (QEMU Cortex-M4F and Cortex-M0), against the same golden
//! data as the host and wasm tests, bit for bit: every ONNX backend node test, the
//! requantization sample in both roundings, TFLite's QUANTIZE kernel, a sample of the
//! float8/float16 casts, and observers (PyTorch MinMax/MovingAverage, ONNX Runtime entropy and
//! percentile) on data regenerated here from the same SplitMix64 seeds.
#![no_std]
#![no_main]

use microquant_firmware as _; // logger, panic and fault handlers

#[allow(dead_code)]
#[path = "../../tests/src/rng.rs"]
mod rng;

/// The "heavy" calibration data set of tests/gen/gen_quant_data.py, generated in chunks (the
/// whole set would not fit the micro:bit's RAM).
pub struct Heavy;

impl Heavy {
    pub const BATCHES: u64 = 4;
    pub const BATCH: usize = 4096;
    /// Calls `f` on consecutive chunks of batch `b`.
    pub fn batch(b: u64, mut f: impl FnMut(&[f32])) {
        let mut r = rng::SplitMix64::new(2002 + b);
        let mut chunk = [0f32; 256];
        let mut done = 0;
        while done < Self::BATCH {
            for v in chunk.iter_mut() {
                let mut u = [0f32; 5];
                for w in u.iter_mut() {
                    *w = (r.next_u64() >> 40) as f32 * (1.0 / 16_777_216.0);
                }
                let mut s = u[0] + u[1];
                s += u[2];
                s += u[3];
                s -= 2.0;
                let z = s * 1.732_050_8;
                *v = if u[4] < 0.01 { z * 30.0 } else { z };
            }
            f(&chunk);
            done += chunk.len();
        }
    }
}

use microquant::observer::{
    EntropyObserver, MinMaxObserver, MovingAverageMinMaxObserver, Observer, ObserverConfig, PercentileObserver,
};
use microquant::quant::{
    self, ChannelQParams, Convention, F4E2M1, F8E4M3FN, F8E5M2, I2, I4, QParams, QScheme, QTensor, QTensorMut,
    QuantDType, QuantElement, QuantParams, Shape, Tensor, U2, U4, minifloat,
};
use microquant::requant::{self, Rounding};
use microquant_firmware::golden_quant::*;

/// Storage units <-> little-endian bytes, without allocation.
trait Le: QuantElement {
    fn read(b: &[u8], out: &mut [Self::Unit]) -> usize;
    fn write(u: &[Self::Unit], out: &mut [u8]) -> usize;
}
macro_rules! le {
    ($t:ty, $n:expr, $from:expr, $to:expr) => {
        impl Le for $t {
            fn read(b: &[u8], out: &mut [Self::Unit]) -> usize {
                let mut k = 0;
                for (o, c) in out.iter_mut().zip(b.chunks_exact($n)) {
                    *o = $from(c);
                    k += 1;
                }
                k
            }
            fn write(u: &[Self::Unit], out: &mut [u8]) -> usize {
                let mut k = 0;
                for (v, o) in u.iter().zip(out.chunks_exact_mut($n)) {
                    o.copy_from_slice(&$to(*v));
                    k += $n;
                }
                k
            }
        }
    };
}
le!(i8, 1, |c: &[u8]| c[0] as i8, |v: i8| v.to_le_bytes());
le!(u8, 1, |c: &[u8]| c[0], |v: u8| v.to_le_bytes());
le!(i16, 2, |c: &[u8]| i16::from_le_bytes([c[0], c[1]]), |v: i16| v.to_le_bytes());
le!(u16, 2, |c: &[u8]| u16::from_le_bytes([c[0], c[1]]), |v: u16| v.to_le_bytes());
le!(i32, 4, |c: &[u8]| i32::from_le_bytes([c[0], c[1], c[2], c[3]]), |v: i32| v.to_le_bytes());
le!(I4, 1, |c: &[u8]| c[0], |v: u8| v.to_le_bytes());
le!(U4, 1, |c: &[u8]| c[0], |v: u8| v.to_le_bytes());
le!(I2, 1, |c: &[u8]| c[0], |v: u8| v.to_le_bytes());
le!(U2, 1, |c: &[u8]| c[0], |v: u8| v.to_le_bytes());
le!(F8E4M3FN, 1, |c: &[u8]| c[0], |v: u8| v.to_le_bytes());
le!(F8E5M2, 1, |c: &[u8]| c[0], |v: u8| v.to_le_bytes());
le!(F4E2M1, 1, |c: &[u8]| c[0], |v: u8| v.to_le_bytes());

const MAX: usize = 64;

/// Runs one ONNX case for element type `E`; returns the output bytes written to `out`.
#[inline(never)]
fn onnx_case<E: Le>(c: &OnnxCase, out: &mut [u8; 4 * MAX]) -> usize {
    let shape = Shape::new(c.shape).unwrap();
    let n = shape.len();
    // Zero points: codes of the raw zero-point tensor (float types: +0).
    let mut zunits = [E::Unit::default(); 16];
    let zn = E::read(c.zp, &mut zunits);
    let nz = if c.zp.is_empty() { 0 } else { c.scales.len() };
    let mut zps = [0i32; 16];
    for (i, z) in zps.iter_mut().enumerate().take(nz) {
        let code = quant::element_code::<E>(&zunits[..zn], i).unwrap();
        *z = if E::DTYPE.is_float() { 0 } else { code };
    }
    let params: QuantParams<'_> = if c.scales.len() == 1 && c.block == 0 {
        QParams::new(c.scales[0], zps[0], E::DTYPE).unwrap().into()
    } else {
        let axis = if c.axis < 0 { c.axis + c.shape.len() as i64 } else { c.axis } as usize;
        ChannelQParams::blocked(c.scales, &zps[..nz], E::DTYPE, axis, c.block as usize).unwrap().into()
    };
    let mut units = [E::Unit::default(); MAX];
    let nu = E::DTYPE.storage_len(n);
    if c.op == 0 {
        let mut q = QTensorMut::<E>::new(&mut units[..nu], shape, params).unwrap();
        quant::quantize(&Tensor::new(c.x_f32, shape).unwrap(), &mut q).unwrap();
        E::write(&units[..nu], &mut out[..])
    } else {
        let k = E::read(c.x, &mut units);
        let q = QTensor::<E>::new(&units[..k], shape, params).unwrap();
        if c.f16_out {
            let mut h = [0u16; MAX];
            q.dequantize_f16(&mut h[..n]).unwrap();
            for (o, v) in out.chunks_exact_mut(2).zip(&h[..n]) {
                o.copy_from_slice(&v.to_le_bytes());
            }
            2 * n
        } else {
            let mut f = [0f32; MAX];
            q.dequantize(&mut f[..n]).unwrap();
            for (o, v) in out.chunks_exact_mut(4).zip(&f[..n]) {
                o.copy_from_slice(&v.to_le_bytes());
            }
            4 * n
        }
    }
}

#[inline(never)]
fn tflite_codes<E: QuantElement>(c: &TfliteCase, out_dt: QuantDType, got: &mut [i32; 128]) -> usize {
    let n = c.y.len();
    let pout = QParams::new(c.out_scale, c.out_zp, out_dt).unwrap().with_convention(Convention::TfLite);
    let mut out = [E::Unit::default(); 128];
    if c.in_dtype == 255 {
        let mut q = QTensorMut::<E>::new(&mut out[..n], Shape::vector(n), pout.into()).unwrap();
        quant::quantize(&Tensor::from_slice(c.x_f32), &mut q).unwrap();
    } else {
        #[inline(never)]
        fn input<A: QuantElement, E: QuantElement>(c: &TfliteCase, dt: QuantDType, pout: QParams, out: &mut [E::Unit]) {
            let n = c.x_int.len();
            let mut u = [A::Unit::default(); 128];
            for (i, &v) in c.x_int.iter().enumerate() {
                quant::set_element_code::<A>(&mut u[..n], i, v);
            }
            let pin = QParams::new(c.in_scale, c.in_zp, dt).unwrap();
            let qi = QTensor::<A>::new(&u[..n], Shape::vector(n), pin.into()).unwrap();
            let mut qo = QTensorMut::<E>::new(out, Shape::vector(n), pout.into()).unwrap();
            quant::requantize(&qi, &mut qo, Rounding::Double).unwrap();
        }
        match c.in_dtype {
            0 => input::<i8, E>(c, QuantDType::Int8, pout, &mut out[..n]),
            1 => input::<u8, E>(c, QuantDType::UInt8, pout, &mut out[..n]),
            _ => input::<i16, E>(c, QuantDType::Int16, pout, &mut out[..n]),
        }
    }
    for (i, g) in got.iter_mut().enumerate().take(n) {
        *g = quant::element_code::<E>(&out[..n], i).unwrap();
    }
    n
}

#[defmt_test::tests]
mod tests {
    use super::*;
    use defmt::{assert, assert_eq};

    #[test]
    fn onnx_backend_node_tests() {
        let mut out = [0u8; 4 * MAX];
        let mut checked = 0usize;
        for c in ONNX_CASES {
            let n = if c.op == 2 {
                let mut y = [0u8; MAX];
                let x = c.x_f32;
                let p = quant::dynamic_quantize_linear(x, &mut y[..x.len()]).unwrap();
                out[..x.len()].copy_from_slice(&y[..x.len()]);
                out[x.len()..x.len() + 4].copy_from_slice(&p.scale().to_le_bytes());
                out[x.len() + 4] = p.zero_point() as u8;
                x.len() + 5
            } else {
                match c.dtype {
                    0 => onnx_case::<i8>(c, &mut out),
                    1 => onnx_case::<u8>(c, &mut out),
                    2 => onnx_case::<i16>(c, &mut out),
                    3 => onnx_case::<u16>(c, &mut out),
                    4 => onnx_case::<i32>(c, &mut out),
                    5 => onnx_case::<I4>(c, &mut out),
                    6 => onnx_case::<U4>(c, &mut out),
                    7 => onnx_case::<I2>(c, &mut out),
                    8 => onnx_case::<U2>(c, &mut out),
                    9 => onnx_case::<F8E4M3FN>(c, &mut out),
                    10 => onnx_case::<F8E5M2>(c, &mut out),
                    _ => onnx_case::<F4E2M1>(c, &mut out),
                }
            };
            assert_eq!(n, c.expected.len(), "{=str}: output length", c.name);
            for (i, (&o, &e)) in out[..n].iter().zip(&c.expected[..n]).enumerate() {
                assert_eq!(o, e, "{=str}: byte {=usize}", c.name, i);
            }
            checked += 1;
        }
        defmt::info!("ONNX backend node tests: {=usize}/{=usize} passed", checked, ONNX_CASES.len());
        assert_eq!(checked, 33);
    }

    #[test]
    fn requant_sample_both_roundings() {
        let mut singles = 0u32;
        for &(x, m, s, d, sg, has_single) in REQUANT {
            assert_eq!(
                requant::multiply_by_quantized_multiplier(x, m, s),
                d,
                "double x={=i32} m={=i32} s={=i32}",
                x,
                m,
                s
            );
            if has_single {
                assert_eq!(
                    requant::multiply_by_quantized_multiplier_single(x, m, s),
                    sg,
                    "single x={=i32} m={=i32} s={=i32}",
                    x,
                    m,
                    s
                );
                singles += 1;
            }
        }
        defmt::info!("requant: {=usize} double + {=u32} single rounding results bit-exact", REQUANT.len(), singles);
    }

    #[test]
    fn tflite_quantize_kernel() {
        let mut values = 0;
        for c in TFLITE_CASES {
            let mut got = [0i32; 128];
            let n = match c.out_dtype {
                0 => tflite_codes::<i8>(c, QuantDType::Int8, &mut got),
                1 => tflite_codes::<u8>(c, QuantDType::UInt8, &mut got),
                _ => tflite_codes::<i16>(c, QuantDType::Int16, &mut got),
            };
            for (i, (&g, &y)) in got[..n].iter().zip(&c.y[..n]).enumerate() {
                assert_eq!(g, y, "{=str}: [{=usize}]", c.name, i);
            }
            values += n;
        }
        defmt::info!("TFLite QUANTIZE: {=usize} cases, {=usize} values bit-exact", TFLITE_CASES.len(), values);
    }

    #[test]
    fn minifloat_casts() {
        for &(x, e4s, e4, e5s, e5, h) in MINIFLOAT {
            assert_eq!(minifloat::f32_to_f8e4m3fn(x, true), e4s, "e4m3fn sat {=u32:#x}", x.to_bits());
            assert_eq!(minifloat::f32_to_f8e4m3fn(x, false), e4, "e4m3fn {=u32:#x}", x.to_bits());
            assert_eq!(minifloat::f32_to_f8e5m2(x, true), e5s, "e5m2 sat {=u32:#x}", x.to_bits());
            assert_eq!(minifloat::f32_to_f8e5m2(x, false), e5, "e5m2 {=u32:#x}", x.to_bits());
            assert_eq!(minifloat::f32_to_f16_bits(x), h, "f16 {=u32:#x}", x.to_bits());
        }
        defmt::info!("float8/float16 casts: {=usize} inputs bit-exact with ml_dtypes", MINIFLOAT.len());
    }

    #[test]
    fn observers_match_pytorch_and_onnxruntime() {
        let cfg = ObserverConfig::new(QuantDType::UInt8, QScheme::Affine);
        // PyTorch MinMaxObserver and MovingAverageMinMaxObserver (per-batch minima and maxima).
        let mut mm = MinMaxObserver::new(cfg);
        let mut ma = MovingAverageMinMaxObserver::new(cfg);
        for b in 0..Heavy::BATCHES {
            let mut batch = MinMaxObserver::new(cfg);
            Heavy::batch(b, |x| {
                mm.observe(x).unwrap();
                batch.observe(x).unwrap();
            });
            let (lo, hi) = batch.range().unwrap();
            ma.observe(&[lo, hi]).unwrap();
        }
        for (o, want) in
            [(&mm as &dyn Observer, TORCH_MINMAX_HEAVY), (&ma as &dyn Observer, TORCH_MOVING_AVERAGE_HEAVY)]
        {
            let p = o.qparams().unwrap();
            assert_eq!(o.range().unwrap(), (want.0, want.1));
            assert_eq!((p.scale(), p.zero_point()), (want.2, want.3));
        }
        // ONNX Runtime EntropyCalibrater (128 bins) and PercentileCalibrater (512 bins, 99.9),
        // two passes over the data.
        let ort = cfg.with_convention(Convention::OnnxRuntime);
        let mut e = EntropyObserver::<128>::two_pass(ort, 128).unwrap();
        let mut p = PercentileObserver::<512>::two_pass(ort, 99.9, true).unwrap();
        for _ in 0..2 {
            for b in 0..Heavy::BATCHES {
                Heavy::batch(b, |x| {
                    e.observe(x).unwrap();
                    p.observe(x).unwrap();
                });
            }
            e.end_pass().unwrap();
            p.end_pass().unwrap();
        }
        assert_eq!(e.range().unwrap(), ORT_ENTROPY_DEFAULT_HEAVY);
        assert_eq!(p.range().unwrap(), ORT_PERCENTILE_512_99_9_HEAVY);
        assert!(p.qparams().unwrap().scale() > 0.0);
        defmt::info!("observers: PyTorch MinMax/MovingAverage and ORT entropy/percentile bit-exact on the device");
    }
}
