//! QDQ export of the data-movement ops: [`Op::StridedSlice`] as `Slice` (and a `Reshape` when
//! the output shape drops or adds extent-1 axes), [`Op::DepthToSpace`] and [`Op::SpaceToDepth`]
//! as themselves (NCHW).

use super::*;
use crate::kernels::mirror_pad::MirrorPadMode;

fn attr_str(name: &str, v: &str) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(pb::attribute_proto::AttributeType::String as i32),
        s: Some(v.as_bytes().to_vec()),
        ..Default::default()
    }
}

impl Exporter<'_> {
    /// Writes a data-movement node whose input is `x` (our order) into `y`.
    pub(super) fn export_movement(&mut self, node: &Node, nname: &str, base: &str) -> Result<(), ConvertError> {
        let xid = node.input(0).ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "input 0 is missing"))?;
        let y = node.output(0).ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "a node without output"))?;
        let (xt, yt) = (self.tensor(xid)?, self.tensor(y)?);
        let x = self.act(xid)?;
        if let Op::DepthToSpace { block, crd } = &node.op {
            // NCHW, as ONNX defines them.
            let x = self.in_order(&x, &NCHW);
            let out = self.fresh(&format!("{base}/float"));
            let mode = attr_str("mode", if *crd { "CRD" } else { "DCR" });
            self.node(
                "DepthToSpace",
                nname,
                vec![x.name],
                vec![out.clone()],
                vec![attr_int("blocksize", *block as i64), mode],
            );
            return self.finish(y, out, NCHW.to_vec());
        }
        if let Op::SpaceToDepth { block } = &node.op {
            let x = self.in_order(&x, &NCHW);
            let out = self.fresh(&format!("{base}/float"));
            self.node(
                "SpaceToDepth",
                nname,
                vec![x.name],
                vec![out.clone()],
                vec![attr_int("blocksize", *block as i64)],
            );
            return self.finish(y, out, NCHW.to_vec());
        }
        if let Op::MirrorPad { paddings, mode } = &node.op {
            let mode = match mode {
                MirrorPadMode::Reflect => "reflect",
                MirrorPadMode::Edge => "edge",
                MirrorPadMode::Symmetric => {
                    return Err(ConvertError::new(Kind::Unsupported, "ONNX Pad has no symmetric mode"));
                }
            };
            let mut pads: Vec<i64> = x.perm.iter().map(|&a| paddings.get(a).map_or(0, |p| p[0] as i64)).collect();
            pads.extend(x.perm.iter().map(|&a| paddings.get(a).map_or(0, |p| p[1] as i64)));
            let pn = self.i64s(&format!("{base}/pads"), &pads);
            let out = self.fresh(&format!("{base}/float"));
            let perm = x.perm.clone();
            self.node("Pad", nname, vec![x.name, pn], vec![out.clone()], vec![attr_str("mode", mode)]);
            return self.finish(y, out, perm);
        }
        let x = self.in_order(&x, &layout::identity(xt.shape.len()));
        if let Op::Gather { axis, indices, indices_shape } = &node.op {
            let name = self.fresh(&format!("{base}/indices"));
            let v: Vec<i64> = indices.iter().map(|&i| i as i64).collect();
            self.inits.push(tensor_proto(&name, indices_shape, dt::INT64, le64(&v)));
            let out = self.fresh(&format!("{base}/float"));
            self.node("Gather", nname, vec![x.name, name], vec![out.clone()], vec![attr_int("axis", *axis as i64)]);
            return self.finish(y, out, layout::identity(yt.shape.len()));
        }
        if let Op::Tile { shape } = &node.op {
            // Tile after a reshape to the output's rank (leading extents 1).
            let mut x = x;
            if xt.shape.len() < shape.len() {
                let mut s: Vec<i64> = vec![1; shape.len() - xt.shape.len()];
                s.extend(xt.shape.iter().map(|&d| d as i64));
                let sn = self.i64s(&format!("{base}/rank"), &s);
                let r = self.fresh(&format!("{base}/ranked"));
                self.node("Reshape", &r.clone(), vec![x.name, sn], vec![r.clone()], vec![]);
                x = Val { name: r, perm: layout::identity(shape.len()) };
            }
            let lead = shape.len().saturating_sub(xt.shape.len());
            let reps: Vec<i64> = shape
                .iter()
                .enumerate()
                .map(|(d, &m)| {
                    let n = if d < lead { 1 } else { xt.shape.get(d - lead).copied().unwrap_or(1) };
                    m.checked_div(n).unwrap_or(1) as i64
                })
                .collect();
            let rn = self.i64s(&format!("{base}/repeats"), &reps);
            let out = self.fresh(&format!("{base}/float"));
            self.node("Tile", nname, vec![x.name, rn], vec![out.clone()], vec![]);
            return self.finish(y, out, layout::identity(yt.shape.len()));
        }
        match &node.op {
            Op::StridedSlice(s) => {
                let (mut starts, mut ends) = (Vec::new(), Vec::new());
                for (d, ((&st, &sp), &c)) in s.starts.iter().zip(&s.steps).zip(&s.counts).enumerate() {
                    let n = xt.shape.get(d).copied().unwrap_or(0) as i64;
                    let end = st as i64 + c as i64 * sp;
                    starts.push(st as i64);
                    // Before the first element (a negative end counts from the back in ONNX).
                    ends.push(if end < 0 { -n - 1 } else { end });
                }
                let axes: Vec<i64> = (0..s.starts.len() as i64).collect();
                let ins = vec![
                    x.name,
                    self.i64s(&format!("{base}/starts"), &starts),
                    self.i64s(&format!("{base}/ends"), &ends),
                    self.i64s(&format!("{base}/axes"), &axes),
                    self.i64s(&format!("{base}/steps"), &s.steps),
                ];
                let mut out = self.fresh(&format!("{base}/float"));
                self.node("Slice", nname, ins, vec![out.clone()], vec![]);
                if s.shape != s.counts {
                    let shape: Vec<i64> = yt.shape.iter().map(|&d| d as i64).collect();
                    let sn = self.i64s(&format!("{base}/shape"), &shape);
                    let r = self.fresh(&format!("{base}/reshaped"));
                    self.node("Reshape", &r.clone(), vec![out, sn], vec![r.clone()], vec![]);
                    out = r;
                }
                self.finish(y, out, layout::identity(yt.shape.len()))
            }
            other => Err(ConvertError::new(Kind::Unsupported, format!("{} is not a data-movement op", other.name()))),
        }
    }
}
