//! Foundation smoke test on the device: the ONNX QuantizeLinear golden cases, bit for bit.
#![no_std]
#![no_main]

use microquant_firmware as _; // logger, panic and fault handlers

#[defmt_test::tests]
mod tests {
    use defmt::assert_eq;
    use microquant::quant::{QParams, QuantDType};
    use microquant_firmware::golden::SMOKE_CASES;

    #[init]
    fn init() {
        defmt::info!("board {=str}", microquant_firmware::BOARD);
    }

    #[test]
    fn quantize_linear_matches_onnx_reference() {
        let mut checked = 0u32;
        for c in SMOKE_CASES {
            let p = QParams::new(c.scale, c.zero_point, QuantDType::Int8).unwrap();
            let mut q = [0i8; 64];
            let mut dq = [0f32; 64];
            let n = c.x.len();
            p.quantize_i8(c.x, &mut q[..n]).unwrap();
            p.dequantize_i8(&q[..n], &mut dq[..n]).unwrap();
            for i in 0..n {
                assert_eq!(q[i], c.q[i], "{=str}: q[{=usize}]", c.name, i);
                assert_eq!(dq[i].to_bits(), c.dq[i].to_bits(), "{=str}: dq[{=usize}]", c.name, i);
                checked += 1;
            }
        }
        defmt::info!("{=u32} elements bit-exact with onnx QuantizeLinear/DequantizeLinear", checked);
        assert!(checked > 100);
    }

    #[test]
    fn nan_is_rejected() {
        let p = QParams::new(1.0, 0, QuantDType::Int8).unwrap();
        let mut q = [0i8; 2];
        assert!(p.quantize_i8(&[0.0, f32::NAN], &mut q).is_err());
    }
}
