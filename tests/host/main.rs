//! The host integration tests of microquant against golden data from real tools (ONNX Runtime,
//! the ONNX reference evaluator, TFLite, TFLite Micro, PyTorch), one module per file of this
//! folder, all in one test binary: `cargo test -p microquant-tests --test host`, or one module
//! with a filter, e.g. `cargo test -p microquant-tests --test host kernels_fc::`.

mod bad_input;
mod batch_matmul_models;
mod binary_ops;
mod float_exec;
mod fuzz_regressions;
mod golden_format;
mod graph;
mod hybrid;
mod interp_errors;
mod kernels_activation;
mod kernels_batch_matmul;
mod kernels_conv;
mod kernels_depthwise;
mod kernels_elementwise;
mod kernels_elementwise_unary;
mod kernels_fc;
mod kernels_leaky_relu;
mod kernels_movement;
mod kernels_pool;
mod kernels_recurrent;
mod kernels_shape;
mod kernels_softmax;
mod kernels_spatial;
mod kernels_transpose_conv;
mod layer_debug;
mod layer_norm;
mod lstm_interp;
mod lstm_tflite;
mod mlperf;
mod movement_models;
mod onnx_conv1d;
mod onnx_golden;
mod onnx_import;
mod onnx_recurrent;
mod onnx_shapes;
mod peers;
mod peers_common;
mod ptq;
mod qdq;
mod qdq_exact;
mod qdq_layers;
mod qdq_requantize;
mod quant;
mod quant_observers;
mod smoke;
mod spatial_interp;
mod spatial_models;
mod support_matrix;
mod tflite_import;
mod tflite_shapes;
mod transpose_conv;
mod unary_lut;
mod unary_models;
