//! Data movement (int8 and int16): SLICE, STRIDED_SLICE, DEPTH_TO_SPACE, SPACE_TO_DEPTH, MIRROR_PAD, GATHER and BROADCAST_TO against
//! TFLite Micro and the TFLite interpreter's reference kernels (`tests/golden/kernels/`).
//! Pure data movement: both rounding modes run the same kernel and must match both oracles.
//!
//! The TFLite quantization spec, as these cases follow it: "SLICE / STRIDED_SLICE: ...
//! restriction: input and outputs must all have same scale/zero_point".

use microquant::kernels::Dims4;
use microquant::kernels::depth_to_space::{SpaceDepthMode, SpaceDepthParams, space_depth_s8, space_depth_s16};
use microquant::kernels::gather::{GatherParams, gather_s8, gather_s16};
use microquant::kernels::mirror_pad::{MirrorPadMode, MirrorPadParams, mirror_pad_s8, mirror_pad_s16};
use microquant::kernels::slice::{SliceParams, StridedSliceMasks, slice_s8, slice_s16};
use microquant::kernels::tile::{TileParams, tile_s8, tile_s16};

use super::{At, Expected, Failure, MODES, Tally, Values, Workspace, compare_values, kernel, take};

/// Which data-movement op a [`MovementCase`] runs, and how its `params` are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveOp {
    /// SLICE: `params = begin ++ size`.
    Slice,
    /// STRIDED_SLICE: `params = begin ++ end ++ strides ++ [begin_mask, end_mask,
    /// shrink_axis_mask, offset]`.
    StridedSlice,
    /// DEPTH_TO_SPACE (NHWC): `params = [block_size]`.
    DepthToSpace,
    /// SPACE_TO_DEPTH (NHWC): `params = [block_size]`.
    SpaceToDepth,
    /// MIRROR_PAD: `params = [mode (0 REFLECT, 1 SYMMETRIC)] ++ [before, after] per dimension`.
    MirrorPad,
    /// GATHER (batch_dims 0): `params = [axis, indices rank] ++ indices shape ++ indices`.
    Gather,
    /// BROADCAST_TO: `params` = the output shape.
    BroadcastTo,
}

/// A data-movement case: one input, the output quantized like it.
#[derive(Debug, Clone, Copy)]
pub struct MovementCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// The op.
    pub op: MoveOp,
    /// Input, int8 or int16.
    pub input: Values<'a>,
    /// Its shape.
    pub input_shape: &'a [usize],
    /// The op's integer operands, flattened (see [`MoveOp`]).
    pub params: &'a [i32],
    /// The oracles' outputs.
    pub expected: Expected<'a>,
}

/// The prepared kernel of one case.
enum Prepared<'a> {
    Slice(SliceParams),
    SpaceDepth(SpaceDepthParams),
    MirrorPad(MirrorPadParams),
    Gather(GatherParams, &'a [i32]),
    Tile(TileParams),
}

impl Prepared<'_> {
    fn output_len(&self) -> usize {
        match self {
            Prepared::Slice(p) => p.output_len(),
            Prepared::SpaceDepth(p) => p.output().checked_len().unwrap_or(0),
            Prepared::MirrorPad(p) => p.output_shape().len(),
            Prepared::Gather(p, _) => p.output_len(),
            Prepared::Tile(p) => p.output_len(),
        }
    }
    fn run_s8(&self, x: &[i8], out: &mut [i8]) -> Result<(), microquant::Error> {
        match self {
            Prepared::Slice(p) => slice_s8(p, x, out),
            Prepared::SpaceDepth(p) => space_depth_s8(p, x, out),
            Prepared::MirrorPad(p) => mirror_pad_s8(p, x, out),
            Prepared::Gather(p, idx) => gather_s8(p, x, idx, out),
            Prepared::Tile(p) => tile_s8(p, x, out),
        }
    }
    fn run_s16(&self, x: &[i16], out: &mut [i16]) -> Result<(), microquant::Error> {
        match self {
            Prepared::Slice(p) => slice_s16(p, x, out),
            Prepared::SpaceDepth(p) => space_depth_s16(p, x, out),
            Prepared::MirrorPad(p) => mirror_pad_s16(p, x, out),
            Prepared::Gather(p, idx) => gather_s16(p, x, idx, out),
            Prepared::Tile(p) => tile_s16(p, x, out),
        }
    }
}

fn prepare<'a>(c: &MovementCase<'a>) -> Result<Prepared<'a>, Failure<'a>> {
    let r = c.input_shape.len();
    let bad = |reason| Failure::BadCase { case: c.name, reason };
    let part = |k: usize| c.params.get(k * r..(k + 1) * r).ok_or(bad("params too short for the rank"));
    Ok(match c.op {
        MoveOp::Slice => {
            Prepared::Slice(kernel(c.name, "prepare", SliceParams::tflite_slice(c.input_shape, part(0)?, part(1)?))?)
        }
        MoveOp::StridedSlice => {
            let m = c.params.get(3 * r..3 * r + 4).ok_or(bad("params too short for the masks"))?;
            let masks = StridedSliceMasks {
                begin: m[0] as u32,
                end: m[1] as u32,
                shrink_axis: m[2] as u32,
                offset: m[3] != 0,
                ..StridedSliceMasks::default()
            };
            let p = SliceParams::tflite_strided_slice(c.input_shape, part(0)?, part(1)?, part(2)?, masks);
            Prepared::Slice(kernel(c.name, "prepare", p)?)
        }
        MoveOp::DepthToSpace | MoveOp::SpaceToDepth => {
            let (&[n, h, w, ch], &[b]) = (c.input_shape, c.params) else {
                return Err(bad("a 4-D input and one parameter (the block size)"));
            };
            let mode = if c.op == MoveOp::SpaceToDepth {
                SpaceDepthMode::SpaceToDepth
            } else {
                SpaceDepthMode::DepthToSpaceDcr
            };
            let p = SpaceDepthParams::new(Dims4::new(n, h, w, ch), b as usize, mode);
            Prepared::SpaceDepth(kernel(c.name, "prepare", p)?)
        }
        MoveOp::MirrorPad => {
            let (&[mode], pads) = c.params.split_at_checked(1).ok_or(bad("no mode"))? else {
                return Err(bad("no mode"));
            };
            let mode = if mode == 0 { MirrorPadMode::Reflect } else { MirrorPadMode::Symmetric };
            let mut pairs = [[0i32; 2]; 6];
            if pads.len() != 2 * r || r > 6 {
                return Err(bad("not one [before, after] pair per dimension"));
            }
            for (k, pair) in pairs.iter_mut().enumerate().take(r) {
                *pair = [pads[2 * k], pads[2 * k + 1]];
            }
            let p = MirrorPadParams::new(c.input_shape, &pairs[..r], mode);
            Prepared::MirrorPad(kernel(c.name, "prepare", p)?)
        }
        MoveOp::Gather => {
            let (&axis, rest) = c.params.split_first().ok_or(bad("no axis"))?;
            let (&q, rest) = rest.split_first().ok_or(bad("no indices rank"))?;
            let indices = rest.get(q as usize..).ok_or(bad("no indices"))?;
            let axis = if axis < 0 { axis + r as i32 } else { axis } as usize;
            let p = GatherParams::new(c.input_shape, axis, indices);
            Prepared::Gather(kernel(c.name, "prepare", p)?, indices)
        }
        MoveOp::BroadcastTo => {
            let mut shape = [0usize; 6];
            if c.params.len() > 6 || c.params.iter().any(|&d| d < 0) {
                return Err(bad("an output shape of rank above 6 or with a negative extent"));
            }
            for (s, &d) in shape.iter_mut().zip(c.params) {
                *s = d as usize;
            }
            let p = TileParams::new(c.input_shape, &shape[..c.params.len()]);
            Prepared::Tile(kernel(c.name, "prepare", p)?)
        }
    })
}

/// Runs one case in both modes (the same kernel) and compares with both oracles.
pub fn check<'a>(c: &'a MovementCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let p = prepare(c)?;
    let out_len = c.expected.len();
    if p.output_len() != out_len {
        return Err(Failure::Shape { case: c.name });
    }
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    for (i, (rounding, oracle)) in MODES.into_iter().enumerate() {
        let e = c.expected.get(oracle);
        let at = At { case: c.name, rounding, oracle, path: "dispatched" };
        tally.elements[i] += match c.input {
            Values::I8(x) => {
                let out = take(c.name, "int8 output", ws.out_i8, out_len)?;
                kernel(c.name, "run_s8", p.run_s8(x, out))?;
                compare_values(at, e, Values::I8(out))?
            }
            Values::I16(x) => {
                let out = take(c.name, "int16 output", ws.out_i16, out_len)?;
                kernel(c.name, "run_s16", p.run_s16(x, out))?;
                compare_values(at, e, Values::I16(out))?
            }
        };
    }
    Ok(tally)
}

/// The data-movement golden tests for one target, in module `$m`. Same arguments as
/// [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! movement_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            slice_s8_matches_both_oracles => (slice, $crate::oracle::movement::check),
            slice_s16_matches_both_oracles => (slice_16, $crate::oracle::movement::check),
            strided_slice_s8_matches_both_oracles => (strided_slice, $crate::oracle::movement::check),
            strided_slice_s16_matches_both_oracles => (strided_slice_16, $crate::oracle::movement::check),
            depth_to_space_s8_matches_both_oracles => (depth_to_space, $crate::oracle::movement::check),
            space_to_depth_s8_matches_both_oracles => (space_to_depth, $crate::oracle::movement::check),
            mirror_pad_s8_matches_both_oracles => (mirror_pad, $crate::oracle::movement::check),
            gather_s8_matches_both_oracles => (gather, $crate::oracle::movement::check),
            broadcast_to_s8_matches_both_oracles => (broadcast_to, $crate::oracle::movement::check),
            broadcast_to_s16_matches_both_oracles => (broadcast_to_16, $crate::oracle::movement::check),
        );
    };
}
