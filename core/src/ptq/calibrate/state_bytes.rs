//! A calibrator's statistics as bytes ([`Calibrator::to_state`], [`Calibrator::load_state`]):
//! how calibration split over Web Workers or processes ships each part's statistics to be merged.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{AnyObserver, Calibrator, KeptSample};
use crate::graph::{ConvertError, ConvertErrorKind as Kind, TensorId};

/// First bytes of [`Calibrator::to_state`].
const STATE_MAGIC: &[u8; 4] = b"MQCS";
/// Version of [`Calibrator::to_state`]'s layout (2: with the bias-correction input sums; 4: with
/// the samples kept for the model-level range choice).
const STATE_VERSION: u8 = 4;

impl Calibrator<'_> {
    /// The calibration statistics as bytes: pass, sample count and every observer's state
    /// ([`crate::observer::ObserverState`]). A calibrator over the same graph with the same
    /// options reads them with [`load_state`](Self::load_state): this is how calibration
    /// split over Web Workers (or processes) ships each part's statistics to be merged.
    ///
    /// Layout (little-endian): `MQCS`, version byte, tensor count (u32), pass (u32), passes
    /// (u32), samples (u64), then per tensor its state length (u32, 0 for constants) and state;
    /// then the bias-correction input sums: samples summed (u64), and per tensor the number of
    /// sums (u32, 0 for tensors without) and the sums (f64); then the node count (u32) and per
    /// node the largest LSTM `|cell state|` (f32, 0 for other nodes); then the kept samples
    /// (u32 count), each as its inputs then its outputs, each list a count (u32) of vectors,
    /// each vector its length (u32) and values (f32).
    pub fn to_state(&self) -> Vec<u8> {
        let vecs = |v: &[Vec<f32>]| 4 + v.iter().map(|x| 4 + 4 * x.len()).sum::<usize>();
        let len = 41
            + self.observers.iter().map(|o| 4 + o.as_ref().map_or(0, AnyObserver::state_len)).sum::<usize>()
            + self.sums.iter().map(|s| 4 + 8 * s.as_ref().map_or(0, Vec::len)).sum::<usize>()
            + 4 * self.cell_peaks.len()
            + self.kept.iter().map(|k| vecs(&k.inputs) + vecs(&k.outputs)).sum::<usize>();
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(STATE_MAGIC);
        out.push(STATE_VERSION);
        out.extend_from_slice(&(self.observers.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.pass.to_le_bytes());
        out.extend_from_slice(&self.passes.to_le_bytes());
        out.extend_from_slice(&(self.samples as u64).to_le_bytes());
        for o in &self.observers {
            let n = o.as_ref().map_or(0, AnyObserver::state_len);
            out.extend_from_slice(&(n as u32).to_le_bytes());
            if let Some(o) = o {
                let at = out.len();
                out.resize(at + n, 0);
                // `n` is the state's own length, so the write cannot run short.
                let _ = out.get_mut(at..).map(|dst| o.write_state(dst));
            }
        }
        out.extend_from_slice(&(self.summed as u64).to_le_bytes());
        for s in &self.sums {
            let v = s.as_deref().unwrap_or(&[]);
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            for x in v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        out.extend_from_slice(&(self.cell_peaks.len() as u32).to_le_bytes());
        for i in 0..self.cell_peaks.len() {
            out.extend_from_slice(&self.lstm_cell_peak(i).unwrap_or(0.0).to_le_bytes());
        }
        out.extend_from_slice(&(self.kept.len() as u32).to_le_bytes());
        for k in &self.kept {
            for list in [&k.inputs, &k.outputs] {
                out.extend_from_slice(&(list.len() as u32).to_le_bytes());
                for v in list {
                    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                    v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
                }
            }
        }
        out
    }

    /// Replaces this calibrator's statistics with bytes of [`to_state`](Self::to_state) from a
    /// calibrator over the same graph with the same options. All or nothing: on error the
    /// calibrator is unchanged. To merge a received state, load it into a fresh calibrator
    /// (or a clone) and [`merge`](Self::merge) that.
    ///
    /// # Errors
    /// `Malformed` with the byte offset for bytes that are not a calibration state, are
    /// truncated, or come from a calibrator over another graph or with other options (the
    /// tensor is named when its observer's state does not fit).
    pub fn load_state(&mut self, bytes: &[u8]) -> Result<(), ConvertError> {
        let bad = |msg: String, at: usize| {
            ConvertError::new(Kind::Malformed, format!("calibration state: {msg}")).at_offset(at)
        };
        let word = |at: usize| -> Result<u32, ConvertError> {
            bytes
                .get(at..at + 4)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_le_bytes)
                .ok_or_else(|| bad(format!("truncated: {} bytes", bytes.len()), at))
        };
        if bytes.get(..4) != Some(STATE_MAGIC.as_slice()) {
            return Err(bad(String::from("not a microquant calibration state (no MQCS magic)"), 0));
        }
        if bytes.get(4) != Some(&STATE_VERSION) {
            return Err(bad(format!("version {:?}, this build reads {STATE_VERSION}", bytes.get(4)), 4));
        }
        let n = word(5)? as usize;
        if n != self.observers.len() {
            return Err(bad(format!("written for a graph of {n} tensors, this one has {}", self.observers.len()), 5));
        }
        let (pass, passes) = (word(9)?, word(13)?);
        if passes != self.passes || pass > passes {
            return Err(bad(format!("pass {pass} of {passes}, this calibrator makes {} passes", self.passes), 9));
        }
        let samples = u64::from(word(17)?) | (u64::from(word(21)?) << 32);
        let mut observers = self.observers.clone();
        let mut at = 25;
        for (i, o) in observers.iter_mut().enumerate() {
            let len = word(at)? as usize;
            at += 4;
            let body = bytes
                .get(at..at.saturating_add(len))
                .ok_or_else(|| bad(format!("truncated: {} bytes", bytes.len()), at))?;
            match o {
                None if len == 0 => {}
                None => return Err(bad(format!("tensor {i} is a constant here but has an observer state"), at)),
                Some(o) => {
                    let used = o.read_state(body).map_err(|e| {
                        bad(format!("{e}"), at).with_tensor(
                            i,
                            self.executor.graph().tensor(TensorId(i as u32)).map(|t| t.name.as_str()).unwrap_or(""),
                        )
                    })?;
                    if used != len {
                        return Err(bad(format!("tensor {i}: {len} bytes of state, {used} used"), at));
                    }
                }
            }
            at += len;
        }
        let summed = u64::from(word(at)?) | (u64::from(word(at + 4)?) << 32);
        at += 8;
        let mut sums = self.sums.clone();
        for (i, s) in sums.iter_mut().enumerate() {
            let len = word(at)? as usize;
            if len != s.as_ref().map_or(0, Vec::len) {
                return Err(bad(
                    format!("tensor {i}: {len} input sums, this graph needs {}", s.as_ref().map_or(0, Vec::len)),
                    at,
                ));
            }
            at += 4;
            if let Some(v) = s {
                let body = bytes
                    .get(at..at.saturating_add(8 * len))
                    .ok_or_else(|| bad(format!("truncated: {} bytes", bytes.len()), at))?;
                for (x, b) in v.iter_mut().zip(body.chunks_exact(8)) {
                    *x = f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                }
                at += 8 * len;
            }
        }
        let nodes = word(at)? as usize;
        if nodes != self.cell_peaks.len() {
            return Err(bad(
                format!("written for a graph of {nodes} nodes, this one has {}", self.cell_peaks.len()),
                at,
            ));
        }
        at += 4;
        let mut cell_peaks = Vec::with_capacity(nodes);
        for _ in 0..nodes {
            let p = f32::from_bits(word(at)?);
            if !(p.is_finite() && p >= 0.0) {
                return Err(bad(format!("an LSTM cell state peak of {p}"), at));
            }
            cell_peaks.push(p);
            at += 4;
        }
        let count = word(at)? as usize;
        if count > self.keep {
            return Err(bad(format!("{count} kept samples, this calibrator keeps {}", self.keep), at));
        }
        at += 4;
        let graph = self.executor.graph();
        let mut kept = Vec::with_capacity(count);
        for _ in 0..count {
            let mut lists: [Vec<Vec<f32>>; 2] = [Vec::new(), Vec::new()];
            for (list, ids) in lists.iter_mut().zip([&graph.inputs, &graph.outputs]) {
                let n = word(at)? as usize;
                if n != ids.len() {
                    return Err(bad(format!("a kept sample with {n} tensors, the graph has {}", ids.len()), at));
                }
                at += 4;
                for &id in ids {
                    let len = word(at)? as usize;
                    let want = graph.tensor(id).and_then(|t| t.num_elements());
                    if want.is_some_and(|w| w != len) {
                        return Err(bad(format!("a kept tensor of {len} values, tensor {id} has {want:?}"), at)
                            .with_tensor(id.index(), graph.tensor(id).map(|t| t.name.as_str()).unwrap_or("")));
                    }
                    at += 4;
                    let body = bytes
                        .get(at..at.saturating_add(4 * len))
                        .ok_or_else(|| bad(format!("truncated: {} bytes", bytes.len()), at))?;
                    list.push(body.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect());
                    at += 4 * len;
                }
            }
            let [inputs, outputs] = lists;
            kept.push(KeptSample { inputs, outputs });
        }
        if at != bytes.len() {
            return Err(bad(format!("{} bytes after the end of the state", bytes.len() - at), at));
        }
        let samples = usize::try_from(samples).map_err(|_| bad(format!("{samples} samples"), 17))?;
        let summed = usize::try_from(summed).map_err(|_| bad(format!("{summed} samples summed"), at))?;
        self.observers = observers;
        self.pass = pass;
        self.samples = samples;
        self.sums = sums;
        self.summed = summed;
        self.cell_peaks = cell_peaks;
        self.kept = kept;
        self.memo.get_mut().0.clear();
        Ok(())
    }
}
