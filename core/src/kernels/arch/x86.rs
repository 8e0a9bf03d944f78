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
