//! Fully connected kernels against the golden outputs of TFLite Micro and of the TFLite
//! interpreter's reference kernels (`tests/golden/kernels/fully_connected*.json`), bit for bit.
//!
//! The TFLite int8 quantization spec, as these cases follow it: "Fully connected: Input 0: data
//! type int8, range [-128, 127], granularity per-tensor; Input 1 (Weight): data type int8, range
//! [-127, 127], granularity per-axis (dim = 0), restriction zero_point = 0; Input 2 (Bias): data
//! type int32, granularity per-axis, restriction (scale, zero_point) = (input0_scale *
//! input1_scale[...], 0); Output 0: int8, per-tensor."
//!
//! `Rounding::Double` must reproduce `expected_tflm` and `Rounding::Single` `expected_tflite_ref`
//! on every element of every case, through every kernel path: the tests of
//! `microquant_tests::oracle::fully_connected`, instantiated for the host.

use microquant_tests::oracle::golden;

microquant_tests::fully_connected_golden_tests!(
    mod tests;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

/// The oracles really disagree in these files, so the two tests above, each bit-exact with its
/// own oracle, show that each rounding mode reproduces its oracle and not the other.
#[test]
fn the_two_oracles_differ_and_each_mode_picks_its_own() {
    for file in [golden::fully_connected(), golden::fully_connected_16x8()] {
        let differing = file.cases_differing;
        assert!(differing > 0, "{}: the oracles agree everywhere; the rounding modes are not discriminated", file.name);
        println!(
            "{}: {differing} of {} cases differ between TFLite Micro and the interpreter",
            file.name,
            file.cases.len()
        );
    }
}
