//! The kernel and model golden files load and are self-consistent: every tensor decodes to as
//! many elements as its shape says, dtypes are the ones each family promises, output shapes follow
//! from the input shapes and options, quantization parameters are in range, names are unique and
//! the stored oracle statistics match the data, and every `*_split_*` case has the two oracles
//! differ. (The kernels themselves are tested against these files in `kernels_*.rs`.)

use std::collections::HashSet;

use microquant_tests::golden::Tensor;
use microquant_tests::kernels::{self, KernelCase, KernelFile, Oracle, Padding};

/// Decodes a tensor as integers of its dtype (checking byte length vs shape).
fn ints(t: &Tensor) -> Vec<i64> {
    match t.dtype.as_str() {
        "int8" => t.i8().into_iter().map(i64::from).collect(),
        "int16" => t.i16().into_iter().map(i64::from).collect(),
        "int32" => t.i32().into_iter().map(i64::from).collect(),
        "int64" => t.i64(),
        d => panic!("unexpected dtype {d}"),
    }
}

fn act_dtype(is16: bool) -> &'static str {
    if is16 { "int16" } else { "int8" }
}

fn check_zero_point(case: &str, zp: i32, dtype: &str) {
    match dtype {
        "int8" => assert!((-128..=127).contains(&zp), "{case}: zero point {zp}"),
        "int16" => assert_eq!(zp, 0, "{case}: int16 zero point must be 0"),
        d => panic!("{case}: dtype {d}"),
    }
}

fn check_scale(case: &str, s: f32) {
    assert!(s.is_finite() && s > 0.0, "{case}: scale {s}");
}

/// Common checks of a file; returns the number of cases.
fn check_file<C: KernelCase>(f: &KernelFile<C>, op: &str) -> usize {
    assert_eq!(f.op, op);
    assert!(!f.cases.is_empty(), "{op}: no cases");
    assert!(f.tools.contains_key("tflite-micro") && f.tools.contains_key("ai-edge-litert"));
    let mut names = HashSet::new();
    let (mut differing, mut elements, mut elements_differing, mut max_diff) = (0, 0, 0, 0i64);
    for c in &f.cases {
        assert!(names.insert(c.name().to_string()), "duplicate case name {}", c.name());
        let a = c.expected(Oracle::Tflm);
        let b = c.expected(Oracle::TfliteRef);
        assert_eq!(a.shape, b.shape, "{}: oracle output shapes", c.name());
        assert_eq!(a.dtype, b.dtype, "{}: oracle output dtypes", c.name());
        let (a, b) = (ints(a), ints(b));
        let n = a.iter().zip(&b).filter(|(x, y)| x != y).count();
        elements += a.len();
        elements_differing += n;
        differing += usize::from(n > 0);
        max_diff = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(max_diff, i64::max);
    }
    let s = &f.stats;
    assert_eq!(
        (s.cases, s.cases_differing, s.elements, s.elements_differing, s.max_abs_diff),
        (f.cases.len(), differing, elements, elements_differing, max_diff),
        "{op}: stored statistics vs data"
    );
    f.cases.len()
}

fn out_size(n: usize, k: usize, s: usize, d: usize, p: Padding) -> usize {
    let dk = (k - 1) * d + 1;
    match p {
        Padding::Same => n.div_ceil(s),
        Padding::Valid => (n + 1).saturating_sub(dk).div_ceil(s),
    }
}

#[test]
fn fully_connected_files_are_consistent() {
    for (f, is16) in [(kernels::fully_connected_file(), false), (kernels::fully_connected_16x8_file(), true)] {
        let n = check_file(&f, "FULLY_CONNECTED");
        for c in &f.cases {
            let nm = &c.name;
            assert_eq!(c.input.dtype, act_dtype(is16), "{nm}");
            assert_eq!(c.expected_tflm.dtype, act_dtype(is16), "{nm}");
            check_zero_point(nm, c.input_zero_point, &c.input.dtype);
            check_zero_point(nm, c.output_zero_point, &c.input.dtype);
            check_scale(nm, c.input_scale);
            check_scale(nm, c.output_scale);
            let x = ints(&c.input);
            let w = c.filter.i8();
            assert_eq!(c.filter.shape.len(), 2, "{nm}");
            let (outs, depth) = (c.filter.shape[0], c.filter.shape[1]);
            assert_eq!(w.len(), outs * depth);
            assert!(w.iter().all(|&v| v != i8::MIN), "{nm}: symmetric weights are in [-127, 127]");
            assert!(c.filter_scales.len() == 1 || c.filter_scales.len() == outs, "{nm}");
            c.filter_scales.iter().for_each(|&s| check_scale(nm, s));
            if let Some(b) = &c.bias {
                assert_eq!(b.dtype, if is16 { "int64" } else { "int32" }, "{nm}");
                assert_eq!(ints(b).len(), outs, "{nm}");
            }
            assert_eq!(*c.input.shape.last().unwrap(), depth, "{nm}");
            let batch = x.len() / depth;
            let want: Vec<usize> = if c.keep_num_dims {
                let mut s = c.input.shape.clone();
                *s.last_mut().unwrap() = outs;
                s
            } else {
                vec![batch, outs]
            };
            assert_eq!(c.expected_tflm.shape, want, "{nm}: output shape");
        }
        println!("{}: {n} cases", if is16 { "fully_connected_16x8" } else { "fully_connected" });
    }
}

#[test]
fn conv_2d_files_are_consistent() {
    for (f, is16) in [(kernels::conv_2d_file(), false), (kernels::conv_2d_16x8_file(), true)] {
        let n = check_file(&f, "CONV_2D");
        for c in &f.cases {
            let nm = &c.name;
            assert_eq!(c.input.dtype, act_dtype(is16), "{nm}");
            assert_eq!(c.expected_tflm.dtype, act_dtype(is16), "{nm}");
            check_zero_point(nm, c.input_zero_point, &c.input.dtype);
            check_zero_point(nm, c.output_zero_point, &c.input.dtype);
            check_scale(nm, c.input_scale);
            check_scale(nm, c.output_scale);
            let x = ints(&c.input);
            assert_eq!(x.len(), c.input.len());
            let [nb, h, w, ic] = c.input.shape[..] else { panic!("{nm}: input rank") };
            let [oc, kh, kw, fic] = c.filter.shape[..] else { panic!("{nm}: filter rank") };
            assert_eq!(fic, ic, "{nm}: filter depth");
            let wts = c.filter.i8();
            assert!(wts.iter().all(|&v| v != i8::MIN), "{nm}");
            assert!(c.filter_scales.len() == 1 || c.filter_scales.len() == oc, "{nm}");
            let b = c.bias.as_ref().expect("conv cases have a bias");
            assert_eq!(b.dtype, if is16 { "int64" } else { "int32" }, "{nm}");
            assert_eq!(ints(b).len(), oc, "{nm}");
            let oh = out_size(h, kh, c.stride_h, c.dilation_h, c.padding);
            let ow = out_size(w, kw, c.stride_w, c.dilation_w, c.padding);
            assert_eq!(c.expected_tflm.shape, vec![nb, oh, ow, oc], "{nm}: output shape");
            assert_eq!(ints(&c.expected_tflm).len(), nb * oh * ow * oc);
        }
        println!("{}: {n} cases", if is16 { "conv_2d_16x8" } else { "conv_2d" });
    }
}

#[test]
fn depthwise_conv_2d_files_are_consistent() {
    for (f, is16) in [(kernels::depthwise_conv_2d_file(), false), (kernels::depthwise_conv_2d_16x8_file(), true)] {
        let n = check_file(&f, "DEPTHWISE_CONV_2D");
        for c in &f.cases {
            let nm = &c.name;
            assert_eq!(c.input.dtype, act_dtype(is16), "{nm}");
            assert_eq!(c.expected_tflm.dtype, act_dtype(is16), "{nm}");
            check_zero_point(nm, c.input_zero_point, &c.input.dtype);
            check_zero_point(nm, c.output_zero_point, &c.input.dtype);
            check_scale(nm, c.input_scale);
            check_scale(nm, c.output_scale);
            assert_eq!(ints(&c.input).len(), c.input.len());
            let [nb, h, w, ic] = c.input.shape[..] else { panic!("{nm}: input rank") };
            let [one, kh, kw, oc] = c.filter.shape[..] else { panic!("{nm}: filter rank") };
            assert_eq!(one, 1, "{nm}");
            assert_eq!(oc, ic * c.depth_multiplier, "{nm}: out channels = in channels x multiplier");
            assert!(c.filter.i8().iter().all(|&v| v != i8::MIN), "{nm}");
            assert!(c.filter_scales.len() == 1 || c.filter_scales.len() == oc, "{nm}");
            if let Some(b) = &c.bias {
                assert_eq!(b.dtype, if is16 { "int64" } else { "int32" }, "{nm}");
                assert_eq!(ints(b).len(), oc, "{nm}");
            } else {
                assert!(nm.ends_with("_nobias"), "{nm}");
            }
            let oh = out_size(h, kh, c.stride_h, c.dilation_h, c.padding);
            let ow = out_size(w, kw, c.stride_w, c.dilation_w, c.padding);
            assert_eq!(c.expected_tflm.shape, vec![nb, oh, ow, oc], "{nm}: output shape");
            assert_eq!(ints(&c.expected_tflm).len(), nb * oh * ow * oc);
        }
        println!("{}: {n} cases", if is16 { "depthwise_conv_2d_16x8" } else { "depthwise_conv_2d" });
    }
}

#[test]
fn pool_files_are_consistent() {
    for (f, op) in [(kernels::max_pool_2d_file(), "MAX_POOL_2D"), (kernels::average_pool_2d_file(), "AVERAGE_POOL_2D")]
    {
        let n = check_file(&f, op);
        for c in &f.cases {
            let nm = &c.name;
            assert_eq!(c.input.dtype, "int8", "{nm}");
            assert_eq!(c.expected_tflm.dtype, "int8", "{nm}");
            check_zero_point(nm, c.input_zero_point, "int8");
            assert_eq!((c.input_scale, c.input_zero_point), (c.output_scale, c.output_zero_point), "{nm}");
            check_scale(nm, c.input_scale);
            assert_eq!(c.input.i8().len(), c.input.len());
            let [nb, h, w, ch] = c.input.shape[..] else { panic!("{nm}: input rank") };
            let oh = out_size(h, c.filter_h, c.stride_h, 1, c.padding);
            let ow = out_size(w, c.filter_w, c.stride_w, 1, c.padding);
            assert_eq!(c.expected_tflm.shape, vec![nb, oh, ow, ch], "{nm}: output shape");
            assert_eq!(c.expected_tflm.i8().len(), nb * oh * ow * ch);
        }
        println!("{op}: {n} cases");
    }
}

fn broadcast(a: &[usize], b: &[usize]) -> Vec<usize> {
    let n = a.len().max(b.len());
    let ext = |s: &[usize], i: usize| {
        if i + s.len() >= n { s[i + s.len() - n] } else { 1 }
    };
    (0..n)
        .map(|i| {
            let (x, y) = (ext(a, i), ext(b, i));
            assert!(x == y || x == 1 || y == 1, "shapes {a:?} and {b:?} do not broadcast");
            x.max(y)
        })
        .collect()
}

#[test]
fn add_and_mul_files_are_consistent() {
    for (f, op, dt) in [
        (kernels::add_file(), "ADD", "int8"),
        (kernels::mul_file(), "MUL", "int8"),
        (kernels::add_16x8_file(), "ADD", "int16"),
    ] {
        let n = check_file(&f, op);
        for c in &f.cases {
            let nm = &c.name;
            for (t, zp, s) in [
                (&c.input1, c.input1_zero_point, c.input1_scale),
                (&c.input2, c.input2_zero_point, c.input2_scale),
                (&c.expected_tflm, c.output_zero_point, c.output_scale),
            ] {
                assert_eq!(t.dtype, dt, "{nm}");
                assert_eq!(ints(t).len(), t.len(), "{nm}");
                check_zero_point(nm, zp, dt);
                check_scale(nm, s);
            }
            assert_eq!(c.expected_tflm.shape, broadcast(&c.input1.shape, &c.input2.shape), "{nm}: output shape");
        }
        println!("{op} {dt}: {n} cases");
    }
}

#[test]
fn activation_files_are_consistent() {
    for (f, dt, scale, zp) in [
        (kernels::softmax_file(), "int8", 1.0 / 256.0, -128),
        (kernels::softmax_16x8_file(), "int16", 1.0 / 32768.0, 0),
    ] {
        let n = check_file(&f, "SOFTMAX");
        for c in &f.cases {
            assert_eq!((c.input.dtype.as_str(), c.expected_tflm.dtype.as_str()), (dt, dt), "{}", c.name);
            assert_eq!((c.output_scale, c.output_zero_point), (scale, zp), "{}", c.name);
            check_zero_point(&c.name, c.input_zero_point, dt);
            assert!(c.beta > 0.0 && c.beta.is_finite());
            assert_eq!(c.expected_tflm.shape, c.input.shape, "{}", c.name);
            assert_eq!(ints(&c.input).len(), ints(&c.expected_tflm).len());
        }
        println!("SOFTMAX {dt}: {n} cases");
    }
    for (f, op, fixed) in [
        (kernels::logistic_file(), "LOGISTIC", Some((1.0 / 256.0, -128))),
        (kernels::tanh_file(), "TANH", Some((1.0 / 128.0, 0))),
        (kernels::hard_swish_file(), "HARD_SWISH", None),
    ] {
        let n = check_file(&f, op);
        for c in &f.cases {
            let nm = &c.name;
            let mut x = c.input.i8();
            x.sort_unstable();
            assert_eq!(x, (-128..=127).collect::<Vec<i8>>(), "{nm}: every int8 value exactly once");
            assert_eq!(c.expected_tflm.shape, c.input.shape, "{nm}");
            assert_eq!(c.expected_tflm.i8().len(), 256);
            check_scale(nm, c.input_scale);
            check_scale(nm, c.output_scale);
            if let Some(q) = fixed {
                assert_eq!((c.output_scale, c.output_zero_point), q, "{nm}");
            }
        }
        println!("{op}: {n} cases");
    }
}

#[test]
fn shape_op_files_are_consistent() {
    let f = kernels::concatenation_file();
    let n = check_file(&f, "CONCATENATION");
    for c in &f.cases {
        let rank = c.inputs[0].shape.len() as i32;
        let axis = c.axis.rem_euclid(rank) as usize;
        let mut want = c.inputs[0].shape.clone();
        want[axis] = c.inputs.iter().map(|t| t.shape[axis]).sum();
        assert_eq!(c.expected_tflm.shape, want, "{}", c.name);
        assert_eq!(c.inputs.len(), c.input_scales.len());
        assert_eq!(c.inputs.len(), c.input_zero_points.len());
        let total: usize = c.inputs.iter().map(|t| t.i8().len()).sum();
        assert_eq!(total, c.expected_tflm.i8().len(), "{}", c.name);
    }
    println!("CONCATENATION: {n} cases");

    let f = kernels::pad_file();
    let n = check_file(&f, "PAD");
    for c in &f.cases {
        assert_eq!(c.paddings.len(), c.input.shape.len(), "{}", c.name);
        let want: Vec<usize> =
            c.input.shape.iter().zip(&c.paddings).map(|(&d, p)| d + p[0] as usize + p[1] as usize).collect();
        assert_eq!(c.expected_tflm.shape, want, "{}", c.name);
        assert_eq!(c.expected_tflm.i8().len(), c.expected_tflm.len());
    }
    println!("PAD: {n} cases");

    let f = kernels::mean_file();
    let n = check_file(&f, "MEAN");
    for c in &f.cases {
        let rank = c.input.shape.len() as i32;
        let axes: HashSet<usize> = c.axis.iter().map(|a| a.rem_euclid(rank) as usize).collect();
        let want: Vec<usize> = c
            .input
            .shape
            .iter()
            .enumerate()
            .filter_map(|(d, &e)| match (axes.contains(&d), c.keep_dims) {
                (true, true) => Some(1),
                (true, false) => None,
                (false, _) => Some(e),
            })
            .collect();
        assert_eq!(c.expected_tflm.shape, want, "{}", c.name);
        assert_eq!(c.input.i8().len(), c.input.len());
    }
    println!("MEAN: {n} cases");

    let f = kernels::reshape_file();
    let n = check_file(&f, "RESHAPE");
    for c in &f.cases {
        assert_eq!(c.expected_tflm.len(), c.input.len(), "{}", c.name);
        assert_eq!(c.expected_tflm.shape.len(), c.new_shape.len(), "{}", c.name);
        assert_eq!(c.expected_tflm.i8(), c.input.i8(), "{}: reshape keeps the data", c.name);
    }
    println!("RESHAPE: {n} cases");

    let f = kernels::transpose_file();
    let n = check_file(&f, "TRANSPOSE");
    for c in &f.cases {
        let want: Vec<usize> = c.perm.iter().map(|&p| c.input.shape[p as usize]).collect();
        assert_eq!(c.expected_tflm.shape, want, "{}", c.name);
        let mut a = c.input.i8();
        let mut b = c.expected_tflm.i8();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "{}: transpose permutes the data", c.name);
    }
    println!("TRANSPOSE: {n} cases");
}

#[test]
fn mlperf_tiny_goldens_are_consistent() {
    use microquant_tests::models::{self, PerTensorOrChannel};
    let g = models::mlperf_tiny();
    let names: Vec<&str> = g.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["kws", "ic", "vww", "ad"]);
    let mut checked_files = 0;
    for (i, m) in g.models.iter().enumerate() {
        assert_eq!(m.index, i as u64);
        assert_eq!(m.samples.len(), 20, "{}", m.name);
        assert_eq!(m.input.dtype, "int8");
        assert_eq!(m.output.dtype, "int8");
        assert!(matches!(m.input.scale, PerTensorOrChannel::Tensor(_)));
        let (mut differing, mut elements, mut elements_differing) = (0, 0, 0);
        for (s, smp) in m.samples.iter().enumerate() {
            assert_eq!((smp.sample, smp.seed), (s as u64, m.index * 1000 + s as u64));
            // The Rust SplitMix64 regenerates exactly the input the generator fed the oracles.
            let x = m.input(smp.sample);
            assert_eq!(models::crc32(&x), smp.input_crc32, "{} sample {s}: input CRC32", m.name);
            for t in [&smp.expected_tflm, &smp.expected_tflite_ref] {
                assert_eq!(t.shape, m.output.shape, "{} sample {s}", m.name);
                assert_eq!(t.i8().len(), t.len());
            }
            let (a, b) = (smp.expected_tflm.i8(), smp.expected_tflite_ref.i8());
            let n = a.iter().zip(&b).filter(|(x, y)| x != y).count();
            elements += a.len();
            elements_differing += n;
            differing += usize::from(n > 0);
        }
        assert_eq!(
            (m.stats.samples_differing, m.stats.elements, m.stats.elements_differing),
            (differing, elements, elements_differing),
            "{}: stored statistics",
            m.name
        );
        // Per-layer record: execution order, the last layer's output is the model output of sample 0.
        assert!(!m.layers_sample0.is_empty());
        for (k, l) in m.layers_sample0.iter().enumerate() {
            assert_eq!(l.op_index, k, "{}", m.name);
            for o in &l.outputs {
                for d in [&o.tflm, &o.tflite_ref] {
                    let n: usize = o.shape.iter().product();
                    assert_eq!(d.head.len(), n.min(16), "{} {}", m.name, o.name);
                    if let Some(full) = &d.full {
                        let v = full.i8();
                        assert_eq!(models::crc32(&v), d.crc32, "{} {}: full tensor vs CRC", m.name, o.name);
                        assert_eq!(v[..d.head.len()].iter().map(|&x| i64::from(x)).collect::<Vec<_>>(), d.head);
                    } else {
                        assert!(n > 1024);
                    }
                }
                assert_eq!(o.elements_differing == 0, o.tflm.crc32 == o.tflite_ref.crc32, "{} {}", m.name, o.name);
            }
        }
        let last = &m.layers_sample0.last().unwrap().outputs[0];
        assert_eq!(last.tflm.full.as_ref().unwrap().i8(), m.samples[0].expected_tflm.i8(), "{}", m.name);
        assert_eq!(last.tflite_ref.full.as_ref().unwrap().i8(), m.samples[0].expected_tflite_ref.i8(), "{}", m.name);
        // The model file, where the shared folder is present (it is on the development machine and in CI).
        if let Ok(bytes) = std::fs::read(m.path()) {
            assert_eq!(bytes.len(), m.bytes, "{}", m.name);
            assert_eq!(models::crc32_bytes(&bytes), m.file_crc32, "{}: .tflite file CRC32", m.name);
            checked_files += 1;
        }
        println!(
            "{}: 20 samples, TFLM vs BUILTIN_REF differ in {} samples ({} of {} elements); {} layers",
            m.name,
            differing,
            elements_differing,
            elements,
            m.layers_sample0.len()
        );
    }
    println!("model files checked: {checked_files} of 4");
}

/// Counts the `*_split_*` cases of a file (built by a search for inputs on which TFLite Micro and
/// the interpreter differ) and checks that each really has the two oracles differ.
fn split_cases<C: KernelCase>(f: &KernelFile<C>) -> usize {
    let mut n = 0;
    for c in f.cases.iter().filter(|c| c.name().contains("_split_")) {
        let (a, b) = (c.expected(Oracle::Tflm), c.expected(Oracle::TfliteRef));
        assert_ne!(ints(a), ints(b), "{}: a split case where the oracles agree", c.name());
        n += 1;
    }
    n
}

/// The families where the rounding modes differ hold a handful of cases on which TFLite Micro
/// and the interpreter's reference kernels disagree, so the kernel tests (each mode against its
/// own oracle) tell the modes apart.
#[test]
fn split_cases_tell_the_oracles_apart() {
    let counts = [
        ("logistic", split_cases(&kernels::logistic_file())),
        ("tanh", split_cases(&kernels::tanh_file())),
        ("mul", split_cases(&kernels::mul_file())),
        ("softmax_16x8", split_cases(&kernels::softmax_16x8_file())),
        ("fully_connected", split_cases(&kernels::fully_connected_file())),
        ("fully_connected_16x8", split_cases(&kernels::fully_connected_16x8_file())),
    ];
    for (file, n) in counts {
        assert!((3..=10).contains(&n), "{file}: {n} split cases");
    }
    println!("split cases: {counts:?}");
}

#[test]
fn batch_matmul_files_are_consistent() {
    for (f, dt) in [(kernels::batch_matmul_file(), "int8"), (kernels::batch_matmul_16x8_file(), "int16")] {
        let n = check_file(&f, "BATCH_MATMUL");
        for c in &f.cases {
            let nm = &c.name;
            for (t, zp, s) in [
                (&c.lhs, c.lhs_zero_point, c.lhs_scale),
                (&c.rhs, c.rhs_zero_point, c.rhs_scale),
                (&c.expected_tflm, c.output_zero_point, c.output_scale),
            ] {
                assert_eq!(t.dtype, dt, "{nm}");
                assert_eq!(ints(t).len(), t.len(), "{nm}");
                check_zero_point(nm, zp, dt);
                check_scale(nm, s);
            }
            // The output shape from the operands' (NumPy matmul after the adjoints).
            let (l, r) = (&c.lhs.shape, &c.rhs.shape);
            assert!((2..=5).contains(&l.len()) && (2..=5).contains(&r.len()), "{nm}: ranks");
            let (lm, ln) = (l[l.len() - 2], l[l.len() - 1]);
            let (rm, rn) = (r[r.len() - 2], r[r.len() - 1]);
            let (rows, depth) = if c.adj_x { (ln, lm) } else { (lm, ln) };
            let (depth_r, cols) = if c.adj_y { (rn, rm) } else { (rm, rn) };
            assert_eq!(depth, depth_r, "{nm}: accumulation depths");
            let mut want = broadcast(&l[..l.len() - 2], &r[..r.len() - 2]);
            want.extend([rows, cols]);
            assert_eq!(c.expected_tflm.shape, want, "{nm}: output shape");
        }
        println!("BATCH_MATMUL {dt}: {n} cases");
    }
}
