//! The kernels on the device against the golden outputs of TFLite Micro and the TFLite
//! interpreter's reference kernels (`tests/golden/kernels/`, embedded by `build_kernels.rs`:
//! every case of every file on the mps2 boards, a spread-out subset of the small ones on the
//! micro:bit), bit for bit: the golden tests of `microquant_tests::oracle` (conv, depthwise conv,
//! fully connected, pooling, add, mul, softmax, logistic, tanh, hard-swish, concatenation, pad,
//! mean, reshape, transpose, sub, min/max, prelu; int8 and 16x8; both rounding modes) instantiated
//! for the device (the later op families: `kernels_ops.rs`).
//! conv, depthwise and fully connected int8 run through the dispatched kernels (the Arm DSP fast
//! paths where `mq_dsp` is on: mps2-an386/an500, and mps2-an505 built with
//! `-C target-cpu=cortex-m33`; the portable paths on the micro:bit) and the reference kernels.
//! Prepare (windows, multipliers, clamps) runs on the device too. A failure names the case, the
//! mode, the path, the position and both values.
//!
//! Random shapes through the same kernels: `kernels_random.rs`.
#![no_std]
#![no_main]

use microquant_firmware as _; // logger, panic and fault handlers

mod golden_device;
use golden_device::{Device, golden, kg};

microquant_tests::conv_golden_tests!(mod conv; target Device; files kg);
microquant_tests::depthwise_golden_tests!(mod depthwise; target Device; files kg);
microquant_tests::fully_connected_golden_tests!(mod fully_connected; target Device; files kg);
microquant_tests::pool_golden_tests!(mod pooling; target Device; files kg);
microquant_tests::binary_golden_tests!(mod binary; target Device; files kg);
microquant_tests::softmax_golden_tests!(mod softmax; target Device; files kg);
microquant_tests::activation_golden_tests!(mod activation; target Device; files kg);
microquant_tests::shape_golden_tests!(mod shape; target Device; files kg);

#[defmt_test::tests]
mod tests {
    use super::{golden, kg};

    #[init]
    fn init() {
        defmt::info!(
            "board {=str}; cases: conv {=usize}, depthwise {=usize}, fully connected {=usize}, max pool {=usize}, avg pool {=usize}, softmax {=usize}, add {=usize}",
            microquant_firmware::BOARD,
            kg::CONV_2D.len(),
            kg::DEPTHWISE_CONV_2D.len(),
            kg::FULLY_CONNECTED.len(),
            kg::MAX_POOL_2D.len(),
            kg::AVERAGE_POOL_2D.len(),
            kg::SOFTMAX.len(),
            kg::ADD.len()
        );
    }

    #[test]
    fn conv_matches_tflite_micro_and_interpreter() {
        golden(super::conv::TESTS);
    }

    #[test]
    fn depthwise_conv_matches_tflite_micro_and_interpreter() {
        golden(super::depthwise::TESTS);
    }

    #[test]
    fn fully_connected_matches_tflite_micro_and_interpreter() {
        golden(super::fully_connected::TESTS);
    }

    #[test]
    fn pooling_matches_tflite_micro_and_interpreter() {
        golden(super::pooling::TESTS);
    }

    #[test]
    fn add_and_mul_match_tflite_micro_and_interpreter() {
        golden(super::binary::TESTS);
    }

    #[test]
    fn softmax_matches_tflite_micro_and_interpreter() {
        golden(super::softmax::TESTS);
    }

    #[test]
    fn logistic_tanh_hard_swish_match_tflite_micro_and_interpreter() {
        golden(super::activation::TESTS);
    }

    #[test]
    fn concat_pad_mean_reshape_transpose_match_tflite_micro_and_interpreter() {
        golden(super::shape::TESTS);
    }
}
