//! Ending transfers on pipes and sockets that wait on their other end,
//! from another thread. A job server (`peerpath daemon`) runs a client's
//! job on the client's standard streams; when the client goes away, a job
//! blocked in read(2) on an idle pipe (`sleep 1000 | peerpath compress -`)
//! or in write(2) on a full one would hold the server, and every job queued
//! behind it, until the pipe's other end wrote or read again. A blocked
//! read(2) or write(2) cannot be woken except by a signal, and the stream's
//! open file is the client's (made non-blocking, it would be so for the
//! client's other processes too). So in a process that [`arm`]s this, each
//! transfer on a pipe or socket is one that never blocks (`preadv2` and
//! `pwritev2` with `RWF_NOWAIT`, at the stream's position), and where it
//! would, the thread waits in poll(2) on the stream and this process's stop
//! eventfd together. Files are read as before; terminals, and kernels
//! without `RWF_NOWAIT` on pipes (before Linux 5.x), wait in poll(2) for the
//! first byte, then transfer as before.
//!
//! Processes that do not arm it (every command but the job server) transfer
//! as before, at no cost.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

/// The process's stop eventfd, once [`arm`]ed; `None` inside where it could
/// not be made (transfers then block as before).
static STOP: OnceLock<Option<Stop>> = OnceLock::new();

/// Why a transfer ended without its bytes: [`stop_blocking_transfers`].
#[derive(Debug)]
pub struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the transfer was stopped (the job was cancelled)")
    }
}

impl std::error::Error for Stopped {}

/// Makes this process's transfers on streams stoppable, and lets them run
/// (the next job's: a stop stays until then).
pub fn arm() {
    if let Some(s) = STOP.get_or_init(Stop::new) {
        s.allow();
    }
}

/// Ends every transfer on a stream that waits now, and every one started
/// until the next [`arm`], with [`Stopped`] (in an armed process).
pub fn stop_blocking_transfers() {
    if let Some(s) = STOP.get().and_then(Option::as_ref) {
        s.stop();
    }
}

/// One read (`write` false) or write of up to `len` bytes at `ptr`, at the
/// stream's position, in an armed process: `None` elsewhere (the caller
/// transfers as before). Ends with [`Stopped`] where it would wait once
/// transfers are stopped.
///
/// # Safety
/// `ptr..ptr + len` is memory the caller owns for the call (written to by a read).
pub(crate) unsafe fn stream_transfer(fd: RawFd, write: bool, ptr: *mut u8, len: usize) -> Option<io::Result<usize>> {
    // SAFETY: the caller's contract is this one's.
    STOP.get().and_then(Option::as_ref).map(|stop| unsafe { stop.transfer(fd, write, ptr, len) })
}

/// A reader of a stream whose reads end with [`Stopped`] when transfers are
/// stopped ([`stream_transfer`]; a plain read in a process not armed).
pub struct StoppableRead<R>(pub R);

impl<R: io::Read + AsRawFd> io::Read for StoppableRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is ours for the call.
        match unsafe { stream_transfer(self.0.as_raw_fd(), false, buf.as_mut_ptr(), buf.len()) } {
            Some(r) => r,
            None => self.0.read(buf),
        }
    }
}

/// An eventfd that is readable while transfers are to stop.
struct Stop(OwnedFd);

impl Stop {
    fn new() -> Option<Stop> {
        // SAFETY: eventfd takes plain integers and returns a new fd or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        // SAFETY: a fresh descriptor that nothing else owns.
        (fd >= 0).then(|| Stop(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn stop(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our eventfd; it fails
        // only where the counter would overflow, which leaves it readable.
        unsafe { libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    fn allow(&self) {
        let mut value: u64 = 0;
        // SAFETY: reads 8 bytes into a valid u64 from our non-blocking
        // eventfd; EAGAIN (already zero) is the only other outcome.
        unsafe { libc::read(self.0.as_raw_fd(), (&mut value as *mut u64).cast(), 8) };
    }

    /// Waits until `fd` can be read (`write` false) or written, or the stop comes.
    fn wait_ready(&self, fd: RawFd, write: bool) -> io::Result<()> {
        let events = if write { libc::POLLOUT } else { libc::POLLIN };
        let mut fds = [libc::pollfd { fd, events, revents: 0 }, libc::pollfd { fd: self.0.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        loop {
            // SAFETY: poll(2) on an array of two pollfds that lives across the call.
            if unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) } < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if fds[1].revents != 0 {
                return Err(io::Error::other(Stopped));
            }
            // Ready, or an error or hang-up that the transfer itself will report.
            if fds[0].revents != 0 {
                return Ok(());
            }
        }
    }

    /// [`stream_transfer`] on this stop.
    ///
    /// # Safety
    /// As [`stream_transfer`].
    unsafe fn transfer(&self, fd: RawFd, write: bool, ptr: *mut u8, len: usize) -> io::Result<usize> {
        // SAFETY: a stat is plain integers, for which zero is a value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat(2) into that stat, which lives across the call.
        let kind = if unsafe { libc::fstat(fd, &mut st) } == 0 { st.st_mode & libc::S_IFMT } else { 0 };
        if !matches!(kind, libc::S_IFIFO | libc::S_IFSOCK) {
            // A file never waits on another process; a terminal (a character device) is waited
            // for until it has something. Anything else (an anonymous inode: an epoll instance in
            // place of a closed standard stream, which never becomes ready) goes straight to the
            // system call, which says what it says.
            let ready = if kind == libc::S_IFCHR { self.wait_ready(fd, write) } else { Ok(()) };
            // SAFETY: the caller's memory, as above.
            return ready.and_then(|()| unsafe { plain(fd, write, ptr, len) });
        }
        let iov = libc::iovec { iov_base: ptr.cast(), iov_len: len };
        loop {
            // SAFETY: one iovec over the caller's memory (see the function's
            // contract); offset -1 is the stream's own position, as read(2) and write(2).
            let n = unsafe { if write { libc::pwritev2(fd, &iov, 1, -1, libc::RWF_NOWAIT) } else { libc::preadv2(fd, &iov, 1, -1, libc::RWF_NOWAIT) } };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => {}
                Some(libc::EAGAIN) => self.wait_ready(fd, write)?,
                // No RWF_NOWAIT for this stream here: wait for it, then as before.
                // SAFETY: the caller's memory, as above.
                Some(libc::EOPNOTSUPP | libc::EINVAL) => return self.wait_ready(fd, write).and_then(|()| unsafe { plain(fd, write, ptr, len) }),
                _ => return Err(e),
            }
        }
    }
}

/// read(2) or write(2), retried on EINTR.
///
/// # Safety
/// As [`stream_transfer`].
unsafe fn plain(fd: RawFd, write: bool, ptr: *mut u8, len: usize) -> io::Result<usize> {
    loop {
        // SAFETY: the caller's memory (the function's contract).
        let n = unsafe { if write { libc::write(fd, ptr.cast(), len) } else { libc::read(fd, ptr.cast(), len) } };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::sync::Arc;

    fn is_stopped(e: &io::Error) -> bool {
        e.get_ref().is_some_and(|inner| inner.is::<Stopped>())
    }

    /// Writes all of `data` to `fd` through `stop`, or the error that ended it.
    fn write_all(stop: &Stop, fd: RawFd, mut data: Vec<u8>) -> io::Result<()> {
        let mut done = 0;
        while done < data.len() {
            // SAFETY: `data` is ours for the call.
            done += unsafe { stop.transfer(fd, true, data[done..].as_mut_ptr(), data.len() - done) }?;
        }
        Ok(())
    }

    /// On a stop of its own: the process's would stop the transfers of the tests running beside it.
    #[test]
    fn transfers_on_pipes_move_every_byte_and_those_that_wait_end_when_stopped() {
        let stop = Arc::new(Stop::new().unwrap());
        // Flowing: every byte arrives, in order, through a pipe 16 times smaller.
        let data: Vec<u8> = (0..1u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        let (mut r, w) = std::io::pipe().unwrap();
        let writer = {
            let (stop, data) = (stop.clone(), data.clone());
            std::thread::spawn(move || write_all(&stop, w.as_raw_fd(), data))
        };
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        writer.join().unwrap().unwrap();
        assert!(got == data, "{} bytes arrived of {}", got.len(), data.len());

        // A write to a pipe nobody reads waits, until stopped.
        let (_unread, w) = std::io::pipe().unwrap();
        let writer = {
            let stop = stop.clone();
            std::thread::spawn(move || write_all(&stop, w.as_raw_fd(), vec![7; 1 << 20]))
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!writer.is_finished(), "the write waits for a reader");
        stop.stop();
        let e = writer.join().unwrap().unwrap_err();
        assert!(is_stopped(&e), "{e}");
        // A read of an idle pipe ends at once while stopped.
        let (r, mut w) = std::io::pipe().unwrap();
        let mut buf = [0u8; 4];
        // SAFETY: `buf` is ours for the call.
        let e = unsafe { stop.transfer(r.as_raw_fd(), false, buf.as_mut_ptr(), buf.len()) }.unwrap_err();
        assert!(is_stopped(&e), "{e}");

        // The next job's transfers run.
        stop.allow();
        w.write_all(b"next").unwrap();
        // SAFETY: as above.
        assert_eq!(unsafe { stop.transfer(r.as_raw_fd(), false, buf.as_mut_ptr(), buf.len()) }.unwrap(), 4);
        assert_eq!(&buf, b"next");
    }
}
