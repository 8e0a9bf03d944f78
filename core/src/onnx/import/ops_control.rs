//! Control flow: `If` whose condition is a constant at import (typically once the input shapes
//! are fixed: `If(Equal(Gather(Shape(x), 1), 3))`), replaced by the nodes of the taken branch.

use super::*;

impl Builder {
    /// ONNX `If`: the condition must be a constant; the taken branch's initializers and nodes
    /// are converted in place (they read the outer graph's values by name), and the branch's
    /// outputs become the node's outputs.
    pub(super) fn if_node(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let cond_name = ctx.node.input.first().map_or("", String::as_str);
        let cond = match self.input(ctx, 0)? {
            Some(Value::Const(k)) => k,
            Some(Value::Act(_)) => {
                return Err(ctx.unsupported(format!(
                    "the condition {cond_name:?} is computed at run time: only an If whose condition is a \
                     constant at conversion is converted (one that depends only on the input shapes or on \
                     non-float inputs becomes one when they are fixed: --input-shape / --input-value)"
                )));
            }
            None => return Err(ctx.err(Kind::Malformed, "If without a condition")),
        };
        let taken = match &cond.data {
            KData::Bool(v) if v.len() == 1 => v[0],
            KData::I64(v) if v.len() == 1 => v[0] != 0,
            KData::F32(v) if v.len() == 1 => v[0] != 0.0,
            _ => {
                return Err(ctx.err(
                    Kind::Malformed,
                    format!("the condition {cond_name:?} of shape {:?} is not a single value", cond.shape),
                ));
            }
        };
        let which = if taken { "then_branch" } else { "else_branch" };
        let attrs = Attrs::new(ctx.node);
        let branch =
            ctx.a(attrs.graph(which))?.ok_or_else(|| ctx.err(Kind::Malformed, format!("If without {which}")))?;
        if branch.output.len() != ctx.node.output.len() {
            return Err(ctx.err(
                Kind::Malformed,
                format!("{which} has {} outputs, the If node {}", branch.output.len(), ctx.node.output.len()),
            ));
        }
        for t in &branch.initializer {
            let name = t.name.clone().unwrap_or_default();
            let k = konst_from_proto(t, &format!("initializer {name:?} of {which}")).map_err(|e| ctx.loc(e))?;
            self.values.insert(name, Value::Const(k));
        }
        // Only what the used outputs need: an output nobody reads may come from ops we do not run.
        let wanted = branch_outputs_used(branch, &ctx.node.output, &self.used);
        let mut reads = VecSet::new();
        let needed = needed_nodes(branch, &wanted, &mut reads);
        for (node, _) in branch.node.iter().zip(needed).filter(|(_, n)| *n) {
            let op = node.op_type.as_deref().unwrap_or("");
            let domain = node.domain.as_deref().unwrap_or("");
            let sub = Ctx { index: ctx.index, node, op, opset: ctx.opset };
            if !(domain.is_empty() || domain == "ai.onnx") {
                return Err(sub.err(
                    Kind::UnsupportedOp,
                    format!("ONNX op {op:?} of domain {domain:?} (in {which} of an If) is not supported"),
                ));
            }
            self.convert_node(&sub)?;
        }
        for (i, o) in branch.output.iter().enumerate() {
            let name = o.name.as_deref().unwrap_or("");
            if !wanted.iter().any(|w| w == name) {
                continue;
            }
            let v = self.values.get(name).cloned().ok_or_else(|| {
                ctx.err(Kind::Malformed, format!("output {name:?} of {which} is not produced by the branch"))
            })?;
            self.set(ctx, i, v);
        }
        Ok(())
    }
}

impl Builder {
    /// The error for an op the importer only evaluates on constants (shape arithmetic) when an
    /// input is computed at run time: names the node and that input.
    pub(super) fn needs_constants(&self, ctx: &Ctx) -> ConvertError {
        let dynamic = ctx
            .node
            .input
            .iter()
            .enumerate()
            .find(|(_, n)| !n.is_empty() && matches!(self.values.get(n.as_str()), Some(Value::Act(_))));
        let which = dynamic
            .map_or_else(|| String::from(", but an input is"), |(i, n)| format!(", but its input {i} ({n:?}) is"));
        ctx.unsupported(format!(
            "ONNX op {:?} is evaluated at conversion only (on constants: shape computations){which} computed at \
             run time: the model needs a shape or value that is only known when it runs; if it follows from a \
             dynamic input extent or a non-float input, fix those at conversion (--input-shape / --input-value)",
            ctx.op
        ))
    }
}
