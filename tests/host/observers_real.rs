//! Observers pinned to their peers on real tensors (`tests/golden/observers_real/`, written by
//! `tests/gen/gen_observer_real.py`): activations of the bundled digits CNN and of the float
//! MLPerf Tiny IC and VWW models on real inputs (held-out scikit-learn digits, patches of
//! photos), and the ranges ONNX Runtime's calibrators and PyTorch's observers compute from them
//! with their own code, fed one calibration sample at a time.
//!
//! - **Two-pass** observers must give the peer's range bit for bit: ORT's MinMax, Entropy and
//!   Percentile calibrators (one `np.histogram` of everything `collect_data` saw) and PyTorch's
//!   MinMaxObserver and HistogramObserver fed the whole tensor in one call (its `torch.histc`),
//!   and PyTorch's parameters from that range.
//! - **Streaming** observers (one pass, power-of-two bins) must give, bit for bit, the peer's own
//!   search (ORT's `get_entropy_threshold` / `compute_percentile`, PyTorch's
//!   `_non_linear_param_search`) run on the histogram they end with, whose edges must be the
//!   generator's too; split in two and merged they must equal one pass. Against the peer on its
//!   own bins they must stay within the bounds below (each a little above the worst seen on
//!   these tensors, and explained where it is set).
//! - PyTorch's HistogramObserver fed sample by sample re-bins by interpolation between calls
//!   (its result depends on the split): our two-pass range must stay within a bound of it.
//!
//! Any change of the observers' arithmetic (speed work included) that moves one of these ranges
//! fails here, with the tensor, the configuration, ours and the peer's.

use std::collections::BTreeMap;
use std::path::PathBuf;

use microquant::observer::{
    EntropyObserver, Histogram, HistogramObserver, MinMaxObserver, Observer, ObserverConfig, PercentileObserver,
};
use microquant::quant::{Convention, QScheme, QuantDType};
use serde::Deserialize;

#[derive(Deserialize)]
struct OrtConfig {
    name: String,
    method: String,
    options: BTreeMap<String, serde_json::Value>,
}

#[derive(Deserialize)]
struct TorchConfig {
    dtype: String,
    qscheme: String,
}

/// A peer's search on the histogram our streaming observer ends with: its result and the
/// grid's first and last edges.
#[derive(Deserialize)]
struct OnGrid {
    range: [f32; 2],
    grid: [f32; 2],
}

#[derive(Deserialize)]
struct TorchResults {
    minmax: BTreeMap<String, [f64; 4]>,
    histogram_one_batch: BTreeMap<String, [f64; 4]>,
    histogram_batches: BTreeMap<String, [f64; 4]>,
    search_on_streaming_grid: OnGrid,
}

#[derive(Deserialize)]
struct Entry {
    name: String,
    file: String,
    batches: usize,
    batch_len: usize,
    ort: BTreeMap<String, [f32; 2]>,
    ort_on_streaming_grid: BTreeMap<String, OnGrid>,
    torch: TorchResults,
}

#[derive(Deserialize)]
struct File {
    ort_configs: Vec<OrtConfig>,
    torch_configs: BTreeMap<String, TorchConfig>,
    tensors: Vec<Entry>,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join("observers_real")
}

fn golden() -> File {
    let text = std::fs::read_to_string(dir().join("observers_real.json")).expect("observers_real.json");
    serde_json::from_str(&text).expect("observers_real.json parses")
}

/// The tensor's rows: one calibration sample each.
fn batches(e: &Entry) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(dir().join(&e.file)).unwrap_or_else(|err| panic!("{}: {err}", e.file));
    let a = microquant::npy::Npy::parse(&bytes).unwrap_or_else(|err| panic!("{}: {err}", e.file));
    assert_eq!(a.shape(), [e.batches, e.batch_len], "{}: shape", e.file);
    a.to_f32().chunks(e.batch_len).map(<[f32]>::to_vec).collect()
}

/// What one of our observers gives on a tensor.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ours {
    range: (f32, f32),
    /// Streaming: the first and last edges of the histogram it ends with.
    grid: Option<(f32, f32)>,
    /// Streaming: the range of two observers fed the first and the second half, merged.
    merged: Option<(f32, f32)>,
}

/// The histogram of a histogram observer.
trait Binned {
    fn grid(&self) -> Option<(f32, f32)>;
}

fn bounds<const N: usize>(h: Option<&Histogram<N>>) -> Option<(f32, f32)> {
    h.and_then(Histogram::bounds)
}

impl<const N: usize> Binned for HistogramObserver<N> {
    fn grid(&self) -> Option<(f32, f32)> {
        bounds(self.histogram())
    }
}
impl<const N: usize> Binned for EntropyObserver<N> {
    fn grid(&self) -> Option<(f32, f32)> {
        bounds(self.histogram())
    }
}
impl<const N: usize> Binned for PercentileObserver<N> {
    fn grid(&self) -> Option<(f32, f32)> {
        bounds(self.histogram())
    }
}
impl Binned for MinMaxObserver {
    fn grid(&self) -> Option<(f32, f32)> {
        None
    }
}

/// Every pass of `o` over `data`, one row per `observe`.
fn feed<O: Observer>(o: &mut O, data: &[Vec<f32>]) {
    for _ in 0..o.passes() {
        for b in data {
            o.observe(b).unwrap();
        }
        o.end_pass().unwrap();
    }
}

fn two_pass<O: Observer>(mut o: O, data: &[Vec<f32>]) -> Ours {
    assert_eq!(o.passes(), 2);
    feed(&mut o, data);
    Ours { range: o.range().unwrap(), grid: None, merged: None }
}

fn streaming<O: Observer + Binned + Clone>(fresh: O, data: &[Vec<f32>]) -> Ours {
    assert_eq!(fresh.passes(), 1);
    let mut o = fresh.clone();
    feed(&mut o, data);
    let (l, r) = data.split_at(data.len() / 2);
    let (mut a, mut b) = (fresh.clone(), fresh);
    feed(&mut a, l);
    feed(&mut b, r);
    a.merge(&b).unwrap();
    Ours { range: o.range().unwrap(), grid: o.grid(), merged: Some(a.range().unwrap()) }
}

/// Min and max of the data and of its magnitudes.
struct Stats {
    lo: f32,
    hi: f32,
    amin: f32,
    amax: f32,
}

fn stats(data: &[Vec<f32>]) -> Stats {
    let mut s = Stats { lo: f32::MAX, hi: f32::MIN, amin: f32::MAX, amax: 0.0 };
    for &v in data.iter().flatten() {
        s.lo = s.lo.min(v);
        s.hi = s.hi.max(v);
        s.amin = s.amin.min(v.abs());
        s.amax = s.amax.max(v.abs());
    }
    s
}

/// `|a - b|` over both ends, in units of `width`.
fn bins_apart(ours: (f32, f32), theirs: (f32, f32), width: f64) -> f64 {
    let d = |x: f32, y: f32| (x as f64 - y as f64).abs() / width;
    d(ours.0, theirs.0).max(d(ours.1, theirs.1))
}

/// The larger of `ours / theirs` and its inverse over both ends (ends where the peer gives 0
/// or the two agree are skipped).
fn ratio_apart(ours: (f32, f32), theirs: (f32, f32)) -> f64 {
    let r = |x: f32, y: f32| {
        if x == y || y == 0.0 {
            return 1.0;
        }
        let q = x as f64 / y as f64;
        if q > 0.0 { q.max(1.0 / q) } else { f64::INFINITY }
    };
    r(ours.0, theirs.0).max(r(ours.1, theirs.1))
}

fn pair(v: [f32; 2]) -> (f32, f32) {
    (v[0], v[1])
}

/// One ORT calibrator configuration: what our observer needs to mirror it.
#[derive(Clone, Copy)]
enum Ort {
    MinMax,
    Entropy { bins: usize, quantized: usize },
    Percentile { bins: usize, percentile: f64, symmetric: bool },
}

impl Ort {
    fn of(c: &OrtConfig) -> Self {
        let num = |k: &str, d: f64| c.options.get(k).and_then(serde_json::Value::as_f64).unwrap_or(d);
        match c.method.as_str() {
            "MinMax" => {
                assert!(c.options.is_empty(), "{}: options", c.name);
                Ort::MinMax
            }
            // create_calibrator's defaults: 128 bins, 128 quantized bins.
            "Entropy" => Ort::Entropy {
                bins: num("num_bins", 128.0) as usize,
                quantized: num("num_quantized_bins", 128.0) as usize,
            },
            // create_calibrator's defaults: 2048 bins, 99.999, symmetric.
            "Percentile" => Ort::Percentile {
                bins: num("num_bins", 2048.0) as usize,
                percentile: num("percentile", 99.999),
                symmetric: c.options.get("symmetric").and_then(serde_json::Value::as_bool).unwrap_or(true),
            },
            m => panic!("{m}"),
        }
    }

    /// Our observer for this configuration on `data`, two-pass or streaming.
    fn ours(self, data: &[Vec<f32>], stream: bool) -> Ours {
        let cfg = ObserverConfig::new(QuantDType::Int8, QScheme::Affine).with_convention(Convention::OnnxRuntime);
        macro_rules! go {
            ($two:expr, $one:expr) => {
                if stream { streaming($one, data) } else { two_pass($two, data) }
            };
        }
        macro_rules! entropy {
            ($n:literal, $q:expr) => {
                go!(EntropyObserver::<$n>::two_pass(cfg, $q).unwrap(), EntropyObserver::<$n>::new(cfg, $q).unwrap())
            };
        }
        macro_rules! percentile {
            ($n:literal, $p:expr, $s:expr) => {
                go!(
                    PercentileObserver::<$n>::two_pass(cfg, $p, $s).unwrap(),
                    PercentileObserver::<$n>::new(cfg, $p, $s).unwrap()
                )
            };
        }
        match self {
            Ort::MinMax => {
                let mut o = MinMaxObserver::new(cfg);
                feed(&mut o, data);
                Ours { range: o.range().unwrap(), grid: None, merged: None }
            }
            Ort::Entropy { bins: 128, quantized } => entropy!(128, quantized),
            Ort::Entropy { bins: 512, quantized } => entropy!(512, quantized),
            Ort::Entropy { bins: 2048, quantized } => entropy!(2048, quantized),
            Ort::Percentile { bins: 512, percentile, symmetric } => percentile!(512, percentile, symmetric),
            Ort::Percentile { bins: 2048, percentile, symmetric } => percentile!(2048, percentile, symmetric),
            _ => panic!("no observer for this ORT configuration"),
        }
    }
}

/// Streaming percentile vs ORT, in ORT's bin widths. Both thresholds are the left edge of the
/// bin where the cumulative distribution reaches the percentile, and our bins are at most twice
/// as wide: less than 2 apart.
const PERCENTILE_STREAMING_BINS: f64 = 2.0;
/// Streaming entropy vs ORT, as a ratio of the thresholds. The KL search picks a window of a
/// number of bins, and where the data's tail is sparse that number hardly depends on the bin
/// width: the threshold scales with it (ORT's own threshold halves from 1024 to 2048 bins on
/// `vww_dw_relu`). Our bins are up to twice as wide as ORT's.
const ENTROPY_STREAMING_RATIO: f64 = 2.25;

#[test]
fn onnxruntime_calibrators_on_real_tensors() {
    let g = golden();
    assert_eq!(g.tensors.len(), 11);
    let (mut exact, mut pinned, mut differ) = (0, 0, Vec::new());
    let mut worst: BTreeMap<&str, (f64, &str)> = BTreeMap::new();
    for e in &g.tensors {
        let data = batches(e);
        let s = stats(&data);
        for c in &g.ort_configs {
            let ort = Ort::of(c);
            let want = pair(e.ort[&c.name]);
            let ctx = format!("{} {}", e.name, c.name);
            // Two-pass: ORT's histogram, ORT's search: ORT's range bit for bit.
            let two = ort.ours(&data, false).range;
            if two == want {
                exact += 1;
            } else {
                differ.push(format!("{ctx}: two-pass [{:e}, {:e}], ORT [{:e}, {:e}]", two.0, two.1, want.0, want.1));
            }
            if let Ort::MinMax = ort {
                continue;
            }
            // Streaming: ORT's search on our grid, bit for bit; split and merged = one pass.
            let one = ort.ours(&data, true);
            assert_eq!(one.merged, Some(one.range), "{ctx}: streaming, split in two and merged vs one pass");
            let pin = &e.ort_on_streaming_grid[&c.name];
            if (one.grid, one.range) == (Some(pair(pin.grid)), pair(pin.range)) {
                pinned += 1;
            } else {
                differ.push(format!(
                    "{ctx}: streaming {:?} on grid {:?}, ORT's search on that grid {:?} on {:?}",
                    one.range, one.grid, pin.range, pin.grid
                ));
            }
            // Streaming vs ORT itself.
            let (d, bound) = match ort {
                Ort::Entropy { .. } => (ratio_apart(one.range, want), ENTROPY_STREAMING_RATIO),
                Ort::Percentile { bins, symmetric, .. } => {
                    let width = if symmetric {
                        (s.amax as f64 - s.amin as f64) / bins as f64
                    } else {
                        2.0 * s.amax as f64 / bins as f64
                    };
                    (bins_apart(one.range, want, width), PERCENTILE_STREAMING_BINS)
                }
                Ort::MinMax => unreachable!(),
            };
            assert!(
                d <= bound,
                "{ctx}: streaming [{:e}, {:e}] vs ORT [{:e}, {:e}]: {d:.2} > {bound}",
                one.range.0,
                one.range.1,
                want.0,
                want.1
            );
            let w = worst.entry(c.name.as_str()).or_insert((0.0, ""));
            if d > w.0 {
                *w = (d, e.name.as_str());
            }
        }
    }
    println!(
        "ORT calibrators on real tensors: {exact} two-pass ranges bit-exact, {pinned} streaming ones equal to ORT's search on their grid"
    );
    for (k, (v, t)) in &worst {
        let unit = if k.starts_with("entropy") { "x ORT's threshold" } else { "of ORT's bin widths" };
        println!("  {k}: streaming vs ORT worst {v:.2} {unit} ({t})");
    }
    assert!(differ.is_empty(), "{} results differ:\n{}", differ.len(), differ.join("\n"));
}

fn torch_cfg(c: &TorchConfig) -> ObserverConfig {
    let dt = match c.dtype.as_str() {
        "quint8" => QuantDType::UInt8,
        "qint8" => QuantDType::Int8,
        d => panic!("{d}"),
    };
    let scheme = match c.qscheme.as_str() {
        "per_tensor_affine" => QScheme::Affine,
        "per_tensor_symmetric" => QScheme::Symmetric,
        q => panic!("{q}"),
    };
    ObserverConfig::new(dt, scheme)
}

/// `[lo, hi, scale, zero_point]` as PyTorch's goldens store it.
fn torch_row(v: [f64; 4]) -> ((f32, f32), (f32, i32)) {
    ((v[0] as f32, v[1] as f32), (v[2] as f32, v[3] as i32))
}

fn range_and_qparams<O: Observer>(mut o: O, data: &[Vec<f32>]) -> ((f32, f32), (f32, i32)) {
    feed(&mut o, data);
    let p = o.qparams().unwrap();
    (o.range().unwrap(), (p.scale(), p.zero_point()))
}

/// HistogramObserver's streaming range vs PyTorch's fed everything at once, and our two-pass
/// range vs PyTorch's fed one sample per call (which re-bins by interpolation), in torch.histc
/// bins over the data's range. The L2 search stops at the first step that does not lower its
/// error estimate, so another binning can stop it a few steps earlier or later: about 2.4 int8
/// steps (19 bins) on `digits_conv1` either way.
const HISTOGRAM_APART_BINS: f64 = 20.0;

#[test]
fn pytorch_observers_on_real_tensors() {
    let g = golden();
    let (mut exact, mut pinned, mut differ) = (0, 0, Vec::new());
    let (mut worst_streaming, mut worst_batches) = ((0f64, String::new()), (0f64, String::new()));
    for e in &g.tensors {
        let data = batches(e);
        let s = stats(&data);
        let width = (s.hi as f64 - s.lo as f64) / 2048.0;
        for (name, c) in &g.torch_configs {
            let cfg = torch_cfg(c);
            let ctx = format!("{} {name}", e.name);
            let mut check = |what: &str, got: ((f32, f32), (f32, i32)), want: [f64; 4]| {
                let want = torch_row(want);
                if got == want {
                    exact += 1;
                } else {
                    differ.push(format!("{ctx} {what}: ours {got:?}, PyTorch {want:?}"));
                }
            };
            check("MinMaxObserver", range_and_qparams(MinMaxObserver::new(cfg), &data), e.torch.minmax[name]);
            // Two-pass: torch.histc of everything, PyTorch's search and parameters.
            let two = HistogramObserver::<2048>::two_pass(cfg);
            let (two, qp) = range_and_qparams(two, &data);
            check("HistogramObserver two-pass vs one batch", (two, qp), e.torch.histogram_one_batch[name]);

            // Streaming: PyTorch's search on our grid, clamped to the data's range as ours is.
            let one = streaming(HistogramObserver::<2048>::new(cfg), &data);
            assert_eq!(one.merged, Some(one.range), "{ctx}: streaming, split in two and merged vs one pass");
            let pin = &e.torch.search_on_streaming_grid;
            let (a, b) = pair(pin.range);
            let a = a.clamp(s.lo, s.hi);
            let b = if b > s.hi { s.hi } else { b.max(a) };
            if (one.grid, one.range) == (Some(pair(pin.grid)), (a, b)) {
                pinned += 1;
            } else {
                differ.push(format!(
                    "{ctx}: streaming {:?} on grid {:?}, PyTorch's search on that grid {:?} on {:?}",
                    one.range,
                    one.grid,
                    (a, b),
                    pin.grid
                ));
            }

            let (whole, _) = torch_row(e.torch.histogram_one_batch[name]);
            let d = bins_apart(one.range, whole, width);
            assert!(d <= HISTOGRAM_APART_BINS, "{ctx}: streaming {:?} vs PyTorch {whole:?}: {d:.2} bins", one.range);
            if d > worst_streaming.0 {
                worst_streaming = (d, ctx.clone());
            }
            let (split, _) = torch_row(e.torch.histogram_batches[name]);
            let d = bins_apart(two, split, width);
            assert!(
                d <= HISTOGRAM_APART_BINS,
                "{ctx}: two-pass {two:?} vs PyTorch sample by sample {split:?}: {d:.2} bins"
            );
            if d > worst_batches.0 {
                worst_batches = (d, ctx.clone());
            }
        }
    }
    println!(
        "PyTorch observers on real tensors: {exact} two-pass results bit-exact, {pinned} streaming ranges equal to PyTorch's search on their grid"
    );
    println!(
        "  HistogramObserver streaming vs PyTorch: worst {:.2} histc bins ({})",
        worst_streaming.0, worst_streaming.1
    );
    println!(
        "  HistogramObserver two-pass vs PyTorch fed sample by sample: worst {:.2} histc bins ({})",
        worst_batches.0, worst_batches.1
    );
    assert!(differ.is_empty(), "{} results differ:\n{}", differ.len(), differ.join("\n"));
}
