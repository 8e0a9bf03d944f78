//! AdaRound over a graph: which layers, their float inputs over the calibration samples, their
//! problems optimized, the rounded weights and the errors before and after.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::patches::{Cut, Patches, SplitMix64};
use super::problem::{Group, LayerProblem};
use super::{AdaRoundOptions, AdaRounding, LayerRounding, MAX_GRAM_VALUES, Skipped};
use crate::float::FloatExecutor;
use crate::float::conv::{ConvGeometry, Taps};
use crate::graph::{ConstData, ConvertError, ConvertErrorKind as Kind, Graph, Op, TensorId};
use crate::ptq::QuantizeOptions;
use crate::ptq::quantize::{
    channel_layout, node_weight_bits, quantize_weights_bits, quantize_weights_carried, weight_axis,
};

/// One layer being AdaRounded.
#[derive(Debug, Clone)]
struct Layer {
    node: usize,
    input: TensorId,
    bits: u8,
    /// The float weights and their shape.
    w: Vec<f32>,
    shape: Vec<usize>,
    /// Round-to-nearest integers and the scales (the quantizer's).
    nearest: Vec<i8>,
    scales: Vec<f32>,
    per_channel: bool,
    /// The output-channel axis of the weights.
    axis: usize,
    patches: Patches,
    problem: Option<LayerProblem>,
}

/// AdaRound of a graph's conv, depthwise and fully-connected layers, step by step: the float
/// inputs of the samples ([`add_sample`](Self::add_sample), one sample at a time), then the
/// optimization ([`optimize`](Self::optimize), some iterations at a time), then the rounded
/// weights ([`finish`](Self::finish)). [`super::adaround_source`] runs it all over a
/// [`crate::ptq::SampleSource`]; the npm package runs the steps between yields to the event
/// loop.
#[derive(Debug, Clone)]
pub struct AdaRound<'g> {
    executor: FloatExecutor<'g>,
    options: AdaRoundOptions,
    layers: Vec<Layer>,
    skipped: Vec<Skipped>,
    samples: usize,
    expected: usize,
}

fn weights_of(g: &Graph, node: usize) -> Option<(&[f32], &[usize])> {
    let t = g.tensor(g.nodes.get(node)?.input(1)?)?;
    Some((t.data.as_ref().and_then(ConstData::as_f32)?, t.shape.as_slice()))
}

/// How `op`'s patches are cut from an input of `x_shape`, for weights of `w_shape`.
fn cut_of(op: &Op, x_shape: &[usize], w_shape: &[usize]) -> Result<Cut, &'static str> {
    let conv_geo = |x: &[usize], kh: usize, kw: usize, stride: [usize; 2], dilation: [usize; 2], padding| {
        let &[n, h, w, c] = x else { return Err("the input is not [n, h, w, c]") };
        let geo = ConvGeometry { input: [n, h, w, c], kernel: [kh, kw], stride, dilation, padding };
        Taps::new(&geo).map(|t| (t, n, h * w, c)).map_err(|_| "the window does not fit the input")
    };
    match op {
        Op::FullyConnected(_) => match w_shape {
            &[_, k] if k > 0 => Ok(Cut::Rows { k }),
            _ => Err("the weights are not [out, in]"),
        },
        Op::Conv2d(c) => {
            let &[_, kh, kw, ic] = w_shape else { return Err("the weights are not [oc, kh, kw, ic]") };
            let (taps, images, image, channels) =
                conv_geo(x_shape, kh, kw, [c.stride_h, c.stride_w], [c.dilation_h, c.dilation_w], c.padding)?;
            if channels != ic {
                return Err("grouped convolution");
            }
            Ok(Cut::Conv { taps, count: kh * kw, images, image, channels })
        }
        Op::DepthwiseConv2d(c) => {
            let &[1, kh, kw, oc] = w_shape else { return Err("the weights are not [1, kh, kw, c·m]") };
            let (taps, images, image, channels) =
                conv_geo(x_shape, kh, kw, [c.stride_h, c.stride_w], [c.dilation_h, c.dilation_w], c.padding)?;
            if channels * c.depth_multiplier != oc {
                return Err("the depth multiplier does not match the weights");
            }
            Ok(Cut::Depthwise { taps, count: kh * kw, images, image, channels })
        }
        Op::TransposeConv2d(_) => Err("transposed convolution (not supported by AdaRound here)"),
        _ => Err("no weights"),
    }
}

impl<'g> AdaRound<'g> {
    /// AdaRound of the conv, depthwise and fully-connected layers of float graph `graph` (the
    /// prepared graph that is calibrated), with the weight bits, layout and carried scales of
    /// `quantize` (the same scales [`crate::ptq::quantize`] chooses), over `samples` samples.
    /// Layers it cannot take are listed in [`AdaRounding::skipped`] and keep round-to-nearest:
    /// transposed convolutions, grouped convolutions, layers whose weights a QDQ model carries,
    /// layers with more than [`MAX_GRAM_VALUES`] Gram values.
    ///
    /// # Errors
    /// The errors of [`FloatExecutor::new`] and of the weight-bit options (as
    /// [`crate::ptq::quantize`]'s); `InvalidGraph` for an option out of range.
    pub fn new(
        graph: &'g Graph,
        quantize: &QuantizeOptions,
        options: &AdaRoundOptions,
        samples: usize,
    ) -> Result<Self, ConvertError> {
        options.check()?;
        let executor = FloatExecutor::new(graph)?;
        let bits = node_weight_bits(graph, quantize)?;
        let mut layers = Vec::new();
        let mut skipped = Vec::new();
        for (node, n) in graph.nodes.iter().enumerate() {
            let b = bits.get(node).copied().unwrap_or(0);
            if b == 0 {
                continue;
            }
            let skip = |reason: String| Skipped { node, name: n.name.clone(), reason };
            let (Some(x), Some((w, shape))) = (n.input(0), weights_of(graph, node)) else {
                skipped.push(skip(String::from("the weights are not f32 constants")));
                continue;
            };
            let wt = n.input(1).and_then(|t| graph.tensor(t));
            let carried = quantize.use_carried
                && b == 8
                && wt.and_then(|t| t.quant.as_ref()).is_some_and(|q| quantize_weights_carried(w, shape, q).is_some());
            if carried {
                skipped.push(skip(String::from("the model carries its quantized weights")));
                continue;
            }
            let x_shape = graph.tensor(x).map(|t| t.shape.clone()).unwrap_or_default();
            let cut = match cut_of(&n.op, &x_shape, shape) {
                Ok(c) => c,
                Err(why) => {
                    skipped.push(skip(String::from(why)));
                    continue;
                }
            };
            if Patches::gram_len(&cut) > MAX_GRAM_VALUES {
                skipped.push(skip(format!("{} inputs per output: the Gram matrix is too large", cut.k())));
                continue;
            }
            let axis = weight_axis(&n.op);
            let (nearest, scales) = quantize_weights_bits(w, shape, quantize.per_channel.then_some(axis), b);
            let x_len = x_shape.iter().product::<usize>();
            // One generator per layer, seeded from the seed and the node: a layer's patches do
            // not depend on the other layers.
            let mut rng = SplitMix64::new(options.seed ^ (node as u64).wrapping_mul(0xd1b5_4a32_d192_ed03));
            let patches = Patches::new(cut, x_len, samples, options.patches, &mut rng);
            layers.push(Layer {
                node,
                input: x,
                bits: b,
                w: w.to_vec(),
                shape: shape.to_vec(),
                nearest,
                scales,
                per_channel: quantize.per_channel,
                axis,
                patches,
                problem: None,
            });
        }
        Ok(Self { executor, options: options.clone(), layers, skipped, samples: 0, expected: samples })
    }

    /// The layers being AdaRounded (node indices).
    pub fn layers(&self) -> Vec<usize> {
        self.layers.iter().map(|l| l.node).collect()
    }

    /// Runs the next sample (one slice per graph input) through the float graph and adds the
    /// chosen patches of each layer's input.
    ///
    /// # Errors
    /// The executor's errors; `InvalidGraph` past the announced number of samples or once the
    /// optimization started.
    pub fn add_sample(&mut self, inputs: &[&[f32]]) -> Result<(), ConvertError> {
        if self.samples >= self.expected || self.layers.iter().any(|l| l.problem.is_some()) {
            return Err(ConvertError::new(
                Kind::InvalidGraph,
                format!("adaround: a sample past the {} announced (or after the optimization started)", self.expected),
            ));
        }
        let sample = self.samples;
        let layers = &mut self.layers;
        self.executor.run_observed(inputs, |t, v| {
            for l in layers.iter_mut().filter(|l| l.input == t) {
                l.patches.add(sample, v)?;
            }
            Ok(())
        })?;
        self.samples += 1;
        Ok(())
    }

    /// Iterations in all (layers × iterations).
    pub fn total_iterations(&self) -> usize {
        self.layers.len() * self.options.iterations
    }

    /// Builds each layer's problem from its patches (once, after the last sample).
    fn start(&mut self) -> Result<(), ConvertError> {
        let (iterations, lr) = (self.options.iterations, self.options.learning_rate);
        for l in &mut self.layers {
            if l.problem.is_some() {
                continue;
            }
            let grams = l.patches.take_grams();
            let qmax = if l.bits == 4 { 7 } else { 127 };
            let k = l.patches.cut().k();
            let (channels, inner) = channel_layout(&l.shape, l.per_channel.then_some(l.axis));
            let scale_of = |e: usize| l.scales.get((e / inner) % channels).copied().unwrap_or(1.0);
            let mut groups = Vec::with_capacity(grams.len());
            if grams.len() == 1 {
                // Conv and fully connected: row c is elements c·k .. (c + 1)·k.
                let rows = l.w.len() / k.max(1);
                let scale = (0..rows).map(|r| scale_of(r * k)).collect();
                let elements = (0..l.w.len()).collect();
                let gram = grams.into_iter().next().unwrap_or_default();
                groups.push(Group::new(k, gram, l.w.clone(), scale, elements, qmax, lr)?);
            } else {
                // Depthwise `[1, kh, kw, c·m]`: input channel c's rows are outputs c·m .. c·m + m,
                // row o's weights elements t·oc + o.
                let oc = l.shape.last().copied().unwrap_or(1).max(1);
                let m = oc / grams.len().max(1);
                for (c, gram) in grams.into_iter().enumerate() {
                    let outs = c * m..(c + 1) * m;
                    let elements: Vec<usize> = outs.clone().flat_map(|o| (0..k).map(move |t| t * oc + o)).collect();
                    let w = elements.iter().map(|&e| l.w[e]).collect();
                    let scale = outs.map(scale_of).collect();
                    groups.push(Group::new(k, gram, w, scale, elements, qmax, lr)?);
                }
            }
            l.problem = Some(LayerProblem::new(groups, iterations));
        }
        Ok(())
    }

    /// Runs up to `iterations` more optimization steps, layer after layer (the first call ends
    /// the sample collection); returns how many ran (0 when all have).
    ///
    /// # Errors
    /// `InvalidGraph` if fewer samples were added than announced.
    pub fn optimize(&mut self, iterations: usize) -> Result<usize, ConvertError> {
        self.check_samples()?;
        self.start()?;
        let mut ran = 0;
        for l in &mut self.layers {
            if let Some(p) = l.problem.as_mut().filter(|p| !p.finished()) {
                ran += p.run(iterations - ran)?;
                if ran == iterations {
                    break;
                }
            }
        }
        Ok(ran)
    }

    /// Runs every remaining step, the layers side by side on the converter's threads (each
    /// layer's steps are its own: the same results with any number of threads), calling
    /// `progress(done, total)` in iterations after each round of `chunk` steps per layer.
    ///
    /// # Errors
    /// As [`optimize`](Self::optimize).
    pub fn optimize_all(&mut self, chunk: usize, progress: &mut dyn FnMut(usize, usize)) -> Result<(), ConvertError> {
        self.check_samples()?;
        self.start()?;
        let total = self.total_iterations();
        let chunk = chunk.max(1);
        loop {
            let problems: Vec<&mut LayerProblem> =
                self.layers.iter_mut().filter_map(|l| l.problem.as_mut()).filter(|p| !p.finished()).collect();
            if problems.is_empty() {
                return Ok(());
            }
            #[cfg(feature = "std")]
            let results = crate::parallel::map_split(problems, crate::parallel::max_threads(), |p| p.run(chunk));
            #[cfg(not(feature = "std"))]
            let results: Vec<Result<usize, ConvertError>> = problems.into_iter().map(|p| p.run(chunk)).collect();
            for r in results {
                r?;
            }
            let done = self.layers.iter().filter_map(|l| l.problem.as_ref()).map(|p| p.done).sum();
            progress(done, total);
        }
    }

    fn check_samples(&self) -> Result<(), ConvertError> {
        if self.samples != self.expected {
            return Err(ConvertError::new(
                Kind::InvalidGraph,
                format!("adaround: {} samples added, {} announced", self.samples, self.expected),
            ));
        }
        Ok(())
    }

    /// The rounded weights of every layer and their reconstruction errors (the steps not run
    /// yet are run first). A layer whose AdaRounded weights reconstruct its output worse than
    /// round-to-nearest keeps round-to-nearest ([`LayerRounding::kept_nearest`]).
    ///
    /// # Errors
    /// As [`optimize`](Self::optimize).
    pub fn finish(mut self) -> Result<AdaRounding, ConvertError> {
        self.optimize_all(usize::MAX, &mut |_, _| {})?;
        let graph = self.executor.graph();
        let mut layers = Vec::with_capacity(self.layers.len());
        for l in &self.layers {
            let Some(p) = &l.problem else { continue };
            let nearest: Vec<i32> = l.nearest.iter().map(|&q| i32::from(q)).collect();
            let ada = p.scatter(l.w.len(), Group::rounded);
            let (signal, before, after) = (p.signal()?, p.error(&nearest)?, p.error(&ada)?);
            let kept_nearest = after > before;
            let q: Vec<i8> = if kept_nearest { l.nearest.clone() } else { ada.iter().map(|&v| v as i8).collect() };
            let flipped = q.iter().zip(&l.nearest).filter(|(a, b)| a != b).count();
            layers.push(LayerRounding {
                node: l.node,
                name: graph.nodes.get(l.node).map(|n| n.name.clone()).unwrap_or_default(),
                bits: l.bits,
                per_channel: l.per_channel,
                patches: l.patches.count(),
                signal,
                error_nearest: before,
                error_adaround: if kept_nearest { before } else { after },
                kept_nearest,
                flipped,
                weights: q,
                scales: l.scales.clone(),
            });
        }
        Ok(AdaRounding { options: self.options, layers, skipped: self.skipped })
    }
}
