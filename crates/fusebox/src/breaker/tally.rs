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

/// The counts of one breaker: [`SLOTS`] owned cells, then the shared one.
#[derive(Debug)]
pub(crate) struct TallyCells {
    cells: Box<[Padded<Cell3>; SLOTS + 1]>,
}

impl TallyCells {
    /// What a boxed tally allocates: the box and its cells.
    pub(crate) const BOXED_BYTES: usize =
        size_of::<TallyCells>() + size_of::<[Padded<Cell3>; SLOTS + 1]>();

    pub(crate) fn new() -> TallyCells {
        TallyCells {
            cells: Box::new(std::array::from_fn(|_| Padded(Cell3::new()))),
        }
    }

    /// Counts one verdict (a call; a failure, a slow call).
    #[inline(always)]
    pub(crate) fn add(&self, failed: bool, slow: bool) {
        let i = slot::mine();
        if i >= SLOTS {
            return self.add_shared(i, failed, slow);
        }
        let c = &self.cells[i].0 .0;
        bump(&c[0]);
        if failed {
            bump(&c[1]);
        }
        if slow {
            bump(&c[2]);
        }
    }

    /// Counts one plain success if the calling thread owns a cell (no call,
    /// no read-modify-write); `false`, counting nothing, if it does not.
    #[inline(always)]
    pub(crate) fn add_owned_success(&self) -> bool {
        let i = slot::mine();
        if i >= SLOTS {
            return false;
        }
        bump(&self.cells[i].0 .0[0]);
        true
    }

    /// A thread without a cell of its own, or not asked yet.
    #[cold]
    #[inline(never)]
    fn add_shared(&self, i: usize, failed: bool, slow: bool) {
        if i == slot::UNSET && slot::claim() < SLOTS {
            return self.add(failed, slow);
        }
        let c = &self.cells[SLOTS].0 .0;
        // Relaxed: statistics (see `Cell3::read`).
        c[0].fetch_add(1, Ordering::Relaxed);
        if failed {
            c[1].fetch_add(1, Ordering::Relaxed);
        }
        if slow {
            c[2].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Everything counted so far.
    pub(crate) fn read(&self) -> Tally {
        self.cells.iter().fold(Tally::default(), |a, c| {
            let t = c.0.read();
            Tally {
                calls: a.calls + t.calls,
                failures: a.failures + t.failures,
                slow: a.slow + t.slow,
            }
        })
    }
}

/// Adds one to a count of a cell the calling thread owns.
#[inline(always)]
fn bump(a: &AtomicU64) {
    // Relaxed loads and stores: this thread is the cell's only writer (see
    // the module docs).
    a.store(a.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// Which owned cell the calling thread writes: an index below [`SLOTS`],
/// [`slot::SHARED`] for the shared cell, [`slot::UNSET`] if not asked yet.
#[cfg(not(loom))]
mod slot {
    use super::SLOTS;
    use std::cell::{Cell, RefCell};
    use std::sync::Mutex;

    /// Not asked yet.
    pub(super) const UNSET: usize = usize::MAX;
    /// No cell of its own: the shared one (all taken, or the thread is exiting).
    pub(super) const SHARED: usize = SLOTS;

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
            let _ = MINE.try_with(|m| m.set(SHARED));
            // The mutex orders this thread's last stores before the next
            // owner's first load.
            crate::sync::lock(&POOL).0.push(self.0);
        }
    }

    /// The calling thread's cell.
    #[inline(always)]
    pub(super) fn mine() -> usize {
        MINE.with(Cell::get)
    }

    /// Takes a cell for the calling thread (or settles for the shared one);
    /// returns what [`mine`] returns from now on.
    #[cold]
    pub(super) fn claim() -> usize {
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
        let i = kept.unwrap_or(SHARED);
        let _ = MINE.try_with(|m| m.set(i));
        i
    }
}

/// Under loom every count takes the shared cell: the model checks the
/// atomics, not thread exits.
#[cfg(loom)]
mod slot {
    pub(super) const UNSET: usize = usize::MAX;
    pub(super) fn mine() -> usize {
        super::SLOTS
    }
    pub(super) fn claim() -> usize {
        super::SLOTS
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
        let first = std::thread::spawn(|| (slot::mine(), slot::claim(), slot::mine()))
            .join()
            .unwrap();
        assert_eq!(first.0, slot::UNSET, "a thread has no cell until it asks");
        assert_eq!(first.1, first.2, "one cell per thread");
        // Every cell can be taken again after its thread exits: SLOTS + 1
        // threads in a row never run out.
        for _ in 0..=SLOTS {
            let got = std::thread::spawn(slot::claim).join().unwrap();
            assert!(got < SLOTS, "a cell given back is handed out again");
        }
    }
}
