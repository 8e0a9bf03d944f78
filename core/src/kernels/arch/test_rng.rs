//! The property tests' random data.
extern crate std;

/// SplitMix64, for the property tests' data.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(crate) fn bytes(&mut self, n: usize) -> std::vec::Vec<i8> {
        (0..n).map(|_| self.next() as i8).collect()
    }
}
