//! From lowered ops to arena offsets: buffers, aliasing, in-place ops, scratch.
//!
//! - RESHAPE outputs share their input's bytes (the op then costs nothing).
//! - LOGISTIC, TANH and HARD_SWISH write over their input when it dies there (a byte-wise table
//!   lookup can run in place), as TinyEngine does for elementwise ops.
//! - Scratch buffers live for their op only, so they overlap whatever is dead at that time.

use alloc::vec;
use alloc::vec::Vec;

use crate::graph::{ConvertError, Graph};
use crate::model::planner::{self, Buffer};
use crate::model::{ModelBuilder, OpKind};

pub(crate) struct PlanResult {
    pub arena_len: usize,
    pub greedy_by_size: usize,
    pub strategy: &'static str,
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

pub(crate) fn plan(_g: &Graph, _map: &[Option<u32>], b: &mut ModelBuilder) -> Result<PlanResult, ConvertError> {
    let nt = b.tensors().len();
    let nops = b.ops().len();
    let is_act: Vec<bool> = b.tensors().iter().map(|t| t.is_activation()).collect();
    // Lifetimes per tensor: [first, last] in op indices.
    let mut first = vec![usize::MAX; nt];
    let mut last = vec![0usize; nt];
    let (ins, outs) = {
        let (i, o) = b.io();
        (i.to_vec(), o.to_vec())
    };
    for &t in &ins {
        first[t as usize] = 0;
    }
    for (i, op) in b.ops().iter().enumerate() {
        for t in op.inputs.iter().flatten() {
            let t = *t as usize;
            first[t] = first[t].min(i);
            last[t] = last[t].max(i);
        }
        for &t in &op.outputs {
            let t = t as usize;
            first[t] = first[t].min(i);
            last[t] = last[t].max(i);
        }
    }
    for &t in &outs {
        last[t as usize] = nops;
    }
    // Aliases and in-place ops: union the output with the input.
    let mut parent: Vec<usize> = (0..nt).collect();
    let mut in_place = vec![false; nops];
    let pinned: Vec<bool> = (0..nt).map(|t| ins.contains(&(t as u32)) || outs.contains(&(t as u32))).collect();
    for (i, op) in b.ops().iter().enumerate() {
        let (Some(Some(x)), Some(&y)) = (op.inputs.first(), op.outputs.first()) else { continue };
        let (x, y) = (*x as usize, y as usize);
        if !is_act[x] || !is_act[y] || b.tensors()[x].byte_len() != b.tensors()[y].byte_len() {
            continue;
        }
        let alias = match op.kind {
            OpKind::Reshape => true,
            OpKind::Logistic | OpKind::Tanh | OpKind::HardSwish | OpKind::Lut => {
                // The input (and everything sharing its bytes) must die here, and must not be a
                // model input the caller may want to read again.
                let rx = find(&mut parent, x);
                let dies_here = (0..nt).filter(|&t| find(&mut parent, t) == rx).all(|t| last[t] <= i && !pinned[t]);
                if dies_here {
                    in_place[i] = true;
                }
                dies_here
            }
            _ => false,
        };
        if alias {
            let (rx, ry) = (find(&mut parent, x), find(&mut parent, y));
            parent[ry] = rx;
        }
    }
    // One buffer per root (activations only), then one per scratch.
    let mut root_buf = vec![usize::MAX; nt];
    let mut buffers: Vec<Buffer> = Vec::new();
    for t in 0..nt {
        if !is_act[t] || first[t] == usize::MAX {
            continue;
        }
        let r = find(&mut parent, t);
        if root_buf[r] == usize::MAX {
            root_buf[r] = buffers.len();
            buffers.push(Buffer { size: b.tensors()[r].byte_len() as usize, first: first[t], last: last[t] });
        }
        let buf = &mut buffers[root_buf[r]];
        buf.first = buf.first.min(first[t]);
        buf.last = buf.last.max(last[t]);
        buf.size = buf.size.max(b.tensors()[t].byte_len() as usize);
    }
    let mut scratch_buf = vec![usize::MAX; nops];
    for (i, op) in b.ops().iter().enumerate() {
        if op.scratch_len > 0 {
            scratch_buf[i] = buffers.len();
            // An LSTM's scratch is its state, kept between invokes: alive for the whole run.
            let (first, last) = if op.kind == crate::model::OpKind::Lstm { (0, nops) } else { (i, i) };
            buffers.push(Buffer { size: op.scratch_len as usize, first, last });
        }
    }
    let p = planner::plan(&buffers, 16);
    let greedy = planner::plan_greedy_by_size(&buffers, 16).arena_len;
    let mut offsets = Vec::new();
    for t in 0..nt {
        if is_act[t] && first[t] != usize::MAX {
            let r = find(&mut parent, t);
            offsets.push((t as u32, p.offsets[root_buf[r]] as u32));
        } else if is_act[t] {
            offsets.push((t as u32, 0));
        }
    }
    b.set_arena_offsets(&offsets, p.arena_len as u32);
    for i in 0..nops {
        if scratch_buf[i] != usize::MAX {
            b.set_scratch_offset(i as u32, p.offsets[scratch_buf[i]] as u32);
        }
        if in_place[i] {
            b.set_in_place(i as u32);
        }
    }
    Ok(PlanResult { arena_len: p.arena_len, greedy_by_size: greedy, strategy: p.strategy })
}
