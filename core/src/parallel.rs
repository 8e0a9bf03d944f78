//! Threads on the host (`std`): the converter's large kernels (the float GEMM of calibration and
//! the report, the int8 convolution of the report's int8 run on x86-64) split their work over up
//! to [`max_threads`] threads. Each output element is computed by one thread in the order it has
//! when computed alone, so the results are the same bit for bit with any number of threads, and
//! the same as in wasm and on the device, which run single-threaded.
//!
//! ```
//! // One thread: the converter as it runs in a browser tab.
//! microquant::parallel::set_max_threads(1);
//! assert_eq!(microquant::parallel::max_threads(), 1);
//! // 0: as many as the machine has (the default).
//! microquant::parallel::set_max_threads(0);
//! assert!(microquant::parallel::max_threads() >= 1);
//! ```

use core::sync::atomic::{AtomicUsize, Ordering};

/// The limit [`set_max_threads`] set; 0 = the machine's available parallelism.
static MAX_THREADS: AtomicUsize = AtomicUsize::new(0);

/// The machine's available parallelism, asked once: [`std::thread::available_parallelism`]
/// reads the process's cgroup and CPU affinity on every call (on Linux a few files of `/proc`),
/// and the kernels ask before every split.
static AVAILABLE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// Multiply-accumulates below which a part of a kernel is not worth a thread of its own (about
/// a quarter of a millisecond of work: a thread costs some tens of microseconds to start).
pub(crate) const MIN_WORK_PER_THREAD: usize = 1 << 19;

/// Sets how many threads the converter's kernels may use: `n`, or with 0 (the default) as many
/// as [`std::thread::available_parallelism`] reports. Applies to every later call, process-wide.
pub fn set_max_threads(n: usize) {
    MAX_THREADS.store(n, Ordering::Relaxed);
}

/// How many threads the converter's kernels may use (1 in wasm, which has no threads).
pub fn max_threads() -> usize {
    if cfg!(target_family = "wasm") {
        return 1;
    }
    match MAX_THREADS.load(Ordering::Relaxed) {
        0 => *AVAILABLE.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        n => n,
    }
}

/// Threads for `work` multiply-accumulates that can be split into at most `max_parts` parts:
/// at least 1, at most [`max_threads`], one per [`MIN_WORK_PER_THREAD`].
pub(crate) fn threads_for(work: usize, max_parts: usize) -> usize {
    (work / MIN_WORK_PER_THREAD).min(max_parts).min(max_threads()).max(1)
}

/// Runs `f` on every part, the first on this thread and each other on a thread of its own;
/// returns when all are done.
pub(crate) fn run_parts<T: Send>(parts: std::vec::Vec<T>, f: impl Fn(T) + Sync) {
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else { return };
    std::thread::scope(|s| {
        for part in parts {
            let f = &f;
            s.spawn(move || f(part));
        }
        f(first);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_all_run_once() {
        let done: std::vec::Vec<AtomicUsize> = (0..5).map(|_| AtomicUsize::new(0)).collect();
        run_parts((0..5).collect(), |i: usize| {
            done[i].fetch_add(1, Ordering::Relaxed);
        });
        assert!(done.iter().all(|d| d.load(Ordering::Relaxed) == 1));
        assert_eq!(threads_for(0, 8), 1);
        assert_eq!(threads_for(usize::MAX, 0), 1);
    }
}
