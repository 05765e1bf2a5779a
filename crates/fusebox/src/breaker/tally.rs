//! A breaker's closed-state verdicts counted for a fleet's window: every call
//! of a shared rate breaker adds one, so this is the one cost sharing adds to
//! the closed path.
//!
//! Each thread that counts owns a cell of its own (one of [`SLOTS`], taken on
//! its first count and given back when it exits), which only it writes: a
//! count is a plain load and store, no read-modify-write, no lock prefix, and
//! its cache line never leaves the thread's core but for the fleet's sync
//! reading it. A cell changes hands through a mutex (the exiting thread's
//! last store happens before the next owner's first load), so no count is
//! lost. Threads beyond [`SLOTS`] at once share one cell with atomic adds.
//! The counts are cumulative and exact; readers take differences.

use crate::sync::{AtomicU64, Ordering, Padded};

/// Cells per tally that threads own (threads beyond this share one).
pub(crate) const SLOTS: usize = 32;

/// Cumulative closed-state verdicts of one breaker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) calls: u64,
    pub(crate) failures: u64,
    pub(crate) slow: u64,
}

/// One cell: calls, failures, slow calls.
#[derive(Debug)]
struct Cell3([AtomicU64; 3]);

impl Cell3 {
    fn new() -> Cell3 {
        Cell3([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)])
    }

    fn read(&self) -> Tally {
        // Relaxed: each count only grows, and whatever a read misses the
        // next one sees; nothing else is published through them.
        Tally {
            calls: self.0[0].load(Ordering::Relaxed),
            failures: self.0[1].load(Ordering::Relaxed),
            slow: self.0[2].load(Ordering::Relaxed),
        }
    }
}

/// The counts of one breaker: [`SLOTS`] owned cells and a shared one.
#[derive(Debug)]
pub(crate) struct TallyCells {
    owned: Box<[Padded<Cell3>]>,
    shared: Padded<Cell3>,
}

impl TallyCells {
    pub(crate) fn new() -> TallyCells {
        TallyCells {
            owned: (0..SLOTS).map(|_| Padded(Cell3::new())).collect(),
            shared: Padded(Cell3::new()),
        }
    }

    /// Counts one verdict (a call; a failure, a slow call).
    #[inline]
    pub(crate) fn add(&self, failed: bool, slow: bool) {
        match slot::mine() {
            Some(i) => {
                let c = &self.owned[i].0 .0;
                // Relaxed loads and stores: this thread is the cell's only
                // writer (see the module docs).
                let bump =
                    |a: &AtomicU64| a.store(a.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                bump(&c[0]);
                if failed {
                    bump(&c[1]);
                }
                if slow {
                    bump(&c[2]);
                }
            }
            None => {
                let c = &self.shared.0 .0;
                // Relaxed: statistics (see `Cell3::read`).
                c[0].fetch_add(1, Ordering::Relaxed);
                if failed {
                    c[1].fetch_add(1, Ordering::Relaxed);
                }
                if slow {
                    c[2].fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Everything counted so far.
    pub(crate) fn read(&self) -> Tally {
        self.owned
            .iter()
            .map(|c| c.0.read())
            .chain([self.shared.0.read()])
            .fold(Tally::default(), |a, t| Tally {
                calls: a.calls + t.calls,
                failures: a.failures + t.failures,
                slow: a.slow + t.slow,
            })
    }
}

/// Which owned cell the calling thread writes.
#[cfg(not(loom))]
mod slot {
    use super::SLOTS;
    use std::cell::{Cell, RefCell};
    use std::sync::Mutex;

    /// Not asked yet.
    const UNSET: usize = usize::MAX;
    /// No cell of its own: the shared one (all taken, or the thread is exiting).
    const NONE: usize = usize::MAX - 1;

    /// Cells given back by exited threads, and how many were ever handed out.
    static POOL: Mutex<(Vec<usize>, usize)> = Mutex::new((Vec::new(), 0));

    thread_local! {
        static MINE: Cell<usize> = const { Cell::new(UNSET) };
        static OWNER: RefCell<Option<Owner>> = const { RefCell::new(None) };
    }

    /// Gives the cell back when its thread exits.
    struct Owner(usize);

    impl Drop for Owner {
        fn drop(&mut self) {
            // Counts made from now on (other thread-locals' destructors)
            // go to the shared cell.
            let _ = MINE.try_with(|m| m.set(NONE));
            // The mutex orders this thread's last stores before the next
            // owner's first load.
            crate::sync::lock(&POOL).0.push(self.0);
        }
    }

    /// The calling thread's cell, or `None` for the shared one.
    #[inline]
    pub(super) fn mine() -> Option<usize> {
        let i = MINE.try_with(Cell::get).unwrap_or(NONE);
        match i {
            UNSET => claim(),
            NONE => None,
            i => Some(i),
        }
    }

    #[cold]
    fn claim() -> Option<usize> {
        let taken = {
            let mut pool = crate::sync::lock(&POOL);
            match pool.0.pop() {
                Some(i) => Some(i),
                None if pool.1 < SLOTS => {
                    pool.1 += 1;
                    Some(pool.1 - 1)
                }
                None => None,
            }
        };
        // Keep the cell only if it can be given back at exit.
        let kept = taken.filter(|&i| OWNER.try_with(|o| *o.borrow_mut() = Some(Owner(i))).is_ok());
        if let (Some(i), None) = (taken, kept) {
            crate::sync::lock(&POOL).0.push(i);
        }
        let _ = MINE.try_with(|m| m.set(kept.unwrap_or(NONE)));
        kept
    }
}

/// Under loom every count takes the shared cell: the model checks the
/// atomics, not thread exits.
#[cfg(loom)]
mod slot {
    #[inline]
    pub(super) fn mine() -> Option<usize> {
        None
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// The cells are per process: tests that count how many are free run
    /// one at a time.
    static CELLS: Mutex<()> = Mutex::new(());

    #[test]
    fn counts_are_exact_across_more_threads_than_cells_and_their_exits() {
        let _one = CELLS.lock().unwrap_or_else(|p| p.into_inner());
        let cells = Arc::new(TallyCells::new());
        // Three waves of more threads than there are cells, each exiting
        // (giving its cell to the next wave) before the next starts.
        for _ in 0..3 {
            let threads: Vec<_> = (0..SLOTS + 8)
                .map(|t| {
                    let cells = Arc::clone(&cells);
                    std::thread::spawn(move || {
                        for i in 0..1000 {
                            cells.add(i % 10 == t % 10, i % 4 == 0);
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
        }
        let n = 3 * (SLOTS as u64 + 8);
        assert_eq!(
            cells.read(),
            Tally {
                calls: n * 1000,
                failures: n * 100,
                slow: n * 250,
            }
        );
    }

    #[test]
    fn a_thread_keeps_its_cell_and_gives_it_back_when_it_exits() {
        let _one = CELLS.lock().unwrap_or_else(|p| p.into_inner());
        let first = std::thread::spawn(|| (slot::mine(), slot::mine()))
            .join()
            .unwrap();
        assert_eq!(first.0, first.1, "one cell per thread");
        // Every cell can be taken again after its thread exits: SLOTS + 1
        // threads in a row never run out.
        for _ in 0..=SLOTS {
            let got = std::thread::spawn(slot::mine).join().unwrap();
            assert!(got.is_some(), "a cell given back is handed out again");
        }
    }
}
