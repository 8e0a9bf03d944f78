//! Shared by `peers.rs` and `qdq.rs` (included with `#[path]`): `.npy` files and the digits data
//! of `tests/golden/peers/` (written by `tests/gen/peers/train_and_compare.py`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use microquant::onnx::Imported;

pub fn peers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join("peers")
}

pub fn qdq_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join("qdq")
}

/// A `.npy` array: shape and data as f32 (from `<f4`) or i64 (from `<i8`, `<i4`).
pub struct Npy {
    pub shape: Vec<usize>,
    pub f32: Vec<f32>,
    pub i64: Vec<i64>,
}

/// Reads a C-order little-endian `.npy` (versions 1 to 3) of float32, int64 or int32.
pub fn read_npy(path: &Path) -> Npy {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&b[..6], b"\x93NUMPY", "{}: not a .npy file", path.display());
    let (hlen, start) = if b[6] == 1 {
        (u16::from_le_bytes([b[8], b[9]]) as usize, 10)
    } else {
        (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12)
    };
    let header = std::str::from_utf8(&b[start..start + hlen]).unwrap();
    assert!(header.contains("'fortran_order': False"), "{}: Fortran order", path.display());
    let descr = header.split("'descr': '").nth(1).and_then(|s| s.split('\'').next()).unwrap();
    let shape_s = header.split("'shape': (").nth(1).and_then(|s| s.split(')').next()).unwrap();
    let shape: Vec<usize> =
        shape_s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    let data = &b[start + hlen..];
    let n: usize = shape.iter().product();
    let mut out = Npy { shape, f32: Vec::new(), i64: Vec::new() };
    match descr {
        "<f4" => out.f32 = data.chunks_exact(4).take(n).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect(),
        "<i8" => out.i64 = data.chunks_exact(8).take(n).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect(),
        "<i4" => {
            out.i64 = data.chunks_exact(4).take(n).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as i64).collect()
        }
        other => panic!("{}: dtype {other}", path.display()),
    }
    assert_eq!(out.f32.len().max(out.i64.len()), n, "{}: truncated", path.display());
    out
}

/// Samples of a batch in the model's layout, converted to the graph's (one input).
pub fn samples(imported: &Imported, x: &Npy) -> Vec<Vec<Vec<f32>>> {
    let io = &imported.inputs[0];
    let per: usize = io.model_shape.iter().product();
    x.f32.chunks_exact(per).map(|s| vec![io.to_graph_layout(s).unwrap()]).collect()
}

pub fn labels(x: &Npy) -> Vec<usize> {
    x.i64.iter().map(|&v| v as usize).collect()
}

pub fn import(path: &Path) -> Imported {
    microquant::onnx::import(&std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap_or_else(|e| panic!("{}: import: {e}", path.display()))
}
