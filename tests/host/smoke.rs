//! Foundation smoke test, host side: int8 quantize/dequantize against ONNX QuantizeLinear's
//! reference evaluator. The same cases run in wasm (Node and Chromium), under QEMU and in the
//! web demo.

use microquant::quant::{QParams, QuantDType};

#[test]
fn quantize_linear_matches_onnx_reference() {
    let mut checked = 0usize;
    for c in microquant_tests::smoke_cases() {
        let p = QParams::new(c.scale, c.zero_point, QuantDType::Int8).unwrap();
        let mut q = vec![0i8; c.x.len()];
        p.quantize_i8(&c.x, &mut q).unwrap();
        let mut dq = vec![0f32; c.x.len()];
        p.dequantize_i8(&q, &mut dq).unwrap();
        for i in 0..c.x.len() {
            assert_eq!(q[i], c.q[i], "{}: q[{i}] for x = {}", c.name, c.x[i]);
            assert_eq!(dq[i].to_bits(), c.dq[i].to_bits(), "{}: dq[{i}] for x = {}", c.name, c.x[i]);
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} elements checked");
    println!("smoke: {checked} elements bit-exact with onnx QuantizeLinear/DequantizeLinear");
}

#[test]
fn rejects_bad_parameters_and_data() {
    use microquant::Error;
    assert_eq!(QParams::new(0.0, 0, QuantDType::Int8), Err(Error::InvalidScale));
    assert_eq!(QParams::new(f32::NAN, 0, QuantDType::Int8), Err(Error::InvalidScale));
    assert!(matches!(
        QParams::new(1.0, 200, QuantDType::Int8),
        Err(Error::ZeroPointOutOfRange { zero_point: 200, .. })
    ));
    let p = QParams::new(1.0, 0, QuantDType::Int8).unwrap();
    let mut out = [0i8; 2];
    assert_eq!(p.quantize_i8(&[1.0, f32::NAN], &mut out), Err(Error::NonFinite { index: 1 }));
    assert_eq!(p.quantize_i8(&[1.0], &mut out), Err(Error::LengthMismatch { expected: 1, actual: 2 }));
    let u = QParams::new(1.0, 0, QuantDType::UInt8).unwrap();
    assert!(matches!(u.quantize_i8(&[1.0, 2.0], &mut out), Err(Error::DTypeMismatch { .. })));
}
