//! The automatic observers' error pass replayed from the samples their statistics pass kept:
//! the same errors in the same order (the same results bit for bit) without running the float
//! graph a second time. Alloc only: the host's [`Calibrator::calibrate_source`] does it when the
//! samples fit in [`REPLAY_BYTES`]; the npm package keeps them in a Web Worker between the
//! passes ([`Calibrator::take_replay`], [`Calibrator::replay_pass`]) under its own cap.

use alloc::vec::Vec;

use super::Calibrator;
use crate::graph::{ConvertError, ConvertErrorKind as Kind, TensorId};
use crate::ptq::auto::{ERROR_ELEMENTS, KeptSamples};
use crate::ptq::observer::AnyObserver;

/// Bytes the automatic observers may keep of the statistics pass's samples so that the error
/// pass needs no second run of the float graph ([`Calibrator::calibrate_source`]): at most
/// [`ERROR_ELEMENTS`] values of 4 bytes per activation and sample (32 samples of a mobile CNN:
/// some 100 MB). More samples than fit take the second pass, in the memory they always took.
pub const REPLAY_BYTES: usize = 256 << 20;

/// What the automatic observers of a calibrator kept of the samples it observed in the
/// statistics pass ([`Calibrator::take_replay`]): the error pass of a calibrator of the same
/// graph and options over the same samples, in the same order, can be measured from it
/// ([`Calibrator::replay_pass`]).
#[derive(Debug, Clone)]
pub struct ReplaySamples {
    samples: usize,
    observers: Vec<Option<KeptSamples>>,
}

impl ReplaySamples {
    /// Samples kept.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// Bytes of the kept values.
    pub fn bytes(&self) -> usize {
        self.observers.iter().flatten().map(KeptSamples::bytes).sum()
    }

    /// `later`'s samples after these (the samples a calibrator observed after them in the same
    /// pass). `false` (nothing done) if `later` was kept for another graph or other observers.
    pub fn append(&mut self, later: ReplaySamples) -> bool {
        let fits = self.observers.len() == later.observers.len()
            && self.observers.iter().zip(&later.observers).all(|(a, b)| a.is_some() == b.is_some());
        if fits {
            for (a, b) in self.observers.iter_mut().zip(later.observers) {
                if let (Some(a), Some(b)) = (a, b) {
                    a.append(b);
                }
            }
            self.samples += later.samples;
        }
        fits
    }
}

impl<'g> Calibrator<'g> {
    /// Bytes the automatic observers keep per sample for a replay of the error pass (at most
    /// [`ERROR_ELEMENTS`] values of 4 bytes per activation); `None` unless every observer is
    /// automatic (no replay then).
    pub fn replay_bytes_per_sample(&self) -> Option<usize> {
        let graph = self.executor.graph();
        let mut per_sample = 0usize;
        for (i, o) in self.observers.iter().enumerate() {
            let Some(o) = o else { continue };
            let len = graph.tensor(TensorId(i as u32)).and_then(|t| t.num_elements());
            match (o, len) {
                (AnyObserver::Auto(_), Some(len)) => {
                    let step = len.div_ceil(ERROR_ELEMENTS).max(1);
                    per_sample = per_sample.saturating_add(4 * len.div_ceil(step));
                }
                _ => return None,
            }
        }
        Some(per_sample)
    }

    /// In the statistics pass: has the automatic observers keep the samples observed from now
    /// on, for a replay of the error pass, if every observer is automatic and `total` samples
    /// take at most `cap` bytes ([`replay_bytes_per_sample`](Self::replay_bytes_per_sample));
    /// otherwise (and in the error pass) nothing is kept. True if they keep.
    pub fn keep_for_replay(&mut self, total: usize, cap: usize) -> bool {
        let keep = self.pass == 0
            && self.passes == 2
            && self.replay_bytes_per_sample().is_some_and(|b| b.saturating_mul(total) <= cap);
        self.observers.iter_mut().flatten().for_each(|o| o.keep_for_replay(keep));
        keep
    }

    /// In the statistics pass: what the observers kept since
    /// [`keep_for_replay`](Self::keep_for_replay), taken out (keeping stops). `None` if they were
    /// not keeping.
    pub fn take_replay(&mut self) -> Option<ReplaySamples> {
        if self.pass != 0 {
            return None;
        }
        let mut samples = None;
        let mut observers = Vec::with_capacity(self.observers.len());
        for o in &mut self.observers {
            let kept = match o {
                Some(o) => Some(o.take_kept()?),
                None => None,
            };
            if let Some(k) = &kept {
                if samples.is_some_and(|n| n != k.len()) {
                    return None;
                }
                samples = Some(k.len());
            }
            observers.push(kept);
        }
        Some(ReplaySamples { samples: samples?, observers })
    }

    /// In the error pass, before any sample of it: observes the samples `kept` holds (taken from
    /// a calibrator of the same graph and options in the statistics pass,
    /// [`take_replay`](Self::take_replay)) from what was kept, without running the float graph:
    /// the same statistics bit for bit as [`observe`](Self::observe) on those samples again. The
    /// pass is not ended. `Ok(false)` (nothing done) if not at that point or `kept` is of
    /// another graph or other observers.
    ///
    /// # Errors
    /// An observer's error, as [`observe`](Self::observe).
    pub fn replay_pass(&mut self, kept: ReplaySamples) -> Result<bool, ConvertError> {
        let ready = self.pass > 0
            && self.pass + 1 == self.passes
            && self.samples == 0
            && kept.observers.len() == self.observers.len()
            && self
                .observers
                .iter()
                .zip(&kept.observers)
                .all(|(o, k)| matches!((o, k), (Some(AnyObserver::Auto(_)), Some(_)) | (None, None)));
        if !ready {
            return Ok(false);
        }
        for (o, k) in self.observers.iter_mut().zip(kept.observers) {
            if let (Some(o), Some(k)) = (o, k) {
                if !o.set_replay(k) {
                    return Err(ConvertError::new(
                        Kind::InvalidGraph,
                        "replaying the error pass: an observer has measured samples already",
                    ));
                }
            }
        }
        super::for_each_observer(&mut self.observers, "replaying the error pass", AnyObserver::replay)?;
        self.memo.get_mut().0.clear();
        self.samples = kept.samples;
        Ok(true)
    }

    /// At the start of the last pass, when every observer kept the samples of the statistics
    /// pass ([`keep_for_replay`](Self::keep_for_replay)): that pass's errors measured from them
    /// (the same values: the same results bit for bit) and the pass ended, without running the
    /// float graph. `false` (nothing done) otherwise.
    ///
    /// # Errors
    /// An observer's error, as [`observe`](Self::observe); [`end_pass`](Self::end_pass)'s.
    pub fn replay_error_pass(&mut self) -> Result<bool, ConvertError> {
        let ready = self.pass > 0
            && self.pass + 1 == self.passes
            && self.samples == 0
            && self.observers.iter().flatten().all(AnyObserver::can_replay)
            && self.observers.iter().flatten().next().is_some();
        if !ready {
            return Ok(false);
        }
        super::for_each_observer(&mut self.observers, "replaying the error pass", AnyObserver::replay)?;
        // The pass saw the first pass's samples (no merge: merging drops what was kept).
        self.samples = self.summed;
        self.end_pass()?;
        Ok(true)
    }
}
