//! SplitMix64, the deterministic generator shared with `tests/gen/goldenio.py`: model inputs for
//! golden tests are generated from a seed on both sides instead of being stored.
//! No dependencies and no `std`, so the firmware can include this file too.

/// SplitMix64 (Steele, Lea, Flood 2014).
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64-bit output.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fills `out` with int8 values: the top byte of each 64-bit output.
    pub fn fill_i8(&mut self, out: &mut [i8]) {
        for o in out {
            *o = (self.next_u64() >> 56) as u8 as i8;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_the_published_splitmix64_sequence() {
        // First outputs for seed 0, as given by the reference C implementation (Vigna's splitmix64.c).
        let mut r = super::SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
    }
}
