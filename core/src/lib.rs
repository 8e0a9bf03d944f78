//! # microquant
//!
//! int8 quantization for tiny devices. This crate is `#![no_std]` and never allocates unless the
//! `alloc` feature is on.
//!
//! ```
//! use microquant::quant::{AffineQuant, QuantDType};
//!
//! // ONNX QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point)
//! let q = AffineQuant::new(0.5, -3, QuantDType::Int8).unwrap();
//! let mut out = [0i8; 4];
//! q.quantize_i8(&[0.0, 0.75, -1.25, 1000.0], &mut out).unwrap();
//! assert_eq!(out, [-3, -1, -5, 127]); // 1.5 -> 2 and -2.5 -> -2: ties go to even
//! let mut back = [0f32; 4];
//! q.dequantize_i8(&out, &mut back).unwrap();
//! assert_eq!(back, [0.0, 1.0, -1.0, 65.0]);
//! ```
#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod error;
pub mod kernels;
pub mod requant;
pub mod interp;
pub mod model;
pub mod observer;
pub mod quant;
#[cfg(feature = "alloc")]
pub mod graph;
#[cfg(feature = "alloc")]
pub mod tflite;

pub use error::Error;
