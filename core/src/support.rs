//! What the interpreter runs, in which element types, and where a fast path replaces the
//! reference kernel: the support matrix, as data.
//!
//! The tables of `README.md` and `docs/KERNELS.md` are rendered from [`KERNELS`] by
//! [`write_markdown`] (the test `support_matrix` in `tests/host` checks both files against it,
//! and rewrites them with `MQ_BLESS=1`). Every [`OpKind`] of the `.mq` format is either in a row
//! of [`KERNELS`] or in [`RESERVED`].
//!
//! ```
//! use microquant::model::OpKind;
//! use microquant::support::{KERNELS, Target};
//!
//! let conv = KERNELS.iter().find(|k| k.kinds.contains(&OpKind::Conv2d)).unwrap();
//! assert!(conv.fast_path(Target::ArmDsp).is_some());
//! ```

use core::fmt::{self, Write};

use crate::model::OpKind;

/// A family of targets with its own fast paths (`core/src/kernels/arch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Cortex-M with the DSP extension (M4, M7; M33/M55 with `target-cpu`): cfg `mq_dsp`.
    ArmDsp,
    /// Cortex-M with Helium (M55, M85 with `target-cpu`): cfg `mq_mve` (with `mq_dsp`; where a
    /// Helium kernel declines, the Arm DSP path runs).
    ArmMve,
    /// wasm32 with `simd128`: cfg `mq_wasm_simd`.
    WasmSimd,
    /// Every other target (x86-64, AArch64, M0/M0+/M3, wasm without SIMD): cfg `mq_portable`.
    Portable,
}

impl Target {
    /// Every target, in the matrix's column order.
    pub const ALL: [Target; 4] = [Target::ArmDsp, Target::ArmMve, Target::WasmSimd, Target::Portable];

    /// The column heading of the matrix.
    pub const fn heading(self) -> &'static str {
        match self {
            Target::ArmDsp => "Arm DSP (M4, M7, M33/M55 with `target-cpu`)",
            Target::ArmMve => "Helium / MVE (M55, M85 with `target-cpu`; else the Arm DSP column)",
            Target::WasmSimd => "wasm SIMD (`simd128`)",
            Target::Portable => "portable (x86-64, AArch64, M0/M0+/M3, wasm without SIMD)",
        }
    }
}

/// One row of the matrix: ops of some kinds, in some element types.
#[derive(Debug, Clone, Copy)]
pub struct KernelSupport {
    /// The `.mq` op kinds the row covers.
    pub kinds: &'static [OpKind],
    /// The ops, as people call them.
    pub op: &'static str,
    /// The element types (and conditions) of the row.
    pub dtypes: &'static str,
    /// The reference kernels (bit-exact with TFLite Micro and, in single-rounding mode, with the
    /// TFLite interpreter's reference kernels, on every golden case).
    pub reference: &'static str,
    /// The fast path on the Arm DSP target, if any (`None`: the reference runs there).
    pub arm_dsp: Option<&'static str>,
    /// The fast path on Helium (MVE), if any (`None`: the Arm DSP column applies there).
    pub arm_mve: Option<&'static str>,
    /// The fast path on wasm SIMD, if any.
    pub wasm_simd: Option<&'static str>,
    /// The fast path on every other target, if any.
    pub portable: Option<&'static str>,
}

impl KernelSupport {
    /// The fast path of this row on `target`, `None` where the reference kernel runs.
    pub const fn fast_path(&self, target: Target) -> Option<&'static str> {
        match target {
            Target::ArmDsp => self.arm_dsp,
            Target::ArmMve => self.arm_mve,
            Target::WasmSimd => self.wasm_simd,
            Target::Portable => self.portable,
        }
    }
}

/// Op kinds of the `.mq` format that no interpreter of this version runs yet (loading a model
/// with one fails with [`Error::UnsupportedOp`](crate::Error::UnsupportedOp)); the converter
/// never writes them (it fuses RELU into the op before).
pub const RESERVED: &[OpKind] = &[OpKind::Dequantize];

/// The support matrix: every op kind the interpreter runs.
pub const KERNELS: &[KernelSupport] = &[
    KernelSupport {
        kinds: &[OpKind::Conv2d],
        op: "conv 2D",
        dtypes: "int8 (per-channel)",
        reference: "`conv_s8`",
        arm_dsp: Some("im2col + `SMLAD`, 1 filter × 4 pixels"),
        arm_mve: Some(
            "im2col, `VMLADAVA.S8` 1 filter × 4 pixels × 16 bytes in tail-predicated loops, requantization 4 \
             channels per vector",
        ),
        wasm_simd: Some(
            "im2col + `i32x4.dot_i16x8_s`; patches of ≤ 640 values and ≤ 256 filters: filters in the lanes \
             (4 per register, 8 filters × 4 pixels per pass); relaxed SIMD: `i32x4.relaxed_dot_i8x16_i7x16_add_s`",
        ),
        portable: Some(
            "im2col + int16 dot products (vectorized by the compiler); x86-64 host with AVX2: `vpmaddwd`, \
             8 filters per register, 4 pixels × 16 filters per pass",
        ),
    },
    KernelSupport {
        kinds: &[OpKind::Conv2d],
        op: "conv 2D",
        dtypes: "16x8 (int16 act., i64/i32 bias)",
        reference: "`conv_s16`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Conv2d],
        op: "conv 2D",
        dtypes: "W4A8: int4 weights (packed, per-channel), int8 act.",
        reference: "`conv_s4`",
        arm_dsp: Some("the filter unpacked into the op's scratch, then the int8 kernel's path"),
        arm_mve: Some("the filter unpacked into the op's scratch, then the int8 kernel's path"),
        wasm_simd: Some("the filter unpacked into the op's scratch, then the int8 kernel's path"),
        portable: Some("the filter unpacked into the op's scratch, then the int8 kernel's path"),
    },
    KernelSupport {
        kinds: &[OpKind::DepthwiseConv2d],
        op: "depthwise conv 2D",
        dtypes: "int8, depth multiplier 1",
        reference: "`depthwise_conv_s8`",
        arm_dsp: Some(
            "3x3 stride 1: tap pairs in int16 planes (`SMLAD`, `SMMLAR` requantization); else 4 channels per \
             word (`SMLABB`/`SMLATT`), 3x3 interior in `asm!`",
        ),
        arm_mve: Some(
            "per channel a zero-point-padded plane, each output one byte gather of its taps + `VMLADAV.S8` \
             (≤ 16 taps)",
        ),
        wasm_simd: Some(
            "blocks of 16 channels, taps in pairs on `i32x4.dot_i16x8_s` (layers of ≤ 8 channels: 2 pixels per pass)",
        ),
        portable: Some("channel-inner loops"),
    },
    KernelSupport {
        kinds: &[OpKind::DepthwiseConv2d],
        op: "depthwise conv 2D",
        dtypes: "int8, depth multiplier > 1",
        reference: "`depthwise_conv_s8`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::DepthwiseConv2d],
        op: "depthwise conv 2D",
        dtypes: "16x8",
        reference: "`depthwise_conv_s16`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::DepthwiseConv2d],
        op: "depthwise conv 2D",
        dtypes: "W4A8: int4 weights (packed, per-channel), int8 act.",
        reference: "`depthwise_conv_s4`",
        arm_dsp: Some("the filter unpacked into the op's scratch, then the int8 kernel's path"),
        arm_mve: Some("the filter unpacked into the op's scratch, then the int8 kernel's path"),
        wasm_simd: Some("the filter unpacked into the op's scratch, then the int8 kernel's path"),
        portable: Some("the filter unpacked into the op's scratch, then the int8 kernel's path"),
    },
    KernelSupport {
        kinds: &[OpKind::FullyConnected],
        op: "fully connected",
        dtypes: "int8, per-tensor and per-channel, both roundings",
        reference: "`fully_connected[_per_channel]_s8`",
        arm_dsp: Some("4 filters per pass, `SMLAD`"),
        arm_mve: Some("fixed-point forms: 2 filters per pass, `VMLADAVA.S8` + `VADDVA.S8`"),
        wasm_simd: Some("`i32x4.dot_i16x8_s`, 4 filters per pass"),
        portable: Some("x86-64 host with AVX2 (fixed-point rounding): `vpmaddwd`, 4 rows × 16 filters per pass"),
    },
    KernelSupport {
        kinds: &[OpKind::FullyConnected],
        op: "fully connected",
        dtypes: "16x8",
        reference: "`fully_connected[_per_channel]_s16`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::FullyConnected],
        op: "fully connected",
        dtypes: "W4A8: int4 weights (packed), int8 act., both roundings",
        reference: "`fully_connected[_per_channel]_s4`",
        arm_dsp: Some("weights read packed: nibbles unpacked in registers for `SMLAD`, 2 rows per pass (depths of 8s)"),
        arm_mve: None,
        wasm_simd: Some("weights read packed, 2 per byte (even depths)"),
        portable: Some("weights read packed, 2 per byte (even depths)"),
    },
    KernelSupport {
        kinds: &[OpKind::MaxPool2d, OpKind::AvgPool2d],
        op: "max / average pool",
        dtypes: "int8, int16",
        reference: "`{max,avg}_pool_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: Some("int8: channels innermost, in memory order"),
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Add],
        op: "add",
        dtypes: "int8",
        reference: "`add_s8`",
        arm_dsp: Some("equal shapes: inputs rescaled in 32-bit arithmetic, output by the right-shift requantization"),
        arm_mve: Some("equal shapes: 4 elements per pass, `VQRDMULH` + exact rounding shift"),
        wasm_simd: Some("equal shapes: each input's rescaling tabulated (256 values), sums requantized 16 at a time"),
        portable: Some("equal shapes: inputs rescaled in 32-bit arithmetic"),
    },
    KernelSupport {
        kinds: &[OpKind::Add, OpKind::Mul],
        op: "add, mul (broadcasting)",
        dtypes: "add int16; mul int8, int16",
        reference: "`add_s16`, `mul_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Sub],
        op: "sub (broadcasting)",
        dtypes: "int8, int16",
        reference: "`sub_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Minimum, OpKind::Maximum],
        op: "minimum, maximum (broadcasting; shared quantization)",
        dtypes: "int8, int16",
        reference: "`min_max_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Prelu],
        op: "PReLU (slope tensor, broadcasting)",
        dtypes: "int8, 16x8 (int16 act., int8 slope)",
        reference: "`prelu_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Div],
        op: "div (broadcasting)",
        dtypes: "int8",
        reference: "`div_s8`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::SquaredDifference],
        op: "squared difference (broadcasting)",
        dtypes: "int8",
        reference: "`squared_difference_s8`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Softmax],
        op: "softmax",
        dtypes: "int8, int8→int16, int16",
        reference: "`softmax_s8`, `softmax_s8_s16`, `softmax_s16`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Logistic, OpKind::Tanh, OpKind::HardSwish, OpKind::Lut],
        op: "logistic, tanh, hard-swish, table (exp, sqrt, erf, GELU, SiLU, ...)",
        dtypes: "int8",
        reference: "lookup tables (`lut_lookup_s8`)",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Relu],
        op: "relu, relu6, relu_n1_to_1, clamp [lo, hi] (requantizing)",
        dtypes: "int8, int16",
        reference: "`relu_s8`, `relu_s16`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Abs, OpKind::Neg],
        op: "abs, neg (requantizing)",
        dtypes: "int8, int16",
        reference: "`abs_s{8,16}`, `neg_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Rsqrt],
        op: "rsqrt (TFLite's integer 1/√x)",
        dtypes: "int8",
        reference: "`rsqrt_s8`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Elu],
        op: "elu (TFLite Micro's table)",
        dtypes: "int8",
        reference: "`elu_s8` (`lut_lookup_s8`)",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::LeakyRelu],
        op: "leaky relu",
        dtypes: "int8, int16",
        reference: "`leaky_relu_s8`, `leaky_relu_s16`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Mean],
        op: "mean",
        dtypes: "int8, int16",
        reference: "`mean_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Concatenation, OpKind::Pad, OpKind::Reshape, OpKind::Transpose],
        op: "concatenation, pad, reshape, transpose",
        dtypes: "int8, int16 (transpose also int32)",
        reference: "`concat`, `pad`, `reshape`, `transpose`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Lstm],
        op: "unidirectional sequence LSTM (state kept between invokes)",
        dtypes: "int8 (8x8→16), 16x8; int16 cell state",
        reference: "`lstm_s8`, `lstm_s16`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::TransposeConv],
        op: "transposed conv 2-D (scatter into int32 / int64 accumulators)",
        dtypes: "int8 (per-channel weights), 16x8",
        reference: "`transpose_conv_s8`, `transpose_conv_s16`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::BatchMatMul],
        op: "batch matmul of two activations (adj_x, adj_y, broadcast batch dims)",
        dtypes: "int8 (any zero points), int16 (zero points 0)",
        reference: "`batch_matmul_s8`, `batch_matmul_s16`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: Some("int8 on the x86-64 host with AVX2: `vpmaddwd`, 4 rows × 16 columns per pass"),
    },
    KernelSupport {
        kinds: &[OpKind::Quantize],
        op: "quantize (requantize)",
        dtypes: "int8↔int16, int8→int8, int16→int16",
        reference: "`requantize_s{8,16}_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Sum, OpKind::ReduceMax],
        op: "sum, max over axes",
        dtypes: "int8, int16",
        reference: "`mean_s{8,16}` (sum parameters), `reduce_max_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::ResizeNearestNeighbor, OpKind::ResizeBilinear],
        op: "resize (nearest neighbour, bilinear)",
        dtypes: "int8 (nearest also int16)",
        reference: "`resize_nearest_neighbor_s{8,16}`, `resize_bilinear_s8`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::StridedSlice],
        op: "strided slice (slice, split)",
        dtypes: "int8, int16",
        reference: "`slice_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::DepthToSpace, OpKind::SpaceToDepth],
        op: "depth to space, space to depth",
        dtypes: "int8, int16",
        reference: "`space_depth_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::MirrorPad],
        op: "mirror pad (reflect, symmetric, edge)",
        dtypes: "int8, int16",
        reference: "`mirror_pad_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Gather],
        op: "gather (constant indices)",
        dtypes: "int8, int16",
        reference: "`gather_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
    KernelSupport {
        kinds: &[OpKind::Tile],
        op: "tile, broadcast to",
        dtypes: "int8, int16",
        reference: "`tile_s{8,16}`",
        arm_dsp: None,
        arm_mve: None,
        wasm_simd: None,
        portable: None,
    },
];

/// How much of each row [`write_markdown`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// ✓ or — per target (the README's table).
    Brief,
    /// The reference kernels' names and what each fast path does (`docs/KERNELS.md`).
    Full,
}

/// Writes the matrix as a Markdown table (a heading line, a rule, one line per row of [`KERNELS`],
/// each ending in `\n`).
pub fn write_markdown(w: &mut impl Write, detail: Detail) -> fmt::Result {
    write!(w, "| op | dtype | reference |")?;
    for t in Target::ALL {
        write!(w, " {} |", t.heading())?;
    }
    writeln!(w)?;
    write!(w, "|---|---|---|")?;
    for _ in Target::ALL {
        write!(w, "---|")?;
    }
    writeln!(w)?;
    for k in KERNELS {
        match detail {
            Detail::Full => write!(w, "| {} | {} | ✓ {} |", k.op, k.dtypes, k.reference)?,
            Detail::Brief => write!(w, "| {} | {} | ✓ |", k.op, k.dtypes)?,
        }
        for t in Target::ALL {
            match (k.fast_path(t), detail) {
                (Some(how), Detail::Full) => write!(w, " ✓ {how} |")?,
                (Some(_), Detail::Brief) => write!(w, " ✓ |")?,
                (None, _) => write!(w, " — |")?,
            }
        }
        writeln!(w)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_kind_is_in_the_matrix_or_reserved() {
        for code in 0..=u16::MAX {
            let Some(kind) = OpKind::from_code(code) else { continue };
            let rows = KERNELS.iter().filter(|k| k.kinds.contains(&kind)).count();
            let reserved = RESERVED.contains(&kind);
            assert!(rows > 0 || reserved, "{} has no row in support::KERNELS and is not RESERVED", kind.name());
            assert!(!(rows > 0 && reserved), "{} is both in support::KERNELS and RESERVED", kind.name());
        }
    }

    #[test]
    fn markdown_has_one_line_per_row() {
        struct Lines(usize);
        impl Write for Lines {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                self.0 += s.matches('\n').count();
                Ok(())
            }
        }
        for detail in [Detail::Brief, Detail::Full] {
            let mut n = Lines(0);
            write_markdown(&mut n, detail).unwrap();
            assert_eq!(n.0, KERNELS.len() + 2);
        }
    }
}
