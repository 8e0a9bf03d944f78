//! Per-op SysTick ticks (cycles on hardware, instructions under QEMU `-icount`) through the
//! interpreter's [`Profiler`] hook.

use microquant::interp::Profiler;
use microquant::model::OpKind;

use crate::counter;

/// Ticks spent in each op of one or more inferences (ops past `N` are counted in the total only).
pub struct OpProfile<const N: usize> {
    ticks: [u64; N],
    kinds: [Option<OpKind>; N],
    started: u64,
    total: u64,
    ops: usize,
}

impl<const N: usize> OpProfile<N> {
    /// An empty profile.
    pub const fn new() -> Self {
        Self { ticks: [0; N], kinds: [None; N], started: 0, total: 0, ops: 0 }
    }

    /// Forgets everything counted so far.
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// Ticks summed over every op.
    pub fn total_ticks(&self) -> u64 {
        self.total
    }

    /// Number of ops seen (the model's op count after one inference).
    pub fn ops(&self) -> usize {
        self.ops
    }

    /// Op `i`'s kind and ticks.
    pub fn op(&self, i: usize) -> Option<(OpKind, u64)> {
        match (self.kinds.get(i), self.ticks.get(i)) {
            (Some(Some(k)), Some(&t)) => Some((*k, t)),
            _ => None,
        }
    }

    /// Ticks per op kind, in order of first appearance: fills `out` with (kind, ticks, op count)
    /// and returns how many kinds there are.
    pub fn by_kind(&self, out: &mut [(OpKind, u64, u32)]) -> usize {
        let mut n = 0;
        for (k, &t) in self.kinds.iter().zip(&self.ticks) {
            let Some(k) = *k else { continue };
            if let Some(e) = out.iter_mut().take(n).find(|e| e.0 == k) {
                e.1 += t;
                e.2 += 1;
            } else if let Some(e) = out.get_mut(n) {
                *e = (k, t, 1);
                n += 1;
            }
        }
        n
    }
}

impl<const N: usize> Default for OpProfile<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Profiler for OpProfile<N> {
    #[inline]
    fn op_start(&mut self, _index: u32, _kind: OpKind) {
        self.started = counter::now();
    }

    #[inline]
    fn op_end(&mut self, index: u32, kind: OpKind) {
        let dt = counter::now().wrapping_sub(self.started);
        self.total += dt;
        let i = index as usize;
        self.ops = self.ops.max(i + 1);
        if let (Some(t), Some(k)) = (self.ticks.get_mut(i), self.kinds.get_mut(i)) {
            *t += dt;
            *k = Some(kind);
        }
    }
}
