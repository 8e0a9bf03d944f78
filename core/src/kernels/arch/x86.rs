//! x86-64 with `std`: the portable tiled convolution compiled a second time with AVX2 enabled
//! and chosen at run time when the CPU has it (the default x86-64 target assumes SSE2 only, so
//! the portable build's `pmaddwd` works on 8 lanes; with AVX2 on 16). Same Rust code, same
//! wrapping int32 sums and requantization: the same results bit for bit, which the kernel tests
//! check on the machine that runs them.

#![allow(unsafe_code)]

use super::portable::NaturalTile;
use super::tiled_conv::{ConvOperands, conv_s8_tiled};

/// [`conv_s8_tiled`] with AVX2 code generation.
#[target_feature(enable = "avx2")]
fn conv_s8_tiled_avx2(ops: &ConvOperands<'_>, output: &mut [i8], cols: &mut [u32]) -> bool {
    conv_s8_tiled::<NaturalTile>(ops, output, cols)
}

/// The portable tiled convolution, with AVX2 code when the CPU has it.
pub(crate) fn conv_s8(ops: &ConvOperands<'_>, output: &mut [i8], cols: &mut [u32]) -> bool {
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx2")]`
        // function is that the CPU supports AVX2, checked on the line above.
        return unsafe { conv_s8_tiled_avx2(ops, output, cols) };
    }
    conv_s8_tiled::<NaturalTile>(ops, output, cols)
}

/// The float GEMM's blocked product with AVX code generation and `6 × 16` register tiles (twelve
/// 8-lane accumulators). The tile size changes which elements are computed together, not the
/// order of any element's sum, so the results equal the portable `4 × 8` build bit for bit.
#[cfg(feature = "alloc")]
#[target_feature(enable = "avx")]
fn sgemm_avx(problem: &super::gemm::Gemm<'_>, c: &mut [f32]) {
    problem.run::<6, 16>(c);
}

/// Runs the float GEMM with AVX when the CPU has it; `false` (nothing written) otherwise.
#[cfg(feature = "alloc")]
pub(crate) fn sgemm(problem: &super::gemm::Gemm<'_>, c: &mut [f32]) -> bool {
    if std::is_x86_feature_detected!("avx") {
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx")]`
        // function is that the CPU supports AVX, checked on the line above.
        unsafe { sgemm_avx(problem, c) };
        return true;
    }
    false
}
