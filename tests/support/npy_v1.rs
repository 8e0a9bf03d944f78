//! Writes `.npy` files (format 1.0) for tests: the one writer of the host tests (`tests/host/`)
//! and the CLI's tests (`cli/tests/`), included by path.

/// An `.npy` file (format 1.0): dtype `descr` (`<f4`, `|i1`...), `shape` as a Python tuple
/// (see [`tuple`]; a test may write a lying one), then `body` as the data.
pub fn npy_v1(descr: &str, shape: &str, body: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // The header, with the 10-byte preamble and its newline, fills whole 64-byte blocks.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&(header.len() as u16).to_le_bytes());
    b.extend_from_slice(header.as_bytes());
    b.extend_from_slice(body);
    b
}

/// `shape` as a Python tuple: `(2,)`, `(1, 8, 8,)`.
pub fn tuple(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("({},)", dims.join(", "))
}
