//! The kernels of the later op families on the device against the golden outputs of TFLite Micro
//! and the TFLite interpreter's reference kernels, bit for bit, as `kernels.rs` does for the first
//! ones (a second image: the cases of every family do not fit the micro:bit's flash in one):
//! resize, reductions, slices, gather, tile, mirror pad, depth/space, leaky relu, relu / clamp,
//! abs, neg, rsqrt, elu, LSTM, transpose conv, batch matmul; int8 and 16x8; both rounding modes.
#![no_std]
#![no_main]

use microquant_firmware as _; // logger, panic and fault handlers

mod golden_device;
use golden_device::{Device, golden, kg};

microquant_tests::spatial_golden_tests!(mod spatial; target Device; files kg);
microquant_tests::movement_golden_tests!(mod movement; target Device; files kg);
microquant_tests::leaky_relu_golden_tests!(mod leaky_relu; target Device; files kg);
microquant_tests::elementwise_unary_golden_tests!(mod elementwise_unary; target Device; files kg);
microquant_tests::lstm_golden_tests!(mod recurrent; target Device; files kg);
microquant_tests::transpose_conv_golden_tests!(mod transpose_conv; target Device; files kg);
microquant_tests::batch_matmul_golden_tests!(mod batch_matmul; target Device; files kg);

#[defmt_test::tests]
mod tests {
    use super::golden;

    #[init]
    fn init() {
        defmt::info!("board {=str}: the later op families' golden cases", microquant_firmware::BOARD);
    }

    #[test]
    fn resize_matches_tflite_micro_and_interpreter() {
        golden(super::spatial::TESTS);
    }

    #[test]
    fn data_movement_matches_tflite_micro_and_interpreter() {
        golden(super::movement::TESTS);
    }

    #[test]
    fn leaky_relu_matches_tflite_micro_and_interpreter() {
        golden(super::leaky_relu::TESTS);
    }

    #[test]
    fn relu_clamp_abs_neg_rsqrt_elu_match_tflite_micro_and_interpreter() {
        golden(super::elementwise_unary::TESTS);
    }

    #[test]
    fn lstm_matches_tflite_micro() {
        golden(super::recurrent::TESTS);
    }

    #[test]
    fn transpose_conv_matches_tflite_micro_and_interpreter() {
        golden(super::transpose_conv::TESTS);
    }

    #[test]
    fn batch_matmul_matches_tflite_micro_and_interpreter() {
        golden(super::batch_matmul::TESTS);
    }
}
