//! int8 layers written so that ONNX Runtime computes exactly what the `.mq` computes.
//!
//! A plain QDQ layer (`DequantizeLinear` → `Conv` → `QuantizeLinear`) rounds once, to nearest
//! even, from the real value. TFLite Micro (and so our kernels) requantizes an int32
//! accumulator with `MultiplyByQuantizedMultiplier`: a Q31 product rounded to an integer
//! (`SaturatingRoundingDoublingHighMul`), then a rounding right shift by `s` bits
//! (`RoundingDivideByPOT`, half away from zero). The two roundings give the real value rounded
//! after adding `±2^-(s+1)`: a layer of shift 7 rounds up every value whose fraction is in
//! `[0.496, 0.5)`, about 0.4 % of its outputs one step away from ONNX Runtime's; each such step
//! becomes several steps a few layers down (a MobileNetV2 ends 10 % within one step). Likewise
//! TFLite's hard-swish, logistic and tanh are fixed-point approximations up to 2 steps from the
//! float function ONNX Runtime evaluates.
//!
//! So the int8 layers whose arithmetic differs are written as ONNX ops that compute our
//! integers, every value exact:
//!
//! | layer | written as |
//! |---|---|
//! | `Conv2d`, `DepthwiseConv2d`, `TransposeConv2d`, `FullyConnected` | the integer input `x − zp` (`Round(DequantizeLinear(x) / s)`), int8 weights and int32 bias through `DequantizeLinear` with scale 1, the float `Conv` / `ConvTranspose` / `Gemm` / `MatMul` of those integers (exact: every partial sum is an integer below 2^24 in float32), then the requantization below |
//! | `Add`, `Sub`, `Mul` | TFLite's integer add and sub (inputs shifted left 20 bits, each requantized, summed or subtracted, requantized) and mul (the product of the integers, requantized), in `double` |
//! | `AvgPool2d` | the window sums of the raw int8 values (a `Conv` with a ones filter per channel), divided by each pixel's own count (a constant: pixels inside the input), rounded half away from zero |
//! | `HardSwish`, `Logistic`, `Tanh`, and the table ops (`Op::Unary`: SiLU, GELU, exp, sqrt, ...; `HardSigmoid`) | the kernel's own 256-entry table, read with `Gather` at the int8 input as a `u8` index |
//! | `Resize` (bilinear) | TFLite's integer bilinear: the four neighbours (`Gather`) weighted by its 1/1024 taps, summed in double, rounded as the kernel rounds |
//! | `Prelu` | TFLite's integer PRELU: the identity and the slope branches each requantized, chosen with `Where` on the sign of `x − zp` |
//! | `Concatenation` | each input through the 256-entry table of its requantization, then `Concat` of the int8 values |
//! | `Mean` | `ReduceSum` of the integers, then the requantization below with the kernel's multiplier (`1/n` folded in) |
//! | `BatchMatMul` | the integers `a − zp_a`, `b − zp_b` (an adjoint operand transposed in its last two axes) cast to `double`, their `MatMul` (exact below 2^53), then the requantization below |
//! | `Lstm` | every time step unrolled (`lstm.rs`): the gate products as `MatMul`s of the integers in double, requantized with the doubling high product in int64 (exact where a double product of a 31-bit multiplier and a 31-bit accumulator is not), σ and tanh read with `Gather` from the kernel's functions tabulated on the 65536 int16 inputs, the cell update and the hidden state as the kernel computes them; the state a graph input and output |
//!
//! The requantization `MultiplyByQuantizedMultiplier(acc, m, shift)` in `double` (exact: every
//! intermediate is an integer or a half-integer below 2^53):
//! `t = Floor(acc · m · 2^(left − 31) + 0.5)` (the doubling high product, rounding half up),
//! `u = Sign(t) · Floor(|t| · 2^-right + 0.5)` (the rounding shift, half away from zero), then
//! `Clip(u + zp, act_min, act_max)` and `Cast` to int8: that int8 tensor is the layer's
//! quantized output, read by the next layers through `DequantizeLinear` with its scale and zero
//! point, as in any QDQ model.
//!
//! ONNX Runtime does not fuse these into its int8 kernels (they are not QDQ patterns): it runs
//! them as float and double ops, and gets the same integers with graph optimizations on or off.

use super::*;
use crate::kernels::ActivationRange;
use crate::kernels::common::per_channel_multipliers;
use crate::kernels::tensor::PerTensorQuant;
use crate::requant::QuantizedMultiplier;

impl<'g> Exporter<'g> {
    /// Whether `node` (int8 in, int8 out, per-tensor activations) is written exactly.
    pub(super) fn exact_int8(&self, node: &Node) -> Result<bool, ConvertError> {
        if self.dynamic || !self.exact {
            return Ok(false);
        }
        let Some(y) = node.output(0) else { return Ok(false) };
        let yt = self.tensor(y)?;
        if yt.dtype != DType::I8 || yt.quant.as_ref().and_then(|q| q.per_tensor_params()).is_none() {
            return Ok(false);
        }
        for id in node.inputs.iter().flatten() {
            let t = self.tensor(*id)?;
            if !t.is_constant()
                && (t.dtype != DType::I8 || t.quant.as_ref().and_then(|q| q.per_tensor_params()).is_none())
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    pub(super) fn tq(&self, id: TensorId) -> Result<PerTensorQuant, ConvertError> {
        let t = self.tensor(id)?;
        let (s, z) = t
            .quant
            .as_ref()
            .and_then(|q| q.per_tensor_params())
            .ok_or_else(|| err(format!("tensor '{}' is not quantized per tensor", t.name)))?;
        Ok(PerTensorQuant { scale: s, zero_point: z })
    }

    fn kernel_err(e: crate::Error) -> ConvertError {
        err(format!("exact export: {e:?}"))
    }

    /// One node with a single output of a fresh name derived from `base`.
    pub(super) fn op1(&mut self, op: &str, base: &str, inputs: Vec<String>, attrs: Vec<pb::AttributeProto>) -> String {
        let out = self.fresh(base);
        self.node(op, &out.clone(), inputs, vec![out.clone()], attrs);
        out
    }

    /// A `double` initializer of `shape`.
    pub(super) fn f64s(&mut self, base: &str, shape: &[usize], v: &[f64]) -> String {
        let name = self.fresh(base);
        let raw = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.inits.push(tensor_proto(&name, shape, dt::DOUBLE, raw));
        name
    }

    /// `x − zp` of a dequantized activation (float, exact integers): `Round(x / s)`.
    pub(super) fn integers(&mut self, deq: &str, scale: f32, base: &str) -> String {
        let s = self.f32_scalar(&format!("{base}/int_scale"), scale);
        let d = self.op1("Div", &format!("{base}/int_div"), vec![deq.to_string(), s], vec![]);
        self.op1("Round", &format!("{base}/int"), vec![d], vec![])
    }

    /// An integer constant (int8 or int4 weights, int32 bias) as its initializer read by
    /// `DequantizeLinear` with scale 1: float values equal to the integers.
    pub(super) fn int_const(&mut self, id: TensorId, perm: &[usize]) -> Result<String, ConvertError> {
        let t = self.tensor(id)?;
        let data = t.data.as_ref().ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "not a constant"))?;
        let shape = Self::shape_in(&t.shape, perm);
        let base = self.names[id.index()].clone();
        let (code, raw) = match data {
            ConstData::I8(v) => (dt::INT8, permute(v, &t.shape, perm)?.iter().map(|&x| x as u8).collect::<Vec<u8>>()),
            ConstData::I4(v) => (self.int4_code(&t.name)?, super::quant::int4_raw(&permute(v, &t.shape, perm)?)),
            ConstData::I32(v) => (dt::INT32, le32(&permute(v, &t.shape, perm)?)),
            other => return Err(err(format!("constant '{}' of {} in an exact int8 layer", t.name, other.dtype()))),
        };
        let qn = self.fresh(&format!("{base}/{}", if code == dt::INT4 { "int4" } else { "int8" }));
        self.inits.push(tensor_proto(&qn, &shape, code, raw));
        let one = self.f32_scalar(&format!("{base}/unit_scale"), 1.0);
        let zn = self.zero_points(&base, code, &[0], false);
        Ok(self.op1("DequantizeLinear", &format!("{base}/int"), vec![qn, one, zn], vec![]))
    }

    /// `MultiplyByQuantizedMultiplier(acc, m[c], shift[c]) + zp` clamped to `act` and cast to
    /// int8 (the module docs); `acc` is float or double with exact integers, the multipliers
    /// broadcast with `shape` (one per channel, or `[]`). Returns the int8 tensor's name.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn requantize(
        &mut self,
        acc: String,
        acc_is_double: bool,
        m: &[QuantizedMultiplier],
        shape: &[usize],
        zp: i32,
        act: ActivationRange,
        base: &str,
    ) -> String {
        let d = if acc_is_double {
            acc
        } else {
            self.op1("Cast", &format!("{base}/acc"), vec![acc], vec![attr_int("to", i64::from(dt::DOUBLE))])
        };
        let k1: Vec<f64> = m.iter().map(|q| q.multiplier as f64 * pow2(q.shift.max(0) - 31)).collect();
        let k2: Vec<f64> = m.iter().map(|q| pow2(-(-q.shift).max(0))).collect();
        let k1 = self.f64s(&format!("{base}/multiplier"), shape, &k1);
        let k2 = self.f64s(&format!("{base}/shift"), shape, &k2);
        let half = self.f64s(&format!("{base}/half"), &[], &[0.5]);
        let p = self.op1("Mul", &format!("{base}/product"), vec![d, k1], vec![]);
        let p = self.op1("Add", &format!("{base}/product_rounding"), vec![p, half.clone()], vec![]);
        let t = self.op1("Floor", &format!("{base}/high_mul"), vec![p], vec![]);
        let a = self.op1("Abs", &format!("{base}/high_mul_abs"), vec![t.clone()], vec![]);
        let sg = self.op1("Sign", &format!("{base}/high_mul_sign"), vec![t], vec![]);
        let a = self.op1("Mul", &format!("{base}/shifted"), vec![a, k2], vec![]);
        let a = self.op1("Add", &format!("{base}/shift_rounding"), vec![a, half], vec![]);
        let a = self.op1("Floor", &format!("{base}/shifted_abs"), vec![a], vec![]);
        let u = self.op1("Mul", &format!("{base}/requantized"), vec![a, sg], vec![]);
        self.clamp_cast(u, zp, act, base)
    }

    /// `Clip(u + zp, min, max)` in double, cast to int8.
    fn clamp_cast(&mut self, u: String, zp: i32, act: ActivationRange, base: &str) -> String {
        let z = self.f64s(&format!("{base}/output_offset"), &[], &[zp as f64]);
        let v = self.op1("Add", &format!("{base}/offset"), vec![u, z], vec![]);
        let lo = self.f64s(&format!("{base}/act_min"), &[], &[act.min as f64]);
        let hi = self.f64s(&format!("{base}/act_max"), &[], &[act.max as f64]);
        let v = self.op1("Clip", &format!("{base}/clamped"), vec![v, lo, hi], vec![]);
        self.op1("Cast", &format!("{base}/quantized"), vec![v], vec![attr_int("to", i64::from(dt::INT8))])
    }

    /// Registers the int8 tensor `q` (in `perm` order) as `y`: its dequantized value for the
    /// next layers, in inner layout.
    pub(super) fn finish_int8(&mut self, y: TensorId, q: String, perm: Vec<usize>) -> Result<(), ConvertError> {
        let yq = self.tq(y)?;
        let base = self.names[y.index()].clone();
        let sn = self.scales(&base, &[yq.scale], false);
        let zn = self.zero_points(&base, dt::INT8, &[yq.zero_point], false);
        let dn = self.fresh(&format!("{base}/dequantized"));
        self.node("DequantizeLinear", &dn.clone(), vec![q, sn, zn], vec![dn.clone()], vec![]);
        let rank = self.tensor(y)?.shape.len();
        let v = self.in_order(&Val { name: dn, perm }, &Self::inner_perm(rank));
        self.deq.insert(y.0, v);
        Ok(())
    }

    /// Conv / depthwise conv / transposed conv / fully connected: the integer op `op` on integers,
    /// requantized.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exact_layer(
        &mut self,
        node: &Node,
        op: &str,
        nname: &str,
        x: Val,
        wperm: &[usize],
        attrs: Vec<pb::AttributeProto>,
        act: FusedActivation,
        channel_shape: &[usize],
        out_perm: Vec<usize>,
    ) -> Result<(), ConvertError> {
        let (xid, wid, y) = match (node.input(0), node.input(1), node.output(0)) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => return Err(ConvertError::new(Kind::InvalidGraph, "a layer without input, weights or output")),
        };
        let base = self.names[y.index()].clone();
        let (xq, yq) = (self.tq(xid)?, self.tq(y)?);
        let wt = self.tensor(wid)?;
        let scales = wt.quant.as_ref().map(|q| q.scales.clone()).unwrap_or_default();
        let channels = channel_shape.iter().product::<usize>().max(1);
        let (mut m, mut s) = (vec![0i32; channels], vec![0i32; channels]);
        per_channel_multipliers(xq.scale, &scales, yq.scale, &mut m, &mut s).map_err(Self::kernel_err)?;
        let mq: Vec<QuantizedMultiplier> =
            m.iter().zip(&s).map(|(&multiplier, &shift)| QuantizedMultiplier { multiplier, shift }).collect();
        let act = ActivationRange::from_fused(act, yq.scale, yq.zero_point, ActivationRange::INT8)
            .map_err(Self::kernel_err)?;
        let xi = self.integers(&x.name, xq.scale, &format!("{base}/input"));
        let wi = self.int_const(wid, wperm)?;
        let mut ins = vec![xi, wi];
        let mut bias_after = None;
        if let Some(b) = node.input(2) {
            let bi = self.int_const(b, &[0])?;
            if op == "MatMul" { bias_after = Some(bi) } else { ins.push(bi) }
        }
        let mut acc = self.fresh(&format!("{base}/accumulator"));
        self.node(op, nname, ins, vec![acc.clone()], attrs);
        if let Some(bi) = bias_after {
            acc = self.op1("Add", &format!("{base}/accumulator_bias"), vec![acc, bi], vec![]);
        }
        let q = self.requantize(acc, false, &mq, channel_shape, yq.zero_point, act, &base);
        self.finish_int8(y, q, out_perm)
    }

    /// TFLite's int8 `BATCH_MATMUL`: the integers of both operands (an adjoint operand transposed
    /// in its last two axes), their `MatMul` in double (exact; TFLite's int32 sum wraps only past
    /// 2^31, a depth above 33 000), requantized with the kernel's multiplier.
    pub(super) fn exact_batch_matmul(
        &mut self,
        node: &Node,
        nname: &str,
        adj_x: bool,
        adj_y: bool,
    ) -> Result<(), ConvertError> {
        let (aid, bid, y) = match (node.input(0), node.input(1), node.output(0)) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => return Err(ConvertError::new(Kind::InvalidGraph, "a batch matmul without operands or output")),
        };
        let base = self.names[y.index()].clone();
        let (qa, qb, qy) = (self.tq(aid)?, self.tq(bid)?, self.tq(y)?);
        let (sa, sb) = (self.tensor(aid)?.shape.clone(), self.tensor(bid)?.shape.clone());
        let p = crate::kernels::batch_matmul::BatchMatMulParams::prepare_s8(qa, qb, qy, &sa, &sb, adj_x, adj_y)
            .map_err(Self::kernel_err)?;
        let mut ins = Vec::with_capacity(2);
        for (k, (id, q, adj)) in [(aid, qa, adj_x), (bid, qb, adj_y)].into_iter().enumerate() {
            let t = self.tensor(id)?;
            if t.is_constant() {
                return Err(err(format!("{}: a constant MatMul operand cannot be written as QDQ ONNX", node.name)));
            }
            let r = t.shape.len();
            let mut target = layout::identity(r);
            if adj && r >= 2 {
                target.swap(r - 2, r - 1);
            }
            let x = self.act(id)?;
            let x = self.in_order(&x, &target);
            let xi = self.integers(&x.name, q.scale, &format!("{base}/operand{k}"));
            let cast = vec![attr_int("to", i64::from(dt::DOUBLE))];
            ins.push(self.op1("Cast", &format!("{base}/operand{k}_double"), vec![xi], cast));
        }
        let acc = self.fresh(&format!("{base}/accumulator"));
        self.node("MatMul", nname, ins, vec![acc.clone()], vec![]);
        let q = self.requantize(acc, true, &[p.multiplier], &[], qy.zero_point, ActivationRange::INT8, &base);
        let rank = self.tensor(y)?.shape.len();
        self.finish_int8(y, q, layout::identity(rank))
    }

    /// TFLite's int8 `ADD` / `SUB` / `MUL` (with broadcasting) in double.
    pub(super) fn exact_add_mul(&mut self, node: &Node, nname: &str, act: FusedActivation) -> Result<(), ConvertError> {
        let (aid, bid, y) = match (node.input(0), node.input(1), node.output(0)) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => return Err(ConvertError::new(Kind::InvalidGraph, "add/mul needs two inputs and an output")),
        };
        let yt = self.tensor(y)?;
        let base = self.names[y.index()].clone();
        let rank = yt.shape.len();
        let target = Self::inner_perm(rank);
        let (qa, qb, qy) = (self.tq(aid)?, self.tq(bid)?, self.tq(y)?);
        let actr = ActivationRange::from_fused(act, qy.scale, qy.zero_point, ActivationRange::INT8)
            .map_err(Self::kernel_err)?;
        let (ashape, bshape) = (self.tensor(aid)?.shape.clone(), self.tensor(bid)?.shape.clone());
        let a = self.operand(aid, rank, &target, &base)?;
        let b = self.operand(bid, rank, &target, &base)?;
        let ai = self.integers(&a, qa.scale, &format!("{base}/input1"));
        let bi = self.integers(&b, qb.scale, &format!("{base}/input2"));
        let cast = |s: &mut Self, v: String, k: &str| {
            s.op1("Cast", &format!("{base}/{k}_double"), vec![v], vec![attr_int("to", i64::from(dt::DOUBLE))])
        };
        let (ad, bd) = (cast(self, ai, "input1"), cast(self, bi, "input2"));
        let sub = matches!(node.op, Op::Sub { .. });
        if matches!(node.op, Op::Add { .. } | Op::Sub { .. }) {
            let r = crate::kernels::Rounding::Double;
            let p = if sub {
                crate::kernels::sub::SubParams::prepare_s8(qa, qb, qy, actr, &ashape, &bshape, r).map(|p| p.0)
            } else {
                crate::kernels::params::AddParams::prepare_s8(qa, qb, qy, actr, &ashape, &bshape, r)
            }
            .map_err(Self::kernel_err)?;
            let shifted = |s: &mut Self, v: String, k: &str| {
                let c = s.f64s(&format!("{base}/{k}_left_shift"), &[], &[pow2(p.left_shift)]);
                s.op1("Mul", &format!("{base}/{k}_shifted"), vec![v, c], vec![])
            };
            let (sa, sb) = (shifted(self, ad, "input1"), shifted(self, bd, "input2"));
            let ra = self.requantize_raw(sa, p.input1_multiplier, &format!("{base}/input1"));
            let rb = self.requantize_raw(sb, p.input2_multiplier, &format!("{base}/input2"));
            let sum = self.op1(if sub { "Sub" } else { "Add" }, nname, vec![ra, rb], vec![]);
            let q = self.requantize(sum, true, &[p.output_multiplier], &[], p.output_offset, p.activation, &base);
            self.finish_int8(y, q, target)
        } else {
            let p = crate::kernels::mul::MulParams::prepare_s8(
                qa,
                qb,
                qy,
                actr,
                &ashape,
                &bshape,
                crate::kernels::Rounding::Double,
            )
            .map_err(Self::kernel_err)?;
            let prod = self.op1("Mul", nname, vec![ad, bd], vec![]);
            let q = self.requantize(prod, true, &[p.output_multiplier], &[], p.output_offset, p.activation, &base);
            self.finish_int8(y, q, target)
        }
    }

    /// TFLite's int8 RESIZE_BILINEAR (`ResizeBilinearInteger`; input and output share their
    /// quantization): the four neighbours of each output pixel (`Gather` along H, then W) of the
    /// raw int8 values, weighted by the kernel's 1/1024 taps (`(1024 − dy)(1024 − dx)`, ...:
    /// constants), summed in double (exact) and rounded as the kernel does, `(s ± 2^19) / 2^20`
    /// toward zero.
    pub(super) fn exact_resize_bilinear(
        &mut self,
        node: &Node,
        nname: &str,
        size: [usize; 2],
        align_corners: bool,
        half_pixel_centers: bool,
    ) -> Result<(), ConvertError> {
        let (xid, y) = match (node.input(0), node.output(0)) {
            (Some(a), Some(b)) => (a, b),
            _ => return Err(ConvertError::new(Kind::InvalidGraph, "a resize without input or output")),
        };
        let base = self.names[y.index()].clone();
        let xq = self.tq(xid)?;
        let xs = self.tensor(xid)?.shape.clone();
        let input: [usize; 4] = match xs.as_slice() {
            &[n, h, w, c] => [n, h, w, c],
            _ => return Err(err(format!("resize of a rank-{} tensor", xs.len()))),
        };
        let p = crate::kernels::resize::ResizeParams::prepare(
            crate::kernels::resize::ResizeMethod::Bilinear,
            input,
            size,
            align_corners,
            half_pixel_centers,
        )
        .map_err(Self::kernel_err)?;
        let taps = |a: usize, n: usize| (0..n).map(|v| p.bilinear_taps(a, v)).collect::<Vec<_>>();
        let (ty, tx) = (taps(0, size[0]), taps(1, size[1]));
        let x = self.act(xid)?;
        let x = self.in_order(&x, &NCHW);
        // The raw int8 values (x − zp) + zp, exact in float.
        let xi = self.integers(&x.name, xq.scale, &format!("{base}/input"));
        let zp = self.f32_scalar(&format!("{base}/input_zero_point"), xq.zero_point as f32);
        let raw = self.op1("Add", &format!("{base}/raw"), vec![xi, zp], vec![]);
        let raw =
            self.op1("Cast", &format!("{base}/raw_double"), vec![raw], vec![attr_int("to", i64::from(dt::DOUBLE))]);
        let idx = |s: &mut Self, k: &str, v: Vec<i64>| s.i64s(&format!("{base}/{k}"), &v);
        let y0 = idx(self, "rows_lower", ty.iter().map(|t| t.0 as i64).collect());
        let y1 = idx(self, "rows_upper", ty.iter().map(|t| t.1 as i64).collect());
        let x0 = idx(self, "cols_lower", tx.iter().map(|t| t.0 as i64).collect());
        let x1 = idx(self, "cols_upper", tx.iter().map(|t| t.1 as i64).collect());
        let gather = |s: &mut Self, v: &str, i: &str, axis: i64, k: &str| {
            s.op1("Gather", &format!("{base}/{k}"), vec![v.to_string(), i.to_string()], vec![attr_int("axis", axis)])
        };
        let r0 = gather(self, &raw, &y0, 2, "rows0");
        let r1 = gather(self, &raw, &y1, 2, "rows1");
        let mut sum: Option<String> = None;
        for (r, rk, wy) in [(&r0, "0", 0usize), (&r1, "1", 1)] {
            for (xi, ck, wx) in [(&x0, "0", 0usize), (&x1, "1", 1)] {
                let v = gather(self, r, xi, 3, &format!("n{rk}{ck}"));
                let w: Vec<f64> = ty
                    .iter()
                    .flat_map(|&(_, _, dy)| {
                        let fy = if wy == 0 { 1024 - dy } else { dy };
                        tx.iter().map(move |&(_, _, dx)| (fy * if wx == 0 { 1024 - dx } else { dx }) as f64)
                    })
                    .collect();
                let wn = self.f64s(&format!("{base}/weights{rk}{ck}"), &[size[0], size[1]], &w);
                let t = self.op1("Mul", &format!("{base}/weighted{rk}{ck}"), vec![v, wn], vec![]);
                sum = Some(match sum {
                    None => t,
                    Some(s) => self.op1("Add", &format!("{base}/sum{rk}{ck}"), vec![s, t], vec![]),
                });
            }
        }
        let s = sum.ok_or_else(|| err("resize without taps".into()))?;
        let a = self.op1("Abs", &format!("{base}/sum_abs"), vec![s.clone()], vec![]);
        let sg = self.op1("Sign", &format!("{base}/sum_sign"), vec![s], vec![]);
        let half = self.f64s(&format!("{base}/half"), &[], &[f64::from(1u32 << 19)]);
        let unit = self.f64s(&format!("{base}/unit"), &[], &[1.0 / f64::from(1u32 << 20)]);
        let a = self.op1("Add", &format!("{base}/rounding"), vec![a, half], vec![]);
        let a = self.op1("Mul", &format!("{base}/scaled"), vec![a, unit], vec![]);
        let a = self.op1("Floor", &format!("{base}/truncated"), vec![a], vec![]);
        let v = self.op1("Mul", nname, vec![a, sg], vec![]);
        let q = self.clamp_cast(v, 0, ActivationRange { min: -128, max: 127 }, &base);
        self.finish_int8(y, q, NCHW.to_vec())
    }

    /// TFLite's int8 PRELU: `x − zp` requantized by `s_x / s_y` where it is not negative, else
    /// `(x − zp) · (α − zp_α)` requantized by `s_x · s_α / s_y` (`Where` picks), plus the output
    /// zero point, clamped.
    pub(super) fn exact_prelu(&mut self, node: &Node, nname: &str) -> Result<(), ConvertError> {
        let (xid, aid, y) = match (node.input(0), node.input(1), node.output(0)) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => return Err(ConvertError::new(Kind::InvalidGraph, "prelu needs two inputs and an output")),
        };
        let rank = self.tensor(y)?.shape.len();
        let target = Self::inner_perm(rank);
        let base = self.names[y.index()].clone();
        let (qx, qa, qy) = (self.tq(xid)?, self.tq(aid)?, self.tq(y)?);
        let (xshape, ashape) = (self.tensor(xid)?.shape.clone(), self.tensor(aid)?.shape.clone());
        let p = crate::kernels::prelu::PreluParams::prepare_s8(
            qx,
            qa,
            qy,
            &xshape,
            &ashape,
            crate::kernels::Rounding::Double,
        )
        .map_err(Self::kernel_err)?;
        let x = self.operand(xid, rank, &target, &base)?;
        let a = self.operand(aid, rank, &target, &base)?;
        let xi = self.integers(&x, qx.scale, &format!("{base}/input"));
        let ai = self.integers(&a, qa.scale, &format!("{base}/alpha"));
        let cast = |s: &mut Self, v: String, k: &str| {
            s.op1("Cast", &format!("{base}/{k}_double"), vec![v], vec![attr_int("to", i64::from(dt::DOUBLE))])
        };
        let (xd, ad) = (cast(self, xi, "input"), cast(self, ai, "alpha"));
        let identity = self.requantize_raw(xd.clone(), p.identity_multiplier, &format!("{base}/identity"));
        let prod = self.op1("Mul", &format!("{base}/slope_product"), vec![xd.clone(), ad], vec![]);
        let slope = self.requantize_raw(prod, p.alpha_multiplier, &format!("{base}/slope"));
        let zero = self.f64s(&format!("{base}/zero"), &[], &[0.0]);
        let keep = self.op1("GreaterOrEqual", &format!("{base}/not_negative"), vec![xd, zero], vec![]);
        let v = self.op1("Where", nname, vec![keep, identity, slope], vec![]);
        let full = ActivationRange { min: -128, max: 127 };
        let q = self.clamp_cast(v, p.output_offset, full, &base);
        self.finish_int8(y, q, target)
    }

    /// `MultiplyByQuantizedMultiplier(x, m)` of a double tensor of integers, without offset
    /// or clamp (an add's input rescaling).
    fn requantize_raw(&mut self, x: String, m: QuantizedMultiplier, base: &str) -> String {
        let k1 = self.f64s(&format!("{base}/multiplier"), &[], &[m.multiplier as f64 * pow2(m.shift.max(0) - 31)]);
        let k2 = self.f64s(&format!("{base}/shift"), &[], &[pow2(-(-m.shift).max(0))]);
        let half = self.f64s(&format!("{base}/half"), &[], &[0.5]);
        let p = self.op1("Mul", &format!("{base}/product"), vec![x, k1], vec![]);
        let p = self.op1("Add", &format!("{base}/product_rounding"), vec![p, half.clone()], vec![]);
        let t = self.op1("Floor", &format!("{base}/high_mul"), vec![p], vec![]);
        let a = self.op1("Abs", &format!("{base}/high_mul_abs"), vec![t.clone()], vec![]);
        let sg = self.op1("Sign", &format!("{base}/high_mul_sign"), vec![t], vec![]);
        let a = self.op1("Mul", &format!("{base}/shifted"), vec![a, k2], vec![]);
        let a = self.op1("Add", &format!("{base}/shift_rounding"), vec![a, half], vec![]);
        let a = self.op1("Floor", &format!("{base}/shifted_abs"), vec![a], vec![]);
        self.op1("Mul", &format!("{base}/rescaled"), vec![a, sg], vec![])
    }

    /// TFLite's int8 average pooling: window sums of the raw int8 values over the pixels inside
    /// the input, divided by their count, rounded half away from zero, clamped.
    pub(super) fn exact_avg_pool(
        &mut self,
        node: &Node,
        nname: &str,
        p: &crate::graph::Pool2d,
        pads: [i64; 4],
    ) -> Result<(), ConvertError> {
        let (xid, y) = match (node.input(0), node.output(0)) {
            (Some(a), Some(b)) => (a, b),
            _ => return Err(ConvertError::new(Kind::InvalidGraph, "pooling without input or output")),
        };
        let xt = self.tensor(xid)?;
        let yt = self.tensor(y)?;
        let base = self.names[y.index()].clone();
        let (xq, yq) = (self.tq(xid)?, self.tq(y)?);
        if xq != yq {
            return Err(err(String::from("average pooling input and output must share their quantization")));
        }
        let c = xt.shape.get(3).copied().unwrap_or(1);
        let (h, w) = (xt.shape.get(1).copied().unwrap_or(1), xt.shape.get(2).copied().unwrap_or(1));
        let (oh, ow) = (yt.shape.get(1).copied().unwrap_or(1), yt.shape.get(2).copied().unwrap_or(1));
        let act = ActivationRange::from_fused(p.activation, yq.scale, yq.zero_point, ActivationRange::INT8)
            .map_err(Self::kernel_err)?;
        let x = self.act(xid)?;
        let x = self.in_order(&x, &NCHW);
        // Raw int8 values: (x − zp) + zp.
        let xi = self.integers(&x.name, xq.scale, &format!("{base}/input"));
        let zp = self.f32_scalar(&format!("{base}/input_zero_point"), xq.zero_point as f32);
        let raw = self.op1("Add", &format!("{base}/input_raw"), vec![xi, zp], vec![]);
        let ones = self.fresh(&format!("{base}/window"));
        let n = c * p.filter_h * p.filter_w;
        self.inits.push(tensor_proto(&ones, &[c, 1, p.filter_h, p.filter_w], dt::FLOAT, le_f32(&vec![1.0; n])));
        let attrs = vec![
            attr_int("group", c as i64),
            attr_ints("kernel_shape", &[p.filter_h as i64, p.filter_w as i64]),
            attr_ints("pads", &pads),
            attr_ints("strides", &[p.stride_h as i64, p.stride_w as i64]),
        ];
        let sum = self.op1("Conv", nname, vec![raw, ones], attrs);
        // Pixels of each window inside the input.
        let mut counts = Vec::with_capacity(oh * ow);
        let count_1d = |o: usize, stride: usize, pad: i64, k: usize, size: usize| {
            let start = (o * stride) as i64 - pad;
            (start..start + k as i64).filter(|&i| i >= 0 && (i as usize) < size).count()
        };
        for oy in 0..oh {
            for ox in 0..ow {
                let ch = count_1d(oy, p.stride_h, pads[0], p.filter_h, h);
                let cw = count_1d(ox, p.stride_w, pads[1], p.filter_w, w);
                counts.push((ch * cw).max(1) as f32);
            }
        }
        let cn = self.fresh(&format!("{base}/counts"));
        self.inits.push(tensor_proto(&cn, &[1, 1, oh, ow], dt::FLOAT, le_f32(&counts)));
        let avg = self.op1("Div", &format!("{base}/average"), vec![sum, cn], vec![]);
        let half = self.f32_scalar(&format!("{base}/half"), 0.5);
        let a = self.op1("Abs", &format!("{base}/average_abs"), vec![avg.clone()], vec![]);
        let sg = self.op1("Sign", &format!("{base}/average_sign"), vec![avg], vec![]);
        let a = self.op1("Add", &format!("{base}/average_rounding"), vec![a, half], vec![]);
        let a = self.op1("Floor", &format!("{base}/average_rounded"), vec![a], vec![]);
        let u = self.op1("Mul", &format!("{base}/rounded"), vec![a, sg], vec![]);
        let u =
            self.op1("Cast", &format!("{base}/rounded_double"), vec![u], vec![attr_int("to", i64::from(dt::DOUBLE))]);
        let q = self.clamp_cast(u, 0, act, &base);
        self.finish_int8(y, q, NCHW.to_vec())
    }

    /// An int8 → int8 function of one input as its 256-entry table, read with `Gather` at the
    /// input as `u8` (the table's order).
    pub(super) fn exact_table(&mut self, node: &Node, nname: &str, lut: &[i8]) -> Result<(), ConvertError> {
        let (xid, y) = match (node.input(0), node.output(0)) {
            (Some(a), Some(b)) => (a, b),
            _ => return Err(ConvertError::new(Kind::InvalidGraph, "an activation without input or output")),
        };
        let base = self.names[y.index()].clone();
        let xq = self.tq(xid)?;
        let x = self.act(xid)?;
        let q = self.lookup(&x.name, xq, lut, &base, nname);
        self.finish_int8(y, q, x.perm)
    }

    /// `lut[x as u8]` of the dequantized int8 value `deq`: the int8 result's name.
    fn lookup(&mut self, deq: &str, xq: PerTensorQuant, lut: &[i8], base: &str, nname: &str) -> String {
        let xi = self.integers(deq, xq.scale, &format!("{base}/input"));
        // u8 index of the raw value q = (x − zp) + zp: (q + 256) mod 256.
        let off = self.f32_scalar(&format!("{base}/index_offset"), (xq.zero_point + 256) as f32);
        let i = self.op1("Add", &format!("{base}/index_raw"), vec![xi, off], vec![]);
        let m = self.f32_scalar(&format!("{base}/index_modulus"), 256.0);
        let i = self.op1("Mod", &format!("{base}/index_float"), vec![i, m], vec![attr_int("fmod", 1)]);
        let i = self.op1("Cast", &format!("{base}/index"), vec![i], vec![attr_int("to", i64::from(dt::INT64))]);
        let table = self.fresh(&format!("{base}/table"));
        self.inits.push(tensor_proto(&table, &[lut.len()], dt::INT8, lut.iter().map(|&v| v as u8).collect()));
        let q = self.fresh(&format!("{base}/quantized"));
        self.node("Gather", nname, vec![table, i], vec![q.clone()], vec![attr_int("axis", 0)]);
        q
    }

    /// TFLite's int8 concatenation: each input requantized to the output's parameters (a
    /// 256-entry table of [`crate::requant::multiply_by_quantized_multiplier`], the identity
    /// for inputs that share them), then `Concat` of the int8 values.
    pub(super) fn exact_concat(&mut self, node: &Node, nname: &str, axis: usize) -> Result<(), ConvertError> {
        let y = node.output(0).ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "a node without output"))?;
        let rank = self.tensor(y)?.shape.len();
        let target = Self::inner_perm(rank);
        let base = self.names[y.index()].clone();
        let qy = self.tq(y)?;
        let mut ins = Vec::with_capacity(node.inputs.len());
        for (k, id) in node.inputs.iter().enumerate() {
            let id = id.ok_or_else(|| ConvertError::new(Kind::InvalidGraph, format!("input {k} is missing")))?;
            let qx = self.tq(id)?;
            let r = crate::kernels::concat::Requantize::prepare_s8(qx, qy).map_err(Self::kernel_err)?;
            let mut lut = [0i8; 256];
            for (u, e) in lut.iter_mut().enumerate() {
                let x = u as u8 as i8 as i32;
                *e = match r {
                    None => x as i8,
                    Some(r) => {
                        let m = r.multiplier;
                        let v = crate::requant::multiply_by_quantized_multiplier(
                            x - r.input_zero_point,
                            m.multiplier,
                            m.shift,
                        )
                        .wrapping_add(r.output_zero_point);
                        v.clamp(-128, 127) as i8
                    }
                };
            }
            let v = self.operand(id, rank, &target, &base)?;
            let kb = format!("{base}/input{k}");
            let kn = format!("{nname}/input{k}");
            ins.push(self.lookup(&v, qx, &lut, &kb, &kn));
        }
        let inv = layout::inverse(&target);
        let onnx_axis = inv.get(axis).copied().unwrap_or(axis) as i64;
        let q = self.fresh(&format!("{base}/quantized"));
        self.node("Concat", nname, ins, vec![q.clone()], vec![attr_int("axis", onnx_axis)]);
        self.finish_int8(y, q, target)
    }
}

/// `2^e` as a double (exact for |e| < 1023).
fn pow2(e: i32) -> f64 {
    f64::from_bits(((1023 + e.clamp(-1022, 1023)) as u64) << 52)
}
