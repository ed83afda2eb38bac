//! Cancelling the job in progress from another thread: the job server
//! (`peerpath daemon`) does it when the client that asked for the job goes
//! away (its process killed, a Ctrl-C). A process runs one job at a time, so
//! the flag is the process's. Jobs look at it once per turn of their loops
//! (compress's executor, decompress's and verify's waits), between waits
//! that end with an I/O completion, a device's command timeout or a wake
//! from here (a loop registers its waker: a read of a pipe that stays silent
//! does not hold a cancelled job), and end with [`JobError::Cancelled`]: the
//! usual failure path, so outputs in progress are not put in place and
//! their temporaries go.

use crate::error::{JobError, Result};
use peerpath_io::Waker;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

static CANCELLED: AtomicBool = AtomicBool::new(false);
static WHY: Mutex<String> = Mutex::new(String::new());
/// The wakers of the loops running now, woken by a cancellation.
static WAKERS: Mutex<Vec<(u64, Waker)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Asks the job in progress (or the next one, until [`clear`]) to stop, for this reason.
pub fn cancel(why: &str) {
    *WHY.lock().unwrap_or_else(|p| p.into_inner()) = why.to_string();
    CANCELLED.store(true, Ordering::Release);
    for (_, w) in WAKERS.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        w.wake();
    }
}

/// A loop's waker, woken by a cancellation while this lives.
pub(crate) struct WakeOnCancel(u64);

pub(crate) fn wake_on_cancel(waker: &Waker) -> WakeOnCancel {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    WAKERS.lock().unwrap_or_else(|p| p.into_inner()).push((id, waker.clone()));
    WakeOnCancel(id)
}

impl Drop for WakeOnCancel {
    fn drop(&mut self) {
        WAKERS.lock().unwrap_or_else(|p| p.into_inner()).retain(|(id, _)| *id != self.0);
    }
}

/// Lets jobs run again: called before each job that a cancellation must not reach.
pub fn clear() {
    CANCELLED.store(false, Ordering::Release);
}

/// The job's check: an error once the job was cancelled.
pub(crate) fn check() -> Result<()> {
    if CANCELLED.load(Ordering::Acquire) {
        return Err(JobError::Cancelled { why: WHY.lock().unwrap_or_else(|p| p.into_inner()).clone() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_is_an_error_with_its_reason_until_cleared() {
        clear();
        assert!(check().is_ok());
        cancel("the client went away");
        let e = check().unwrap_err();
        assert_eq!(e.to_string(), "cancelled: the client went away");
        assert_eq!(e.exit_code(), 130);
        clear();
        assert!(check().is_ok());
    }
}
