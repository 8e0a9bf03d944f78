//! Arena placement of groups of buffers at fixed distances: the tensors an in-place op chain
//! links (a convolution's output a set number of bytes before its input, an alias at its
//! input's offset) are placed as one unit, each member with its own lifetime, so the bytes a
//! member leaves are free for other buffers outside its lifetime. A single buffer is a group of
//! one member, placed as [`crate::model::planner`] places it: first fit, in the same orders
//! (by decreasing size, TFLite Micro's `GreedyMemoryPlanner`; by size x lifetime; by first use;
//! by contention), the smallest arena winning.

use alloc::vec;
use alloc::vec::Vec;

/// A member of a group: its offset from the group's start, size and lifetime (op indices,
/// inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Member {
    pub rel: usize,
    pub size: usize,
    pub first: usize,
    pub last: usize,
}

/// Buffers placed together, each at its `rel` from the group's offset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Group {
    pub members: Vec<Member>,
}

impl Group {
    fn extent(&self) -> usize {
        self.members.iter().map(|m| m.rel + m.size).max().unwrap_or(0)
    }
    fn first(&self) -> usize {
        self.members.iter().map(|m| m.first).min().unwrap_or(0)
    }
    fn last(&self) -> usize {
        self.members.iter().map(|m| m.last).max().unwrap_or(0)
    }
}

/// A plan: each group's offset, the arena's length, and the order that won.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupPlan {
    pub offsets: Vec<usize>,
    pub arena_len: usize,
    pub strategy: &'static str,
}

fn align_up(v: usize, a: usize) -> usize {
    v.div_ceil(a) * a
}

fn overlaps_in_time(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 <= b.1 && b.0 <= a.1
}

/// A placed member: bytes `[start, end)` during ops `[first, last]`.
#[derive(Clone, Copy)]
struct Placed {
    start: usize,
    end: usize,
    first: usize,
    last: usize,
}

/// First-fit placement in the given order.
fn place(groups: &[Group], order: &[usize], align: usize) -> (Vec<usize>, usize) {
    let mut offsets = vec![0usize; groups.len()];
    let mut placed: Vec<Placed> = Vec::new();
    let mut arena = 0usize;
    for &i in order {
        let g = &groups[i];
        if g.extent() == 0 {
            continue;
        }
        // The placed buffers alive with each member: the only ones it can collide with.
        let near: Vec<(&Member, Vec<Placed>)> = g
            .members
            .iter()
            .filter(|m| m.size > 0)
            .map(|m| {
                (m, placed.iter().filter(|p| overlaps_in_time((m.first, m.last), (p.first, p.last))).copied().collect())
            })
            .collect();
        // The lowest base that fits is 0 or puts a member just above a placed buffer.
        let mut bases = vec![0usize];
        for (m, alive) in &near {
            bases.extend(alive.iter().map(|p| align_up(p.end.saturating_sub(m.rel), align)));
        }
        bases.sort_unstable();
        bases.dedup();
        let fits_near = |base: usize| {
            near.iter().all(|(m, alive)| {
                let (s, e) = (base + m.rel, base + m.rel + m.size);
                alive.iter().all(|p| e <= p.start || p.end <= s)
            })
        };
        let base = bases.into_iter().find(|&b| fits_near(b)).unwrap_or(align_up(arena, align));
        offsets[i] = base;
        for m in g.members.iter().filter(|m| m.size > 0) {
            placed.push(Placed { start: base + m.rel, end: base + m.rel + m.size, first: m.first, last: m.last });
        }
        arena = arena.max(base + g.extent());
    }
    (offsets, align_up(arena, align))
}

/// Indices `0..n` by the key pair, ties in index order.
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

fn descending(v: usize) -> usize {
    usize::MAX - v
}

/// The greedy-by-size plan alone (TFLite Micro's order), for comparison.
pub(crate) fn plan_greedy_by_size(groups: &[Group], align: usize) -> GroupPlan {
    let order = order_by(groups.len(), |i| (descending(groups[i].extent()), groups[i].first()));
    let (offsets, arena_len) = place(groups, &order, align.max(1));
    GroupPlan { offsets, arena_len, strategy: "greedy by size (TFLite Micro)" }
}

/// Plans the arena for `groups`, every offset a multiple of `align` (members' `rel` must be
/// multiples of it too).
pub(crate) fn plan(groups: &[Group], align: usize) -> GroupPlan {
    let align = align.max(1);
    let n = groups.len();
    let span = |i: usize| (groups[i].first(), groups[i].last());
    let mut orders: Vec<(&'static str, Vec<usize>)> = Vec::new();
    orders.push(("greedy by size (TFLite Micro)", order_by(n, |i| (descending(groups[i].extent()), span(i).0))));
    orders.push((
        "greedy by size x lifetime",
        order_by(n, |i| {
            let (f, l) = span(i);
            (descending(groups[i].extent().saturating_mul(l - f + 1)), f)
        }),
    ));
    orders.push(("greedy by first use", order_by(n, |i| (span(i).0, descending(groups[i].extent())))));
    let conflicts: Vec<usize> = (0..n)
        .map(|i| (0..n).filter(|&j| j != i && overlaps_in_time(span(i), span(j))).map(|j| groups[j].extent()).sum())
        .collect();
    orders.push((
        "greedy by contention",
        order_by(n, |i| (descending(conflicts[i].saturating_add(groups[i].extent())), span(i).0)),
    ));
    let mut best: Option<GroupPlan> = None;
    for (strategy, order) in orders {
        let (offsets, arena_len) = place(groups, &order, align);
        if best.as_ref().is_none_or(|b| arena_len < b.arena_len) {
            best = Some(GroupPlan { offsets, arena_len, strategy });
        }
    }
    best.unwrap_or(GroupPlan { offsets: Vec::new(), arena_len: 0, strategy: "empty" })
}

/// Checks a plan: every member inside the arena and aligned, and no two members of different
/// groups alive at the same time sharing a byte. Returns the first offending pair of groups.
#[cfg(test)]
pub(crate) fn check(groups: &[Group], p: &GroupPlan, align: usize) -> Result<(), (usize, usize)> {
    for (i, g) in groups.iter().enumerate() {
        for m in g.members.iter().filter(|m| m.size > 0) {
            let s = p.offsets[i] + m.rel;
            if s % align.max(1) != 0 || s + m.size > p.arena_len {
                return Err((i, i));
            }
            for (j, h) in groups.iter().enumerate().skip(i + 1) {
                for n in h.members.iter().filter(|n| n.size > 0) {
                    let t = p.offsets[j] + n.rel;
                    let disjoint = s + m.size <= t || t + n.size <= s;
                    if overlaps_in_time((m.first, m.last), (n.first, n.last)) && !disjoint {
                        return Err((i, j));
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn one(size: usize, first: usize, last: usize) -> Group {
        Group { members: vec![Member { rel: 0, size, first, last }] }
    }

    /// A chain x -> y -> z placed as one group: a buffer alive only while x is takes the
    /// bytes z later holds when they do not meet in time.
    #[test]
    fn a_group_leaves_its_bytes_free_outside_members_lifetimes() -> Result<(), (usize, usize)> {
        let chain = Group {
            members: vec![
                Member { rel: 0, size: 64, first: 0, last: 1 },
                Member { rel: 64, size: 64, first: 1, last: 2 },
            ],
        };
        let groups = [chain, one(64, 0, 0), one(64, 2, 2)];
        let p = plan(&groups, 16);
        check(&groups, &p, 16)?;
        if p.arena_len != 128 {
            return Err((usize::MAX, p.arena_len));
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn group_plans_are_always_valid(raw in proptest::collection::vec(
            proptest::collection::vec((0usize..8, 0usize..300, 0usize..12, 0usize..5), 1..4), 0..20)) {
            let groups: Vec<Group> = raw.iter().map(|ms| Group {
                members: ms.iter().map(|&(rel, size, first, len)| Member { rel: rel * 16, size, first, last: first + len }).collect(),
            }).collect();
            let p = plan(&groups, 16);
            prop_assert!(check(&groups, &p, 16).is_ok());
        }
    }
}
