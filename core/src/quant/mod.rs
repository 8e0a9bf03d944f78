//! Quantization parameters, quantized tensors and float <-> integer conversion.
//!
//! # The affine map
//! Every integer type uses `real = scale · (q - zero_point)` with `q` clamped to
//! `[qmin, qmax]` (the type's range, or a narrower one). Parameters are per tensor
//! ([`QParams`]), per channel along any axis, or per block of `block_size` indices along an
//! axis as ONNX's `block_size` ([`ChannelQParams`]). float8 (E4M3FN, E5M2) and float4 (E2M1)
//! types use `real = scale · decode(q)` with zero point 0.
//!
//! # Rounding
//! By default ([`Convention::Onnx`]) quantization computes `x / scale` in `f32` and rounds
//! **half to even** (`rint`), as ONNX `QuantizeLinear` specifies
//! (`y = saturate(round(x / y_scale) + y_zero_point)`, "rounding to nearest ties to even"):
//! 2.5 -> 2, 3.5 -> 4, -2.5 -> -2. The other tools differ on ties and on how they divide:
//!
//! | [`Convention`] | quantize | matches |
//! |---|---|---|
//! | `Onnx`, `OnnxRuntime` | `rint(x / scale) + zp` | ONNX `QuantizeLinear` (reference evaluator and ONNX Runtime) |
//! | `PyTorch` | `rint(x · (1 / scale)) + zp` (`f32` reciprocal) | `torch.fake_quantize_per_tensor_affine` / `_per_channel_affine` |
//! | `TfLite` | `round(x / scale) + zp`, ties **away from zero** | TFLite `QUANTIZE` (float input), `TfLiteRound` |
//!
//! Integer results saturate to `[qmin, qmax]`; float8 results saturate to the largest finite
//! value (ONNX `saturate = 1`). Dequantization is `(q - zp) · scale` in `f32` everywhere.
//! Requantization between integer types is integer-only, as TFLite: see [`requantize`].
//!
//! # Choosing parameters
//! [`choose_qparams`] (PyTorch's formulas) and [`choose_qparams_with`] first widen the range to
//! contain 0 (`min⁻ = min(min, 0)`, `max⁺ = max(max, 0)`), so 0.0 is exactly representable.
//! With `amax = max(-min⁻, max⁺)` and `[qmin, qmax]` the range the scheme selects:
//!
//! | scheme | convention (peer) | scale | zero point | empty range (`min == max`) |
//! |---|---|---|---|---|
//! | [`QScheme::Affine`] | `PyTorch` (`MinMaxObserver`, `per_tensor_affine`) | `(max⁺ - min⁻) / (qmax - qmin)`, `f32`, then `max(scale, eps)` | `clamp(qmin - round_half_even(min⁻ / scale))` | `scale = eps` (1.19e-7) |
//! | `Affine` | `OnnxRuntime` (`quant_utils.compute_scale_zp`) | same ratio in `f64`, stored as `f32` | `round_half_even(qmin - min⁻ / scale)` in `f64` | `scale = 1, zp = 0` |
//! | `Affine` | `Onnx` (`DynamicQuantizeLinear`) | same ratio in `f32` | `rint(clamp(qmin - min⁻ / scale, qmin, qmax))` | `scale = 1` |
//! | `Affine` | `TfLite` (the converter's post-training quantization) | same ratio in `f32`, after widening a range narrower than 1e-6 by 1e-6 on each side | `round(qmin - min⁻ / scale)` in `f64`, half away from zero | widened to `[-1e-6, 1e-6]` |
//! | [`QScheme::Symmetric`] | `PyTorch` (`per_tensor_symmetric`, int8 `[-128, 127]`) | `amax / ((qmax - qmin) / 2)` = `amax / 127.5` | 0 (signed), 128 (uint8) | `scale = eps` |
//! | [`QScheme::SymmetricRestricted`] | `TfLite` (int8 weights, `[-127, 127]`, `f32`), `OnnxRuntime` (symmetric int8, `2·amax / 254` in `f64`) | `amax / 127` | 0 | `scale = 1` |
//!
//! The PyTorch/TFLite difference the table shows: PyTorch's default symmetric int8 divides by
//! 127.5 and may produce -128; TFLite's restricted range divides by 127 and never does (its
//! int8 kernels rely on it). Both are offered; `SymmetricRestricted` with the `PyTorch`
//! convention is PyTorch's `quant_min=-127` observer and gives the same `amax / 127`.
//!
//! `reduce_range` (PyTorch) halves the range: int8 `[-64, 63]`, uint8 `[0, 127]`. float8 and
//! float4 are symmetric only: `scale = amax / max_finite` (448, 57344, 6).
//!
//! # Float helpers
//! `core` has no `rint`, `round`, `floor`, `fmod` or `log` for `f32`; they come from `libm`
//! (musl's implementations): `rintf` (ties to even), `roundf` (ties away), `floorf`, `fmodf` and
//! `exp2`/`frexp` are exact, so results match the peers bit for bit on every target; `logf`
//! (only in the entropy observer's KL divergence) is within an ulp. `micromath` is not used:
//! it trades accuracy for size, and every result here must match a reference exactly.
//!
//! # Views
//! [`Tensor`] (floats) and [`QTensor`]/[`QTensorMut`] (quantized, typed by element:
//! `i8`, `u8`, `i16`, `u16`, `i32`, [`I4`], [`U4`], [`I2`], [`U2`], [`F8E4M3FN`], [`F8E5M2`],
//! [`F4E2M1`]) are distinct types; [`QTensor::dequantize`] is the explicit way back to floats.
//!
//! ```
//! use microquant::quant::{quantize, ChannelQParams, QTensorMut, QuantDType, Shape, Tensor};
//! // Per-channel int8 weights [2 channels, 3 values], axis 0.
//! let w = [0.1f32, -0.2, 0.3, 1.0, -2.0, 0.5];
//! let shape = Shape::new(&[2, 3]).unwrap();
//! let scales = [0.3 / 127.0, 2.0 / 127.0];
//! let params = ChannelQParams::per_axis(&scales, &[], QuantDType::Int8, 0).unwrap();
//! let mut q = [0i8; 6];
//! let mut qt = QTensorMut::<i8>::new(&mut q, shape, params.into()).unwrap();
//! quantize(&Tensor::new(&w, shape).unwrap(), &mut qt).unwrap();
//! assert_eq!(q, [42, -85, 127, 64, -127, 32]);
//! ```

mod choose;
mod convert;
mod dtype;
pub mod minifloat;
mod params;
mod tensor;

pub use choose::{ChooseOptions, QScheme, choose_qparams, choose_qparams_with, dynamic_quantize_linear, quant_range};
pub use convert::{fake_quantize, quantize, quantize_with_mask, requantize};
pub use dtype::{F4E2M1, F8E4M3FN, F8E5M2, I2, I4, QuantDType, QuantElement, U2, U4, element_code, set_element_code};
pub use params::{ChannelQParams, Convention, QParams, QuantParams};
pub use tensor::{MAX_RANK, QTensor, QTensorMut, Shape, Tensor};

pub(crate) use params::qparams_unchecked;
