//! Logging the per-op profile in instructions (see [`microquant_app::profile`]).

use microquant::model::OpKind;

pub use microquant_app::profile::OpProfile;

use crate::counter;

/// Logs the share of each op kind in `p` (and of each op when `per_op`), in instructions per
/// inference, `p` having counted `inferences` inferences.
pub fn log_profile<const N: usize>(p: &OpProfile<N>, inferences: u64, per_op: bool) {
    let total = p.total_ticks().max(1);
    let per = inferences.max(1);
    let mut kinds = [(OpKind::Conv2d, 0u64, 0u32); 24];
    let n = p.by_kind(&mut kinds);
    for &(k, t, c) in kinds.iter().take(n) {
        defmt::info!(
            "op share: {=str} x{=u32}: {=u64} instructions per inference ({=u64}.{=u64} %)",
            k.name(),
            c,
            counter::instructions(t) / per,
            t * 100 / total,
            t * 1000 / total % 10
        );
    }
    if per_op {
        for i in 0..p.ops() {
            if let Some((k, t)) = p.op(i) {
                defmt::info!(
                    "op {=usize} {=str}: {=u64} instructions per inference",
                    i,
                    k.name(),
                    counter::instructions(t) / per
                );
            }
        }
    }
}
