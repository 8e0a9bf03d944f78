//! On the device: the MLPerf Tiny image-classification model (ResNet-8), converted by
//! `build.rs`, gives outputs bit-identical to TFLite Micro on its 20 seeded inputs
//! (`tests/golden/models/`). A board without room for it prints the numbers instead.
#![no_std]
#![no_main]

use microquant_firmware as fw;

fw::count_systick_wraps!();

#[defmt_test::tests]
mod tests {
    use microquant_firmware::models::tests::{IC, IC_ARENA_LEN};
    use microquant_firmware::models::{Arena, check_golden};
    use microquant_firmware::{BOARD, counter};

    #[init]
    fn init() -> &'static mut [u8] {
        let Some(mut cp) = cortex_m::Peripherals::take() else { defmt::panic!("peripherals taken") };
        counter::start(&mut cp.SYST);
        match cortex_m::singleton!(: Arena<IC_ARENA_LEN> = Arena::new()) {
            Some(a) => &mut a.0,
            None => defmt::panic!("arena taken"),
        }
    }

    #[test]
    fn ic_bit_exact_with_tflite_micro(arena: &mut &'static mut [u8]) {
        let m = match &IC {
            Ok(m) => m,
            Err(why) => {
                defmt::warn!("ic is not run on {=str}: {=str}", BOARD, why);
                return;
            }
        };
        match check_golden(m, arena, m.golden.samples) {
            Ok(r) => {
                defmt::info!(
                    "ic on {=str}: {=usize} samples, {=usize} output values bit-identical with TFLite Micro; {=u64} instructions per inference (under -icount shift=0)",
                    BOARD,
                    r.samples,
                    r.values,
                    counter::instructions(r.ticks) / r.samples.max(1) as u64
                );
                defmt::assert_eq!(r.samples, m.golden.samples);
            }
            Err(e) => defmt::panic!("ic on {=str}: {}", BOARD, e),
        }
    }
}
