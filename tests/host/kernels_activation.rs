//! LOGISTIC, TANH and HARD_SWISH (int8) against the golden outputs of TFLite Micro and of the
//! TFLite interpreter's reference kernels (`tests/golden/kernels/{logistic,tanh,hard_swish}.json`),
//! bit for bit, in both rounding modes: `Rounding::Double` against TFLite Micro (gemmlowp fixed
//! point), `Rounding::Single` against the interpreter (`BUILTIN_REF`: tables generated with
//! `f32` math and the C library's `expf`/`tanhf` for LOGISTIC and TANH).
//!
//! The TFLite int8 quantization spec, as these cases follow it: "LOGISTIC: Output 0: ...
//! restriction (scale, zero_point) = (1.0 / 256.0, -128)"; "TANH: Output 0: ... restriction
//! (scale, zero_point) = (1.0 / 128.0, 0)". Each golden case holds every int8 input value once,
//! so it checks the whole function for its quantization. The golden tests are those of
//! `microquant_tests::oracle::activation`, instantiated for the host.
//!
//! Two ignored tests compare microquant's `expf` and `tanhf` (used to build the interpreter's
//! tables) with the platform C library on all 2^32 inputs:
//! `cargo test --release -p microquant-tests --test host kernels_activation:: -- --ignored`
//! (Linux with glibc only; the golden data was generated with glibc 2.36 on x86-64 with FMA).

use microquant::kernels::Rounding;
use microquant::kernels::logistic::LogisticParams;
use microquant::kernels::tanh::TanhParams;
use microquant::kernels::tensor::PerTensorQuant;
use microquant_tests::kernels;

microquant_tests::activation_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

/// The fixed-point tables (TFLite Micro) and the float tables (interpreter) are different
/// computations: every case covers all 256 inputs, so the two tables must differ exactly where the
/// two oracles' outputs differ (the `_split_` cases) and be identical everywhere else.
#[test]
fn fixed_point_and_float_tables_differ_exactly_where_the_oracles_do() {
    let mut compared = 0;
    for c in kernels::logistic_cases() {
        let (i, o) = (
            PerTensorQuant::new(c.input_scale, c.input_zero_point),
            PerTensorQuant::new(c.output_scale, c.output_zero_point),
        );
        let d = LogisticParams::prepare_s8(i, o, Rounding::Double).unwrap();
        let s = LogisticParams::prepare_s8(i, o, Rounding::Single).unwrap();
        assert_eq!(d.lut == s.lut, c.expected_tflm.b64 == c.expected_tflite_ref.b64, "{}", c.name);
        compared += 1;
    }
    for c in kernels::tanh_cases() {
        let (i, o) = (
            PerTensorQuant::new(c.input_scale, c.input_zero_point),
            PerTensorQuant::new(c.output_scale, c.output_zero_point),
        );
        let d = TanhParams::prepare_s8(i, o, Rounding::Double).unwrap();
        let s = TanhParams::prepare_s8(i, o, Rounding::Single).unwrap();
        assert_eq!(d.lut == s.lut, c.expected_tflm.b64 == c.expected_tflite_ref.b64, "{}", c.name);
        compared += 1;
    }
    println!(
        "{compared} logistic/tanh quantizations: fixed-point and float tables differ exactly where TFLite Micro and the interpreter do"
    );
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod libm_exhaustive {
    use microquant::kernels::lut;

    unsafe extern "C" {
        fn expf(x: f32) -> f32;
        fn tanhf(x: f32) -> f32;
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    fn check(name: &str, ours: fn(f32) -> f32, theirs: unsafe extern "C" fn(f32) -> f32) {
        let mut bad = 0u64;
        for bits in 0u32..=u32::MAX {
            let x = f32::from_bits(bits);
            // SAFETY: a pure C library function of one float.
            let want = unsafe { theirs(x) };
            if !same(ours(x), want) {
                if bad < 10 {
                    eprintln!("{name}({x:e}) [{bits:#010x}]: libc {want:e}, microquant {:e}", ours(x));
                }
                bad += 1;
            }
        }
        println!("{name}: 2^32 inputs, {bad} differ from the C library");
        assert_eq!(bad, 0);
    }

    #[test]
    #[ignore = "exhaustive (2^32 inputs, about 2 minutes in release); depends on the host's glibc"]
    fn expf_matches_the_c_library_everywhere() {
        check("expf", lut::expf, expf);
    }

    #[test]
    #[ignore = "exhaustive (2^32 inputs); depends on the host's glibc"]
    fn tanhf_matches_the_c_library_everywhere() {
        check("tanhf", lut::tanhf, tanhf);
    }
}
