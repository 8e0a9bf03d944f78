//! Quantization core against real tools: every ONNX backend node test of QuantizeLinear,
//! DequantizeLinear and DynamicQuantizeLinear, TFLite's QUANTIZE kernel (float input and integer
//! requantization), ml_dtypes' float8/float4/float16 casts, PyTorch's quantize and fake-quantize
//! kernels and the requantization sample (all bit for bit).

#[path = "quant_common.rs"]
mod common;

use microquant::quant::{self, ChannelQParams, Convention, QParams, QTensorMut, QuantDType, Shape, Tensor, minifloat};
use microquant_tests::quant as golden;

#[test]
fn onnx_backend_node_tests_all_pass() {
    let cases = golden::onnx_node_cases();
    let mut failures = Vec::new();
    let mut bytes = 0;
    for c in &cases {
        match common::run_onnx_case(c) {
            Ok(n) => bytes += n,
            Err(e) => failures.push(e),
        }
    }
    let passed = cases.len() - failures.len();
    println!("ONNX backend node tests: {passed}/{} passed ({bytes} output bytes compared)", cases.len());
    for c in &cases {
        println!("  {:48} ORT: {}", c.name, c.onnxruntime);
    }
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(cases.len(), 33, "the onnx 1.23.2 generator yields 33 cases");
}

#[test]
fn tflite_quantize_kernel() {
    let cases = golden::tflite_quantize_cases();
    let mut n = 0;
    for c in &cases {
        n += common::run_tflite_case(c).unwrap_or_else(|e| panic!("{e}"));
    }
    println!("TFLite QUANTIZE: {} cases, {n} values bit-exact", cases.len());
    assert!(cases.len() >= 19);
}

#[test]
fn requant_sample_matches_exact_integer_rule() {
    let cases = golden::requant_cases();
    let n: usize = cases.iter().map(|c| common::run_requant_case(c).unwrap_or_else(|e| panic!("{e}"))).sum();
    println!("requant sample: {} cases, {n} results", cases.len());
    assert!(cases.len() >= 1024);
}

#[test]
fn minifloat_casts_match_ml_dtypes() {
    let g = golden::minifloat_golden();
    let x = golden::b64_f32(&g.x);
    assert_eq!(x.len(), g.n);
    let e4s = golden::b64_bytes(&g.e4m3fn_saturate);
    let e4 = golden::b64_bytes(&g.e4m3fn);
    let e5s = golden::b64_bytes(&g.e5m2_saturate);
    let e5 = golden::b64_bytes(&g.e5m2);
    let h = golden::b64_u16(&g.float16);
    let mut bad = Vec::new();
    for (i, &v) in x.iter().enumerate() {
        let checks = [
            ("e4m3fn sat", minifloat::f32_to_f8e4m3fn(v, true) as u16, e4s[i] as u16),
            ("e4m3fn", minifloat::f32_to_f8e4m3fn(v, false) as u16, e4[i] as u16),
            ("e5m2 sat", minifloat::f32_to_f8e5m2(v, true) as u16, e5s[i] as u16),
            ("e5m2", minifloat::f32_to_f8e5m2(v, false) as u16, e5[i] as u16),
            ("f16", minifloat::f32_to_f16_bits(v), h[i]),
        ];
        for (what, got, want) in checks {
            if got != want {
                bad.push(format!("{what}({v:e} = {:#010x}): expected {want:#x}, actual {got:#x}", v.to_bits()));
            }
        }
    }
    let e2 = golden::b64_bytes(&g.e2m1_of_non_nan);
    let non_nan: Vec<f32> = x.iter().copied().filter(|v| !v.is_nan()).collect();
    assert_eq!(non_nan.len(), e2.len());
    for (v, &want) in non_nan.iter().zip(&e2) {
        let got = minifloat::f32_to_f4e2m1(*v).unwrap();
        if got != want {
            bad.push(format!("e2m1({v:e}): expected {want:#x}, actual {got:#x}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
    println!("minifloat: {} inputs x 5 casts + {} e2m1 casts bit-exact with ml_dtypes", x.len(), e2.len());
}

#[test]
fn pytorch_quantize_and_fake_quantize() {
    let g = golden::torch_golden();
    let mut checked = 0;
    for c in &g.quantize {
        let x = golden::b64_f32(&c.x);
        let fake = golden::b64_f32(&c.fake);
        let mask = golden::b64_bytes(&c.mask);
        let q = golden::b64_i32(&c.quantize);
        let dt = if c.dtype == "int8" { QuantDType::Int8 } else { QuantDType::UInt8 };
        let (shape, scales, zps) = match c.kind.as_str() {
            "per_tensor" => (Shape::vector(c.n), vec![c.scale.unwrap()], vec![c.zero_point.unwrap()]),
            _ => (
                Shape::new(c.shape.as_ref().unwrap()).unwrap(),
                c.scales.clone().unwrap(),
                c.zero_points.clone().unwrap(),
            ),
        };
        let params: quant::QuantParams<'_> = if c.kind == "per_tensor" {
            QParams::new(scales[0], zps[0], dt)
                .unwrap()
                .with_range(c.qmin, c.qmax)
                .unwrap()
                .with_convention(Convention::PyTorch)
                .into()
        } else {
            ChannelQParams::per_axis(&scales, &zps, dt, c.axis.unwrap())
                .unwrap()
                .with_range(c.qmin, c.qmax)
                .unwrap()
                .with_convention(Convention::PyTorch)
                .into()
        };
        let xt = Tensor::new(&x, shape).unwrap();
        let mut out = vec![0f32; x.len()];
        let mut m = vec![false; x.len()];
        quant::fake_quantize(&xt, &params, &mut out, Some(&mut m)).unwrap();
        for i in 0..x.len() {
            assert_eq!(out[i].to_bits(), fake[i].to_bits(), "{} {}: fake[{i}] for x = {}", c.kind, c.dataset, x[i]);
            assert_eq!(m[i], mask[i] != 0, "{} {}: mask[{i}] for x = {}", c.kind, c.dataset, x[i]);
        }
        // quantize_per_tensor / per_channel clamp to the type's full range.
        let full: quant::QuantParams<'_> = if c.kind == "per_tensor" {
            QParams::new(scales[0], zps[0], dt).unwrap().with_convention(Convention::PyTorch).into()
        } else {
            ChannelQParams::per_axis(&scales, &zps, dt, c.axis.unwrap())
                .unwrap()
                .with_convention(Convention::PyTorch)
                .into()
        };
        let codes: Vec<i32> = if dt == QuantDType::Int8 {
            let mut o = vec![0i8; x.len()];
            quant::quantize(&xt, &mut QTensorMut::<i8>::new(&mut o, shape, full).unwrap()).unwrap();
            o.iter().map(|&v| v as i32).collect()
        } else {
            let mut o = vec![0u8; x.len()];
            quant::quantize(&xt, &mut QTensorMut::<u8>::new(&mut o, shape, full).unwrap()).unwrap();
            o.iter().map(|&v| v as i32).collect()
        };
        for i in 0..x.len() {
            assert_eq!(codes[i], q[i], "{} {}: quantize[{i}] for x = {}", c.kind, c.dataset, x[i]);
        }
        checked += 3 * x.len();
    }
    println!("PyTorch quantize/fake_quantize/mask: {checked} values bit-exact");
}
