//! On the device: the tiny model of tests/golden/models/tiny_m0_int8.tflite (the one that fits the
//! micro:bit), converted by `build.rs`, gives outputs bit-identical to TFLite Micro on its seeded
//! inputs (`tests/golden/models/`). On a board without room for it the binary prints `SKIPPED: tiny
//! does not fit <board> (...)` and runs nothing. The test is `microquant_firmware::model_test!`.
#![no_std]
#![no_main]

microquant_firmware::model_test!(tiny: TINY, TINY_ARENA_LEN);
