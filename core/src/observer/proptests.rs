//! Property tests: splitting the data over several observers and merging them (in any
//! grouping) gives exactly the statistics and parameters of one observer over all the data.

extern crate std;

use super::*;
use crate::quant::{QScheme, QuantDType, Shape, Tensor};
use proptest::prelude::*;
use std::vec::Vec;

fn data() -> impl Strategy<Value = (Vec<f32>, Vec<usize>)> {
    // Values over very different magnitudes, and cut points splitting them into parts.
    (prop::collection::vec((-1000.0f32..1000.0, -12i32..6), 1..400), prop::collection::vec(0usize..400, 0..5)).prop_map(
        |(v, cuts)| {
            let x: Vec<f32> = v.into_iter().map(|(m, e)| m * libm::exp2f(e as f32)).collect();
            let mut c: Vec<usize> = cuts.into_iter().map(|c| c % (x.len() + 1)).collect();
            c.sort_unstable();
            (x, c)
        },
    )
}

fn parts<'a>(x: &'a [f32], cuts: &[usize]) -> Vec<&'a [f32]> {
    let mut out = Vec::new();
    let mut prev = 0;
    for &c in cuts.iter().chain(core::iter::once(&x.len())) {
        out.push(&x[prev..c]);
        prev = c;
    }
    out
}

/// One observer over all of `x` (every pass), and the parts observed separately then merged
/// pass by pass, in reverse order; both must give the same range and parameters.
fn check_split_merge<O: Observer + Clone>(fresh: O, x: &[f32], cuts: &[usize]) -> Result<(), TestCaseError> {
    let mut one = fresh.clone();
    for _ in 0..one.passes() {
        one.observe(x).unwrap();
        one.end_pass().unwrap();
    }
    let ps = parts(x, cuts);
    let mut merged = fresh.clone();
    for _ in 0..fresh.passes() {
        // Each worker starts from the merged state of the previous pass (its fixed range).
        let template = merged.clone();
        let mut workers: Vec<O> = ps.iter().map(|_| template.clone()).collect();
        for (w, p) in workers.iter_mut().zip(&ps) {
            w.observe(p).unwrap();
        }
        let mut acc = workers.pop().unwrap();
        while let Some(w) = workers.pop() {
            acc.merge(&w).unwrap();
        }
        acc.end_pass().unwrap();
        merged = acc;
    }
    prop_assert_eq!(one.range(), merged.range());
    prop_assert_eq!(one.qparams(), merged.qparams());
    Ok(())
}

fn cfg() -> ObserverConfig {
    ObserverConfig::new(QuantDType::Int8, QScheme::Affine)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: crate::test_support::cases(200), .. ProptestConfig::default() })]

    #[test]
    fn minmax_split_then_merge_equals_one_pass((x, cuts) in data()) {
        check_split_merge(MinMaxObserver::new(cfg()), &x, &cuts)?;
    }

    #[test]
    fn histogram_two_pass_split_then_merge_equals_one_pass((x, cuts) in data()) {
        check_split_merge(HistogramObserver::<64>::two_pass(cfg()), &x, &cuts)?;
    }

    #[test]
    fn histogram_streaming_split_then_merge_equals_one_pass((x, cuts) in data()) {
        check_split_merge(HistogramObserver::<64>::new(cfg()), &x, &cuts)?;
        // The counts themselves, not only the search result.
        let mut one = Histogram::<32>::streaming(Anchor::Free);
        one.add(&x, identity, NonFinitePolicy::Error).unwrap();
        let ps = parts(&x, &cuts);
        let mut hs: Vec<Histogram<32>> = ps.iter().map(|p| {
            let mut h = Histogram::<32>::streaming(Anchor::Free);
            h.add(p, identity, NonFinitePolicy::Error).unwrap();
            h
        }).collect();
        let mut acc = hs.remove(0);
        for h in &hs {
            acc.merge(h).unwrap();
        }
        prop_assert_eq!(acc.counts(), one.counts());
        prop_assert_eq!(acc.bounds(), one.bounds());
        prop_assert_eq!(acc.total(), x.len() as u64);
        // Sequential batches into one histogram: the same again.
        let mut seq = Histogram::<32>::streaming(Anchor::Free);
        for p in &ps {
            seq.add(p, identity, NonFinitePolicy::Error).unwrap();
        }
        prop_assert_eq!(seq.counts(), one.counts());
    }

    #[test]
    fn entropy_split_then_merge_equals_one_pass((x, cuts) in data()) {
        check_split_merge(EntropyObserver::<64>::two_pass(cfg(), 16).unwrap(), &x, &cuts)?;
        check_split_merge(EntropyObserver::<64>::new(cfg(), 16).unwrap(), &x, &cuts)?;
    }

    #[test]
    fn percentile_split_then_merge_equals_one_pass((x, cuts) in data(), sym in any::<bool>()) {
        check_split_merge(PercentileObserver::<64>::two_pass(cfg(), 99.0, sym).unwrap(), &x, &cuts)?;
        check_split_merge(PercentileObserver::<64>::new(cfg(), 99.0, sym).unwrap(), &x, &cuts)?;
    }

    #[test]
    fn per_channel_split_then_merge_equals_one_pass(v in prop::collection::vec(-100.0f32..100.0, 12..240), k in 1usize..4) {
        // Shape [n, 3, 2], channels along axis 1; batches of whole leading slices.
        let n = v.len() / 6;
        let x = &v[..n * 6];
        let shape = Shape::new(&[n, 3, 2]).unwrap();
        let mut one = PerChannelMinMaxObserver::<4>::new(cfg(), 1, 3).unwrap();
        one.observe(&Tensor::new(x, shape).unwrap()).unwrap();
        let mut acc = PerChannelMinMaxObserver::<4>::new(cfg(), 1, 3).unwrap();
        let per = (n / k).max(1);
        for chunk in x.chunks(per * 6) {
            let rows = chunk.len() / 6;
            let mut w = PerChannelMinMaxObserver::<4>::new(cfg(), 1, 3).unwrap();
            w.observe(&Tensor::new(chunk, Shape::new(&[rows, 3, 2]).unwrap()).unwrap()).unwrap();
            acc.merge(&w).unwrap();
        }
        let (mut s1, mut z1, mut s2, mut z2) = ([0f32; 3], [0i32; 3], [0f32; 3], [0i32; 3]);
        let a = one.qparams(&mut s1, &mut z1).unwrap();
        let b = acc.qparams(&mut s2, &mut z2).unwrap();
        prop_assert_eq!(a, b);
    }
}
