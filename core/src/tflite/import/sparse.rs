//! Sparse constant tensors (a tensor's `sparsity`: `traversal_order`, `block_map` and one
//! `dim_metadata` per traversed dimension, `DENSE` with a size or `SPARSE_CSR` with segments and
//! indices) densified at import, as TFLite's `FormatConverter::SparseToDense` does for the
//! `DENSIFY` operator: the buffer holds the stored values in traversal order; every other
//! element is 0.

use super::*;

/// One traversed dimension.
struct Level {
    dense: bool,
    size: usize,
    segments: Vec<usize>,
    indices: Vec<usize>,
}

/// The values of a `SparseIndexVector` union (int32, uint16 or uint8), each `>= 0`.
fn index_vector(v: Option<fb::SparseIndexVectorRef<'_>>, what: &str) -> Result<Vec<usize>, ConvertError> {
    Ok(match v {
        None => Vec::new(),
        Some(fb::SparseIndexVectorRef::Int32Vector(v)) => {
            let mut out = Vec::new();
            for x in v.values().fb()?.into_iter().flat_map(|v| v.iter()) {
                out.push(usize::try_from(x).map_err(|_| malformed(format!("{what} holds {x}")))?);
            }
            out
        }
        Some(fb::SparseIndexVectorRef::Uint16Vector(v)) => {
            v.values().fb()?.into_iter().flat_map(|v| v.iter()).map(usize::from).collect()
        }
        Some(fb::SparseIndexVectorRef::Uint8Vector(v)) => {
            v.values().fb()?.unwrap_or(&[]).iter().map(|&x| usize::from(x)).collect()
        }
    })
}

struct Densify<'d> {
    levels: Vec<Level>,
    traversal: Vec<usize>,
    block_map: Vec<usize>,
    block_size: Vec<usize>,
    shape: &'d [usize],
    elem: usize,
    src: &'d [u8],
    next: usize,
    dense: Vec<u8>,
}

impl Densify<'_> {
    fn populate(&mut self, indices: &mut [usize], level: usize, prev: usize) -> Result<(), ConvertError> {
        if level == self.levels.len() {
            return self.leaf(indices);
        }
        let (dense, size) = (self.levels[level].dense, self.levels[level].size);
        if dense {
            for i in 0..size {
                indices[level] = i;
                self.populate(indices, level + 1, prev.saturating_mul(size).saturating_add(i))?;
            }
        } else {
            let l = &self.levels[level];
            let (Some(&lo), Some(&hi)) = (l.segments.get(prev), l.segments.get(prev + 1)) else {
                return Err(malformed(format!("sparse dimension {level}: no segment {prev}")));
            };
            for i in lo..hi {
                let idx = *self.levels[level]
                    .indices
                    .get(i)
                    .ok_or_else(|| malformed(format!("sparse dimension {level}: segment end {hi} past its indices")))?;
                indices[level] = idx;
                self.populate(indices, level + 1, i)?;
            }
        }
        Ok(())
    }

    fn leaf(&mut self, indices: &[usize]) -> Result<(), ConvertError> {
        let rank = self.shape.len();
        let mut orig = vec![0usize; rank];
        for (i, &idx) in indices.iter().enumerate() {
            let t = self.traversal[i];
            if t < rank {
                orig[t] = idx;
            } else {
                let b = t - rank;
                let d = self.block_map[b];
                orig[d] = orig[d].saturating_mul(self.block_size[b]).saturating_add(idx);
            }
        }
        let mut flat = 0usize;
        for (a, (&o, &d)) in orig.iter().zip(self.shape).enumerate() {
            if o >= d {
                return Err(malformed(format!("sparse element index {o} on axis {a} is past the extent {d}")));
            }
            flat = flat * d + o;
        }
        let from = self.next * self.elem;
        let value = self
            .src
            .get(from..from + self.elem)
            .ok_or_else(|| malformed(format!("the sparse tensor's data ends after {} values", self.next)))?;
        self.dense[flat * self.elem..(flat + 1) * self.elem].copy_from_slice(value);
        self.next += 1;
        Ok(())
    }
}

/// The dense little-endian bytes of a sparse constant of dense `shape` with `elem`-byte
/// elements, stored as `src`.
pub(super) fn densify(
    sp: &fb::SparsityParametersRef<'_>,
    shape: &[usize],
    elem: usize,
    src: &[u8],
) -> Result<Vec<u8>, ConvertError> {
    let rank = shape.len();
    let to_usize = |v: i32, what: &str| usize::try_from(v).map_err(|_| malformed(format!("{what} holds {v}")));
    let mut traversal = Vec::new();
    for v in sp.traversal_order().fb()?.into_iter().flat_map(|v| v.iter()) {
        traversal.push(to_usize(v, "traversal_order")?);
    }
    let mut block_map = Vec::new();
    for v in sp.block_map().fb()?.into_iter().flat_map(|v| v.iter()) {
        block_map.push(to_usize(v, "block_map")?);
    }
    let n = rank + block_map.len();
    let mut seen = vec![false; n];
    for (i, &t) in traversal.iter().enumerate() {
        // TFLite's converter reads the first `rank` traversed dimensions as the original ones.
        if t >= n || seen[t] || (i < rank) != (t < rank) {
            return Err(err(
                Kind::Unsupported,
                format!("sparse traversal_order {traversal:?} for rank {rank} with {} blocks", block_map.len()),
            ));
        }
        seen[t] = true;
    }
    if traversal.len() != n || block_map.iter().any(|&d| d >= rank) {
        return Err(malformed(format!(
            "sparse traversal_order {traversal:?} / block_map {block_map:?} for rank {rank}"
        )));
    }
    if n > 16 {
        return Err(err(Kind::Unsupported, format!("a sparse tensor with {n} traversed dimensions")));
    }
    let metadata = sp.dim_metadata().fb()?.ok_or_else(|| malformed("a sparse tensor without dim_metadata"))?;
    if metadata.len() != n {
        return Err(malformed(format!("{} dim_metadata for {n} traversed dimensions", metadata.len())));
    }
    let mut levels = Vec::with_capacity(n);
    for (k, m) in metadata.iter().enumerate() {
        let m = m.fb()?;
        let dense = m.format().fb()? == fb::DimensionType::Dense;
        levels.push(Level {
            dense,
            size: to_usize(m.dense_size().fb()?, "dense_size")?,
            segments: if dense { Vec::new() } else { index_vector(m.array_segments().fb()?, "array_segments")? },
            indices: if dense { Vec::new() } else { index_vector(m.array_indices().fb()?, "array_indices")? },
        });
        if !dense && levels[k].segments.is_empty() {
            return Err(malformed(format!("sparse dimension {k} has no array_segments")));
        }
    }
    // Every dense level is visited once per path: their sizes together cannot exceed the
    // element count (else a hostile file could make this loop for ever).
    let dense_product = levels.iter().filter(|l| l.dense).try_fold(1usize, |p, l| p.checked_mul(l.size.max(1)));
    if dense_product.is_none_or(|p| Some(p) > num_elements(shape)) {
        return Err(malformed(format!("sparse dense sizes exceed the shape {shape:?}")));
    }
    // Block sizes: the dense sizes of the block dimensions (after the original ones).
    let block_size: Vec<usize> = (0..block_map.len()).map(|b| levels.get(rank + b).map_or(1, |l| l.size)).collect();
    if block_size.contains(&0) {
        return Err(malformed("a sparse block of size 0"));
    }
    let total =
        num_elements(shape).and_then(|n| n.checked_mul(elem)).ok_or_else(|| malformed("sparse shape overflows"))?;
    let mut d =
        Densify { levels, traversal, block_map, block_size, shape, elem, src, next: 0, dense: vec![0u8; total] };
    let mut indices = vec![0usize; n];
    d.populate(&mut indices, 0, 0)?;
    if d.next * elem != src.len() {
        return Err(malformed(format!(
            "the sparse tensor stores {} values, its metadata reaches {}",
            src.len() / elem.max(1),
            d.next
        )));
    }
    Ok(d.dense)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::boxed::Box;

    fn i32s(v: &[i32]) -> Option<fb::SparseIndexVector> {
        Some(fb::SparseIndexVector::Int32Vector(Box::new(fb::Int32Vector { values: Some(v.to_vec()) })))
    }

    fn u8s(v: &[u8]) -> Option<fb::SparseIndexVector> {
        Some(fb::SparseIndexVector::Uint8Vector(Box::new(fb::Uint8Vector { values: Some(v.to_vec()) })))
    }

    fn dense(size: i32) -> fb::DimensionMetadata {
        fb::DimensionMetadata { format: fb::DimensionType::Dense, dense_size: size, ..Default::default() }
    }

    fn csr(segments: Option<fb::SparseIndexVector>, indices: Option<fb::SparseIndexVector>) -> fb::DimensionMetadata {
        fb::DimensionMetadata {
            format: fb::DimensionType::SparseCsr,
            dense_size: 0,
            array_segments: segments,
            array_indices: indices,
        }
    }

    /// Serializes `sp` and densifies `values` (one byte each) for `shape`.
    fn run(sp: fb::SparsityParameters, shape: &[usize], values: &[u8]) -> Result<Vec<u8>, ConvertError> {
        let mut b = planus::Builder::new();
        let bytes = b.finish(&sp, None).to_vec();
        let r = fb::SparsityParametersRef::read_as_root(&bytes).fb()?;
        densify(&r, shape, 1, values)
    }

    #[test]
    fn csr_rows() -> Result<(), ConvertError> {
        // [[0, 7, 0], [0, 0, 0], [5, 0, 9]]: row 0 holds column 1, row 2 columns 0 and 2.
        let sp = fb::SparsityParameters {
            traversal_order: Some(vec![0, 1]),
            block_map: None,
            dim_metadata: Some(vec![dense(3), csr(u8s(&[0, 1, 1, 3]), u8s(&[1, 0, 2]))]),
        };
        assert_eq!(run(sp, &[3, 3], &[7, 5, 9])?, [0, 7, 0, 0, 0, 0, 5, 0, 9]);
        Ok(())
    }

    #[test]
    fn blocks_of_2x2() -> Result<(), ConvertError> {
        // The 4x4 matrix [[1,0,2,3],[0,4,0,0],[0,0,5,0],[0,0,0,6]] in 2x2 blocks: block rows
        // dense, block columns CSR (row 0: blocks 0 and 1, row 1: block 1; block (1, 0) is all
        // zeros and not stored), each block dense, stored block after block in row-major order
        // (TFLite's format converter test "BlockTestD0S1").
        let sp = fb::SparsityParameters {
            traversal_order: Some(vec![0, 1, 2, 3]),
            block_map: Some(vec![0, 1]),
            dim_metadata: Some(vec![dense(2), csr(i32s(&[0, 2, 3]), i32s(&[0, 1, 1])), dense(2), dense(2)]),
        };
        let stored = [1, 0, 0, 4, 2, 3, 0, 0, 5, 0, 0, 6];
        assert_eq!(run(sp, &[4, 4], &stored)?, [1, 0, 2, 3, 0, 4, 0, 0, 0, 0, 5, 0, 0, 0, 0, 6]);
        Ok(())
    }

    #[test]
    fn bad_metadata_is_an_error() {
        // An index past the extent; too few stored values; a traversal order that is no permutation.
        let bad = |dm: Vec<fb::DimensionMetadata>, order: Vec<i32>, values: &[u8]| {
            let sp = fb::SparsityParameters { traversal_order: Some(order), block_map: None, dim_metadata: Some(dm) };
            run(sp, &[2, 2], values).is_err()
        };
        assert!(bad(vec![dense(2), csr(u8s(&[0, 1, 1]), u8s(&[5]))], vec![0, 1], &[1]));
        assert!(bad(vec![dense(2), csr(u8s(&[0, 1, 2]), u8s(&[0, 1]))], vec![0, 1], &[1]));
        assert!(bad(vec![dense(2), dense(2)], vec![0, 0], &[1, 2, 3, 4]));
        assert!(bad(vec![dense(2), csr(u8s(&[0, 9]), u8s(&[0]))], vec![0, 1], &[1]));
        assert!(bad(vec![dense(1 << 30), dense(2)], vec![0, 1], &[1]));
    }
}
