//! Cross-layer equalization (Nagel et al., "Data-Free Quantization Through Weight Equalization
//! and Bias Correction", ICCV 2019, section 4.1): a float-graph rewrite before calibration that
//! evens out the per-channel weight ranges of consecutive layers, so that one weight scale per
//! tensor loses less (the paper's target: depthwise-separable models, whose depthwise filters
//! have channel ranges spread over orders of magnitude).
//!
//! For two layers `y = W2 · f(W1 · x + b1) + b2` with `f` positively homogeneous per channel
//! (`f(x / s) = f(x) / s` for `s > 0`), output channel `i` of the first and input channel `i` of
//! the second are rescaled by `s_i = (1 / r2_i) · √(r1_i · r2_i) = √(r1_i / r2_i)`, `r1_i` the
//! range (largest `|w|`) of output channel `i` of `W1` and `r2_i` that of input channel `i` of
//! `W2`: `W1[i] /= s_i`, `b1[i] /= s_i`, `W2[:, i] *= s_i`. Both ranges become `√(r1_i · r2_i)`
//! and the float function stays the same (within float rounding). A depthwise convolution is a
//! second layer on its input side and a first layer on its output side (channel `i` throughout),
//! so `conv → depthwise → conv` is a chain of two pairs; the pairs are equalized in turn, sweep
//! after sweep, until every scale of a sweep is within [`CleOptions::tolerance`] of 1.
//!
//! What lies between the two layers decides whether they pair up. Crossed, because they commute
//! with a positive per-channel scale: the first layer's fused activation `none` or `relu`, and
//! single-reader chains of `Relu`, `LeakyRelu`, `Prelu` (`x ≥ 0 ? x : α · x` is homogeneous for
//! any `α`), max and average pooling (activation `none` or `relu`), zero padding off the channel
//! axis, a mean off the channel axis, and reshapes / squeezes whose last extent stays a multiple
//! of the channel count (the NHWC flat order keeps element `k` in channel `k mod C`, so a
//! fully-connected layer reading a flattened feature map pairs up too). Anything else ends the
//! search: a tensor read twice or a graph output (the rescaled activation would leak out), an
//! add or concatenation, a transpose.
//!
//! **Clipping activations (ReLU6, `Clip`, `relu_n1_to_1`) are not homogeneous**: `min(x / s, 6)`
//! is not `min(x, 6) / s`. By default they are not crossed, so the float model is unchanged; pairs
//! a ReLU6 or `relu_n1_to_1` separates are listed in [`CleReport::skipped`] (a `Clip` op ends the
//! search as any other op does). [`CleOptions::relu6_as_relu`] crosses ReLU6 the way
//! the paper and AIMET do, by replacing it with ReLU first: that **changes the float model** (the
//! values above 6 are no longer clipped), and the report names each replaced activation. Other
//! clips are never crossed.
//!
//! Layers whose weights, bias or in-between activations carry quantization parameters (a QDQ
//! model's) are left alone: rescaling would void them. Weight and bias tensors shared with other
//! readers are copied first, so only the equalized layers change. The paper's bias absorption is
//! not done here; the quantizer's empirical bias correction ([`super::QuantizeOptions`]) covers
//! the bias the weight quantization leaves.
//!
//! Equalizing helps per-tensor weights only where their channel ranges are spread and the
//! weights are not on an int8 grid already: on the MLPerf Tiny KWS float model, whose weights
//! are int8 per channel in the file, it costs 1.5 dB; on the digits DS-CNN it gains 0.4 dB
//! (`BENCHMARKS.md`, "Cross-layer equalization").

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use crate::graph::{ConstData, ConvertError, FusedActivation, Graph, Op, Tensor, TensorId};

#[cfg(test)]
mod tests;

/// Options of [`equalize`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CleOptions {
    /// Cross ReLU6 activations by replacing them with ReLU (the paper's and AIMET's choice):
    /// this changes the float model (values above 6 pass unclipped). Default `false`: pairs
    /// separated by a ReLU6 are left as they are.
    pub relu6_as_relu: bool,
    /// The most sweeps over all pairs. Default 100.
    pub max_sweeps: usize,
    /// Convergence: the sweeps stop when every scale of a sweep is within this relative
    /// distance of 1. Default `1e-4`.
    pub tolerance: f64,
}

impl Default for CleOptions {
    fn default() -> Self {
        Self { relu6_as_relu: false, max_sweeps: 100, tolerance: 1e-4 }
    }
}

/// One pair of layers [`equalize`] rescaled.
#[derive(Debug, Clone, PartialEq)]
pub struct EqualizedPair {
    /// The first layer (its output channels divided by the scales).
    pub first: String,
    /// Its node index in the graph.
    pub first_index: usize,
    /// The second layer (its input channels multiplied by the scales).
    pub second: String,
    /// Its node index.
    pub second_index: usize,
    /// The channels between them.
    pub channels: usize,
    /// What lies between them: the first layer's activation and the ops crossed, e.g. `relu`
    /// or `none, MaxPool2d, Reshape`.
    pub through: String,
    /// The smallest and largest scale `s_i` over the channels, all sweeps multiplied.
    pub scales: (f32, f32),
}

/// A pair [`equalize`] did not rescale because a clipping activation lies between them.
#[derive(Debug, Clone, PartialEq)]
pub struct SkippedPair {
    /// The first layer.
    pub first: String,
    /// Its node index.
    pub first_index: usize,
    /// The second layer.
    pub second: String,
    /// Its node index.
    pub second_index: usize,
    /// The clipping activation, e.g. `relu6`.
    pub clip: String,
}

/// A layer's weight ranges before and after [`equalize`].
#[derive(Debug, Clone, PartialEq)]
pub struct LayerRanges {
    /// The layer.
    pub name: String,
    /// Its node index.
    pub index: usize,
    /// The paper's per-tensor precision of its weights before: the mean over output channels of
    /// `range_i / max range` (1: every channel uses the whole int8 grid of one per-tensor
    /// scale).
    pub precision_before: f32,
    /// The same after.
    pub precision_after: f32,
    /// The largest `|w|` of the whole tensor before (what one per-tensor scale must cover).
    pub max_before: f32,
    /// The same after.
    pub max_after: f32,
}

/// What [`equalize`] did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CleReport {
    /// The pairs rescaled, in graph order.
    pub pairs: Vec<EqualizedPair>,
    /// Pairs left alone because of a clipping activation between them.
    pub skipped: Vec<SkippedPair>,
    /// Every layer of an equalized pair, in graph order.
    pub layers: Vec<LayerRanges>,
    /// ReLU6 activations replaced with ReLU ([`CleOptions::relu6_as_relu`]), by node name.
    pub relu6_replaced: Vec<String>,
    /// Sweeps done.
    pub sweeps: usize,
    /// True if the last sweep's scales were all within the tolerance of 1.
    pub converged: bool,
}

impl CleReport {
    /// The report as one JSON object: `pairs` (`first`, `second`, `first_index`,
    /// `second_index`, `channels`, `through`, `scale_min`, `scale_max`), `layers` (`name`,
    /// `index`, `precision_before`, `precision_after`,
    /// `max_before`, `max_after`), `skipped` (`first`, `second`, `clip`), `relu6_replaced`,
    /// `sweeps`, `converged`.
    pub fn to_json(&self) -> String {
        use crate::ptq::report::format::{json_f32, json_str};
        let mut o = String::from("{\"pairs\":[");
        for (i, p) in self.pairs.iter().enumerate() {
            o.push_str(if i > 0 { ",{\"first\":" } else { "{\"first\":" });
            json_str(&mut o, &p.first);
            o.push_str(",\"second\":");
            json_str(&mut o, &p.second);
            o.push_str(&format!(
                ",\"first_index\":{},\"second_index\":{},\"channels\":{},\"through\":",
                p.first_index, p.second_index, p.channels
            ));
            json_str(&mut o, &p.through);
            o.push_str(",\"scale_min\":");
            json_f32(&mut o, p.scales.0);
            o.push_str(",\"scale_max\":");
            json_f32(&mut o, p.scales.1);
            o.push('}');
        }
        o.push_str("],\"layers\":[");
        for (i, l) in self.layers.iter().enumerate() {
            o.push_str(if i > 0 { ",{\"name\":" } else { "{\"name\":" });
            json_str(&mut o, &l.name);
            o.push_str(&format!(",\"index\":{}", l.index));
            for (key, v) in [
                ("precision_before", l.precision_before),
                ("precision_after", l.precision_after),
                ("max_before", l.max_before),
                ("max_after", l.max_after),
            ] {
                o.push_str(&format!(",\"{key}\":"));
                json_f32(&mut o, v);
            }
            o.push('}');
        }
        o.push_str("],\"skipped\":[");
        for (i, p) in self.skipped.iter().enumerate() {
            o.push_str(if i > 0 { ",{\"first\":" } else { "{\"first\":" });
            json_str(&mut o, &p.first);
            o.push_str(",\"second\":");
            json_str(&mut o, &p.second);
            o.push_str(",\"clip\":");
            json_str(&mut o, &p.clip);
            o.push('}');
        }
        o.push_str("],\"relu6_replaced\":[");
        for (i, r) in self.relu6_replaced.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            json_str(&mut o, r);
        }
        o.push_str(&format!("],\"sweeps\":{},\"converged\":{}}}", self.sweeps, self.converged));
        o
    }
}

/// A node for the text report: `#index name`, the name cut to 32 characters (`~` marks a cut)
/// as in the per-layer report.
struct Layer<'a>(usize, &'a str);

impl fmt::Display for Layer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} ", self.0)?;
        if self.1.chars().count() > 32 {
            let cut: String = self.1.chars().take(31).collect();
            write!(f, "{cut}~")
        } else {
            f.write_str(self.1)
        }
    }
}

/// A summary line, one line per pair (`#i first -> #j second (channels, through ...): scales
/// a..b`), one per layer (the per-tensor precision and the largest `|w|`, before -> after), the
/// ReLU6 replaced and the pairs skipped. Node indices are the float graph's, as in the per-layer
/// report.
impl fmt::Display for CleReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "cross-layer equalization: {} pairs, {} sweeps ({})",
            self.pairs.len(),
            self.sweeps,
            if self.converged { "converged" } else { "not converged" }
        )?;
        for p in &self.pairs {
            writeln!(
                f,
                "  {} -> {} ({} channels, through {}): scales {:.4}..{:.4}",
                Layer(p.first_index, &p.first),
                Layer(p.second_index, &p.second),
                p.channels,
                p.through,
                p.scales.0,
                p.scales.1
            )?;
        }
        if !self.layers.is_empty() {
            writeln!(f, "  weights per tensor: precision (mean channel range / max range), max |w|, before -> after")?;
        }
        for l in &self.layers {
            writeln!(
                f,
                "    {:<40} {:.3} -> {:.3}   {:.4} -> {:.4}",
                Layer(l.index, &l.name).to_string(),
                l.precision_before,
                l.precision_after,
                l.max_before,
                l.max_after
            )?;
        }
        for r in &self.relu6_replaced {
            writeln!(f, "  relu6 replaced with relu (the float model changes): {r}")?;
        }
        for s in &self.skipped {
            writeln!(
                f,
                "  not equalized: {} -> {} (a {} between them is not homogeneous)",
                Layer(s.first_index, &s.first),
                Layer(s.second_index, &s.second),
                s.clip
            )?;
        }
        Ok(())
    }
}

/// A pair found in the graph.
#[derive(Debug, Clone)]
struct Pair {
    first: usize,
    second: usize,
    channels: usize,
    through: Vec<&'static str>,
    /// Nodes whose ReLU6 (fused) must become ReLU for the pair to be homogeneous.
    relu6: Vec<usize>,
    /// The cumulative scale of each channel.
    scales: Vec<f64>,
}

/// How the walk from a layer's output ended.
enum Walk {
    Pair(Pair),
    /// A pair behind a clip that may not be crossed.
    Clipped {
        second: usize,
        clip: &'static str,
    },
    None,
}

/// Cross-layer equalization (Nagel et al., "Data-Free Quantization Through Weight Equalization
/// and Bias Correction", 2019), in place: every pair of consecutive conv / depthwise /
/// fully-connected layers of the float graph `g` joined by positively homogeneous ops gets output
/// channel `i` of the first divided and input channel `i` of the second multiplied by
/// `s_i = √(r1_i / r2_i)` (`r` the largest `|w|` of the channel), so both ranges become
/// `√(r1_i · r2_i)`; chains (`conv → depthwise → conv`) are swept until the scales settle. The
/// float function is unchanged (within float rounding).
///
/// Crossed between the layers: the first one's fused activation `none` or `relu`, and
/// single-reader chains of ReLU, leaky ReLU, PReLU, max / average pooling (activation `none` or
/// `relu`), zero padding and means off the channel axis, reshapes keeping the channels innermost.
/// ReLU6 and other clips are not homogeneous and are not crossed (the pairs a ReLU6 separates are
/// listed in [`CleReport::skipped`]) unless [`CleOptions::relu6_as_relu`] replaces ReLU6 with
/// ReLU, which changes the float model. Layers with carried quantization (QDQ) are left alone;
/// shared weights are copied first.
///
/// # Errors
/// [`ConvertErrorKind::InvalidGraph`](crate::graph::ConvertErrorKind::InvalidGraph) if the
/// graph does not validate afterwards, or a tensor cannot be added.
pub fn equalize(g: &mut Graph, options: &CleOptions) -> Result<CleReport, ConvertError> {
    let mut report = CleReport::default();
    let mut pairs = Vec::new();
    for first in 0..g.nodes.len() {
        match walk(g, first, options.relu6_as_relu) {
            Walk::Pair(p) => pairs.push(p),
            Walk::Clipped { second, clip } => report.skipped.push(SkippedPair {
                first: g.nodes[first].name.clone(),
                first_index: first,
                second: g.nodes.get(second).map(|n| n.name.clone()).unwrap_or_default(),
                second_index: second,
                clip: String::from(clip),
            }),
            Walk::None => {}
        }
    }
    let mut members: Vec<usize> = pairs.iter().flat_map(|p| [p.first, p.second]).collect();
    members.sort_unstable();
    members.dedup();
    for &node in &members {
        own_constants(g, node)?;
    }
    let before: Vec<(f32, f32)> = members.iter().map(|&n| precision(g, n)).collect();
    for p in &pairs {
        for &n in &p.relu6 {
            if let Some(node) = g.nodes.get_mut(n) {
                relu6_to_relu(&mut node.op);
                if !report.relu6_replaced.contains(&node.name) {
                    report.relu6_replaced.push(node.name.clone());
                }
            }
        }
    }
    while !pairs.is_empty() && report.sweeps < options.max_sweeps {
        report.sweeps += 1;
        let mut worst = 0f64;
        for p in &mut pairs {
            worst = worst.max(equalize_pair(g, p));
        }
        if worst <= options.tolerance {
            report.converged = true;
            break;
        }
    }
    report.converged |= pairs.is_empty();
    for p in &pairs {
        let (lo, hi) = p.scales.iter().fold((f64::INFINITY, 0f64), |(lo, hi), &s| (lo.min(s), hi.max(s)));
        report.pairs.push(EqualizedPair {
            first: g.nodes[p.first].name.clone(),
            first_index: p.first,
            second: g.nodes[p.second].name.clone(),
            second_index: p.second,
            channels: p.channels,
            through: p.through.join(", "),
            scales: (lo as f32, hi as f32),
        });
    }
    for (&n, &(precision_before, max_before)) in members.iter().zip(&before) {
        let (precision_after, max_after) = precision(g, n);
        report.layers.push(LayerRanges {
            name: g.nodes[n].name.clone(),
            index: n,
            precision_before,
            precision_after,
            max_before,
            max_after,
        });
    }
    g.validate()?;
    Ok(report)
}

fn relu6_to_relu(op: &mut Op) {
    match op {
        Op::Conv2d(c) => c.activation = FusedActivation::Relu,
        Op::DepthwiseConv2d(c) => c.activation = FusedActivation::Relu,
        Op::FullyConnected(c) => c.activation = FusedActivation::Relu,
        Op::MaxPool2d(p) | Op::AvgPool2d(p) => p.activation = FusedActivation::Relu,
        Op::Relu6 => *op = Op::Relu,
        _ => {}
    }
}

fn is_weighted(op: &Op) -> bool {
    matches!(op, Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_))
}

/// An f32 constant without quantization parameters.
fn plain_f32(g: &Graph, t: TensorId) -> Option<&[f32]> {
    let t = g.tensor(t)?;
    if t.quant.is_some() {
        return None;
    }
    t.data.as_ref()?.as_f32()
}

/// How a fused activation (or a ReLU-like node) may be crossed: `Ok(name)` if homogeneous,
/// `Err(name)` if a clip (`Ok` for ReLU6 when it will be replaced).
fn activation_kind(a: FusedActivation, relu6_as_relu: bool) -> Result<&'static str, &'static str> {
    match a {
        FusedActivation::None => Ok("none"),
        FusedActivation::Relu => Ok("relu"),
        FusedActivation::Relu6 if relu6_as_relu => Ok("relu6 as relu"),
        FusedActivation::Relu6 => Err("relu6"),
        FusedActivation::ReluN1To1 => Err("relu_n1_to_1"),
    }
}

/// The width of the first layer's output channels: conv `out_c`, depthwise `c · m`, fully
/// connected `out`, from the weight shape.
fn output_channels(op: &Op, shape: &[usize]) -> Option<usize> {
    match op {
        Op::Conv2d(_) | Op::FullyConnected(_) => shape.first().copied(),
        Op::DepthwiseConv2d(_) => shape.last().copied(),
        _ => None,
    }
}

/// The input width of a layer (conv `in_c`, depthwise `c`, fully connected `in`).
fn input_width(op: &Op, shape: &[usize]) -> Option<usize> {
    match op {
        Op::Conv2d(_) | Op::FullyConnected(_) => shape.last().copied(),
        Op::DepthwiseConv2d(d) => shape.last().map(|&c| c / d.depth_multiplier.max(1)),
        _ => None,
    }
}

/// The output channel of weight element `k` (shape `shape`).
fn out_channel_of(op: &Op, shape: &[usize], k: usize) -> usize {
    match op {
        Op::DepthwiseConv2d(_) => k % shape.last().copied().unwrap_or(1).max(1),
        _ => k / shape.iter().skip(1).product::<usize>().max(1),
    }
}

/// The channel (of `channels`) of the activation that weight element `k` multiplies.
fn in_channel_of(op: &Op, shape: &[usize], k: usize, channels: usize) -> usize {
    let last = shape.last().copied().unwrap_or(1).max(1);
    let j = match op {
        Op::DepthwiseConv2d(d) => (k % last) / d.depth_multiplier.max(1),
        _ => k % last,
    };
    j % channels.max(1)
}

/// From weighted node `first`, follows its output through homogeneous single-reader ops to the
/// next weighted layer.
fn walk(g: &Graph, first: usize, relu6_as_relu: bool) -> Walk {
    let Some(node) = g.nodes.get(first) else { return Walk::None };
    if !is_weighted(&node.op) {
        return Walk::None;
    }
    let (Some(w), Some(mut t)) = (node.input(1), node.output(0)) else { return Walk::None };
    let Some(shape) = g.tensor(w).map(|t| t.shape.as_slice()) else { return Walk::None };
    let Some(channels) = output_channels(&node.op, shape).filter(|&c| c > 0) else { return Walk::None };
    if plain_f32(g, w).is_none() || node.input(2).is_some_and(|b| plain_f32(g, b).is_none_or(|b| b.len() != channels)) {
        return Walk::None;
    }
    let mut relu6 = Vec::new();
    let mut clip = None;
    let act = node.op.activation().unwrap_or(FusedActivation::None);
    let mut through = Vec::new();
    match activation_kind(act, relu6_as_relu) {
        Ok(name) => through.push(name),
        Err(name) => {
            through.push(name);
            clip = Some(name);
        }
    }
    if act == FusedActivation::Relu6 {
        relu6.push(first);
    }
    // At most a few ops between two layers; the bound only guards against cycles in a graph
    // that did not validate.
    for _ in 0..g.nodes.len() {
        let Some(tensor) = g.tensor(t) else { return Walk::None };
        if tensor.quant.is_some() || tensor.shape.last().is_none_or(|&l| l % channels != 0) || g.outputs.contains(&t) {
            return Walk::None;
        }
        let readers = g.consumers(t);
        let [next] = readers.as_slice() else { return Walk::None };
        let n = &g.nodes[*next];
        if n.input(0) != Some(t) || n.inputs.iter().skip(1).any(|i| *i == Some(t)) {
            return Walk::None;
        }
        let step: &'static str = match &n.op {
            op if is_weighted(op) => {
                let Some(w2) = n.input(1) else { return Walk::None };
                let Some(shape2) = g.tensor(w2).map(|t| t.shape.as_slice()) else { return Walk::None };
                if plain_f32(g, w2).is_none() || input_width(op, shape2).is_none_or(|w| w == 0 || w % channels != 0) {
                    return Walk::None;
                }
                if let Some(c) = clip {
                    return Walk::Clipped { second: *next, clip: c };
                }
                return Walk::Pair(Pair {
                    first,
                    second: *next,
                    channels,
                    through,
                    relu6,
                    scales: vec![1.0; channels],
                });
            }
            Op::MaxPool2d(p) | Op::AvgPool2d(p) => {
                match activation_kind(p.activation, relu6_as_relu) {
                    Ok(_) => {}
                    Err(name) => clip = clip.or(Some(name)),
                }
                if p.activation == FusedActivation::Relu6 {
                    relu6.push(*next);
                }
                n.op.name()
            }
            Op::Relu6 => {
                if relu6_as_relu {
                    relu6.push(*next);
                } else {
                    clip = clip.or(Some("relu6"));
                }
                "Relu6"
            }
            Op::Relu | Op::LeakyRelu { .. } | Op::Prelu => n.op.name(),
            Op::Pad { paddings } => {
                let zero = n.input(1).is_none_or(|c| plain_f32(g, c).is_some_and(|v| v.iter().all(|&x| x == 0.0)));
                if !zero || paddings.last().is_none_or(|p| *p != [0, 0]) {
                    return Walk::None;
                }
                "Pad"
            }
            Op::Mean { axes, .. } => {
                if axes.contains(&tensor.shape.len().saturating_sub(1)) {
                    return Walk::None;
                }
                "Mean"
            }
            Op::Reshape { .. } | Op::Squeeze { .. } => n.op.name(),
            // Clips other than ReLU6 (no homogeneous replacement), adds, concatenations,
            // transposes, anything else.
            _ => return Walk::None,
        };
        through.push(step);
        let Some(out) = n.output(0) else { return Walk::None };
        t = out;
    }
    Walk::None
}

/// Makes the weight and bias of `node` its own: a tensor another node (or slot) reads, or a
/// graph output, is copied.
fn own_constants(g: &mut Graph, node: usize) -> Result<(), ConvertError> {
    for slot in [1, 2] {
        let Some(t) = g.nodes.get(node).and_then(|n| n.input(slot)) else { continue };
        let reads: usize = g.nodes.iter().map(|n| n.inputs.iter().filter(|i| **i == Some(t)).count()).sum();
        if reads <= 1 && !g.outputs.contains(&t) {
            continue;
        }
        let Some(src) = g.tensor(t) else { continue };
        let copy = Tensor { name: format!("{}/cle", src.name), ..src.clone() };
        let id = g.add_tensor(copy)?;
        if let Some(s) = g.nodes.get_mut(node).and_then(|n| n.inputs.get_mut(slot)) {
            *s = Some(id);
        }
    }
    Ok(())
}

/// The f32 data of constant `t`, for modification.
fn data_mut(g: &mut Graph, t: TensorId) -> Option<&mut Vec<f32>> {
    match g.tensor_mut(t)?.data.as_mut()? {
        ConstData::F32(v) => Some(v),
        _ => None,
    }
}

/// Per output channel (`out = true`) or input channel of the pair's `channels`: the largest
/// `|w|` of node `n`'s weights.
fn channel_ranges(g: &Graph, n: usize, out: bool, channels: usize) -> Option<Vec<f64>> {
    let node = g.nodes.get(n)?;
    let w = node.input(1)?;
    let shape = &g.tensor(w)?.shape;
    let data = plain_f32(g, w)?;
    let mut r = vec![0f64; channels];
    for (k, &v) in data.iter().enumerate() {
        let c = if out { out_channel_of(&node.op, shape, k) } else { in_channel_of(&node.op, shape, k, channels) };
        if let Some(slot) = r.get_mut(c) {
            *slot = slot.max(f64::from(v.abs()));
        }
    }
    Some(r)
}

/// One equalization step of pair `p`; returns the largest `|s_i − 1|`.
fn equalize_pair(g: &mut Graph, p: &mut Pair) -> f64 {
    let (Some(r1), Some(r2)) =
        (channel_ranges(g, p.first, true, p.channels), channel_ranges(g, p.second, false, p.channels))
    else {
        return 0.0;
    };
    let s: Vec<f64> = r1
        .iter()
        .zip(&r2)
        .map(|(&a, &b)| {
            // A zero channel on either side (a dead filter, an unused input) keeps its scale.
            let s = if a > 0.0 && b > 0.0 { libm::sqrt(a / b) } else { 1.0 };
            if s.is_finite() && s > 0.0 { s } else { 1.0 }
        })
        .collect();
    let worst = s.iter().fold(0f64, |m, &v| m.max((v - 1.0).abs()));
    if worst == 0.0 {
        return 0.0;
    }
    scale_first(g, p.first, &s);
    scale_second(g, p.second, &s, p.channels);
    for (acc, v) in p.scales.iter_mut().zip(&s) {
        *acc *= v;
    }
    worst
}

/// `W1[i] /= s_i`, `b1[i] /= s_i`.
fn scale_first(g: &mut Graph, n: usize, s: &[f64]) {
    let Some(node) = g.nodes.get(n) else { return };
    let (op, w, b) = (node.op.clone(), node.input(1), node.input(2));
    let Some(w) = w else { return };
    let shape = g.tensor(w).map(|t| t.shape.clone()).unwrap_or_default();
    if let Some(data) = data_mut(g, w) {
        for (k, v) in data.iter_mut().enumerate() {
            if let Some(&si) = s.get(out_channel_of(&op, &shape, k)) {
                *v = (f64::from(*v) / si) as f32;
            }
        }
    }
    if let Some(data) = b.and_then(|b| data_mut(g, b)) {
        for (v, &si) in data.iter_mut().zip(s) {
            *v = (f64::from(*v) / si) as f32;
        }
    }
}

/// `W2[:, i] *= s_i`.
fn scale_second(g: &mut Graph, n: usize, s: &[f64], channels: usize) {
    let Some(node) = g.nodes.get(n) else { return };
    let op = node.op.clone();
    let Some(w) = node.input(1) else { return };
    let shape = g.tensor(w).map(|t| t.shape.clone()).unwrap_or_default();
    if let Some(data) = data_mut(g, w) {
        for (k, v) in data.iter_mut().enumerate() {
            if let Some(&si) = s.get(in_channel_of(&op, &shape, k, channels)) {
                *v = (f64::from(*v) * si) as f32;
            }
        }
    }
}

/// The paper's per-tensor precision of node `n`'s weights (mean over output channels of
/// `range_i / max range`) and the largest `|w|`.
fn precision(g: &Graph, n: usize) -> (f32, f32) {
    let Some(node) = g.nodes.get(n) else { return (0.0, 0.0) };
    let Some(shape) = node.input(1).and_then(|w| g.tensor(w)).map(|t| t.shape.as_slice()) else { return (0.0, 0.0) };
    let channels = output_channels(&node.op, shape).unwrap_or(0);
    let Some(r) = channel_ranges(g, n, true, channels) else { return (0.0, 0.0) };
    let max = r.iter().fold(0f64, |m, &v| m.max(v));
    if max == 0.0 || r.is_empty() {
        return (0.0, 0.0);
    }
    ((r.iter().sum::<f64>() / (r.len() as f64 * max)) as f32, max as f32)
}
