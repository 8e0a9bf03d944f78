//! The quantization core's device entry points.

use core::hint::black_box;
use microquant::quant::QuantDType;

/// The quantization core's device entry points: per-tensor, per-channel and packed quantize and
/// dequantize, fake quantization with its mask, requantization, parameter choice, observers
/// (min/max, histogram L2 search, entropy, percentile, per channel), float8 conversions and the
/// per-channel requantization helpers.
#[inline(never)]
pub(crate) fn quant_core() {
    use microquant::observer::{
        ChannelObserver, EntropyObserver, FakeQuantize, HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver,
        Observer, ObserverConfig, PerChannelMinMaxObserver, PercentileObserver,
    };
    use microquant::quant::{
        self, ChannelQParams, ChooseOptions, Convention, I4, QParams, QScheme, QTensor, QTensorMut, Shape, Tensor,
        minifloat,
    };
    use microquant::requant::Rounding;

    let x: &[f32] = black_box(&[0.5, -1.0, 2.0, 3.5, -0.25, 7.0]);
    let dims: &[usize] = black_box(&[2, 3]);
    let Ok(shape) = Shape::new(dims) else { return };
    let Ok(xt) = Tensor::new(x, shape) else { return };
    // Per-channel (any axis) quantize and dequantize.
    let scales: &[f32] = black_box(&[0.05, 0.1, 0.2]);
    let zps: &[i32] = black_box(&[0, -3, 5]);
    let axis = black_box(1usize);
    if let Ok(cp) = ChannelQParams::blocked(scales, zps, QuantDType::Int8, axis, black_box(0)) {
        let mut q = [0i8; 6];
        if let Ok(mut qt) = QTensorMut::<i8>::new(&mut q, shape, cp.into()) {
            let _ = black_box(quant::quantize(&xt, &mut qt));
        }
        let mut dq = [0f32; 6];
        if let Ok(t) = QTensor::<i8>::new(black_box(&q[..]), shape, cp.into()) {
            let _ = black_box(t.dequantize(&mut dq));
        }
        let mut mask = [false; 6];
        let _ = black_box(quant::fake_quantize(&xt, &cp.into(), &mut dq, Some(&mut mask)));
    }
    // Packed int4 and requantization int8 -> int8 (TFLite's integer path).
    if let (Ok(p4), Ok(p8), Ok(po)) = (
        QParams::new(black_box(0.5), 0, QuantDType::Int4),
        QParams::new(black_box(0.03), black_box(-2), QuantDType::Int8),
        QParams::new(black_box(0.07), black_box(4), QuantDType::Int8),
    ) {
        let mut q4 = [0u8; 3];
        if let Ok(mut qt) = QTensorMut::<I4>::new(&mut q4, shape, p4.into()) {
            let _ = black_box(quant::quantize(&xt, &mut qt));
        }
        let mut a = [0i8; 6];
        let mut b = [0i8; 6];
        let _ = black_box(p8.with_convention(black_box(Convention::TfLite)).quantize_i8(x, &mut a));
        if let (Ok(i), Ok(mut o)) =
            (QTensor::<i8>::new(&a, shape, p8.into()), QTensorMut::<i8>::new(&mut b, shape, po.into()))
        {
            let _ = black_box(quant::requantize(&i, &mut o, black_box(Rounding::Double)));
        }
    }
    let mut u = [0u8; 6];
    let _ = black_box(quant::dynamic_quantize_linear(x, &mut u));
    let opts = ChooseOptions::new(black_box(QScheme::Affine))
        .convention(black_box(Convention::OnnxRuntime))
        .reduce_range(black_box(true));
    let _ = black_box(quant::choose_qparams_with(black_box(-1.0), black_box(3.0), QuantDType::UInt8, &opts));
    black_box(minifloat::f32_to_f8e4m3fn(black_box(3.3), black_box(true)));
    black_box(minifloat::f32_to_f8e5m2(black_box(-70000.0), black_box(false)));
    black_box(minifloat::f32_to_f4e2m1(black_box(5.0)));
    black_box(minifloat::f32_to_f16_bits(black_box(1e-6)));
    black_box(minifloat::f8e4m3fn_to_f32(black_box(0x7E)));

    // Observers: observe, merge, passes, qparams.
    let cfg = ObserverConfig::new(QuantDType::Int8, black_box(QScheme::Symmetric));
    let mut mm = MinMaxObserver::new(cfg);
    let _ = black_box(mm.observe(x));
    let _ = black_box(mm.merge(&MinMaxObserver::new(cfg)));
    let _ = black_box(mm.qparams());
    let mut ma = MovingAverageMinMaxObserver::new(cfg);
    let _ = black_box(ma.observe(x));
    let _ = black_box(ma.qparams());
    let mut fq = FakeQuantize::new(MinMaxObserver::new(cfg));
    fq.enable_observer(black_box(true));
    let mut out = [0f32; 6];
    let _ = black_box(fq.forward(x, &mut out, None));
    let mut h = HistogramObserver::<64>::two_pass(cfg);
    let Ok(mut e) = EntropyObserver::<64>::new(cfg, black_box(16)) else { return };
    let Ok(mut pc) = PercentileObserver::<64>::two_pass(cfg, black_box(99.9), black_box(true)) else { return };
    for _ in 0..2 {
        let _ = black_box(h.observe(x));
        let _ = black_box(e.observe(x));
        let _ = black_box(pc.observe(x));
        let _ = black_box(h.end_pass());
        let _ = black_box(pc.end_pass());
    }
    let _ = black_box(h.qparams());
    let _ = black_box(e.qparams());
    let _ = black_box(pc.qparams());
    let mut streaming = HistogramObserver::<64>::new(cfg);
    let _ = black_box(streaming.observe(x));
    let _ = black_box(streaming.merge(&HistogramObserver::<64>::new(cfg)));
    let _ = black_box(streaming.qparams());
    if let Ok(mut pco) = PerChannelMinMaxObserver::<4>::new(cfg, axis, black_box(3)) {
        let _ = black_box(pco.observe(&xt));
        let (mut s, mut z) = ([0f32; 3], [0i32; 3]);
        let _ = black_box(pco.qparams(&mut s, &mut z).map(|p| p.scales().len()));
    }
    // Per-channel requantization helpers.
    let (mut m, mut sh) = ([0i32; 3], [0i32; 3]);
    let _ = black_box(microquant::requant::quantize_multipliers_per_channel(
        black_box(0.02),
        scales,
        black_box(0.1),
        Rounding::Single,
        &mut m,
        &mut sh,
    ));
    let acc: &[i32] = black_box(&[100, -200, 300, 4000, -5000, 6]);
    let mut o8 = [0i8; 6];
    let _ = black_box(microquant::requant::requantize_per_channel_s8(
        acc,
        &m,
        &sh,
        black_box(Rounding::Double),
        3,
        -128,
        127,
        &mut o8,
    ));
}
