//! On the device: the MLPerf Tiny image-classification model (ResNet-8), converted by `build.rs`,
//! gives outputs bit-identical to TFLite Micro on its seeded inputs (`tests/golden/models/`). On a
//! board without room for it the binary prints `SKIPPED: ic does not fit <board> (...)` and runs
//! nothing. The test is `microquant_firmware::model_test!`. On the Cortex-M4F, built as shipped
//! (fat LTO) with `MQ_CHECK_INFERENCE_STACK=1` (`scripts/test.sh` does), the inference must take
//! less than 2 KB of stack (issue 25), as KWS's.
#![no_std]
#![no_main]

microquant_firmware::model_test!(ic: IC, IC_ARENA_LEN, inference_stack < 2048 on ["mps2-an386"]);
