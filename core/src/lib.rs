//! # microquant
//!
//! int8 quantization for tiny devices. This crate is `#![no_std]` and never allocates unless the
//! `alloc` feature is on.
//!
//! Calibrate ([`observer`]) -> choose parameters ([`quant::choose_qparams`]) -> quantize
//! ([`quant::quantize`]) -> dequantize ([`quant::QTensor::dequantize`]):
//!
//! ```
//! use microquant::observer::{MinMaxObserver, Observer, ObserverConfig};
//! use microquant::quant::{quantize, QScheme, QTensor, QTensorMut, QuantDType, Shape, Tensor};
//!
//! // 1. Calibrate: observe representative data (batches may be split over workers and merged).
//! let cfg = ObserverConfig::new(QuantDType::Int8, QScheme::Affine);
//! let mut obs = MinMaxObserver::new(cfg);
//! obs.observe(&[-1.0, 0.5, 2.0]).unwrap();
//! obs.observe(&[3.0, -0.5]).unwrap();
//! assert_eq!(obs.range().unwrap(), (-1.0, 3.0));
//!
//! // 2. Parameters: [-1, 3] onto [-128, 127] (PyTorch's formula): scale 4/255, zero point -64.
//! let p = obs.qparams().unwrap();
//! assert_eq!((p.scale(), p.zero_point()), (4.0 / 255.0, -64));
//!
//! // 3. Quantize a float tensor into a quantized one (a different type: no mixing them up).
//! let x = [0.0f32, 1.0, -1.0, 3.0, 100.0];
//! let shape = Shape::vector(x.len());
//! let mut q = [0i8; 5];
//! quantize(&Tensor::new(&x, shape).unwrap(), &mut QTensorMut::<i8>::new(&mut q, shape, p.into()).unwrap()).unwrap();
//! assert_eq!(q, [-64, 0, -128, 127, 127]); // 0.0 is exact; 100.0 saturates
//!
//! // 4. Dequantize: the explicit way back to floats.
//! let mut back = [0f32; 5];
//! QTensor::<i8>::new(&q, shape, p.into()).unwrap().dequantize(&mut back).unwrap();
//! assert_eq!(back[0], 0.0);
//! assert!((back[1] - 1.0).abs() <= p.scale() / 2.0);
//! ```
//!
//! Rounding is half to even, as ONNX `QuantizeLinear` (`quant::Convention` selects PyTorch's
//! or TFLite's rules instead); [`quant`] documents which formula matches which tool, and
//! [`requant`] the integer-only fixed-point arithmetic that matches TFLite bit for bit.
#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(feature = "alloc", feature = "npy"))]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "alloc")]
pub mod compile;
mod error;
#[cfg(feature = "alloc")]
pub mod float;
#[cfg(feature = "alloc")]
pub mod graph;
pub mod interp;
pub mod kernels;
pub mod layout;
pub mod model;
#[cfg(any(feature = "alloc", feature = "npy"))]
pub mod npy;
pub mod observer;
#[cfg(feature = "alloc")]
pub mod onnx;
#[cfg(feature = "std")]
pub mod parallel;
#[cfg(feature = "alloc")]
pub mod passes;
#[cfg(feature = "alloc")]
pub mod ptq;
pub mod quant;
pub mod requant;
pub mod support;
#[cfg(test)]
mod test_support;
#[cfg(feature = "alloc")]
pub mod tflite;
#[cfg(feature = "alloc")]
mod vecmap;

pub use error::Error;
