//! Fast paths of the int8 convolution, depthwise convolution, fully connected and add kernels, beside
//! the reference kernels and chosen at compile time. Nothing here is public API: this page
//! documents which implementation runs on which target (`docs/KERNELS.md` has the support
//! matrix and the measured speed).
//!
//! Each kernel file has one dispatch function (`conv_s8_dispatch`, `depthwise_conv_s8_dispatch`,
//! `fully_connected_dispatch`, and `add_s8` itself) that calls the fast path of the target, which checks its own
//! preconditions and returns `false` (having written nothing) when they do not hold; the
//! dispatch then runs the reference kernel. Every fast path computes exactly what the reference
//! computes (same wrapping int32 sums, same requantization function), so the outputs are the same
//! bit for bit on every target; the golden tests and the property tests against the reference
//! check it on the host, in wasm (Node and Chromium) and under QEMU.
//!
//! | target (cfg) | `conv_s8` | `depthwise_conv_s8` | `fully_connected[_per_channel]_s8` | `add_s8` (equal shapes) |
//! |---|---|---|---|---|
//! | Cortex-M4/M7, M33/M55 with `-C target-cpu` (`mq_dsp`, from `core/build.rs`) | `arm_dsp`: im2col to int16, 1 filter x 4 pixels tiles of SMLAD, 16 filters per `asm!` block | `arm_dsp`: 3x3 stride 1 (dilation 1, lines of 8 to 62 outputs): each group of 4 channels widened once into int16 planes (zero point in the padding), then per channel 4 outputs per `asm!` iteration with `SMLAD` on neighbouring taps and `SMMLAR` requantization (doubled weights); otherwise 4 channels per word (SXTB16 + SMLABB/SMLATT), 3x3 interior unrolled in `asm!` | `arm_dsp`: input row expanded once, 4 filters per pass, SXTB16 + SMLAD | `AddInputScale` per input, `RightShiftRequant` for the sum |
//! | Cortex-M55/M85 (`mq_mve`, with `mq_dsp`: `-C target-cpu=cortex-m55`, as `cargo run-an547` builds) | `arm_mve`, tried first: im2col into an interleaved block of 4 pixels, `VMLADAVA.S8` 1 filter x 4 pixels x 16 bytes per pass in tail-predicated loops (`DLSTP`/`LETP`), input offset folded into the bias per call, requantization 4 channels per vector (`VQRDMULH` + exact rounding shift); up to 512 filters | `arm_mve`, tried first: per channel a zero-point-padded plane (16-bit-offset gathers), each output one byte gather of its taps + `VMLADAV.S8`, rows requantized 4 at a time and scattered; up to 16 taps, plane up to 4 KB | `arm_mve`, tried first (fixed-point forms): 2 filters per pass, `VMLADAVA.S8` + `VADDVA.S8`, blocks of 64 outputs | `arm_mve`: 4 elements per pass, inputs and sum rescaled with `VQRDMULH` + exact rounding shift |
//! | wasm32 with `simd128` | `wasm_simd`: im2col to int16 (a filter row per run); patches up to 640 values and up to 256 filters: weights packed per call, output channels in the lanes (`i32x4.dot_i16x8_s` of a splat input pair), 8 filters x 4 pixels, requantization per lane in `i32x4`; longer patches: 2 filters x 4 pixels, sums across lanes | `wasm_simd`: 16 channels per block, taps paired and interleaved for `i32x4.dot_i16x8_s`, padding read as the zero point (offset folded into the bias), requantization per lane in `i32x4`; up to 7x7 | `wasm_simd`: `i32x4.dot_i16x8_s`, 4 filters per pass | `wasm_simd`: each input's rescaling tabulated per call (256 values), the sums requantized 16 at a time in `i32x4` |
//! | x86-64 with `std` (the converter's host), CPU with AVX2 (checked at run time) | `x86`: im2col to int16, `vpmaddwd` with 8 filters per register, 4 pixels x 16 filters per pass, requantization 8 lanes at a time; bands of pixels on threads | `portable` compiled with AVX2, bands of rows on threads | `x86`: as its conv, 4 rows x 16 outputs per pass (fixed-point rounding; the other form: reference) | as below |
//! | anything else: x86-64 without AVX2, AArch64, Cortex-M0/M0+/M3, wasm32 without SIMD | `portable`: im2col to int16, 4-pixel tiles (autovectorized on x86-64) | `portable` | reference (its zip loop autovectorizes on x86-64) | `AddInputScale` per input, `ChannelRequant` for the sum |
//!
//! Preconditions common to the fast paths: int8 (not 16x8) data; conv without groups
//! (`filter_in_c == in_c`) and with enough scratch ([`conv_s8_scratch_len`]); depthwise with
//! depth multiplier 1 (and at most 25 taps on Arm, 49 in wasm); per-channel multipliers other
//! than `i32::MIN` and shifts in TFLite's contract `[-31, 30]` (conv, depthwise). Everything else runs
//! the reference. The `force-reference` cargo feature compiles the fast paths out.
//!
//! [`conv_s8_scratch_len`]: crate::kernels::conv::conv_s8_scratch_len
//!
//! # Files
//! Which fast path is built is decided once, by `core/build.rs`, as one cfg per path: `mq_dsp`
//! (Arm DSP; with `mq_mve` also Helium, tried first), `mq_wasm_simd` (wasm32 `simd128`; `mq_relaxed_simd` with the `relaxed-simd` feature
//! and target feature), `mq_portable` (everything else); none with `force-reference`.
//!
//! - `scratch`: the scratch sizes (always built: the planner's `*_scratch_len` use them);
//! - `requant`: the requantization forms the fast paths compute with;
//! - `tiled_conv`: the tiled convolution the conv fast paths share (im2col + one filter x 4
//!   pixels per dot product);
//! - `add`: the int8 ADD fast path (equal shapes);
//! - `arm_dsp`, `wasm_simd`, `portable`: each target's kernels;
//! - `arm_mve` (`mq_mve`): the Helium kernels, each declining to `arm_dsp` outside its
//!   preconditions (its module docs: the instructions and the exact requantization);
//! - `x86` (x86-64 with `std`): the conv and fully connected `vpmaddwd` kernels and the portable
//!   depthwise compiled again with AVX2, chosen at run time, in bands on threads
//!   (`crate::parallel`); the float GEMM's AVX tiles;
//! - `gemm` (`alloc`): the float executor's matrix product, summed in one fixed order on every
//!   target (its module docs).

#[cfg(any(test, mq_dsp, mq_wasm_simd, mq_portable))]
pub(crate) mod add;
#[cfg(mq_dsp)]
pub(crate) mod arm_dsp;
#[cfg(mq_mve)]
pub(crate) mod arm_mve;
#[cfg(feature = "alloc")]
pub(crate) mod gemm;
#[cfg(any(test, mq_dsp, mq_wasm_simd, mq_portable))]
pub(crate) mod pool;
#[cfg(any(test, mq_portable, mq_wasm_simd))]
pub(crate) mod portable;
#[cfg(any(test, mq_dsp, mq_wasm_simd, mq_portable))]
pub(crate) mod requant;
pub(crate) mod scratch;
#[cfg(test)]
pub(crate) mod test_rng;
#[cfg(any(test, mq_dsp, mq_wasm_simd, mq_portable))]
pub(crate) mod tiled_conv;
#[cfg(mq_wasm_simd)]
pub(crate) mod wasm_simd;
#[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
pub(crate) mod x86;
