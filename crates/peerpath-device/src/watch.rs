//! Sleeping on devices and storage at once.
//!
//! A job's orchestration thread sleeps in its I/O engine, which wakes on
//! I/O completions, on one eventfd (the job's waker) and, where the engine
//! can (io_uring: a poll in the same ring), on each device's completion
//! descriptor ([`Device::wake_fd`]). A [`Watcher`] is a small thread per
//! device that turns the device's other signals into that wake-up: its
//! hang-up descriptor ([`Device::hangup_fd`], a dead device process), a
//! periodic tick, so that the orchestration thread polls the device (which
//! checks the device's health and command timeouts) even when nothing else
//! happens, and the completion descriptor too when the engine cannot watch
//! it. The watcher never touches the device itself.

use crate::device::Device;
use crate::sys::{poll_fds, EventFd};
use std::io;
use std::os::fd::RawFd;
use std::thread::JoinHandle;
use std::time::Duration;

/// The tick when the device has a completion descriptor (only to notice
/// hung commands) and when it has none (completions are found by polling).
const TICK_WITH_WAKE_FD: Duration = Duration::from_millis(200);
const TICK_WITHOUT_WAKE_FD: Duration = Duration::from_millis(5);

/// Runs `wake` whenever `device` may need the orchestration thread's
/// attention. Stop it (drop) before the device is dropped: it polls the
/// device's descriptors by number.
pub struct Watcher {
    stop: std::sync::Arc<EventFd>,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    /// `relay_completions`: also relay the device's completion descriptor
    /// (false when the I/O engine watches it itself).
    pub fn start<F: Fn() + Send + 'static>(device: &dyn Device, relay_completions: bool, wake: F) -> io::Result<Watcher> {
        let stop = std::sync::Arc::new(EventFd::new()?);
        let (wake_fd, hangup_fd) = (device.wake_fd(), device.hangup_fd());
        let tick = if wake_fd.is_some() { TICK_WITH_WAKE_FD } else { TICK_WITHOUT_WAKE_FD };
        let wake_fd = wake_fd.filter(|_| relay_completions);
        let stop_fd = stop.raw();
        let thread = std::thread::Builder::new()
            .name(format!("watch-{}", device.name()))
            .spawn(move || watch(stop_fd, wake_fd, hangup_fd, tick, wake))?;
        Ok(Watcher { stop, thread: Some(thread) })
    }
}

fn watch(stop_fd: RawFd, wake_fd: Option<RawFd>, mut hangup_fd: Option<RawFd>, tick: Duration, wake: impl Fn()) {
    loop {
        let mut fds = vec![(stop_fd, libc::POLLIN)];
        fds.extend(wake_fd.map(|fd| (fd, libc::POLLIN)));
        fds.extend(hangup_fd.map(|fd| (fd, libc::POLLIN)));
        let Ok(events) = poll_fds(&fds, Some(tick)) else {
            wake();
            std::thread::sleep(tick);
            continue;
        };
        if events[0] != 0 {
            return;
        }
        let mut i = 1;
        if let Some(fd) = wake_fd {
            if events[i] != 0 {
                EventFd::drain_raw(fd);
            }
            i += 1;
        }
        if hangup_fd.is_some() && events[i] != 0 {
            // Readable once the peer has gone: wake once, then stop
            // watching it (it stays readable and would spin).
            hangup_fd = None;
        }
        wake();
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.signal();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
