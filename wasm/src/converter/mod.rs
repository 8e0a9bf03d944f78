//! The converter in JS: `FloatModel` (a float ONNX or TFLite model), `Calibration` (observer
//! statistics, chunked and cancellable, mergeable across workers), quantization into a
//! `QuantizedModel` with its per-layer report, and `HybridModel` (weight-only and dynamic
//! quantization). Every step is `microquant::ptq` / `microquant::compile`: nothing here chooses a
//! number.
//!
//! The files, each using only those above it:
//!
//! | file | job |
//! |---|---|
//! | `control.rs` | progress callback, `AbortSignal`, yields to the event loop, `Promise`s |
//! | `options.rs` | the options objects: observers, quantization mode, rounding, labels |
//! | `metadata.rs` | the `.mq` metadata entries (as the CLI writes them) |
//! | `report.rs` | the per-layer report as a JS object |
//! | `float_graph.rs` | `FloatGraph`: the prepared graph, IO layouts, samples from JS |
//! | `calibration.rs` | `Calibration` (JS class) and the calibration task |
//! | `adaround.rs` | the `adaround` option: AdaRound's steps with progress and abort |
//! | `quantize.rs` | static quantization into a `QuantizedModel`; its report and QDQ export |
//! | `hybrid.rs` | `HybridModel` (JS class): weight-only and dynamic quantization |
//! | `float_model.rs` | `FloatModel` (JS class): the entry points of all of the above |
//! | `inputs.rs` | `modelInputs`: a model's declared inputs (dynamic extents, element types) before loading |

mod adaround;
mod calibration;
mod control;
mod float_graph;
mod float_model;
mod hybrid;
mod inputs;
mod metadata;
mod options;
mod quantize;
mod report;

pub use calibration::Calibration;
pub(crate) use float_graph::{FloatGraph, io_infos, is_quantized};
pub use float_model::FloatModel;
pub use hybrid::HybridModel;
pub use inputs::model_inputs;
pub(crate) use metadata::{crc32, metadata, producer};
pub(crate) use options::onnx_import_options;
