//! The protobuf writer of the QDQ export: encodes the [`pb::ModelProto`] that
//! [`export_qdq`](super::export_qdq) builds, byte for byte as prost's `encode_to_vec` does, but
//! only the fields the exporter sets.
//!
//! prost's derived encoders cover every message reachable from `ModelProto` (functions,
//! training info, sparse tensors, sharding specs...), about 28 KB of the npm package's `.wasm`;
//! the exporter fills a dozen fields of eight messages, which this writer encodes in a few
//! hundred bytes of code. Fields are written in tag order, as prost writes them; a `Some` optional
//! field is written even when it holds the default value (proto2 presence), a `None` one never.
//! The unit test below compares the bytes with prost's for every message shape the exporter
//! writes, and `tests/host/qdq.rs` compares whole exports with committed files.
//!
//! Fields the exporter never sets are not written: a new exporter field must be added here too
//! (the test catches it when its model sets it).

use alloc::vec::Vec;

use super::pb;

/// Wire type of varint fields (`int32`, `int64`, enums).
const VARINT: u32 = 0;
/// Wire type of length-delimited fields (strings, bytes, messages).
const LEN: u32 = 2;
/// Wire type of 32-bit fields (`float`).
const FIXED32: u32 = 5;

/// Encodes `model` as protobuf bytes (the fields the QDQ exporter sets; see the module docs).
pub(crate) fn encode_model(model: &pb::ModelProto) -> Vec<u8> {
    let mut w = Writer::default();
    w.model(model);
    w.buf
}

/// A protobuf byte buffer being appended to.
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from((field << 3) | wire));
    }

    /// An `int64`, `int32` or enum field (negative values sign-extended to 10 bytes, as protobuf
    /// specifies for both widths).
    fn int(&mut self, field: u32, v: i64) {
        self.key(field, VARINT);
        self.varint(v as u64);
    }

    fn opt_int(&mut self, field: u32, v: Option<i64>) {
        if let Some(v) = v {
            self.int(field, v);
        }
    }

    fn opt_i32(&mut self, field: u32, v: Option<i32>) {
        self.opt_int(field, v.map(i64::from));
    }

    fn opt_float(&mut self, field: u32, v: Option<f32>) {
        if let Some(v) = v {
            self.key(field, FIXED32);
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
    }

    fn bytes(&mut self, field: u32, v: &[u8]) {
        self.key(field, LEN);
        self.varint(v.len() as u64);
        self.buf.extend_from_slice(v);
    }

    fn opt_bytes(&mut self, field: u32, v: Option<&[u8]>) {
        if let Some(v) = v {
            self.bytes(field, v);
        }
    }

    fn opt_str(&mut self, field: u32, v: Option<&alloc::string::String>) {
        self.opt_bytes(field, v.map(|s| s.as_bytes()));
    }

    /// A nested message: encoded by `body` into its own buffer, then written with its length.
    fn message(&mut self, field: u32, body: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        body(&mut inner);
        self.bytes(field, &inner.buf);
    }

    fn model(&mut self, m: &pb::ModelProto) {
        self.opt_int(1, m.ir_version);
        self.opt_str(2, m.producer_name.as_ref());
        self.opt_str(3, m.producer_version.as_ref());
        if let Some(g) = &m.graph {
            self.message(7, |w| w.graph(g));
        }
        for o in &m.opset_import {
            self.message(8, |w| {
                w.opt_str(1, o.domain.as_ref());
                w.opt_int(2, o.version);
            });
        }
    }

    fn graph(&mut self, g: &pb::GraphProto) {
        for n in &g.node {
            self.message(1, |w| w.node(n));
        }
        self.opt_str(2, g.name.as_ref());
        for t in &g.initializer {
            self.message(5, |w| w.tensor(t));
        }
        for v in &g.input {
            self.message(11, |w| w.value_info(v));
        }
        for v in &g.output {
            self.message(12, |w| w.value_info(v));
        }
    }

    fn node(&mut self, n: &pb::NodeProto) {
        for s in &n.input {
            self.bytes(1, s.as_bytes());
        }
        for s in &n.output {
            self.bytes(2, s.as_bytes());
        }
        self.opt_str(3, n.name.as_ref());
        self.opt_str(4, n.op_type.as_ref());
        for a in &n.attribute {
            self.message(5, |w| w.attribute(a));
        }
        self.opt_str(7, n.domain.as_ref());
    }

    fn attribute(&mut self, a: &pb::AttributeProto) {
        self.opt_str(1, a.name.as_ref());
        self.opt_float(2, a.f);
        self.opt_int(3, a.i);
        self.opt_bytes(4, a.s.as_deref());
        for &v in &a.ints {
            self.int(8, v);
        }
        self.opt_i32(20, a.r#type);
    }

    fn value_info(&mut self, v: &pb::ValueInfoProto) {
        self.opt_str(1, v.name.as_ref());
        if let Some(t) = &v.r#type {
            self.message(2, |w| {
                if let Some(pb::type_proto::Value::TensorType(t)) = &t.value {
                    w.message(1, |w| {
                        w.opt_i32(1, t.elem_type);
                        if let Some(s) = &t.shape {
                            w.message(2, |w| {
                                for d in &s.dim {
                                    w.message(1, |w| {
                                        if let Some(pb::tensor_shape_proto::dimension::Value::DimValue(v)) = d.value {
                                            w.int(1, v);
                                        }
                                    });
                                }
                            });
                        }
                    });
                }
            });
        }
    }

    fn tensor(&mut self, t: &pb::TensorProto) {
        for &d in &t.dims {
            self.int(1, d);
        }
        self.opt_i32(2, t.data_type);
        self.opt_str(8, t.name.as_ref());
        self.opt_bytes(9, t.raw_data.as_deref());
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::String;
    use alloc::vec;

    use prost::Message;

    use super::*;
    use pb::tensor_shape_proto::{Dimension, dimension::Value as D};

    fn s(v: &str) -> Option<String> {
        Some(String::from(v))
    }

    /// Every message shape the exporter writes, with negative, zero, empty and multi-byte values.
    fn sample() -> pb::ModelProto {
        let attr = |name: &str, t: pb::attribute_proto::AttributeType| pb::AttributeProto {
            name: s(name),
            r#type: Some(t as i32),
            ..Default::default()
        };
        let vi = |name: &str, shape: &[i64]| pb::ValueInfoProto {
            name: s(name),
            r#type: Some(pb::TypeProto {
                value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                    elem_type: Some(1),
                    shape: Some(pb::TensorShapeProto {
                        dim: shape
                            .iter()
                            .map(|&d| Dimension { value: Some(D::DimValue(d)), ..Default::default() })
                            .collect(),
                    }),
                })),
                ..Default::default()
            }),
            ..Default::default()
        };
        use pb::attribute_proto::AttributeType as At;
        pb::ModelProto {
            ir_version: Some(8),
            opset_import: vec![pb::OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
            producer_name: s("microquant"),
            producer_version: s("0.1.0"),
            graph: Some(pb::GraphProto {
                node: vec![
                    pb::NodeProto {
                        input: vec![String::from("x"), String::new(), String::from("w")],
                        output: vec![String::from("y")],
                        name: s("conv"),
                        op_type: s("Conv"),
                        domain: Some(String::new()),
                        attribute: vec![
                            pb::AttributeProto { i: Some(-3), ..attr("axis", At::Int) },
                            pb::AttributeProto { ints: vec![0, -1, 300, i64::MIN], ..attr("pads", At::Ints) },
                            pb::AttributeProto { f: Some(-0.5), ..attr("alpha", At::Float) },
                            pb::AttributeProto { ints: vec![], ..attr("empty", At::Ints) },
                            pb::AttributeProto { s: Some(b"half_pixel".to_vec()), ..attr("mode", At::String) },
                        ],
                        ..Default::default()
                    },
                    pb::NodeProto { op_type: s("Relu"), ..Default::default() },
                ],
                name: s("g"),
                initializer: vec![
                    pb::TensorProto {
                        name: s("w"),
                        dims: vec![2, 1, 0],
                        data_type: Some(3),
                        raw_data: Some(vec![0x80; 200]),
                        ..Default::default()
                    },
                    pb::TensorProto {
                        name: s("scalar"),
                        data_type: Some(1),
                        raw_data: Some(vec![]),
                        ..Default::default()
                    },
                ],
                input: vec![vi("x", &[1, 3, 224, 224])],
                output: vec![vi("y", &[]), vi("z", &[1, 1000])],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn writes_the_bytes_prost_writes() {
        let m = sample();
        assert_eq!(encode_model(&m), m.encode_to_vec());
        assert_eq!(encode_model(&pb::ModelProto::default()), pb::ModelProto::default().encode_to_vec());
        let no_graph = pb::ModelProto { graph: None, ..sample() };
        assert_eq!(encode_model(&no_graph), no_graph.encode_to_vec());
    }
}
