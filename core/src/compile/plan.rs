//! From lowered ops to arena offsets: buffers, aliasing, in-place ops, scratch.
//!
//! - RESHAPE outputs share their input's bytes (the op then costs nothing).
//! - LOGISTIC, TANH and HARD_SWISH write over their input when it dies there (a byte-wise table
//!   lookup can run in place), as TinyEngine does for elementwise ops.
//! - CONV_2D and DEPTHWISE_CONV_2D (int8, one image) may write their output over their input
//!   when it dies there, by chunks of output rows through a small row buffer in their scratch
//!   ([`crate::kernels::row_chunks`]); the output may start a little before the input. The
//!   planner runs an op that way only where that lowers the arena (first every op that does not
//!   raise it, with the rows per chunk that give the smallest arena; then back out of place each
//!   one the arena does not need, and the others with as many rows per chunk as it allows: fewer,
//!   larger kernel calls), so models whose peak is elsewhere keep their plan and their speed.
//!   Which chunkings are allowed depends on the kernels the model is planned for
//!   ([`KernelFamily`]): those that keep the op's speed there.
//! - A FULLY_CONNECTED op keeps its scratch (its input row widened once, on the Arm DSP path):
//!   without it the kernel widens as it goes, which would save AD 1,024 bytes of arena (2,064 ->
//!   1,040: its first layer's 1,280-byte scratch sets the peak) for 7.8 % more instructions on
//!   the Cortex-M4 (392,190 instead of 363,824).
//! - Scratch buffers live for their op only, so they overlap whatever is dead at that time.
//!
//! Tensors that share bytes (aliases, in-place ops) form a group, placed as one unit with each
//! tensor at its own offset in it and its own lifetime ([`super::plan_groups`]).

use alloc::vec;
use alloc::vec::Vec;

use super::KernelFamily;
use super::plan_groups::{self, Group, GroupPlan, Member};
use super::plan_in_place::{Candidate, InPlaceOption, candidate};
use crate::graph::{ConvertError, Graph};
use crate::model::{ModelBuilder, OpKind};

/// Arena alignment of every buffer.
const ALIGN: usize = 16;

pub(crate) struct PlanResult {
    pub arena_len: usize,
    pub greedy_by_size: usize,
    pub strategy: &'static str,
}

/// What planning needs of the model, computed once.
struct Facts {
    nt: usize,
    nops: usize,
    is_act: Vec<bool>,
    size: Vec<usize>,
    first: Vec<usize>,
    last: Vec<usize>,
    /// Model inputs and outputs.
    pinned: Vec<bool>,
}

impl Facts {
    fn of(b: &ModelBuilder) -> Self {
        let nt = b.tensors().len();
        let nops = b.ops().len();
        let is_act: Vec<bool> = b.tensors().iter().map(|t| t.is_activation()).collect();
        let size: Vec<usize> = b.tensors().iter().map(|t| t.byte_len() as usize).collect();
        // Lifetimes per tensor: [first, last] in op indices.
        let mut first = vec![usize::MAX; nt];
        let mut last = vec![0usize; nt];
        let (ins, outs) = b.io();
        for &t in ins {
            first[t as usize] = 0;
        }
        for (i, op) in b.ops().iter().enumerate() {
            for t in op.inputs.iter().flatten().chain(&op.outputs) {
                let t = *t as usize;
                first[t] = first[t].min(i);
                last[t] = last[t].max(i);
            }
        }
        for &t in outs {
            last[t as usize] = nops;
        }
        let pinned = (0..nt).map(|t| ins.contains(&(t as u32)) || outs.contains(&(t as u32))).collect();
        Self { nt, nops, is_act, size, first, last, pinned }
    }
}

/// A layout: the groups of tensors sharing bytes, the planner's buffers and its plan.
struct Layout {
    /// Each tensor's group (a tensor index) and its offset in the group (bytes, may be < 0).
    root: Vec<usize>,
    rel: Vec<i64>,
    /// Table lookups that run in place.
    lut_in_place: Vec<bool>,
    /// The in-place option each op runs with.
    conv_in_place: Vec<Option<InPlaceOption>>,
    /// The group's buffer, and its lowest `rel`.
    root_buf: Vec<usize>,
    root_min: Vec<i64>,
    scratch_buf: Vec<usize>,
    scratch_len: Vec<usize>,
    groups: Vec<Group>,
    plan: GroupPlan,
}

/// Plans the arena with the in-place options `chosen` (one entry per op; `None`: out of place).
fn layout(b: &ModelBuilder, f: &Facts, chosen: &[Option<InPlaceOption>]) -> Layout {
    let (nt, nops) = (f.nt, f.nops);
    let mut root: Vec<usize> = (0..nt).collect();
    let mut rel = vec![0i64; nt];
    let mut lut_in_place = vec![false; nops];
    let mut conv_in_place: Vec<Option<InPlaceOption>> = vec![None; nops];
    // Whether every tensor of `x`'s group dies by op `i` and is no model input or output.
    let dies_here = |root: &[usize], x: usize, i: usize| {
        let r = root[x];
        (0..nt).filter(|&t| root[t] == r).all(|t| f.last[t] <= i && !f.pinned[t])
    };
    for (i, op) in b.ops().iter().enumerate() {
        let (Some(Some(x)), Some(&y)) = (op.inputs.first(), op.outputs.first()) else { continue };
        let (x, y) = (*x as usize, y as usize);
        if !f.is_act[x] || !f.is_act[y] || root[y] != y {
            continue;
        }
        let same_len = f.size[x] == f.size[y];
        let delta = match op.kind {
            OpKind::Reshape if same_len => Some(0),
            OpKind::Logistic | OpKind::Tanh | OpKind::HardSwish | OpKind::Lut if same_len => {
                let here = dies_here(&root, x, i);
                lut_in_place[i] = here;
                here.then_some(0)
            }
            OpKind::Conv2d | OpKind::DepthwiseConv2d => match chosen.get(i).copied().flatten() {
                Some(o) if dies_here(&root, x, i) => {
                    conv_in_place[i] = Some(o);
                    Some(o.delta)
                }
                _ => None,
            },
            _ => None,
        };
        if let Some(d) = delta {
            root[y] = root[x];
            rel[y] = rel[x] + d;
        }
    }
    // One group per root (activations only), then one per scratch.
    let mut root_buf = vec![usize::MAX; nt];
    let mut root_min = vec![0i64; nt];
    let mut groups: Vec<Group> = Vec::new();
    for t in 0..nt {
        if f.is_act[t] && f.first[t] != usize::MAX {
            let r = root[t];
            root_min[r] = if root_buf[r] == usize::MAX { rel[t] } else { root_min[r].min(rel[t]) };
            if root_buf[r] == usize::MAX {
                root_buf[r] = groups.len();
                groups.push(Group::default());
            }
        }
    }
    for t in 0..nt {
        if f.is_act[t] && f.first[t] != usize::MAX {
            let r = root[t];
            let member =
                Member { rel: (rel[t] - root_min[r]) as usize, size: f.size[t], first: f.first[t], last: f.last[t] };
            groups[root_buf[r]].members.push(member);
        }
    }
    let mut scratch_buf = vec![usize::MAX; nops];
    let mut scratch_len = vec![0usize; nops];
    for (i, op) in b.ops().iter().enumerate() {
        let len = conv_in_place[i].map_or(op.scratch_len, |o| o.scratch_len) as usize;
        scratch_len[i] = len;
        if len > 0 {
            scratch_buf[i] = groups.len();
            // An LSTM's scratch is its state, kept between invokes: alive for the whole run.
            let (first, last) = if op.kind == OpKind::Lstm { (0, nops) } else { (i, i) };
            groups.push(Group { members: vec![Member { rel: 0, size: len, first, last }] });
        }
    }
    let plan = plan_groups::plan(&groups, ALIGN);
    Layout { root, rel, lut_in_place, conv_in_place, root_buf, root_min, scratch_buf, scratch_len, groups, plan }
}

/// The in-place options to run with: those that lower the arena (see the module docs).
fn choose(b: &ModelBuilder, f: &Facts, candidates: &[Candidate]) -> Vec<Option<InPlaceOption>> {
    let mut chosen: Vec<Option<InPlaceOption>> = vec![None; f.nops];
    if candidates.is_empty() {
        return chosen;
    }
    let arena = |c: &[Option<InPlaceOption>]| layout(b, f, c).plan.arena_len;
    let mut best = arena(&chosen);
    // The op's own bytes beyond its output's with an option: its scratch and the offset.
    let footprint = |o: &InPlaceOption| o.scratch_len as i64 - o.delta;
    // 1. Moves that lower the arena, one op at a time, the best first, while there are any.
    loop {
        let mut step: Option<(usize, usize, Option<InPlaceOption>)> = None;
        for (k, c) in candidates.iter().enumerate() {
            let current = chosen[c.op];
            for o in c.options.iter().copied().map(Some).chain([None]) {
                if o == current {
                    continue;
                }
                chosen[c.op] = o;
                let a = arena(&chosen);
                if a < best && step.is_none_or(|(sa, _, _)| a < sa) {
                    step = Some((a, k, o));
                }
            }
            chosen[c.op] = current;
        }
        let Some((a, k, o)) = step else { break };
        chosen[candidates[k].op] = o;
        best = a;
    }
    // 2. Every other op in place that does not raise the arena, with the option of the smallest
    // arena and then footprint (ops tied at the peak lower it only together).
    for c in candidates {
        if chosen[c.op].is_some() {
            continue;
        }
        let mut pick: Option<(usize, InPlaceOption)> = None;
        for &o in &c.options {
            chosen[c.op] = Some(o);
            let a = arena(&chosen);
            let better = pick.is_none_or(|(pa, po)| a < pa || (a == pa && footprint(&o) < footprint(&po)));
            if a <= best && better {
                pick = Some((a, o));
            }
        }
        chosen[c.op] = pick.map(|(_, o)| o);
        if let Some((a, _)) = pick {
            best = a;
        }
    }
    // 3. Back out of place where the arena does not need it; else the most rows it allows.
    for c in candidates {
        let Some(current) = chosen[c.op] else { continue };
        chosen[c.op] = None;
        if arena(&chosen) <= best {
            continue;
        }
        chosen[c.op] = Some(current);
        for &o in c.options.iter().rev().filter(|o| o.rows > current.rows) {
            chosen[c.op] = Some(o);
            if arena(&chosen) <= best {
                break;
            }
            chosen[c.op] = Some(current);
        }
    }
    chosen
}

pub(crate) fn plan(
    _g: &Graph,
    _map: &[Option<u32>],
    b: &mut ModelBuilder,
    kernels: KernelFamily,
) -> Result<PlanResult, ConvertError> {
    let f = Facts::of(b);
    let candidates: Vec<Candidate> = (0..f.nops).filter_map(|i| candidate(b, i, ALIGN, kernels)).collect();
    let chosen = choose(b, &f, &candidates);
    let l = layout(b, &f, &chosen);
    // TFLite Micro's order on the same buffers (for the report).
    let greedy = plan_groups::plan_greedy_by_size(&l.groups, ALIGN).arena_len;
    let p = &l.plan;
    let mut offsets = Vec::new();
    for t in 0..f.nt {
        if f.is_act[t] && f.first[t] != usize::MAX {
            let r = l.root[t];
            let off = p.offsets[l.root_buf[r]] as i64 + (l.rel[t] - l.root_min[r]);
            offsets.push((t as u32, off as u32));
        } else if f.is_act[t] {
            offsets.push((t as u32, 0));
        }
    }
    b.set_arena_offsets(&offsets, p.arena_len as u32);
    for i in 0..f.nops {
        if l.scratch_buf[i] != usize::MAX {
            b.set_scratch_offset(i as u32, p.offsets[l.scratch_buf[i]] as u32);
        }
        if l.lut_in_place[i] {
            b.set_in_place(i as u32);
        }
        if let Some(o) = l.conv_in_place[i] {
            b.set_in_place_rows(i as u32, o.rows, l.scratch_len[i] as u32);
        }
    }
    Ok(PlanResult { arena_len: p.arena_len, greedy_by_size: greedy, strategy: p.strategy })
}
