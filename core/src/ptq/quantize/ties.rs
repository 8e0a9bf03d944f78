//! Keeping an affine op off rounding ties: an Add, Sub or Mul of an int8 tensor and a constant
//! whose exact results would mostly fall halfway between two codes of the output's grid (a
//! model's built-in `x / 127.5 - 1` on 8-bit pixels) gets its output range widened by a step
//! ([`super::QParamsSource::OffTies`]).

use crate::graph::{Graph, Node, Op, TensorId};

/// An Add, Sub or Mul of one activation and one f32 constant: the activation, the constant's
/// values and whether the activation is the first operand.
pub(super) fn const_operand<'g>(g: &'g Graph, node: &Node) -> Option<(TensorId, &'g [f32], bool)> {
    if !matches!(node.op, Op::Add { .. } | Op::Sub { .. } | Op::Mul { .. }) {
        return None;
    }
    let (a, b) = (node.input(0)?, node.input(1)?);
    let values = |t: TensorId| g.tensor(t).filter(|t| t.is_constant()).and_then(|t| t.data.as_ref()?.as_f32());
    match (values(a), values(b)) {
        (None, Some(c)) => Some((a, c, true)),
        (Some(c), None) => Some((b, c, false)),
        _ => None,
    }
}

/// The share of the int8 codes of `x` (scale, zero point) whose exact result under `op` with
/// a constant value of `c` (every value, or 64 of them spread over a larger constant) falls
/// within a thousandth of a step of a rounding tie of `out`'s grid: the share of the op's
/// outputs the int8 kernel must round by half a step.
pub(super) fn ties_share(op: &Op, x_first: bool, x: (f32, i32), c: &[f32], out: (f32, i32)) -> f64 {
    let (sx, zx) = (f64::from(x.0), f64::from(x.1));
    let (so, zo) = (f64::from(out.0), f64::from(out.1));
    if c.is_empty() || so <= 0.0 {
        return 0.0;
    }
    let stride = c.len().div_ceil(64);
    let (mut ties, mut all) = (0usize, 0usize);
    for &v in c.iter().step_by(stride) {
        let v = f64::from(v);
        for q in -128..=127 {
            let xr = sx * (f64::from(q) - zx);
            let y = match (op, x_first) {
                (Op::Add { .. }, _) => xr + v,
                (Op::Sub { .. }, true) => xr - v,
                (Op::Sub { .. }, false) => v - xr,
                _ => xr * v,
            };
            let p = y / so + zo;
            let frac = p - libm::floor(p);
            ties += usize::from((frac - 0.5).abs() < 1e-3);
            all += 1;
        }
    }
    ties as f64 / all as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{ConstData, DType, FusedActivation, GraphMetadata, Tensor};
    use alloc::string::{String, ToString};
    use alloc::vec;
    use alloc::vec::Vec;

    fn msg(e: impl core::fmt::Display) -> String {
        e.to_string()
    }

    /// A model's own input scaling, `x / 127.5 - 1` on 8-bit pixels (Keras' `Rescaling`):
    /// min/max gives the Add's output the grid of step 2/255 over [-1, 1], on which every
    /// value `k / 127.5 - 1` lies half a step off, so the int8 kernel rounds each one by half a
    /// step. The quantizer widens that range by a step (`off-ties`): the errors spread over the
    /// grid, their mean square a third of the ties', their mean near zero.
    #[test]
    fn input_scaling_is_kept_off_rounding_ties() -> Result<(), String> {
        let none = FusedActivation::None;
        assert_eq!(
            ties_share(&Op::Add { activation: none }, true, (2.0 / 255.0, -128), &[-1.0], (2.0 / 255.0, -1)),
            1.0
        );
        assert_eq!(
            ties_share(&Op::Add { activation: none }, true, (2.0 / 255.0, -128), &[-1.0], (2.0 / 254.0, -1)),
            0.0
        );
        assert_eq!(
            ties_share(&Op::Mul { activation: none }, true, (1.0, -128), &[1.0 / 127.5], (2.0 / 255.0, -128)),
            0.0
        );
        let mut g = Graph::new(GraphMetadata::new("test", "input scaling"));
        let x = g.add_tensor(Tensor::new("x", vec![1, 256], DType::F32)).map_err(msg)?;
        let c = g.add_tensor(Tensor::constant("c", vec![1], ConstData::F32(vec![1.0 / 127.5]))).map_err(msg)?;
        let m = g.add_tensor(Tensor::constant("m", vec![1], ConstData::F32(vec![-1.0]))).map_err(msg)?;
        let (mid, y) = (
            g.add_tensor(Tensor::new("mid", vec![1, 256], DType::F32)).map_err(msg)?,
            g.add_tensor(Tensor::new("y", vec![1, 256], DType::F32)).map_err(msg)?,
        );
        g.add_node(Node::new("scale", Op::Mul { activation: none }, vec![Some(x), Some(c)], vec![mid]));
        g.add_node(Node::new("shift", Op::Add { activation: none }, vec![Some(mid), Some(m)], vec![y]));
        g.inputs.push(x);
        g.outputs.push(y);
        let pixels: Vec<f32> = (0..256).map(|k| k as f32).collect();
        let samples = vec![vec![pixels.clone()]; 4];
        let out =
            crate::ptq::convert(&g, &samples, None, &crate::ptq::PtqOptions::default(), &mut |_| {}).map_err(msg)?;
        let r = out.report.layers.iter().find(|l| l.name == "shift").ok_or("no layer 'shift' in the report")?;
        assert_eq!(r.qparams, "off-ties");
        assert!((r.scale - 2.0 / 254.0).abs() < 1e-6, "{}", r.scale);
        let model = crate::model::AlignedBytes::new(&out.compiled.bytes);
        let mut arena = alloc::vec![0u8; out.compiled.arena_len + 16];
        let mut it = crate::interp::Interpreter::new(&model, &mut arena).map_err(msg)?;
        for (q, &p) in it.input_i8(0).map_err(msg)?.iter_mut().zip(&pixels) {
            *q = (p - 128.0) as i8;
        }
        it.invoke().map_err(msg)?;
        // Errors in steps of the output grid.
        let errs: Vec<f64> = it
            .output_i8(0)
            .map_err(msg)?
            .iter()
            .zip(&pixels)
            .map(|(&q, &p)| {
                let exact = f64::from(p) / 127.5 - 1.0;
                (f64::from(r.scale) * (f64::from(q) - f64::from(r.zero_point)) - exact) / f64::from(r.scale)
            })
            .collect();
        let mean = errs.iter().sum::<f64>() / 256.0;
        let mean_square = errs.iter().map(|e| e * e).sum::<f64>() / 256.0;
        assert!(errs.iter().all(|e| e.abs() <= 0.5 + 1e-6));
        // Ties: 0.25 (half a step everywhere); spread evenly over the grid: 1/12.
        assert!(mean_square < 0.1, "{mean_square}");
        assert!(mean.abs() < 0.05, "{mean}");
        Ok(())
    }
}
