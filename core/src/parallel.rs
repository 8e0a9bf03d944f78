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

std::thread_local! {
    /// This thread's own limit (0: none): a thread that runs one part of a [`map_split`] runs
    /// its kernels alone, the parts already keep every core busy.
    static LOCAL_MAX: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// How many threads the converter's kernels may use (1 in wasm, which has no threads).
pub fn max_threads() -> usize {
    if cfg!(target_family = "wasm") {
        return 1;
    }
    let local = LOCAL_MAX.with(core::cell::Cell::get);
    if local != 0 {
        return local;
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

/// `f` on every item, the items split into at most `threads` runs of consecutive items, one
/// run per thread (the first on this thread), each thread's kernels single-threaded (one
/// thread per run is already every core); the results in item order. With one thread (or one
/// item) the items run on this thread in order, its kernels split as usual.
///
/// Coarse parallelism for independent work (samples, candidate models): each result is what
/// `f` gives alone, so callers that fold the results in item order get the same values bit for
/// bit with any number of threads.
pub(crate) fn map_split<T: Send, R: Send>(
    items: std::vec::Vec<T>,
    threads: usize,
    f: impl Fn(T) -> R + Sync,
) -> std::vec::Vec<R> {
    let threads = threads.min(items.len()).min(max_threads());
    if threads <= 1 {
        return items.into_iter().map(f).collect();
    }
    let n = items.len();
    let mut groups: std::vec::Vec<(std::vec::Vec<T>, std::vec::Vec<R>)> = std::vec::Vec::with_capacity(threads);
    let mut items = items.into_iter();
    for g in 0..threads {
        let take = (g + 1) * n / threads - g * n / threads;
        groups.push((items.by_ref().take(take).collect(), std::vec::Vec::with_capacity(take)));
    }
    run_parts(groups.iter_mut().collect(), |(inputs, outputs)| {
        let before = LOCAL_MAX.with(|c| c.replace(1));
        outputs.extend(core::mem::take(inputs).into_iter().map(&f));
        LOCAL_MAX.with(|c| c.set(before));
    });
    groups.into_iter().flat_map(|(_, out)| out).collect()
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

    #[test]
    fn map_split_keeps_item_order_and_runs_parts_alone() {
        for threads in [1, 2, 3, 8] {
            let out = map_split((0..7).collect(), threads, |i: usize| (i * i, max_threads()));
            let squares: std::vec::Vec<usize> = out.iter().map(|&(s, _)| s).collect();
            assert_eq!(squares, [0, 1, 4, 9, 16, 25, 36]);
            // Split over several threads, each part's kernels run on one.
            if threads.min(max_threads()) > 1 {
                assert!(out.iter().all(|&(_, t)| t == 1));
            }
        }
        // This thread's limit is back.
        assert_eq!(LOCAL_MAX.with(core::cell::Cell::get), 0);
        assert!(map_split(std::vec::Vec::<usize>::new(), 2, |i| i).is_empty());
    }
}
