//! Per-channel min/max observers (PyTorch `PerChannelMinMaxObserver` and
//! `MovingAveragePerChannelMinMaxObserver`), any axis, up to `C` channels in fixed memory.

use super::{NonFinitePolicy, ObserverConfig};
use crate::Error;
use crate::quant::{ChannelQParams, Tensor};
use core::num::NonZeroUsize;

/// An observer with one range per channel along an axis.
pub trait ChannelObserver {
    /// Records a batch (all or nothing). The tensor's extent along the axis must be the
    /// observer's channel count.
    ///
    /// # Errors
    /// [`Error::NonFinite`] under the default policy; [`Error::LengthMismatch`] for a wrong
    /// channel count; [`Error::InvalidArgument`] for an axis beyond the tensor's rank.
    fn observe(&mut self, x: &Tensor<'_>) -> Result<(), Error>;

    /// Folds in another observer of the same axis and channel count.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the axes or channel counts differ.
    fn merge(&mut self, other: &Self) -> Result<(), Error>
    where
        Self: Sized;

    /// Number of channels.
    fn channels(&self) -> usize;

    /// The channel axis.
    fn axis(&self) -> usize;

    /// The calibrated range of every channel.
    ///
    /// # Errors
    /// [`Error::NoData`] if a channel has seen no data; [`Error::LengthMismatch`] if the
    /// buffers are not one per channel.
    fn ranges(&self, mins: &mut [f32], maxs: &mut [f32]) -> Result<(), Error>;

    /// Per-channel parameters, written into the caller's buffers (one per channel).
    ///
    /// # Errors
    /// As [`ChannelObserver::ranges`], and errors of [`crate::quant::choose_qparams_with`].
    fn qparams<'b>(&self, scales: &'b mut [f32], zero_points: &'b mut [i32]) -> Result<ChannelQParams<'b>, Error>;

    /// Forgets everything observed.
    fn reset(&mut self);
}

/// Per-channel minimum and maximum of one batch, written into `bmin`/`bmax` (`±inf` for a
/// channel without finite values).
fn batch_channel_ranges(
    x: &Tensor<'_>,
    axis: usize,
    channels: usize,
    policy: NonFinitePolicy,
    bmin: &mut [f32],
    bmax: &mut [f32],
) -> Result<(), Error> {
    let (_, dim, inner) = x.shape().split_at_axis(axis)?;
    if dim != channels {
        return Err(Error::LengthMismatch { expected: channels, actual: dim });
    }
    bmin.fill(f32::INFINITY);
    bmax.fill(f32::NEG_INFINITY);
    let (Some(inner_nz), Some(dim_nz)) = (NonZeroUsize::new(inner), NonZeroUsize::new(dim)) else {
        return Ok(());
    };
    for (k, chunk) in x.data().chunks_exact(inner_nz.get()).enumerate() {
        let c = k % dim_nz;
        let (Some(lo), Some(hi)) = (bmin.get(c).copied(), bmax.get(c).copied()) else { continue };
        let (mut lo, mut hi) = (lo, hi);
        for (j, &v) in chunk.iter().enumerate() {
            if !v.is_finite() {
                match policy {
                    NonFinitePolicy::Error => return Err(Error::NonFinite { index: k * inner + j }),
                    NonFinitePolicy::Ignore => continue,
                }
            }
            lo = if v < lo { v } else { lo };
            hi = if v > hi { v } else { hi };
        }
        if let (Some(a), Some(b)) = (bmin.get_mut(c), bmax.get_mut(c)) {
            *a = lo;
            *b = hi;
        }
    }
    Ok(())
}

fn write_qparams<'b>(
    cfg: &ObserverConfig,
    axis: usize,
    mins: &[f32],
    maxs: &[f32],
    scales: &'b mut [f32],
    zero_points: &'b mut [i32],
) -> Result<ChannelQParams<'b>, Error> {
    if scales.len() != mins.len() {
        return Err(Error::LengthMismatch { expected: mins.len(), actual: scales.len() });
    }
    if zero_points.len() != mins.len() {
        return Err(Error::LengthMismatch { expected: mins.len(), actual: zero_points.len() });
    }
    let mut range = (cfg.dtype.min(), cfg.dtype.max());
    for (((&lo, &hi), s), z) in mins.iter().zip(maxs).zip(scales.iter_mut()).zip(zero_points.iter_mut()) {
        if lo > hi {
            return Err(Error::NoData);
        }
        let p = cfg.qparams_for(lo, hi)?;
        *s = p.scale();
        *z = p.zero_point();
        range = (p.qmin(), p.qmax());
    }
    let scales: &'b [f32] = scales;
    let zero_points: &'b [i32] = zero_points;
    let p = ChannelQParams::per_axis(scales, zero_points, cfg.dtype, axis)?.with_convention(cfg.choose.convention);
    if cfg.dtype.is_float() { Ok(p) } else { p.with_range(range.0, range.1) }
}

macro_rules! per_channel_common {
    () => {
        fn channels(&self) -> usize {
            self.channels
        }
        fn axis(&self) -> usize {
            self.axis
        }
        fn ranges(&self, mins: &mut [f32], maxs: &mut [f32]) -> Result<(), Error> {
            let (m, x) = self.used();
            if mins.len() != m.len() || maxs.len() != m.len() {
                return Err(Error::LengthMismatch { expected: m.len(), actual: mins.len() });
            }
            for ((o, p), (&lo, &hi)) in mins.iter_mut().zip(maxs.iter_mut()).zip(m.iter().zip(x)) {
                if lo > hi {
                    return Err(Error::NoData);
                }
                *o = lo;
                *p = hi;
            }
            Ok(())
        }
        fn qparams<'b>(&self, scales: &'b mut [f32], zero_points: &'b mut [i32]) -> Result<ChannelQParams<'b>, Error> {
            let (m, x) = self.used();
            write_qparams(&self.cfg, self.axis, m, x, scales, zero_points)
        }
    };
}

fn check_channels<const C: usize>(channels: usize) -> Result<(), Error> {
    if channels == 0 || channels > C {
        return Err(Error::InvalidArgument { reason: "channel count must be in [1, C]" });
    }
    Ok(())
}

/// Running minimum and maximum per channel (PyTorch `PerChannelMinMaxObserver`), for up to
/// `C` channels.
#[derive(Debug, Clone)]
pub struct PerChannelMinMaxObserver<const C: usize> {
    cfg: ObserverConfig,
    axis: usize,
    channels: usize,
    min: [f32; C],
    max: [f32; C],
}

impl<const C: usize> PerChannelMinMaxObserver<C> {
    /// An observer of `channels` channels along `axis`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless `1 <= channels <= C`.
    pub fn new(cfg: ObserverConfig, axis: usize, channels: usize) -> Result<Self, Error> {
        check_channels::<C>(channels)?;
        Ok(Self { cfg, axis, channels, min: [f32::INFINITY; C], max: [f32::NEG_INFINITY; C] })
    }
    fn used(&self) -> (&[f32], &[f32]) {
        (self.min.get(..self.channels).unwrap_or(&[]), self.max.get(..self.channels).unwrap_or(&[]))
    }
}

impl<const C: usize> ChannelObserver for PerChannelMinMaxObserver<C> {
    fn observe(&mut self, x: &Tensor<'_>) -> Result<(), Error> {
        let mut bmin = [0f32; C];
        let mut bmax = [0f32; C];
        let n = self.channels;
        let (Some(lo), Some(hi)) = (bmin.get_mut(..n), bmax.get_mut(..n)) else {
            return Err(Error::InvalidArgument { reason: "channel count above C" });
        };
        batch_channel_ranges(x, self.axis, n, self.cfg.non_finite, lo, hi)?;
        for (((m, x), &l), &h) in self.min.iter_mut().zip(self.max.iter_mut()).zip(lo.iter()).zip(hi.iter()) {
            *m = if l < *m { l } else { *m };
            *x = if h > *x { h } else { *x };
        }
        Ok(())
    }
    fn merge(&mut self, other: &Self) -> Result<(), Error> {
        if self.axis != other.axis || self.channels != other.channels {
            return Err(Error::InvalidArgument {
                reason: "cannot merge per-channel observers of different axes or channel counts",
            });
        }
        for (((m, x), &l), &h) in
            self.min.iter_mut().zip(self.max.iter_mut()).zip(other.min.iter()).zip(other.max.iter())
        {
            *m = if l < *m { l } else { *m };
            *x = if h > *x { h } else { *x };
        }
        Ok(())
    }
    fn reset(&mut self) {
        self.min = [f32::INFINITY; C];
        self.max = [f32::NEG_INFINITY; C];
    }
    per_channel_common!();
}

/// Per-channel moving averages of the batch minimum and maximum (PyTorch
/// `MovingAveragePerChannelMinMaxObserver`, averaging constant 0.01 by default).
#[derive(Debug, Clone)]
pub struct MovingAveragePerChannelMinMaxObserver<const C: usize> {
    cfg: ObserverConfig,
    axis: usize,
    channels: usize,
    averaging_constant: f32,
    min: [f32; C],
    max: [f32; C],
}

impl<const C: usize> MovingAveragePerChannelMinMaxObserver<C> {
    /// An observer of `channels` channels along `axis`, averaging constant 0.01.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless `1 <= channels <= C`.
    pub fn new(cfg: ObserverConfig, axis: usize, channels: usize) -> Result<Self, Error> {
        Self::with_averaging_constant(
            cfg,
            axis,
            channels,
            super::MovingAverageMinMaxObserver::DEFAULT_AVERAGING_CONSTANT,
        )
    }
    /// The same with averaging constant `c` in `[0, 1]`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad channel count or constant.
    pub fn with_averaging_constant(cfg: ObserverConfig, axis: usize, channels: usize, c: f32) -> Result<Self, Error> {
        check_channels::<C>(channels)?;
        if !(0.0..=1.0).contains(&c) {
            return Err(Error::InvalidArgument { reason: "averaging constant must be in [0, 1]" });
        }
        Ok(Self { cfg, axis, channels, averaging_constant: c, min: [f32::INFINITY; C], max: [f32::NEG_INFINITY; C] })
    }
    fn used(&self) -> (&[f32], &[f32]) {
        (self.min.get(..self.channels).unwrap_or(&[]), self.max.get(..self.channels).unwrap_or(&[]))
    }
    fn fold(&mut self, lo: &[f32], hi: &[f32]) {
        let c = self.averaging_constant;
        for (((m, x), &l), &h) in self.min.iter_mut().zip(self.max.iter_mut()).zip(lo.iter()).zip(hi.iter()) {
            if l > h {
                continue; // no data for this channel in the batch
            }
            if *m > *x {
                *m = l;
                *x = h;
            } else {
                *m += c * (l - *m);
                *x += c * (h - *x);
            }
        }
    }
}

impl<const C: usize> ChannelObserver for MovingAveragePerChannelMinMaxObserver<C> {
    fn observe(&mut self, x: &Tensor<'_>) -> Result<(), Error> {
        let mut bmin = [0f32; C];
        let mut bmax = [0f32; C];
        let n = self.channels;
        let (Some(lo), Some(hi)) = (bmin.get_mut(..n), bmax.get_mut(..n)) else {
            return Err(Error::InvalidArgument { reason: "channel count above C" });
        };
        batch_channel_ranges(x, self.axis, n, self.cfg.non_finite, lo, hi)?;
        self.fold(lo, hi);
        Ok(())
    }
    /// The other observer's averages count as one more batch.
    fn merge(&mut self, other: &Self) -> Result<(), Error> {
        if self.axis != other.axis || self.channels != other.channels {
            return Err(Error::InvalidArgument {
                reason: "cannot merge per-channel observers of different axes or channel counts",
            });
        }
        let (lo, hi) = (other.min, other.max);
        self.fold(&lo, &hi);
        Ok(())
    }
    fn reset(&mut self) {
        self.min = [f32::INFINITY; C];
        self.max = [f32::NEG_INFINITY; C];
    }
    per_channel_common!();
}
