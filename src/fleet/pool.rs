//! The fleet's worker pool: threads with their own single-threaded runtimes pull items from one
//! queue, and every item ends with exactly one result, even when its worker panics, cannot start
//! a runtime, or dies.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

/// The text of a panic's payload.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".into())
}

/// Run `work` on every item with at most `workers` threads, and return one result per item, in
/// the items' order. An item whose worker was lost gets `lost(item, why)` instead.
///
/// This blocks until every worker has finished: call it from a blocking context.
pub fn run<T, R, W, L>(items: Vec<T>, workers: usize, work: W, lost: L) -> Vec<R>
where
    T: Clone + Send + 'static,
    R: Send + 'static,
    W: Fn(&tokio::runtime::Runtime, T) -> R + Send + Sync + 'static,
    L: Fn(&T, &str) -> R + Send + Sync + 'static,
{
    let n = items.len();
    let queue = Arc::new(Mutex::new(items.iter().cloned().enumerate().collect::<VecDeque<_>>()));
    let results: Arc<Mutex<Vec<Option<R>>>> = Arc::new(Mutex::new((0..n).map(|_| None).collect()));
    let (work, lost) = (Arc::new(work), Arc::new(lost));
    let mut threads = Vec::new();
    let mut start_error = None;
    for _ in 0..workers.clamp(1, n.max(1)) {
        let (queue, results, work, lost) = (queue.clone(), results.clone(), work.clone(), lost.clone());
        let spawned = std::thread::Builder::new()
            .name("hone-fleet".into())
            .spawn(move || worker(&queue, &results, &*work, &*lost));
        match spawned {
            Ok(t) => threads.push(t),
            Err(e) => start_error = Some(format!("cannot start a worker thread: {e}")),
        }
    }
    let mut died = None;
    for t in threads {
        if let Err(p) = t.join() {
            died = Some(format!("its worker died: {}", panic_text(&*p)));
        }
    }
    let why = died.or(start_error).unwrap_or_else(|| "no worker could run it".into());
    let filled = std::mem::take(&mut *lock(&results));
    filled.into_iter().zip(&items).map(|(r, item)| r.unwrap_or_else(|| lost(item, &why))).collect()
}

/// One worker: take items until the queue is empty. A panic in `work` is that item's result
/// (through `lost`), and the worker goes on with a fresh runtime.
fn worker<T: Clone, R>(
    queue: &Mutex<VecDeque<(usize, T)>>,
    results: &Mutex<Vec<Option<R>>>,
    work: &dyn Fn(&tokio::runtime::Runtime, T) -> R,
    lost: &dyn Fn(&T, &str) -> R,
) {
    let mut rt = None;
    loop {
        let Some((i, item)) = lock(queue).pop_front() else { return };
        if rt.is_none() {
            match runtime() {
                Ok(r) => rt = Some(r),
                Err(e) => {
                    lock(results)[i] = Some(lost(&item, &format!("cannot start a runtime: {e}")));
                    continue;
                }
            }
        }
        let Some(r) = rt.as_ref() else { continue };
        let result = match catch_unwind(AssertUnwindSafe(|| work(r, item.clone()))) {
            Ok(result) => result,
            Err(p) => {
                rt = None;
                lost(&item, &format!("its worker panicked: {}", panic_text(&*p)))
            }
        };
        lock(results)[i] = Some(result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lost(item: &u32, why: &str) -> String {
        format!("{item} lost: {why}")
    }

    #[test]
    fn every_item_gets_one_result_in_order() {
        let out = run((0..20).collect(), 4, |rt, i: u32| rt.block_on(async move { format!("{i} ok") }), lost);
        assert_eq!(out, (0..20).map(|i| format!("{i} ok")).collect::<Vec<_>>());
    }

    #[test]
    fn a_panicking_run_is_lost_and_the_others_still_run() {
        let work = |rt: &tokio::runtime::Runtime, i: u32| {
            rt.block_on(async move {
                if i % 3 == 1 {
                    panic!("boom on {i}");
                }
                format!("{i} ok")
            })
        };
        let out = run((0..7).collect(), 2, work, lost);
        assert_eq!(out.len(), 7);
        for (i, r) in out.iter().enumerate() {
            if i % 3 == 1 {
                assert_eq!(r, &format!("{i} lost: its worker panicked: boom on {i}"));
            } else {
                assert_eq!(r, &format!("{i} ok"));
            }
        }
    }

    #[test]
    fn a_worker_that_dies_outside_a_run_loses_its_item_not_the_rest() {
        // `lost` itself panics for item 2: that worker thread dies with the item unrecorded.
        let work = |_: &tokio::runtime::Runtime, i: u32| if i == 2 { panic!("run") } else { format!("{i} ok") };
        let fragile = |item: &u32, why: &str| {
            if why.contains("panicked") {
                panic!("cannot even record {item}");
            }
            format!("{item} lost: {why}")
        };
        let out = run((0..5).collect(), 1, work, fragile);
        assert_eq!(out[2], "2 lost: its worker died: cannot even record 2");
        // The only worker died, so the items after it were never run: each is recorded as lost.
        assert_eq!(out[3], "3 lost: its worker died: cannot even record 2");
        assert_eq!(out[0], "0 ok");
        assert_eq!(out.len(), 5);
    }

    #[test]
    fn no_items_no_results() {
        let out: Vec<String> = run(Vec::<u32>::new(), 8, |_, i| i.to_string(), lost);
        assert!(out.is_empty());
    }
}
