//! The compiler: a fully quantized [`Graph`] (from the TFLite importer or the PTQ converter)
//! becomes `.mq` bytes. Every op is lowered to its kernel's prepared parameters (multipliers,
//! shifts, lookup tables, clamps, resolved padding), computed here once with the kernels' own
//! prepare functions, and every activation gets its arena offset from the planner.

mod lower;
mod plan;
mod plan_groups;
mod plan_in_place;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::graph::{ConvertError, ConvertErrorKind, Graph};
use crate::kernels::Rounding;
use crate::model::ModelBuilder;

/// Options of [`compile`].
#[derive(Debug, Clone, Default)]
pub struct CompileOptions {
    /// [`Rounding::Double`] (default): bit-exact with TFLite Micro. [`Rounding::Single`]: with
    /// the TFLite interpreter's reference kernels.
    pub rounding: Rounding,
    /// Metadata entries added to the model (producer, source hash, calibration summary...).
    pub metadata: Vec<(String, String)>,
    /// The kernels the model will run on: the planner weighs what running a convolution by
    /// chunks of rows (in place) costs them. The outputs are the same on every target.
    pub kernels: KernelFamily,
}

/// The family of fast kernels a compiled model is planned for (what a device's build of
/// microquant runs: `kernels::arch`). Only the cost of in-place convolutions by chunks of rows
/// depends on it: each chunk is one more kernel call, and what a call costs before its first
/// output differs between families.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KernelFamily {
    /// The Arm DSP kernels (Cortex-M4/M7/M33), and the portable and wasm ones: little work per
    /// call, so chunks cost only the 4-pixel tiles they split and the rows a 3x3 depthwise
    /// layer widens again. The default.
    #[default]
    ArmDsp,
    /// The Helium (MVE) kernels (Cortex-M55/M85): each call zeroes its tables and folds the
    /// input offset into every filter's bias (convolutions), gathers every channel into a
    /// padded plane (depthwise), so chunks run only where their extra calls cost little.
    Helium,
}

/// A compiled model and what the compiler learned about it.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The `.mq` bytes.
    pub bytes: Vec<u8>,
    /// Arena bytes (activations and scratch).
    pub arena_len: usize,
    /// The arena a greedy-by-size planner (TFLite Micro's) would need for the same buffers.
    pub arena_len_greedy_by_size: usize,
    /// The planning strategy that won.
    pub plan_strategy: &'static str,
}

pub(crate) fn err(kind: ConvertErrorKind, msg: impl Into<String>) -> ConvertError {
    ConvertError::new(kind, msg)
}

/// Compiles a quantized graph into a `.mq` model.
///
/// # Errors
/// A [`ConvertError`] naming the node (index, op, name) for ops or quantization schemes the
/// runtime cannot execute (float tensors, asymmetric weights, unsupported dtypes), and for
/// parameters a kernel's prepare step rejects.
pub fn compile(graph: &Graph, options: &CompileOptions) -> Result<Compiled, ConvertError> {
    graph.validate()?;
    let mut b = ModelBuilder::new();
    b.set_single_rounding(options.rounding == Rounding::Single);
    let lowered = lower::lower(graph, options.rounding, &mut b)?;
    let plan = plan::plan(graph, &lowered, &mut b, options.kernels)?;
    b.add_meta("format", "microquant .mq 1.0");
    b.add_meta(
        "rounding",
        if options.rounding == Rounding::Single { "single (TFLite interpreter)" } else { "double (TFLite Micro)" },
    );
    if !graph.metadata.producer.is_empty() {
        b.add_meta("source_producer", &graph.metadata.producer);
    }
    if !graph.metadata.source.is_empty() {
        b.add_meta("source", &graph.metadata.source);
    }
    for (k, v) in &options.metadata {
        b.add_meta(k, v);
    }
    b.add_meta("arena", &format!("{} bytes ({})", plan.arena_len, plan.strategy));
    let bytes =
        b.finish().map_err(|e| err(ConvertErrorKind::Unsupported, format!("cannot serialize the model: {e}")))?;
    Ok(Compiled {
        bytes,
        arena_len: plan.arena_len,
        arena_len_greedy_by_size: plan.greedy_by_size,
        plan_strategy: plan.strategy,
    })
}
