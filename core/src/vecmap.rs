//! Small-code containers for the converter: [`VecMap`] (an ordered map) and [`sort_usizes`].
//!
//! `BTreeMap` and `slice::sort*` are instantiated once per key/value type and comparator, each
//! copy several kilobytes; the converter used fifteen maps and a dozen sorts, and that code was a
//! tenth of the npm package's wasm. These replacements keep the observable behaviour (iteration
//! in key order, `insert` replacing the value and returning the old one; a sorted `usize` slice)
//! and share most of their code between types: the key search depends on the key type only.

use alloc::vec::Vec;
use core::borrow::Borrow;
use core::fmt;

/// An ordered map: keys and values in insertion order plus the positions sorted by key.
/// Iteration is in key order, as `BTreeMap`'s. Insertion and removal are O(n) (fine for the
/// converter's maps of tensor names).
#[derive(Clone)]
pub(crate) struct VecMap<K, V> {
    keys: Vec<K>,
    vals: Vec<V>,
    /// Indices into `keys`/`vals`, sorted by key.
    order: Vec<usize>,
}

/// The position in `order` of `k` (`Ok`) or where it goes (`Err`). Depends on the key types only
/// (not inlined, so the maps with one key type share it).
#[inline(never)]
fn search<K: Borrow<Q>, Q: Ord + ?Sized>(keys: &[K], order: &[usize], k: &Q) -> Result<usize, usize> {
    order.binary_search_by(|&i| match keys.get(i) {
        Some(x) => x.borrow().cmp(k),
        None => core::cmp::Ordering::Less,
    })
}

/// `order.insert(p, i)`, one copy for every map.
#[inline(never)]
fn insert_at(order: &mut Vec<usize>, p: usize, i: usize) {
    order.insert(p, i);
}

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        Self { keys: Vec::new(), vals: Vec::new(), order: Vec::new() }
    }
}

impl<K: Ord, V> VecMap<K, V> {
    /// An empty map.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// True if the map is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The index in `keys`/`vals` of `k`.
    fn index<Q: Ord + ?Sized>(&self, k: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
    {
        search(&self.keys, &self.order, k).ok().and_then(|p| self.order.get(p).copied())
    }

    /// The value of `k`.
    pub(crate) fn get<Q: Ord + ?Sized>(&self, k: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.index(k).and_then(|i| self.vals.get(i))
    }

    /// True if `k` has a value.
    pub(crate) fn contains_key<Q: Ord + ?Sized>(&self, k: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.index(k).is_some()
    }

    /// Sets the value of `k`; returns the old one, if any.
    pub(crate) fn insert(&mut self, k: K, v: V) -> Option<V> {
        match search(&self.keys, &self.order, &k) {
            Ok(p) => self.order.get(p).and_then(|&i| self.vals.get_mut(i)).map(|old| core::mem::replace(old, v)),
            Err(p) => {
                insert_at(&mut self.order, p, self.keys.len());
                self.keys.push(k);
                self.vals.push(v);
                None
            }
        }
    }

    /// The value of `k`, inserting `v` first if it has none (`entry(k).or_insert(v)`).
    pub(crate) fn get_or_insert(&mut self, k: K, v: V) -> &mut V {
        let i = match search(&self.keys, &self.order, &k) {
            Ok(p) => self.order[p],
            Err(p) => {
                let i = self.keys.len();
                insert_at(&mut self.order, p, i);
                self.keys.push(k);
                self.vals.push(v);
                i
            }
        };
        &mut self.vals[i]
    }

    /// Removes `k`; returns its value, if any.
    pub(crate) fn remove<Q: Ord + ?Sized>(&mut self, k: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let p = search(&self.keys, &self.order, k).ok()?;
        let i = self.order.remove(p);
        if i >= self.keys.len() {
            return None;
        }
        for j in &mut self.order {
            if *j > i {
                *j -= 1;
            }
        }
        self.keys.remove(i);
        Some(self.vals.remove(i))
    }

    /// The entries in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.order.iter().filter_map(|&i| Some((self.keys.get(i)?, self.vals.get(i)?)))
    }

    /// The keys in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &K> + '_ {
        self.order.iter().filter_map(|&i| self.keys.get(i))
    }
}

impl<K: Ord, V: PartialEq> PartialEq for VecMap<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl<K: Ord + fmt::Debug, V: fmt::Debug> fmt::Debug for VecMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// An ordered set (a [`VecMap`] without values).
pub(crate) type VecSet<K> = VecMap<K, ()>;

impl<K: Ord> VecMap<K, ()> {
    /// Adds `k`; true if it was not there.
    pub(crate) fn add(&mut self, k: K) -> bool {
        self.insert(k, ()).is_none()
    }
}

/// Sorts `v` ascending (heapsort: O(n log n), no allocation, one copy of the code for every
/// caller). For `usize` an unstable sort is indistinguishable from a stable one.
pub(crate) fn sort_usizes(v: &mut [usize]) {
    fn sift_down(v: &mut [usize], mut root: usize, end: usize) {
        loop {
            let mut child = 2 * root + 1;
            if child >= end {
                return;
            }
            if child + 1 < end && v[child] < v[child + 1] {
                child += 1;
            }
            if v[root] >= v[child] {
                return;
            }
            v.swap(root, child);
            root = child;
        }
    }
    let n = v.len();
    for root in (0..n / 2).rev() {
        sift_down(v, root, n);
    }
    for end in (1..n).rev() {
        v.swap(0, end);
        sift_down(v, 0, end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeMap;
    use alloc::string::{String, ToString};
    use alloc::vec;

    #[test]
    fn behaves_like_btreemap() {
        let mut a: VecMap<String, usize> = VecMap::new();
        let mut b: BTreeMap<String, usize> = BTreeMap::new();
        let keys = ["m", "a", "z", "a", "q", "b", "m", "", "zz", "b"];
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(a.insert(k.to_string(), i), b.insert(k.to_string(), i));
            assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
        }
        for k in ["a", "x", "zz", "m", "a"] {
            assert_eq!(a.remove(k), b.remove(k));
            assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
            assert_eq!(a.get("q"), b.get("q"));
        }
        *a.get_or_insert("k".to_string(), 7) += 1;
        *b.entry("k".to_string()).or_insert_with(|| 7) += 1;
        *a.get_or_insert("k".to_string(), 7) += 1;
        *b.entry("k".to_string()).or_insert_with(|| 7) += 1;
        assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
        assert_eq!(alloc::format!("{a:?}"), alloc::format!("{b:?}"));
        assert_eq!(a.len(), b.len());
    }

    #[test]
    fn sorts() {
        for mut v in [vec![], vec![1], vec![3, 1, 2, 2, 0, 9, 3], (0..100).rev().collect::<Vec<usize>>()] {
            let mut w = v.clone();
            w.sort_unstable();
            sort_usizes(&mut v);
            assert_eq!(v, w);
        }
    }
}
