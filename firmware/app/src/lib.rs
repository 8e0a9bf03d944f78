//! The board-independent part of the microquant firmware: the application (a window of sensor
//! samples in, a class out) written against embedded-hal 1.0 traits, instruction/cycle counting
//! with SysTick, per-op profiling, stack measurement, and models embedded in flash with static
//! arenas of exactly the planned size.
//!
//! The QEMU firmware (`microquant-firmware`, one folder up) runs it with the embedded-hal
//! [`playback`] implementations; on a real board the same code runs with the board's HAL
//! (`firmware/README.md` shows an STM32F4 setup flashed with `probe-rs`).
#![no_std]
#![deny(missing_docs)]

pub mod app;
pub mod counter;
pub mod indicator;
pub mod model;
pub mod playback;
pub mod profile;
pub mod sensor;
pub mod stack;

#[path = "../../../tests/src/rng.rs"]
mod rng;
pub use rng::SplitMix64;
