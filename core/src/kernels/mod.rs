//! int8 (and 16x8) kernels, bit-exact with TensorFlow Lite Micro's reference kernels.
//!
//! # Conventions
//! - Layout NHWC, as TFLite and CMSIS-NN. Filters: conv `[out_c, kh, kw, in_c]` (OHWI), depthwise
//!   `[1, kh, kw, in_c * depth_multiplier]`, fully connected `[out, in]`.
//! - Quantization as the TFLite int8 spec: activations asymmetric int8 (`zero_point` in
//!   [-128, 127]), weights symmetric int8 (zero point 0), per-channel for conv/depthwise/FC, bias
//!   int32 with scale `input_scale * weight_scale` and zero point 0. Kernels take *offsets*
//!   (TFLite's `input_offset = -input_zero_point`, `output_offset = output_zero_point`).
//! - Parameters are prepared once (shapes, strides, padding, offsets, per-channel multipliers and
//!   shifts, activation clamp) into a parameter struct; the call does integer work only, on
//!   caller-provided slices, and never allocates.
//! - Every kernel checks its slice lengths against its parameters first (O(1)) and returns
//!   [`Error::BadKernelArgument`](crate::Error::BadKernelArgument) instead of panicking. Inner
//!   loops are written so no panic survives optimization in release (no unchecked indexing the
//!   compiler cannot prove, no `unwrap`, no `clamp`, no division by a variable): the firmware's
//!   `nopanic-check` image proves it at link time.
//! - A kernel that needs scratch memory documents `<kernel>_scratch_len(..)`, a pure function of
//!   its shapes, so a planner can reserve it ahead of time.
//! - The reference kernel of each op is always complete; optimized variants (Arm DSP, wasm
//!   SIMD) live under `arch/`, fall back to the reference when their preconditions fail, and are
//!   tested bit-exact against it.

pub use crate::requant::Rounding;

pub mod arch;
pub mod common;
pub mod conv;
pub mod conv_s4;
pub mod depthwise_conv;
pub mod depthwise_conv_s4;
pub mod fully_connected;
pub mod fully_connected_s4;
pub mod int4;
pub mod params;
pub mod pooling;
pub(crate) mod row_chunks;
pub(crate) mod window;
// Elementwise, activation and data-movement kernels.
pub mod abs;
pub mod add;
pub mod batch_matmul;
pub mod concat;
pub mod depth_to_space;
pub mod div;
pub mod elu;
pub mod fixedpoint;
pub mod gather;
pub mod hard_swish;
pub mod leaky_relu;
pub mod logistic;
pub mod lstm;
pub mod lut;
pub mod minimum_maximum;
pub mod mirror_pad;
pub mod mul;
pub mod pad;
pub mod prelu;
pub mod reduce;
pub mod relu;
pub mod requantize;
pub mod reshape;
pub mod resize;
pub mod rsqrt;
pub mod slice;
pub mod softmax;
pub mod squared_difference;
pub mod sub;
pub mod tanh;
pub mod tensor;
pub mod tile;
pub mod transpose;
pub mod transpose_conv;
pub mod unary_lut;

pub use params::{ActivationRange, Dims4, PerChannelQuant};
