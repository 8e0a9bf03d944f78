//! Arena planning (conversion time): gives every activation tensor and scratch buffer an offset
//! so that buffers alive at the same time never share bytes, in as small an arena as we can find.
//!
//! Buffers are placed first-fit (the lowest offset that is free for their whole lifetime), in
//! several orders: by decreasing size (TFLite Micro's `GreedyMemoryPlanner`), by decreasing
//! size × lifetime, by start of lifetime; the smallest arena wins, so the result is never worse
//! than the greedy-by-size plan. Aliasing (reshape outputs sharing their input's bytes) and
//! in-place ops are expressed by the caller as one [`Buffer`] spanning both tensors' lifetimes.

use alloc::vec;
use alloc::vec::Vec;

/// A block of arena bytes and when it is alive (op indices, inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buffer {
    /// Size in bytes.
    pub size: usize,
    /// First op that writes or reads it (0 for model inputs).
    pub first: usize,
    /// Last op that reads it (the op count for model outputs).
    pub last: usize,
}

/// The result of planning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Offset of each buffer, in the order given.
    pub offsets: Vec<usize>,
    /// Arena bytes needed.
    pub arena_len: usize,
    /// Which ordering produced the plan (for reports).
    pub strategy: &'static str,
}

fn overlaps_in_time(a: &Buffer, b: &Buffer) -> bool {
    a.first <= b.last && b.first <= a.last
}

fn align_up(v: usize, a: usize) -> usize {
    v.div_ceil(a) * a
}

/// First-fit placement in the given order.
fn place(buffers: &[Buffer], order: &[usize], align: usize) -> (Vec<usize>, usize) {
    let mut offsets = vec![usize::MAX; buffers.len()];
    let mut placed: Vec<usize> = Vec::with_capacity(buffers.len());
    let mut arena = 0usize;
    for &i in order {
        let b = &buffers[i];
        if b.size == 0 {
            offsets[i] = 0;
            continue;
        }
        // Intervals taken by time-overlapping placed buffers, sorted by offset.
        // (The buffer index rides along as a third key: every sort here is of `(usize, usize,
        // usize)`, one copy of the sort code in the npm package's .wasm instead of six.)
        let mut taken: Vec<(usize, usize, usize)> = placed
            .iter()
            .filter(|&&j| overlaps_in_time(b, &buffers[j]))
            .map(|&j| (offsets[j], offsets[j] + buffers[j].size, j))
            .collect();
        taken.sort_unstable();
        let mut candidate = 0usize;
        for (start, end, _) in taken {
            if candidate + b.size <= start {
                break;
            }
            candidate = candidate.max(align_up(end, align));
        }
        offsets[i] = candidate;
        arena = arena.max(candidate + b.size);
        placed.push(i);
    }
    (offsets, align_up(arena, align))
}

/// The buffer indices `0..n` ordered by the key pair `key(i)`, ties kept in index order (as a
/// stable sort of the indices). The index is the pair's tie-breaker, so one unstable sort of
/// plain triples does it: the planner's orderings share that one sort instantiation.
fn order_by(n: usize, key: impl Fn(usize) -> (usize, usize)) -> Vec<usize> {
    let mut keyed: Vec<(usize, usize, usize)> = (0..n)
        .map(|i| {
            let (a, b) = key(i);
            (a, b, i)
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, _, i)| i).collect()
}

/// `core::cmp::Reverse` as a `usize` key: larger values first.
fn descending(v: usize) -> usize {
    usize::MAX - v
}

/// The greedy-by-size plan alone (TFLite Micro's `GreedyMemoryPlanner` order), for comparison.
pub fn plan_greedy_by_size(buffers: &[Buffer], align: usize) -> Plan {
    let order = order_by(buffers.len(), |i| (descending(buffers[i].size), buffers[i].first));
    let (offsets, arena_len) = place(buffers, &order, align.max(1));
    Plan { offsets, arena_len, strategy: "greedy by size (TFLite Micro)" }
}

/// Plans the arena for `buffers`, aligning every offset to `align` bytes.
pub fn plan(buffers: &[Buffer], align: usize) -> Plan {
    let align = align.max(1);
    let n = buffers.len();
    let mut orders: Vec<(&'static str, Vec<usize>)> = Vec::new();
    let by_size = order_by(n, |i| (descending(buffers[i].size), buffers[i].first));
    orders.push(("greedy by size (TFLite Micro)", by_size));
    let by_area = order_by(n, |i| {
        let b = &buffers[i];
        (descending(b.size.saturating_mul(b.last - b.first + 1)), b.first)
    });
    orders.push(("greedy by size x lifetime", by_area));
    let by_start = order_by(n, |i| (buffers[i].first, descending(buffers[i].size)));
    orders.push(("greedy by first use", by_start));
    let conflicts: Vec<usize> = (0..n)
        .map(|i| {
            (0..n).filter(|&j| j != i && overlaps_in_time(&buffers[i], &buffers[j])).map(|j| buffers[j].size).sum()
        })
        .collect();
    let by_conflicts = order_by(n, |i| (descending(conflicts[i].saturating_add(buffers[i].size)), buffers[i].first));
    orders.push(("greedy by contention", by_conflicts));

    let mut best: Option<Plan> = None;
    for (strategy, order) in orders {
        let (offsets, arena_len) = place(buffers, &order, align);
        if best.as_ref().is_none_or(|b| arena_len < b.arena_len) {
            best = Some(Plan { offsets, arena_len, strategy });
        }
    }
    best.unwrap_or(Plan { offsets: Vec::new(), arena_len: 0, strategy: "empty" })
}

/// Checks a plan: every buffer inside the arena, aligned, and no two buffers alive at the same
/// time sharing a byte. Returns the first offending pair.
pub fn check(buffers: &[Buffer], p: &Plan, align: usize) -> Result<(), (usize, usize)> {
    for (i, b) in buffers.iter().enumerate() {
        if b.size > 0 && (p.offsets[i] % align.max(1) != 0 || p.offsets[i] + b.size > p.arena_len) {
            return Err((i, i));
        }
        for (j, c) in buffers.iter().enumerate().skip(i + 1) {
            let disjoint = p.offsets[i] + b.size <= p.offsets[j] || p.offsets[j] + c.size <= p.offsets[i];
            if b.size > 0 && c.size > 0 && overlaps_in_time(b, c) && !disjoint {
                return Err((i, j));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_chain_reuses_memory() {
        // x0 -> op0 -> x1 -> op1 -> x2 -> op2 -> x3: only two adjacent tensors live at once.
        let bufs = [
            Buffer { size: 100, first: 0, last: 0 },
            Buffer { size: 50, first: 0, last: 1 },
            Buffer { size: 100, first: 1, last: 2 },
            Buffer { size: 10, first: 2, last: 3 },
        ];
        let p = plan(&bufs, 16);
        check(&bufs, &p, 16).unwrap();
        // Peak: 100 + 50 bytes at op0 and op1; with 16-byte alignment the 100-byte buffer takes
        // 112, so 112 + 50 = 162, rounded up to 176.
        assert_eq!(p.arena_len, 176);
    }

    #[test]
    fn beats_or_matches_greedy_by_size() {
        // A case where size order is not optimal: two long-lived small buffers and short big ones.
        let bufs = [
            Buffer { size: 64, first: 0, last: 1 },
            Buffer { size: 64, first: 2, last: 3 },
            Buffer { size: 48, first: 0, last: 3 },
            Buffer { size: 32, first: 1, last: 2 },
        ];
        let p = plan(&bufs, 16);
        check(&bufs, &p, 16).unwrap();
        let order: Vec<usize> = {
            let mut o: Vec<usize> = (0..bufs.len()).collect();
            o.sort_by_key(|&i| core::cmp::Reverse(bufs[i].size));
            o
        };
        let (_, greedy) = place(&bufs, &order, 16);
        assert!(p.arena_len <= greedy);
    }

    proptest! {
        #[test]
        fn order_by_is_a_stable_sort_by_key(keys in proptest::collection::vec((0usize..4, 0usize..4), 0..40)) {
            let mut stable: Vec<usize> = (0..keys.len()).collect();
            stable.sort_by_key(|&i| (core::cmp::Reverse(keys[i].0), keys[i].1));
            prop_assert_eq!(order_by(keys.len(), |i| (descending(keys[i].0), keys[i].1)), stable);
        }

        #[test]
        fn plans_are_always_valid(raw in proptest::collection::vec((0usize..500, 0usize..20, 0usize..6), 0..40)) {
            let bufs: Vec<Buffer> = raw.iter().map(|&(size, first, len)| Buffer { size, first, last: first + len }).collect();
            let p = plan(&bufs, 16);
            prop_assert!(check(&bufs, &p, 16).is_ok());
            // Never below the largest sum of sizes alive at one op (a lower bound).
            let peak = (0..30).map(|t| bufs.iter().filter(|b| b.first <= t && t <= b.last).map(|b| b.size).sum::<usize>()).max().unwrap_or(0);
            prop_assert!(p.arena_len >= peak);
        }
    }
}
