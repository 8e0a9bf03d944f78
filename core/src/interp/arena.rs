//! Splitting the arena into the op's writable regions (output, scratch) and read-only views of
//! everything else, without copying and without `unsafe`.

use crate::Error;

/// Read-only views of the arena outside the op's writable regions.
pub(crate) struct ReadOnly<'b> {
    pieces: [(usize, &'b [u8]); 3],
}

impl<'b> ReadOnly<'b> {
    /// The bytes `[off, off + len)`, if they lie entirely in one read-only piece.
    pub(crate) fn get(&self, off: usize, len: usize, op: u32) -> Result<&'b [u8], Error> {
        for &(base, piece) in &self.pieces {
            if off >= base {
                let rel = off - base;
                if let Some(s) = piece.get(rel..rel.saturating_add(len)) {
                    if rel.checked_add(len).is_some_and(|e| e <= piece.len()) {
                        return Ok(s);
                    }
                }
            }
        }
        Err(Error::BadOp { index: op, reason: "an input overlaps the op's output or scratch in the arena" })
    }
}

/// Splits `arena` into `&mut` views of the regions `a` and `b` (offset, length; `b` may be
/// empty) and read-only views of the rest. The regions must not overlap.
pub(crate) fn carve<'b>(
    arena: &'b mut [u8],
    a: (usize, usize),
    b: (usize, usize),
    op: u32,
) -> Result<(&'b mut [u8], &'b mut [u8], ReadOnly<'b>), Error> {
    let bad = Error::BadOp { index: op, reason: "output or scratch outside the arena, or overlapping" };
    let end = |r: (usize, usize)| r.0.checked_add(r.1).ok_or(bad);
    let (a_end, b_end) = (end(a)?, end(b)?);
    let swap = b.1 > 0 && b.0 < a.0;
    let (first, first_end, second, second_end) = if swap { (b, b_end, a, a_end) } else { (a, a_end, b, b_end) };
    if second.1 > 0 && second.0 < first_end {
        return Err(bad);
    }
    if first_end > arena.len() || (second.1 > 0 && second_end > arena.len()) {
        return Err(bad);
    }
    // The checks above make every split valid; the checked splits keep the proof local (no
    // reachable panic on the device).
    let (lo, rest) = arena.split_at_mut_checked(first.0).ok_or(bad)?;
    let (r1, rest) = rest.split_at_mut_checked(first.1).ok_or(bad)?;
    let (mid, r2, hi, hi_base) = if second.1 > 0 {
        let (mid, rest) = rest.split_at_mut_checked(second.0.checked_sub(first_end).ok_or(bad)?).ok_or(bad)?;
        let (r2, hi) = rest.split_at_mut_checked(second.1).ok_or(bad)?;
        (mid, r2, hi, second_end)
    } else {
        let (r2, hi) = rest.split_at_mut(0);
        (&mut [][..], r2, hi, first_end)
    };
    let ro = ReadOnly { pieces: [(0, &*lo), (first_end, &*mid), (hi_base, &*hi)] };
    if swap { Ok((r2, r1, ro)) } else { Ok((r1, r2, ro)) }
}

/// The read-only pieces `(base, len)` that [`carve`] leaves around two writable regions: what
/// load-time validation checks inputs against, so that neither `carve` nor [`ReadOnly::get`]
/// can fail at run time.
pub(crate) struct Pieces([(usize, usize); 3]);

impl Pieces {
    /// The pieces [`carve`] leaves around the writable regions `a` and `b` of an arena of
    /// `arena_len` bytes, or `None` where `carve` refuses them (outside the arena, or
    /// overlapping): the same arithmetic as `carve`, on offsets only.
    pub(crate) fn around(arena_len: usize, a: (usize, usize), b: (usize, usize)) -> Option<Self> {
        let (a_end, b_end) = (a.0.checked_add(a.1)?, b.0.checked_add(b.1)?);
        let swap = b.1 > 0 && b.0 < a.0;
        let (first, first_end, second, second_end) = if swap { (b, b_end, a, a_end) } else { (a, a_end, b, b_end) };
        if (second.1 > 0 && second.0 < first_end) || first_end > arena_len || (second.1 > 0 && second_end > arena_len) {
            return None;
        }
        let (mid_len, hi_base) = if second.1 > 0 { (second.0 - first_end, second_end) } else { (0, first_end) };
        Some(Self([(0, first.0), (first_end, mid_len), (hi_base, arena_len - hi_base)]))
    }

    /// True if the bytes `x` (offset, length) lie in one piece: [`ReadOnly::get`] returns them.
    pub(crate) fn hold(&self, x: (usize, usize)) -> bool {
        self.0.iter().any(|&(base, len)| x.0 >= base && (x.0 - base).checked_add(x.1).is_some_and(|e| e <= len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carves_disjoint_regions() {
        let mut arena: [u8; 64] = core::array::from_fn(|i| i as u8);
        let (out, scratch, ro) = carve(&mut arena, (32, 8), (8, 4), 0).unwrap();
        assert_eq!(out[0], 32);
        assert_eq!(scratch[0], 8);
        assert_eq!(ro.get(0, 8, 0).unwrap()[7], 7);
        assert_eq!(ro.get(12, 20, 0).unwrap()[0], 12);
        assert_eq!(ro.get(40, 24, 0).unwrap()[23], 63);
        assert!(ro.get(30, 4, 0).is_err()); // crosses the output
        assert!(ro.get(60, 8, 0).is_err()); // past the end
        assert!(carve(&mut arena, (0, 16), (8, 16), 0).is_err()); // overlap
        assert!(carve(&mut arena, (60, 8), (0, 0), 0).is_err()); // outside
        let (out, _, ro) = carve(&mut arena, (16, 16), (0, 0), 0).unwrap();
        out[0] = 1;
        assert_eq!(ro.get(32, 32, 0).unwrap().len(), 32);
    }

    /// `Pieces` answers exactly what `carve` and `ReadOnly::get` do, for every pair of regions
    /// and every read in a small arena.
    #[test]
    fn load_time_checks_agree_with_carve() {
        const N: usize = 12;
        let mut arena = [0u8; N];
        let ranges = || {
            let small = (0..=N + 1).flat_map(|o| (0..=N + 1 - o).map(move |l| (o, l)));
            small.chain([(usize::MAX, 1), (1, usize::MAX), (usize::MAX, 0)])
        };
        for a in ranges() {
            for b in ranges() {
                let carved = carve(&mut arena, a, b, 0);
                let pieces = Pieces::around(N, a, b);
                assert_eq!(pieces.is_some(), carved.is_ok(), "a {a:?} b {b:?}");
                let (Ok((_, _, ro)), Some(pieces)) = (carved, pieces) else { continue };
                for x in ranges() {
                    assert_eq!(pieces.hold(x), ro.get(x.0, x.1, 0).is_ok(), "a {a:?} b {b:?} x {x:?}");
                }
            }
        }
    }
}
