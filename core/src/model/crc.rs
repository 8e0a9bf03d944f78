//! CRC-32/ISO-HDLC (the zlib and PNG CRC: reflected polynomial `0xEDB88320`, initial value and
//! final XOR `0xFFFF_FFFF`), the check value of `.mq` files.
//!
//! Slice-by-4 (Intel's "slicing-by-4"): four 256-entry tables (4 KiB, a `static` in flash) fold
//! one 32-bit word per step, four table loads instead of four dependent byte steps. On the
//! Cortex-M4F it takes about 3.3 instructions per byte against about 7.4 for the byte-wise
//! table (1 KiB) of the `crc` crate it replaces, which matters at boot, where a model's CRC is
//! the one check left for an embedded model (see `docs/FORMAT.md`, "Validation on load").
//! Slice-by-8 would save about 0.1 instruction per byte for 4 KiB more flash.

/// The four tables: `TABLES[0]` is the byte-wise table, `TABLES[k][b]` the CRC of byte `b`
/// followed by `k` zero bytes.
static TABLES: [[u32; 256]; 4] = tables();

const fn tables() -> [[u32; 256]; 4] {
    let mut t = [[0u32; 256]; 4];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 4 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

/// A running CRC-32: [`update`](Self::update) with the bytes in order, then
/// [`finish`](Self::finish).
#[derive(Clone, Copy, Debug)]
pub struct Crc32(u32);

impl Default for Crc32 {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc32 {
    /// The CRC of no bytes yet.
    pub const fn new() -> Self {
        Self(0xFFFF_FFFF)
    }

    /// Folds `bytes` in.
    pub fn update(&mut self, bytes: &[u8]) {
        let t = &TABLES;
        let mut c = self.0;
        // Bytes up to a 4-byte boundary one at a time, then whole words (a model's buffer is
        // 4-aligned, so its words are read with aligned loads, also on the Cortex-M0).
        let (head, words, tail) = bytemuck::pod_align_to::<u8, u32>(bytes);
        for &b in head {
            c = (c >> 8) ^ t[0][((c ^ b as u32) & 0xff) as usize];
        }
        let step = |c: u32, w: u32| {
            let x = c ^ u32::from_le(w);
            t[3][(x & 0xff) as usize]
                ^ t[2][((x >> 8) & 0xff) as usize]
                ^ t[1][((x >> 16) & 0xff) as usize]
                ^ t[0][(x >> 24) as usize]
        };
        let mut pairs = words.chunks_exact(2);
        for p in &mut pairs {
            if let &[a, b] = p {
                c = step(step(c, a), b);
            }
        }
        for &w in pairs.remainder() {
            c = step(c, w);
        }
        for &b in tail {
            c = (c >> 8) ^ t[0][((c ^ b as u32) & 0xff) as usize];
        }
        self.0 = c;
    }

    /// The CRC of the bytes folded in.
    pub const fn finish(self) -> u32 {
        !self.0
    }
}

/// CRC-32/ISO-HDLC of `bytes` (as zlib's `crc32`).
///
/// ```
/// assert_eq!(microquant::model::crc32(b"123456789"), 0xCBF4_3926);
/// ```
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut c = Crc32::new();
    c.update(bytes);
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFERENCE: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

    #[test]
    fn check_values() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b"The quick brown fox jumps over the lazy dog"), 0x414F_A339);
    }

    /// Every length 0..300 at every start offset 0..8 (so every head/word/tail split), and
    /// split updates, against the `crc` crate's byte-wise CRC.
    #[test]
    fn matches_the_crc_crate() {
        let data: [u8; 320] = core::array::from_fn(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_right(13) as u8);
        for start in 0..8 {
            for len in 0..300 {
                let b = &data[start..start + len];
                assert_eq!(crc32(b), REFERENCE.checksum(b), "start {start} len {len}");
                let mut c = Crc32::new();
                let (x, y) = b.split_at(len / 3);
                c.update(x);
                c.update(y);
                assert_eq!(c.finish(), REFERENCE.checksum(b), "split, start {start} len {len}");
            }
        }
    }
}
