//! On the device: the MLPerf Tiny anomaly-detection model (FC autoencoder), converted by
//! `build.rs`, gives outputs bit-identical to TFLite Micro on its 20 seeded inputs
//! (`tests/golden/models/`). A board without room for it prints the numbers instead.
#![no_std]
#![no_main]

use microquant_firmware as fw;

fw::count_systick_wraps!();

#[defmt_test::tests]
mod tests {
    use microquant_firmware::models::tests::{AD, AD_ARENA_LEN};
    use microquant_firmware::models::{Arena, check_golden};
    use microquant_firmware::{BOARD, counter};

    #[init]
    fn init() -> &'static mut [u8] {
        let Some(mut cp) = cortex_m::Peripherals::take() else { defmt::panic!("peripherals taken") };
        counter::start(&mut cp.SYST);
        match cortex_m::singleton!(: Arena<AD_ARENA_LEN> = Arena::new()) {
            Some(a) => &mut a.0,
            None => defmt::panic!("arena taken"),
        }
    }

    #[test]
    fn ad_bit_exact_with_tflite_micro(arena: &mut &'static mut [u8]) {
        let m = match &AD {
            Ok(m) => m,
            Err(why) => {
                defmt::warn!("ad is not run on {=str}: {=str}", BOARD, why);
                return;
            }
        };
        match check_golden(m, arena, m.golden.samples) {
            Ok(r) => {
                defmt::info!(
                    "ad on {=str}: {=usize} samples, {=usize} output values bit-identical with TFLite Micro; {=u64} instructions per inference (under -icount shift=0)",
                    BOARD,
                    r.samples,
                    r.values,
                    counter::instructions(r.ticks) / r.samples.max(1) as u64
                );
                defmt::assert_eq!(r.samples, m.golden.samples);
            }
            Err(e) => defmt::panic!("ad on {=str}: {}", BOARD, e),
        }
    }
}
