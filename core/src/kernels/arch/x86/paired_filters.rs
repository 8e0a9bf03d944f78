//! The convolution filters of the `vpmaddwd` kernels ([`PairedFilters`]), and the cache that
//! pairs each filter once for the converter's int8 runs (the per-layer report and the range
//! choice run the same model once per sample; pairing a filter costs about as much as a small
//! convolution).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{GROUPS_PER_PASS, LANES};
use crate::kernels::arch::scratch::padded_patch_len;

/// A convolution's filters laid out for `vpmaddwd`: for each group of [`LANES`] output channels
/// and each pair of patch positions `(2j, 2j + 1)`, the eight channels' two weights side by side
/// as int16 (one 256-bit register per pair), zeros past the patch length `k` and past the last
/// channel; the groups padded to a multiple of [`GROUPS_PER_PASS`].
pub(super) struct PairedFilters {
    pub(super) data: std::vec::Vec<i16>,
    /// Pairs per patch (`padded_patch_len(k) / 2`).
    pub(super) pairs: usize,
    /// Channel groups (a multiple of [`GROUPS_PER_PASS`]).
    pub(super) groups: usize,
}

impl PairedFilters {
    pub(super) fn new(filter: &[i8], k: usize, out_c: usize) -> Self {
        let mut f = Self::zeros(k, out_c);
        let Self { data, pairs, .. } = &mut f;
        for (g, block) in data.chunks_exact_mut((*pairs * 2 * LANES).max(1)).enumerate() {
            for lane in 0..LANES {
                let Some(row) = filter.get((g * LANES + lane) * k..(g * LANES + lane + 1) * k) else { break };
                for (reg, w) in block.chunks_exact_mut(2 * LANES).zip(row.chunks(2)) {
                    for (d, &v) in reg[2 * lane..2 * lane + 2].iter_mut().zip(w) {
                        *d = i16::from(v);
                    }
                }
            }
        }
        f
    }

    /// `out_c` filters of `k` values, filter `c`'s value `j` being `value(c, j)`.
    pub(super) fn from_fn(k: usize, out_c: usize, value: impl Fn(usize, usize) -> i16) -> Self {
        let mut f = Self::zeros(k, out_c);
        let Self { data, pairs, .. } = &mut f;
        for (g, block) in data.chunks_exact_mut((*pairs * 2 * LANES).max(1)).enumerate() {
            for (p, reg) in block.chunks_exact_mut(2 * LANES).enumerate() {
                for (lane, w) in reg.chunks_exact_mut(2).enumerate() {
                    let c = g * LANES + lane;
                    for (jj, d) in w.iter_mut().enumerate() {
                        let j = 2 * p + jj;
                        if c < out_c && j < k {
                            *d = value(c, j);
                        }
                    }
                }
            }
        }
        f
    }

    fn zeros(k: usize, out_c: usize) -> Self {
        let pairs = padded_patch_len(k) / 2;
        let groups = out_c.div_ceil(LANES).next_multiple_of(GROUPS_PER_PASS);
        Self { data: std::vec![0i16; groups * pairs * 2 * LANES], pairs, groups }
    }
}

/// Paired filters kept at most (int16: twice the int8 filters' bytes, plus a copy of those to
/// compare against); beyond it the cache starts again empty.
const CACHE_BYTES: usize = 96 << 20;

/// A filter's identity in the cache: its length, patch length, channels, and the first and
/// last bytes (a filter is found by these, then compared whole).
type Key = (usize, usize, usize, [u8; 16], [u8; 16]);

struct Cache {
    entries: HashMap<Key, (std::vec::Vec<i8>, Arc<PairedFilters>)>,
    bytes: usize,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

fn key(filter: &[i8], k: usize, out_c: usize) -> Key {
    let mut first = [0u8; 16];
    let mut last = [0u8; 16];
    for (d, &v) in first.iter_mut().zip(filter) {
        *d = v as u8;
    }
    for (d, &v) in last.iter_mut().zip(filter.iter().rev()) {
        *d = v as u8;
    }
    (filter.len(), k, out_c, first, last)
}

/// `PairedFilters::new(filter, k, out_c)`, from the cache when the same filter (the same bytes)
/// was paired before: the same values, computed once.
pub(super) fn paired_filters(filter: &[i8], k: usize, out_c: usize) -> Arc<PairedFilters> {
    let key = key(filter, k, out_c);
    // A poisoned lock (a thread panicked holding it) only turns the cache off.
    if let Ok(cache) = CACHE.lock()
        && let Some((bytes, paired)) = cache.as_ref().and_then(|c| c.entries.get(&key))
        && bytes[..] == filter[..]
    {
        return Arc::clone(paired);
    }
    let paired = Arc::new(PairedFilters::new(filter, k, out_c));
    if let Ok(mut cache) = CACHE.lock() {
        let cache = cache.get_or_insert_with(|| Cache { entries: HashMap::new(), bytes: 0 });
        let size = filter.len() + 2 * paired.data.len();
        if cache.bytes + size > CACHE_BYTES {
            cache.entries.clear();
            cache.bytes = 0;
        }
        if size <= CACHE_BYTES {
            cache.bytes += size;
            if let Some((old, p)) = cache.entries.insert(key, (filter.to_vec(), Arc::clone(&paired))) {
                cache.bytes -= old.len() + 2 * p.data.len();
            }
        }
    }
    paired
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache gives what pairing gives, for the same bytes at another address, and pairs
    /// again bytes changed in place (the same address, the same first and last bytes).
    #[test]
    fn cached_filters_are_the_paired_bytes() {
        let (k, out_c) = (27, 13);
        let mut filter: std::vec::Vec<i8> = (0..k * out_c).map(|i| (i * 7 % 251) as i8).collect();
        let fresh = PairedFilters::new(&filter, k, out_c);
        let first = paired_filters(&filter, k, out_c);
        let copy = filter.clone();
        let again = paired_filters(&copy, k, out_c);
        assert_eq!(first.data, fresh.data);
        assert!(Arc::ptr_eq(&first, &again), "the same bytes elsewhere are found");
        filter[k * out_c / 2] = filter[k * out_c / 2].wrapping_add(1);
        let changed = paired_filters(&filter, k, out_c);
        assert_eq!(changed.data, PairedFilters::new(&filter, k, out_c).data);
        assert_ne!(changed.data, fresh.data);
        assert_eq!((changed.pairs, changed.groups), (fresh.pairs, fresh.groups));
    }
}
