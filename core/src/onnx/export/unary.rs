//! [`Op::Unary`] and [`Op::HardSigmoid`] (an int8 table on the device): exactly as the table
//! (`Gather` of the kernel's 256 entries at the int8 input), or as the float function in ONNX
//! ops between `DequantizeLinear` and `QuantizeLinear` (the portable form).

use super::*;
use crate::graph::UnaryFn;

impl<'g> Exporter<'g> {
    /// Writes a table-driven elementwise node: exact (the `.mq`'s own table) or portable.
    pub(super) fn export_unary(&mut self, node: &Node, nname: &str, base: &str) -> Result<(), ConvertError> {
        let (xid, y) = match (node.input(0), node.output(0)) {
            (Some(a), Some(b)) => (a, b),
            _ => return Err(ConvertError::new(Kind::InvalidGraph, "an activation without input or output")),
        };
        if self.exact_int8(node)? {
            let (qx, qy) = (self.tq(xid)?, self.tq(y)?);
            // The table compile/lower.rs writes into the .mq.
            let lut = match node.op {
                Op::Unary(f) => crate::kernels::unary_lut::table_s8(qx, qy, |v| f.eval(v)),
                Op::HardSigmoid { alpha, beta } => {
                    crate::kernels::unary_lut::table_s8(qx, qy, |v| (alpha * v + beta).clamp(0.0, 1.0))
                }
                _ => return Err(ConvertError::new(Kind::InvalidGraph, "not a table op")),
            }
            .map_err(|e| err(format!("exact export: {e:?}")))?;
            return self.exact_table(node, nname, &lut);
        }
        let x = self.act(xid)?;
        let out = self.fresh(&format!("{base}/float"));
        let scalar = |s: &mut Self, what: &str, v: f32| s.f32_scalar(&format!("{base}/{what}"), v);
        match node.op {
            Op::HardSigmoid { alpha, beta } => self.node(
                "HardSigmoid",
                nname,
                vec![x.name],
                vec![out.clone()],
                vec![attr_float("alpha", alpha), attr_float("beta", beta)],
            ),
            Op::Unary(f) => match f {
                UnaryFn::Exp
                | UnaryFn::Sqrt
                | UnaryFn::Erf
                | UnaryFn::Neg
                | UnaryFn::Softplus
                | UnaryFn::Sin
                | UnaryFn::Cos => self.node(f.name(), nname, vec![x.name], vec![out.clone()], vec![]),
                UnaryFn::Pow(e) => {
                    let e = scalar(self, "exponent", e);
                    self.node("Pow", nname, vec![x.name, e], vec![out.clone()], vec![]);
                }
                UnaryFn::Silu => {
                    let s = self.op1("Sigmoid", &format!("{base}/sigmoid"), vec![x.name.clone()], vec![]);
                    self.node("Mul", nname, vec![x.name, s], vec![out.clone()], vec![]);
                }
                UnaryFn::Gelu | UnaryFn::GeluTanh => {
                    // x · (1 + erf(x / √2)) / 2, or x · (1 + tanh(√(2/π) · (x + 0.044715 x³))) / 2.
                    let inner = if f == UnaryFn::Gelu {
                        let k = scalar(self, "inv_sqrt2", core::f32::consts::FRAC_1_SQRT_2);
                        let t = self.op1("Mul", &format!("{base}/scaled"), vec![x.name.clone(), k], vec![]);
                        self.op1("Erf", &format!("{base}/erf"), vec![t], vec![])
                    } else {
                        let three = scalar(self, "three", 3.0);
                        let c = scalar(self, "cubic", 0.044715);
                        let k = scalar(self, "sqrt_2_over_pi", libm::sqrtf(2.0 / core::f32::consts::PI));
                        let x3 = self.op1("Pow", &format!("{base}/cube"), vec![x.name.clone(), three], vec![]);
                        let x3 = self.op1("Mul", &format!("{base}/cube_scaled"), vec![x3, c], vec![]);
                        let t = self.op1("Add", &format!("{base}/inner"), vec![x.name.clone(), x3], vec![]);
                        let t = self.op1("Mul", &format!("{base}/scaled"), vec![t, k], vec![]);
                        self.op1("Tanh", &format!("{base}/tanh"), vec![t], vec![])
                    };
                    let one = scalar(self, "one", 1.0);
                    let half = scalar(self, "half", 0.5);
                    let t = self.op1("Add", &format!("{base}/one_plus"), vec![inner, one], vec![]);
                    let t = self.op1("Mul", &format!("{base}/times_x"), vec![x.name, t], vec![]);
                    self.node("Mul", nname, vec![t, half], vec![out.clone()], vec![]);
                }
            },
            _ => return Err(ConvertError::new(Kind::InvalidGraph, "not a table op")),
        }
        self.finish(y, out, x.perm)
    }
}
