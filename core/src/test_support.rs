//! Sizes for the unit tests' loops and property tests. Under Miri (`scripts/miri.sh`), which
//! interprets every operation and checks it for undefined behaviour about a thousand times slower
//! than native code, the same tests run on fewer cases: the same code paths, sampled.

/// `n` cases natively, at most 8 under Miri.
pub(crate) const fn cases(n: u32) -> u32 {
    if cfg!(miri) && n > 8 { 8 } else { n }
}

/// The step that walks about `n` points of a loop natively and about 50 under Miri.
pub(crate) const fn stride(n: usize) -> usize {
    if cfg!(miri) { if n > 50 { n / 50 } else { 1 } } else { 1 }
}
