//! Cancelling the job in progress from another thread: the job server
//! (`peerpath daemon`) does it when the client that asked for the job goes
//! away (its process killed, a Ctrl-C). A process runs one job at a time, so
//! the flag is the process's. Jobs look at it once per turn of their loops
//! (compress's executor, decompress's and verify's waits), between waits
//! that end with an I/O completion, a device's command timeout or a wake
//! from here (a loop registers its waker, so an io_uring wait ends at once;
//! a read or write of a pipe, which jobs do with read(2) and write(2), is
//! stopped: `peerpath_io::stop`, armed in a process that clears the flag
//! for its jobs), and end with [`JobError::Cancelled`]: the usual failure
//! path, so outputs in progress are not put in place and their temporaries
//! go.

use crate::error::{JobError, Result};
use peerpath_io::Waker;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// The process's flag, its reason, and the wakers of the loops running now.
struct Flag {
    cancelled: AtomicBool,
    why: Mutex<String>,
    wakers: Mutex<Vec<(u64, Waker)>>,
    next: AtomicU64,
}

static FLAG: Flag = Flag::new();

impl Flag {
    const fn new() -> Flag {
        Flag { cancelled: AtomicBool::new(false), why: Mutex::new(String::new()), wakers: Mutex::new(Vec::new()), next: AtomicU64::new(0) }
    }

    fn cancel(&self, why: &str) {
        *self.why.lock().unwrap_or_else(|p| p.into_inner()) = why.to_string();
        self.cancelled.store(true, Ordering::Release);
        for (_, w) in self.wakers.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            w.wake();
        }
    }

    fn clear(&self) {
        self.cancelled.store(false, Ordering::Release);
    }

    fn check(&self) -> Result<()> {
        if self.cancelled.load(Ordering::Acquire) {
            return Err(JobError::Cancelled { why: self.why.lock().unwrap_or_else(|p| p.into_inner()).clone() });
        }
        Ok(())
    }

    fn register(&self, waker: &Waker) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.wakers.lock().unwrap_or_else(|p| p.into_inner()).push((id, waker.clone()));
        id
    }

    fn unregister(&self, id: u64) {
        self.wakers.lock().unwrap_or_else(|p| p.into_inner()).retain(|(k, _)| *k != id);
    }
}

/// Asks the job in progress (or the next one, until [`clear`]) to stop, for this reason.
pub fn cancel(why: &str) {
    FLAG.cancel(why);
    peerpath_io::stop::stop_blocking_transfers();
}

/// Lets jobs run again: called before each job that a cancellation must not
/// reach (by a job server; its transfers on pipes become stoppable).
pub fn clear() {
    FLAG.clear();
    peerpath_io::stop::arm();
}

/// The job's check: an error once the job was cancelled.
pub(crate) fn check() -> Result<()> {
    FLAG.check()
}

/// `e`, or the cancellation that caused it (a stopped transfer's error,
/// say) where the job was cancelled.
pub(crate) fn or_cancelled(e: JobError) -> JobError {
    FLAG.check().err().unwrap_or(e)
}

/// A loop's waker, woken by a cancellation while this lives.
pub(crate) struct WakeOnCancel(u64);

pub(crate) fn wake_on_cancel(waker: &Waker) -> WakeOnCancel {
    WakeOnCancel(FLAG.register(waker))
}

impl Drop for WakeOnCancel {
    fn drop(&mut self) {
        FLAG.unregister(self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a flag of its own: the process's would cancel the jobs of the tests running beside it.
    #[test]
    fn a_cancellation_is_an_error_with_its_reason_and_wakes_the_loops_until_cleared() {
        let flag = Flag::new();
        let waker = Waker::new().unwrap();
        let id = flag.register(&waker);
        assert!(flag.check().is_ok());
        flag.cancel("the client went away");
        let e = flag.check().unwrap_err();
        assert_eq!(e.to_string(), "cancelled: the client went away");
        assert_eq!(e.exit_code(), 130);
        waker.wait_blocking(); // woken: returns at once
        flag.unregister(id);
        assert!(flag.wakers.lock().unwrap().is_empty());
        flag.clear();
        assert!(flag.check().is_ok());
    }
}
