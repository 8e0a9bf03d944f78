//! On the device: the important rows of the bad-input table (docs/ROBUSTNESS.md) with the small
//! model (tests/golden/models/tiny_m0_int8.tflite, converted by `build.rs`): a model truncated at
//! every length, bit flips (the CRC catches them), wrong magic, a newer format version, an arena
//! one byte too small. Each is a typed error, logged with defmt as the application logs it; none
//! panics.
#![no_std]
#![no_main]

use microquant_firmware as fw;

fw::count_systick_wraps!();

/// RAM for a copy of the model that the tests damage (the model is 6.6 KB).
const COPY_LEN: usize = 7 * 1024;

/// The model in flash, a RAM copy to damage, and the model's arena.
pub struct State {
    model: &'static [u8],
    copy: &'static mut [u8],
    arena: &'static mut [u8],
}

/// The model bytes, copied to RAM (16-byte aligned) so that a test can damage them.
fn fresh(s: &mut State) -> &mut [u8] {
    let n = s.model.len();
    s.copy[..n].copy_from_slice(s.model);
    &mut s.copy[..n]
}

#[defmt_test::tests]
mod tests {
    use super::{COPY_LEN, State, fresh};
    use defmt::{assert, assert_eq};
    use microquant::Error;
    use microquant::interp::Interpreter;
    use microquant::model::Model;
    use microquant_firmware::models::Arena;
    use microquant_firmware::models::tests::{TINY, TINY_ARENA_LEN};

    #[init]
    fn init() -> State {
        let model = match &TINY {
            Ok(m) => m.bytes,
            Err(why) => defmt::panic!("the small model does not fit this board: {=str}", why),
        };
        assert!(model.len() <= COPY_LEN);
        let Some(copy) = cortex_m::singleton!(: Arena<COPY_LEN> = Arena::new()) else { defmt::panic!("copy taken") };
        let Some(arena) = cortex_m::singleton!(: Arena<TINY_ARENA_LEN> = Arena::new()) else {
            defmt::panic!("arena taken")
        };
        State { model, copy: &mut copy.0, arena: &mut arena.0 }
    }

    #[test]
    fn truncated_at_every_length(s: &mut State) {
        let n = s.model.len();
        for len in 0..n {
            let needed = if len < 64 { 64 } else { n as u64 };
            match Model::parse(&s.model[..len]) {
                Err(Error::Truncated { needed: got, actual }) => {
                    assert_eq!((got, actual), (needed, len as u64));
                }
                Err(e) => defmt::panic!("length {=usize}: {}", len, e),
                Ok(_) => defmt::panic!("length {=usize}: accepted", len),
            }
        }
        let e = Model::parse(&s.model[..n / 2]).err();
        defmt::info!("{=usize} truncations refused, e.g. {}", n, e);
    }

    #[test]
    fn bit_flips_are_caught_by_the_crc(s: &mut State) {
        let n = s.model.len();
        let mut flips = 0usize;
        // One bit in every 7th byte past the 64-byte header (a different bit each time).
        for pos in (64..n).step_by(7) {
            let bit = 1u8 << (pos % 8);
            let b = fresh(s);
            b[pos] ^= bit;
            match Model::parse(b) {
                Err(Error::CrcMismatch { stored, computed }) => assert!(stored != computed),
                Err(e) => defmt::panic!("flip at byte {=usize}: {}", pos, e),
                Ok(_) => defmt::panic!("flip at byte {=usize}: accepted", pos),
            }
            flips += 1;
        }
        let b = fresh(s);
        b[n - 1] ^= 0x80;
        let e = Model::parse(b).err();
        defmt::info!("{=usize} bit flips caught, e.g. {}", flips, e);
        assert!(Model::parse(fresh(s)).is_ok());
    }

    #[test]
    fn wrong_magic_and_newer_version(s: &mut State) {
        let b = fresh(s);
        b[..4].copy_from_slice(b"TFL3");
        let e = Model::parse(b).err();
        assert_eq!(e, Some(Error::BadMagic));
        defmt::info!("wrong magic: {}", e);
        let b = fresh(s);
        b[4..6].copy_from_slice(&2u16.to_le_bytes());
        let e = Model::parse(b).err();
        assert_eq!(e, Some(Error::UnsupportedVersion { found: 2, supported: 1 }));
        defmt::info!("newer version: {}", e);
    }

    #[test]
    fn arena_one_byte_too_small(s: &mut State) {
        let needed = TINY_ARENA_LEN;
        let e = Interpreter::new(s.model, &mut s.arena[..needed - 1]).err();
        assert_eq!(e, Some(Error::ArenaTooSmall { needed, available: needed - 1 }));
        defmt::info!("arena one byte too small: {}", e);
        let mut it = match Interpreter::new(s.model, &mut s.arena[..needed]) {
            Ok(it) => it,
            Err(e) => defmt::panic!("the exact arena: {}", e),
        };
        match it.input_i8(0) {
            Ok(x) => x.fill(3),
            Err(e) => defmt::panic!("{}", e),
        }
        assert!(it.invoke().is_ok());
    }
}
