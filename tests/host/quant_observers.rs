//! Observers and the choose-qparams formulas against PyTorch (`torch.ao.quantization`) and
//! ONNX Runtime (`onnxruntime.quantization` calibrators and `compute_scale_zp`), on the same
//! calibration data (regenerated from SplitMix64 seeds). Every comparison is bit-exact unless
//! its comment says otherwise; the tolerances are printed in a table at the end.

use microquant::observer::{Binning, Histogram, NonFinitePolicy};
use microquant::observer::{
    ChannelObserver, EntropyObserver, HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver, Observer, ObserverConfig, PerChannelMinMaxObserver, PercentileObserver,
};
use microquant::quant::{self, ChooseOptions, Convention, QScheme, QuantDType, Shape, Tensor};
use microquant_tests::quant as golden;

fn torch_cfg(c: &golden::TorchConfig) -> ObserverConfig {
    let dt = match c.dtype.as_str() {
        "quint8" => QuantDType::UInt8,
        "qint8" => QuantDType::Int8,
        "qint32" => QuantDType::Int32,
        d => panic!("{d}"),
    };
    let scheme = if c.qscheme.contains("symmetric") { QScheme::Symmetric } else { QScheme::Affine };
    let mut cfg = ObserverConfig::new(dt, scheme).with_reduce_range(c.reduce_range);
    if let (Some(lo), Some(hi)) = (c.quant_min, c.quant_max) {
        cfg = cfg.with_qrange(lo, hi);
    }
    cfg
}

fn run<O: Observer>(o: &mut O, batches: &[Vec<f32>]) {
    for _ in 0..o.passes() {
        for b in batches {
            o.observe(b).unwrap();
        }
        o.end_pass().unwrap();
    }
}

fn sq(v: [f64; 4]) -> ((f32, f32), (f32, i32)) {
    ((v[0] as f32, v[1] as f32), (v[2] as f32, v[3] as i32))
}

fn qp<O: Observer>(o: &O) -> (f32, i32) {
    let p = o.qparams().unwrap();
    (p.scale(), p.zero_point())
}

/// `|a - b|` in units of the quantization step of `scale`.
fn steps(a: f32, b: f32, scale: f32) -> f64 {
    ((a as f64 - b as f64) / scale as f64).abs()
}

#[test]
fn pytorch_per_tensor_observers() {
    let g = golden::torch_golden();
    let (mut exact, mut hist_exact, mut hist_rows) = (0, 0, 0);
    let mut worst_batches = 0f64;
    let mut worst_streaming = 0f64;
    for row in &g.per_tensor {
        let cfg = torch_cfg(&g.configs[&row.config]);
        let data = golden::dataset(&row.dataset);
        let ctx = format!("{} {}", row.dataset, row.config);

        let mut o = MinMaxObserver::new(cfg);
        run(&mut o, &data);
        let (r, q) = sq(row.minmax);
        assert_eq!(o.range().unwrap(), r, "{ctx}: MinMax range");
        assert_eq!(qp(&o), q, "{ctx}: MinMax qparams");
        exact += 1;

        if let Some(ma) = row.moving_average {
            let mut o = MovingAverageMinMaxObserver::new(cfg);
            run(&mut o, &data);
            let (r, q) = sq(ma);
            assert_eq!(o.range().unwrap(), r, "{ctx}: MovingAverage range");
            assert_eq!(qp(&o), q, "{ctx}: MovingAverage qparams");
            exact += 1;
        }

        if let Some(h1) = row.histogram_one_batch {
            // Two-pass: the histogram is torch.histc over all the data and the L2 search
            // reproduces PyTorch's arithmetic: the range and qparams must be PyTorch's for the
            // data fed as one batch.
            let mut o = HistogramObserver::<2048>::two_pass(cfg);
            run(&mut o, &data);
            let (r, q) = sq(h1);
            assert_eq!(o.range().unwrap(), r, "{ctx}: Histogram (two-pass) range vs PyTorch one batch");
            assert_eq!(qp(&o), q, "{ctx}: Histogram (two-pass) qparams vs PyTorch one batch");
            hist_exact += 1;
            // PyTorch fed batch by batch re-bins by interpolation (order-dependent): compare
            // with a tolerance in quantization steps.
            let (rb, _) = sq(row.histogram_batches.unwrap());
            let (lo, hi) = o.range().unwrap();
            let s = q.0;
            worst_batches = worst_batches.max(steps(lo, rb.0, s)).max(steps(hi, rb.1, s));
            // Streaming (power-of-two bins): compare with PyTorch one batch, in steps.
            let mut st = HistogramObserver::<2048>::new(cfg);
            run(&mut st, &data);
            let (slo, shi) = st.range().unwrap();
            worst_streaming = worst_streaming.max(steps(slo, r.0, s)).max(steps(shi, r.1, s));
            hist_rows += 1;
        }
    }
    println!(
        "PyTorch per-tensor: {exact} MinMax/MovingAverage results and {hist_exact} HistogramObserver results bit-exact"
    );
    println!(
        "HistogramObserver: two-pass vs PyTorch batch-by-batch: worst {worst_batches:.2} quantization steps over {hist_rows} rows"
    );
    println!("HistogramObserver: streaming vs PyTorch one batch: worst {worst_streaming:.2} quantization steps");
    assert!(worst_batches <= 4.0, "two-pass vs PyTorch batches: {worst_batches} steps");
    assert!(worst_streaming <= 4.0, "streaming vs PyTorch: {worst_streaming} steps");
}

#[test]
fn torch_histc_binning_is_reproduced() {
    let g = golden::torch_golden();
    for (ds, b) in &g.histc {
        let want: Vec<i32> = golden::b64_u16(b).into_iter().map(i32::from).collect();
        let all: Vec<f32> = golden::dataset(ds).concat();
        let (lo, hi) = all.iter().fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
        let mut h = Histogram::<2048>::fixed(lo, hi, Binning::TorchHistc).unwrap();
        h.add(&all, |v| v, NonFinitePolicy::Error).unwrap();
        let got: Vec<i32> = h.counts().iter().map(|&c| c as i32).collect();
        assert_eq!(got, want, "{ds}: histc counts");
    }
}

#[test]
fn pytorch_per_channel_observers() {
    let g = golden::torch_golden();
    let mut n = 0;
    for row in &g.per_channel {
        let (dt, scheme, qr) = match row.config.as_str() {
            "quint8_affine" => (QuantDType::UInt8, QScheme::Affine, None),
            "qint8_affine" => (QuantDType::Int8, QScheme::Affine, None),
            "qint8_symmetric" => (QuantDType::Int8, QScheme::Symmetric, None),
            "qint8_symmetric_restricted" => (QuantDType::Int8, QScheme::Symmetric, Some((-127, 127))),
            c => panic!("{c}"),
        };
        let mut cfg = ObserverConfig::new(dt, scheme);
        if let Some((a, b)) = qr {
            cfg = cfg.with_qrange(a, b);
        }
        let (batches, shape, axis) = golden::channel_dataset(&row.dataset);
        assert_eq!(axis, row.axis);
        let shape = Shape::new(&shape).unwrap();
        let c = shape.dims()[axis];
        let mut mm = PerChannelMinMaxObserver::<16>::new(cfg, axis, c).unwrap();
        let mut ma = MovingAveragePerChannelMinMaxObserver::<16>::new(cfg, axis, c).unwrap();
        for b in &batches {
            mm.observe(&Tensor::new(b, shape).unwrap()).unwrap();
            ma.observe(&Tensor::new(b, shape).unwrap()).unwrap();
        }
        for (name, want) in [("minmax", &row.minmax), ("moving_average", &row.moving_average)] {
            let (mut lo, mut hi) = (vec![0f32; c], vec![0f32; c]);
            let (mut s, mut z) = (vec![0f32; c], vec![0i32; c]);
            if name == "minmax" {
                mm.ranges(&mut lo, &mut hi).unwrap();
                mm.qparams(&mut s, &mut z).unwrap();
            } else {
                ma.ranges(&mut lo, &mut hi).unwrap();
                ma.qparams(&mut s, &mut z).unwrap();
            }
            let ctx = format!("{} {} {name}", row.dataset, row.config);
            assert_eq!(lo, want.min, "{ctx}: min");
            assert_eq!(hi, want.max, "{ctx}: max");
            assert_eq!(s, want.scales, "{ctx}: scales");
            assert_eq!(z, want.zero_points, "{ctx}: zero points");
            n += c;
        }
    }
    println!("PyTorch per-channel observers: {n} channel results bit-exact");
}

#[test]
fn pytorch_choose_qparams_formula() {
    let g = golden::torch_golden();
    let rows = g.choose.parsed();
    let (mut n, mut overflow) = (0, 0);
    for (lo, hi, want) in &rows {
        for (name, w) in g.choose.configs.iter().zip(want) {
            let cfg = torch_cfg(&g.configs[name]);
            let p = cfg.qparams_for(*lo, *hi).unwrap();
            // PyTorch computes `quant_min - round(min / scale).to(torch.int)`: for qint32 the
            // rounded quotient can exceed int32 and wrap (PyTorch then reports zero point 0);
            // microquant does the arithmetic in i64 and saturates. Those cases compare the
            // scale only.
            let q = (lo.min(0.0) / p.scale()).round() as f64;
            if name == "qint32_affine" && (q < i32::MIN as f64 || q > i32::MAX as f64) {
                assert_eq!(p.scale(), w.0, "PyTorch {name} on [{lo:e}, {hi:e}]: scale");
                overflow += 1;
                continue;
            }
            assert_eq!((p.scale(), p.zero_point()), *w, "PyTorch {name} on [{lo:e}, {hi:e}]");
            n += 1;
        }
    }
    println!(
        "PyTorch formula: {n} (min, max, config) cases bit-exact over {} ranges; {overflow} qint32 cases where PyTorch's int32 zero point overflows (scale compared)",
        rows.len()
    );
}

fn ort_options(q: &golden::OrtQType) -> (QuantDType, ChooseOptions) {
    let dt = match q.name.split('_').next().unwrap() {
        "uint8" => QuantDType::UInt8,
        "int8" => QuantDType::Int8,
        "int16" => QuantDType::Int16,
        "uint16" => QuantDType::UInt16,
        n => panic!("{n}"),
    };
    let scheme = match (q.symmetric, dt.is_signed()) {
        (false, _) => QScheme::Affine,
        (true, true) => QScheme::SymmetricRestricted,
        (true, false) => QScheme::Symmetric,
    };
    (dt, ChooseOptions::new(scheme).convention(Convention::OnnxRuntime).reduce_range(q.reduce_range))
}

#[test]
fn onnxruntime_compute_scale_zp_formula() {
    let g = golden::ort_golden();
    let t = &g.compute_scale_zp;
    let mut n = 0;
    for (lo, hi, want) in t.parsed() {
        for (q, w) in t.qtypes.iter().zip(&want) {
            let (dt, o) = ort_options(q);
            let p = quant::choose_qparams_with(lo, hi, dt, &o).unwrap();
            assert_eq!((p.qmin(), p.qmax()), (q.qmin, q.qmax), "{}: range", q.name);
            assert_eq!((p.scale(), p.zero_point()), *w, "ORT {} on [{lo:e}, {hi:e}]", q.name);
            n += 1;
        }
    }
    println!("ORT compute_scale_zp: {n} cases bit-exact");
}

#[test]
fn onnx_dynamic_quantize_linear_on_data() {
    let g = golden::ort_golden();
    for r in &g.dynamic_quantize_linear {
        let x = &golden::batch(&r.dataset, r.batch)[..r.n];
        let mut y = vec![0u8; r.n];
        let p = quant::dynamic_quantize_linear(x, &mut y).unwrap();
        assert_eq!((p.scale(), p.zero_point()), (r.scale, r.zero_point), "{} {}", r.dataset, r.batch);
        assert_eq!(y, golden::b64_bytes(&r.y), "{} {}", r.dataset, r.batch);
    }
}

/// Runs our observer for an ORT calibrator configuration; returns (range, observer qparams per
/// ORT qtype).
fn ours_for_ort(c: &golden::OrtCalibration, data: &[Vec<f32>], streaming: bool) -> (f32, f32) {
    let cfg = ObserverConfig::new(QuantDType::UInt8, QScheme::Affine).with_convention(Convention::OnnxRuntime);
    let num = |k: &str, d: f64| c.options.get(k).and_then(|v| v.as_f64()).unwrap_or(d);
    let bins = num("num_bins", if c.method == "Percentile" { 2048.0 } else { 128.0 }) as usize;
    let symmetric = c.options.get("symmetric").and_then(|v| v.as_bool());
    macro_rules! go {
        ($o:expr) => {{
            let mut o = $o;
            run(&mut o, data);
            o.range().unwrap()
        }};
    }
    match c.method.as_str() {
        "MinMax" => {
            let (lo, hi) = go!(MinMaxObserver::new(cfg));
            if symmetric == Some(true) {
                let a = lo.abs().max(hi.abs());
                (-a, a)
            } else {
                (lo, hi)
            }
        }
        "Entropy" => {
            let nq = num("num_quantized_bins", 128.0) as usize;
            match (bins, streaming) {
                (128, false) => go!(EntropyObserver::<128>::two_pass(cfg, nq).unwrap()),
                (512, false) => go!(EntropyObserver::<512>::two_pass(cfg, nq).unwrap()),
                (2048, false) => go!(EntropyObserver::<2048>::two_pass(cfg, nq).unwrap()),
                (128, true) => go!(EntropyObserver::<128>::new(cfg, nq).unwrap()),
                (512, true) => go!(EntropyObserver::<512>::new(cfg, nq).unwrap()),
                (2048, true) => go!(EntropyObserver::<2048>::new(cfg, nq).unwrap()),
                b => panic!("{b:?}"),
            }
        }
        "Percentile" => {
            let p = num("percentile", 99.999);
            let sym = symmetric.unwrap_or(true);
            match (bins, streaming) {
                (512, false) => go!(PercentileObserver::<512>::two_pass(cfg, p, sym).unwrap()),
                (2048, false) => go!(PercentileObserver::<2048>::two_pass(cfg, p, sym).unwrap()),
                (512, true) => go!(PercentileObserver::<512>::new(cfg, p, sym).unwrap()),
                (2048, true) => go!(PercentileObserver::<2048>::new(cfg, p, sym).unwrap()),
                b => panic!("{b:?}"),
            }
        }
        m => panic!("{m}"),
    }
}

#[test]
fn onnxruntime_calibrators() {
    let g = golden::ort_golden();
    let qtypes = &g.compute_scale_zp.qtypes;
    let mut exact = 0;
    let mut mismatched = Vec::new();
    let mut worst_streaming: std::collections::BTreeMap<String, f64> = Default::default();
    for c in &g.calibrators {
        let data = golden::dataset(&c.dataset);
        let (lo, hi) = ours_for_ort(c, &data, false);
        let ctx = format!("{} {}", c.dataset, c.config);
        if (lo, hi) == (c.range[0], c.range[1]) {
            exact += 1;
        } else {
            mismatched.push(format!("{ctx}: ours [{lo:e}, {hi:e}], ORT [{:e}, {:e}]", c.range[0], c.range[1]));
        }
        // ORT's quantizer turns the range into parameters with compute_scale_zp: ours on ORT's
        // range must agree exactly.
        for (q, w) in qtypes.iter().zip(&c.qparams) {
            let (dt, o) = ort_options(q);
            let p = quant::choose_qparams_with(c.range[0], c.range[1], dt, &o).unwrap();
            assert_eq!((p.scale(), p.zero_point()), *w, "{ctx}: {}", q.name);
        }
        // Streaming histograms: tolerance in uint8 steps of ORT's range.
        if c.method != "MinMax" {
            let (slo, shi) = ours_for_ort(c, &data, true);
            let step = ((c.range[1] as f64 - c.range[0].min(0.0) as f64) / 255.0) as f32;
            let e = steps(slo, c.range[0], step).max(steps(shi, c.range[1], step));
            let w = worst_streaming.entry(c.config.clone()).or_default();
            *w = w.max(e);
        }
    }
    println!("ORT calibrators: {exact}/{} ranges bit-exact (two-pass)", g.calibrators.len());
    for m in &mismatched {
        println!("  differs: {m}");
    }
    for (k, v) in &worst_streaming {
        println!("ORT {k}: streaming vs ORT worst {v:.2} uint8 steps");
    }
    assert!(mismatched.is_empty(), "{} ranges differ", mismatched.len());
}

#[test]
fn tflite_converter_formula() {
    let c = golden::tflite_converter();
    let tfl = |scheme| ChooseOptions::new(scheme).convention(Convention::TfLite);
    // Ranges narrower than 1e-6 are widened by the converter before the formula; where that
    // lands the zero point exactly on a tie (-0.5), the converter's widening arithmetic is not
    // reproduced bit for bit: such a case may differ by one in the zero point (same scale).
    // Every other case must be exact.
    let (mut exact, mut tiny_ties) = (0, Vec::new());
    for r in &c.inputs {
        let p = quant::choose_qparams_with(r.min, r.max, QuantDType::Int8, &tfl(QScheme::Affine)).unwrap();
        if (p.scale(), p.zero_point()) == (r.scale, r.zero_point) {
            exact += 1;
            continue;
        }
        let width = r.max.max(0.0) as f64 - r.min.min(0.0) as f64;
        assert!(
            width <= 1e-6 && p.scale() == r.scale && (p.zero_point() - r.zero_point).abs() == 1,
            "TFLite input on [{:e}, {:e}]: ours ({:e}, {}), converter ({:e}, {})",
            r.min,
            r.max,
            p.scale(),
            p.zero_point(),
            r.scale,
            r.zero_point
        );
        tiny_ties.push(format!(
            "[{:e}, {:e}]: zero point {} vs converter {}",
            r.min,
            r.max,
            p.zero_point(),
            r.zero_point
        ));
    }
    println!("TFLite converter inputs: {exact}/{} bit-exact", c.inputs.len());
    for t in &tiny_ties {
        println!("  sub-1e-6 range, zero-point tie: {t}");
    }
    assert!(tiny_ties.len() <= 1);
    let mut nw = 0;
    for w in &c.weights {
        let (out, inn) = (w.shape[0], w.shape[1]);
        for ch in 0..out {
            let row = &w.w[ch * inn..(ch + 1) * inn];
            let (lo, hi) = row.iter().fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
            let p = quant::choose_qparams_with(lo, hi, QuantDType::Int8, &tfl(QScheme::SymmetricRestricted)).unwrap();
            assert_eq!((p.scale(), p.zero_point()), (w.scales[ch], w.zero_points[ch]), "TFLite weight channel");
            assert_eq!((p.qmin(), p.qmax()), (-127, 127));
            let mut q = vec![0i8; inn];
            p.quantize_i8(row, &mut q).unwrap();
            for (k, &v) in q.iter().enumerate() {
                assert_eq!(v as i32, w.q[ch * inn + k], "TFLite weight {k} of channel {ch}");
            }
            nw += 1;
        }
    }
    println!("TFLite converter weights: {nw} channels bit-exact (scale and every int8 value)");
}
