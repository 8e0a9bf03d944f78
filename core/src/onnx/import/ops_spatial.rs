//! Spatial ops: `Resize` (opset 10+; opset 10 as `Upsample`) and `Upsample` (opsets 7 to 9) of 4-D NCHW activations onto
//! [`Op::Resize`], TFLite's nearest-neighbour and bilinear resize.
//!
//! ONNX names a source coordinate rule (`coordinate_transformation_mode`) and, for nearest, a
//! rounding (`nearest_mode`); TFLite has two flags (`align_corners`, `half_pixel_centers`).
//!
//! - **nearest**: the importer computes, for both spatial axes, the input index ONNX Runtime
//!   reads for every output index (its f32 arithmetic: `get_original_coordinate` then the
//!   `nearest_mode` rounding, clamped to the input) and the index each TFLite flag combination
//!   reads ([`nearest_neighbor_source`]), and takes the first combination that reads the same
//!   pixels everywhere. So `asymmetric` + `floor`, `align_corners` + `round_prefer_ceil`,
//!   `tf_half_pixel_for_nn` + `floor`, and `half_pixel` / `pytorch_half_pixel` with
//!   `round_prefer_ceil` (or `round_prefer_floor` wherever no source coordinate falls on a
//!   half) import; anything else is an error naming the node and both attributes.
//! - **linear**: `asymmetric` → neither flag, `align_corners` → `align_corners`, `half_pixel`
//!   (and `pytorch_half_pixel` when both output extents exceed 1) → `half_pixel_centers`; other
//!   modes, `cubic`, `antialias` and `keep_aspect_ratio_policy` other than `stretch` are errors.

use super::*;
use crate::graph::ResizeMethod;
use crate::kernels::resize::nearest_neighbor_source;

/// ONNX Runtime's `get_original_coordinate` (f32), for the modes TFLite can express.
fn onnx_source(mode: &str, x: usize, scale: f32, out: usize, inp: usize) -> Option<f32> {
    let xf = x as f32;
    Some(match mode {
        "half_pixel" => (xf + 0.5) / scale - 0.5,
        "pytorch_half_pixel" => {
            if out > 1 {
                (xf + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        "align_corners" => {
            if out == 1 {
                0.0
            } else {
                xf * (inp as f32 - 1.0) / (out as f32 - 1.0)
            }
        }
        "asymmetric" => xf / scale,
        "tf_half_pixel_for_nn" => (xf + 0.5) / scale,
        _ => return None,
    })
}

/// ONNX Runtime's nearest rounding of a source coordinate (`simple` is Upsample's: ceil when
/// down-sampling, truncation otherwise).
fn onnx_round(mode: &str, v: f32, down: bool) -> Option<i64> {
    Some(match mode {
        "round_prefer_floor" => {
            if v == (v as i64) as f32 + 0.5 {
                v as i64
            } else {
                libm::roundf(v) as i64
            }
        }
        "round_prefer_ceil" => libm::roundf(v) as i64,
        "floor" => libm::floorf(v) as i64,
        "ceil" => libm::ceilf(v) as i64,
        "simple" => {
            if down {
                libm::ceilf(v) as i64
            } else {
                v as i64
            }
        }
        _ => return None,
    })
}

impl Builder {
    pub(super) fn resize(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let s = self.onnx_shape(&x);
        let attrs = ctx.attrs();
        let upsample = ctx.op == "Upsample";
        // Upsample and Resize-10: asymmetric coordinates, Upsample's rounding (ONNX Runtime).
        let legacy = upsample || ctx.opset < 11;
        let mode = ctx.a(attrs.string("mode"))?.unwrap_or_else(|| "nearest".to_string());
        let (coord, nearest_mode) = if legacy {
            ("asymmetric".to_string(), "simple".to_string())
        } else {
            let c = ctx.a(attrs.string("coordinate_transformation_mode"))?.unwrap_or_else(|| "half_pixel".into());
            let n = ctx.a(attrs.string("nearest_mode"))?.unwrap_or_else(|| "round_prefer_floor".into());
            (c, n)
        };
        if ctx.a(attrs.int_or("antialias", 0))? != 0 {
            return Err(ctx.unsupported("Resize with antialias = 1 (TFLite's resize has no antialiasing)"));
        }
        if let Some(p) = ctx.a(attrs.string("keep_aspect_ratio_policy"))? {
            if p != "stretch" {
                return Err(ctx.unsupported(format!("Resize with keep_aspect_ratio_policy {p:?}: only \"stretch\"")));
            }
        }
        if ctx.a(attrs.ints("axes"))?.is_some() {
            return Err(ctx.unsupported("Resize with the axes attribute: give scales or sizes for every axis"));
        }
        if s.len() != 4 {
            return Err(ctx.unsupported(format!("{} of a rank-{} input: only 4-D NCHW", ctx.op, s.len())));
        }
        // Scales (f32, one per axis) or sizes.
        let (scales_at, sizes_at) = if upsample {
            (1, usize::MAX)
        } else if ctx.opset >= 11 {
            (2, 3)
        } else {
            (1, usize::MAX)
        };
        let mut scales: Option<Vec<f32>> = None;
        if upsample && ctx.opset < 9 {
            scales = ctx.a(attrs.floats("scales"))?;
        } else if let Some(k) = self.const_input(ctx, scales_at, "the scales")? {
            let v = ctx.a(k.as_f32())?.to_vec();
            if !v.is_empty() {
                scales = Some(v);
            }
        }
        let sizes: Option<Vec<i64>> = match sizes_at {
            usize::MAX => None,
            i => self.const_input(ctx, i, "the sizes")?.map(|k| ctx.a(k.as_i64()).map(|v| v.to_vec())).transpose()?,
        };
        let (out, scale): (Vec<usize>, Vec<f32>) = match (scales, sizes) {
            (Some(sc), _) if sc.len() == 4 => {
                if sc.iter().any(|&v| !(v.is_finite() && v > 0.0)) {
                    return Err(ctx.err(Kind::Malformed, format!("scales {sc:?}: every scale must be positive")));
                }
                (s.iter().zip(&sc).map(|(&d, &f)| (d as f32 * f) as usize).collect(), sc)
            }
            (None, Some(sz)) if sz.len() == 4 && sz.iter().all(|&v| v > 0) => {
                let out: Vec<usize> = sz.iter().map(|&v| v as usize).collect();
                let sc = out.iter().zip(&s).map(|(&o, &i)| o as f32 / i as f32).collect();
                (out, sc)
            }
            (sc, sz) => {
                return Err(ctx.err(
                    Kind::Malformed,
                    format!("{}: expected 4 scales or 4 positive sizes, got scales {sc:?}, sizes {sz:?}", ctx.op),
                ));
            }
        };
        if out[0] != s[0] || out[1] != s[1] {
            return Err(ctx.unsupported(format!(
                "{} of {s:?} to {out:?}: only the spatial axes (2 and 3) may change size",
                ctx.op
            )));
        }
        let size = [out[2], out[3]];
        let axes = [(s[2], out[2], scale[2]), (s[3], out[3], scale[3])];
        let (method, align_corners, half_pixel_centers) = match mode.as_str() {
            "nearest" => {
                let reads = |ac: bool, hp: bool| -> Result<bool, ConvertError> {
                    for &(inp, o, sc) in &axes {
                        for v in 0..o {
                            let src = onnx_source(&coord, v, sc, o, inp).ok_or_else(|| self.bad_mode(ctx, &coord))?;
                            let i = onnx_round(&nearest_mode, src, sc < 1.0)
                                .ok_or_else(|| ctx.unsupported(format!("Resize with nearest_mode {nearest_mode:?}")))?;
                            let i = i.clamp(0, inp as i64 - 1) as usize;
                            if i != nearest_neighbor_source(v, inp, o, ac, hp) {
                                return Ok(false);
                            }
                        }
                    }
                    Ok(true)
                };
                let natural = match coord.as_str() {
                    "align_corners" => (true, false),
                    "half_pixel" | "pytorch_half_pixel" | "tf_half_pixel_for_nn" => (false, true),
                    _ => (false, false),
                };
                let mut found = None;
                for (ac, hp) in [natural, (false, false), (true, false), (false, true), (true, true)] {
                    if reads(ac, hp)? {
                        found = Some((ac, hp));
                        break;
                    }
                }
                let Some((ac, hp)) = found else {
                    return Err(ctx.unsupported(format!(
                        "{} nearest with coordinate_transformation_mode {coord:?} and nearest_mode {nearest_mode:?} \
                         from {}x{} to {}x{}: reads other pixels than any TFLite RESIZE_NEAREST_NEIGHBOR \
                         (align_corners / half_pixel_centers)",
                        ctx.op, s[2], s[3], size[0], size[1]
                    )));
                };
                (ResizeMethod::NearestNeighbor, ac, hp)
            }
            "linear" | "bilinear" => {
                let (ac, hp) = match coord.as_str() {
                    "asymmetric" => (false, false),
                    "align_corners" => (true, false),
                    "half_pixel" => (false, true),
                    "pytorch_half_pixel" if size[0] > 1 && size[1] > 1 => (false, true),
                    _ => {
                        return Err(ctx.unsupported(format!(
                            "{} linear with coordinate_transformation_mode {coord:?} (to {}x{}): TFLite's \
                             RESIZE_BILINEAR expresses asymmetric, align_corners, half_pixel (and pytorch_half_pixel \
                             with output extents above 1)",
                            ctx.op, size[0], size[1]
                        )));
                    }
                };
                (ResizeMethod::Bilinear, ac, hp)
            }
            other => {
                return Err(ctx.unsupported(format!("{} with mode {other:?}: only nearest and linear", ctx.op)));
            }
        };
        let target = layout::channels_last(4);
        let name = ctx.out_name(0);
        let xid = self.in_order(&x, &target, &name)?;
        let op = Op::Resize { method, size, align_corners, half_pixel_centers };
        let id = self.emit(ctx, ctx.name(), op, vec![Some(xid)], &name)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: target }));
        Ok(())
    }

    /// `ReduceSum` (axes an input from opset 13) and `ReduceMax` (from opset 18) over any axes,
    /// as [`Op::Sum`] / [`Op::ReduceMax`] (ReduceMean's handling, another op).
    pub(super) fn reduce_sum_max(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let max = ctx.op == "ReduceMax";
        let x = self.act_input(ctx, 0)?;
        let r = x.perm.len();
        let attrs = ctx.attrs();
        let keep = ctx.a(attrs.int_or("keepdims", 1))? != 0;
        let axes_input = ctx.opset >= if max { 18 } else { 13 };
        let axes: Option<Vec<i64>> = if axes_input {
            self.const_input(ctx, 1, "the axes")?.map(|k| ctx.a(k.as_i64().map(|v| v.to_vec()))).transpose()?
        } else {
            ctx.a(attrs.ints("axes"))?
        };
        let noop_empty = axes_input && ctx.a(attrs.int_or("noop_with_empty_axes", 0))? != 0;
        let mut onnx_axes: Vec<usize> = match axes {
            Some(a) if !a.is_empty() => fold::norm_axes(&a, r).map_err(|e| ctx.loc(e))?,
            _ if noop_empty => {
                self.set(ctx, 0, Value::Act(x));
                return Ok(());
            }
            _ => (0..r).collect(),
        };
        crate::vecmap::sort_usizes(&mut onnx_axes);
        onnx_axes.dedup();
        let graph_axes: Vec<usize> = (0..r).filter(|&i| onnx_axes.contains(&x.perm[i])).collect();
        let perm = if keep { x.perm.clone() } else { Self::drop_axes(&x.perm, &onnx_axes).1 };
        let out = ctx.out_name(0);
        let op = if max {
            Op::ReduceMax { axes: graph_axes, keep_dims: keep }
        } else {
            Op::Sum { axes: graph_axes, keep_dims: keep }
        };
        let id = self.emit(ctx, ctx.name(), op, vec![Some(x.id)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm }));
        Ok(())
    }

    fn bad_mode(&self, ctx: &Ctx, coord: &str) -> ConvertError {
        ctx.unsupported(format!(
            "{} with coordinate_transformation_mode {coord:?}: TFLite's resize expresses asymmetric, align_corners, \
             half_pixel, pytorch_half_pixel and tf_half_pixel_for_nn",
            ctx.op
        ))
    }
}
