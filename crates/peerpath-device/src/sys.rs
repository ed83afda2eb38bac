//! The few system calls the devices need: eventfds, poll with a timeout,
//! descriptors over a Unix socket (SCM_RIGHTS), pidfds, signals.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// A non-blocking eventfd: one side signals, the other waits and drains.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: eventfd takes plain integers and returns a new fd or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a freshly created descriptor that nothing else owns.
        Ok(EventFd { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    pub(crate) fn from_owned(fd: OwnedFd) -> EventFd {
        EventFd { fd }
    }

    /// Adds one to the counter, waking a waiter. Cannot block: the counter
    /// only overflows after 2^64 - 2 signals nobody drained.
    pub fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our eventfd.
        unsafe { libc::write(self.fd.as_raw_fd(), &one as *const u64 as *const libc::c_void, 8) };
    }

    /// Resets the counter (non-blocking; nothing to read is fine).
    pub fn drain(&self) {
        let mut value: u64 = 0;
        // SAFETY: reads at most 8 bytes into a valid u64 from our eventfd;
        // EAGAIN (counter zero) is the expected answer when nothing came.
        unsafe { libc::read(self.fd.as_raw_fd(), &mut value as *mut u64 as *mut libc::c_void, 8) };
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Resets the counter of an eventfd known only by number (a device's
    /// completion descriptor, watched by another thread).
    pub(crate) fn drain_raw(fd: RawFd) {
        let mut value: u64 = 0;
        // SAFETY: reads at most 8 bytes into a valid u64; a descriptor that
        // is not (or no longer) a non-blocking eventfd makes read fail or
        // return at once, which is harmless.
        unsafe { libc::read(fd, &mut value as *mut u64 as *mut libc::c_void, 8) };
    }
}

/// `poll(2)` on `fds` (descriptor, wanted events); returns the events seen
/// for each, all zero on timeout. `None` waits forever. EINTR counts as a
/// timeout (the callers loop).
pub fn poll_fds(fds: &[(RawFd, i16)], timeout: Option<Duration>) -> io::Result<Vec<i16>> {
    let mut pfds: Vec<libc::pollfd> = fds.iter().map(|&(fd, events)| libc::pollfd { fd, events, revents: 0 }).collect();
    let timeout_ms: libc::c_int = match timeout {
        None => -1,
        // Round up so that a short wait does not become a busy loop of 0 ms polls.
        Some(t) => t.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int,
    };
    // SAFETY: pfds is a valid array of pollfd of the given length, alive for the call.
    let rc = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![0; fds.len()]);
        }
        return Err(e);
    }
    Ok(pfds.iter().map(|p| p.revents).collect())
}

/// Whether the peer of a stream socket has closed it (or it failed):
/// checked without blocking and without consuming data.
pub(crate) fn peer_closed(sock: &UnixStream) -> bool {
    let Ok(ev) = poll_fds(&[(sock.as_raw_fd(), libc::POLLIN)], Some(Duration::ZERO)) else {
        return true;
    };
    if ev[0] & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        return true;
    }
    if ev[0] & libc::POLLIN != 0 {
        let mut byte = 0u8;
        // SAFETY: peeks at most one byte into a valid u8; the socket is open.
        let n = unsafe {
            libc::recv(sock.as_raw_fd(), &mut byte as *mut u8 as *mut libc::c_void, 1, libc::MSG_PEEK | libc::MSG_DONTWAIT)
        };
        return n == 0 || (n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::WouldBlock);
    }
    false
}

/// Calls a socket syscall again while it fails with EINTR. A socket with a
/// receive timeout (SO_RCVTIMEO) is not restarted after a signal, nor after
/// the process was stopped and continued, even without a handler
/// (signal(7)); the device socket has one while a queue pair is claimed.
fn retry_interrupted(mut call: impl FnMut() -> isize) -> io::Result<isize> {
    loop {
        let n = call();
        if n >= 0 {
            return Ok(n);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Sends `data` and the descriptors `fds` (SCM_RIGHTS) in one message.
pub(crate) fn send_with_fds(sock: &UnixStream, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let fd_bytes = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)]; // u64s: cmsghdr alignment
    let mut iov = libc::iovec { iov_base: data.as_ptr() as *mut libc::c_void, iov_len: data.len() };
    // SAFETY: msghdr is plain data; zero is a valid starting value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space as _;
        // SAFETY: msg_control points at `space` bytes we own, enough for one
        // header with `fd_bytes` of data (CMSG_SPACE); CMSG_FIRSTHDR is
        // therefore non-null and CMSG_DATA has room for the descriptors.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(fd_bytes as u32) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr() as *const u8, libc::CMSG_DATA(cmsg), fd_bytes);
        }
    }
    // SAFETY: msg points at a valid iovec and control buffer, alive for the call.
    let n = retry_interrupted(|| unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) })?;
    if n as usize != data.len() {
        return Err(io::Error::new(io::ErrorKind::WriteZero, "short send on the device socket"));
    }
    Ok(())
}

/// Receives exactly `data.len()` bytes and up to `max_fds` descriptors
/// (close-on-exec) sent with them.
pub(crate) fn recv_with_fds(sock: &UnixStream, data: &mut [u8], max_fds: usize) -> io::Result<Vec<OwnedFd>> {
    let fd_bytes = max_fds * std::mem::size_of::<RawFd>();
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec { iov_base: data.as_mut_ptr() as *mut libc::c_void, iov_len: data.len() };
    // SAFETY: msghdr is plain data; zero is a valid starting value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = space as _;
    // SAFETY: msg points at a valid iovec and control buffer we own.
    let n = retry_interrupted(|| unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC | libc::MSG_WAITALL) })?;
    let mut fds = Vec::new();
    // SAFETY: the kernel filled msg_control with valid cmsg headers within
    // msg_controllen; CMSG_FIRSTHDR/NXTHDR walk only inside it, and each
    // SCM_RIGHTS payload holds (cmsg_len - CMSG_LEN(0)) / 4 new descriptors
    // that this process now owns.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let payload = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let count = payload / std::mem::size_of::<RawFd>();
                let first = libc::CMSG_DATA(cmsg) as *const RawFd;
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(first.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    if (n as usize) < data.len() {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the device closed its socket mid-message"));
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "more descriptors than expected on the device socket"));
    }
    Ok(fds)
}

/// A pidfd for `pid` (Linux 5.3+): readable once the process has exited.
pub(crate) fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a freshly created descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Sends `signal` to process `pid`.
pub(crate) fn kill(pid: u32, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: kill takes plain integers; a wrong pid fails with ESRCH.
    if unsafe { libc::kill(pid as libc::pid_t, signal) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Blocks `signals` in the calling thread (and every thread it starts
/// afterwards) and returns a signalfd that reads them instead.
pub(crate) fn block_into_signalfd(signals: &[libc::c_int]) -> io::Result<OwnedFd> {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t we own; sigaddset/pthread_sigmask/
    // signalfd only read or write it and take plain integers.
    let fd = unsafe {
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK)
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a freshly created descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether `signal` is ignored in this process (`SIG_IGN`): what `nohup`,
/// `trap '' INT` and a shell's background jobs leave to the programs they
/// start (an ignored signal stays ignored across fork and exec).
pub(crate) fn signal_ignored(signal: libc::c_int) -> bool {
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: with a null new action, sigaction only writes the current one
    // into `old`, a whole `struct sigaction` we own.
    let r = unsafe { libc::sigaction(signal, std::ptr::null(), old.as_mut_ptr()) };
    // SAFETY: `old` started zeroed and sigaction wrote it when it succeeded.
    r == 0 && unsafe { old.assume_init() }.sa_sigaction == libc::SIG_IGN
}

/// A signal read from a signalfd: its number and the process that sent it
/// (0 when the kernel did).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SignalInfo {
    pub(crate) signal: libc::c_int,
    pub(crate) sender: u32,
}

/// Every signal waiting on a non-blocking signalfd (none: an empty list).
pub(crate) fn read_signals(fd: &OwnedFd) -> Vec<SignalInfo> {
    let mut got = Vec::new();
    loop {
        // SAFETY: signalfd_siginfo is plain data; zero is a valid value.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        // SAFETY: reads at most `size` bytes into `info`, which we own.
        let n = unsafe { libc::read(fd.as_raw_fd(), &mut info as *mut libc::signalfd_siginfo as *mut libc::c_void, size) };
        if n == size as isize {
            got.push(SignalInfo { signal: info.ssi_signo as libc::c_int, sender: info.ssi_pid });
            continue;
        }
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return got; // EAGAIN: nothing more waits
    }
}

/// Sets the process's file mode creation mask, returning the old one.
pub(crate) fn set_umask(mask: u32) -> u32 {
    // SAFETY: umask takes a plain integer and cannot fail.
    unsafe { libc::umask(mask as libc::mode_t) as u32 }
}

/// This process's parent.
pub(crate) fn parent_pid() -> u32 {
    // SAFETY: getppid takes nothing and cannot fail.
    unsafe { libc::getppid() as u32 }
}

/// A pipe, both ends close-on-exec: (read end, write end).
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array we pass.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// waitpid on a child: its status once it has exited (`None` if it runs
/// and `block` is false).
pub(crate) fn wait_pid(pid: u32, block: bool) -> io::Result<Option<std::process::ExitStatus>> {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes one int we own.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, if block { 0 } else { libc::WNOHANG }) };
        match r {
            0 => return Ok(None),
            r if r > 0 => return Ok(Some(std::process::ExitStatus::from_raw(status))),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

/// One write(2) of a message to standard error, with no lock (for a forked
/// child, where another thread of the parent may have held std's).
pub(crate) fn write_stderr(msg: &str) {
    // SAFETY: writes the bytes of a live string to fd 2.
    let _ = unsafe { libc::write(2, msg.as_ptr() as *const libc::c_void, msg.len()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eventfd_wakes_poll_and_drains() {
        let e = EventFd::new().unwrap();
        assert_eq!(poll_fds(&[(e.raw(), libc::POLLIN)], Some(Duration::ZERO)).unwrap(), vec![0]);
        e.signal();
        e.signal();
        assert_ne!(poll_fds(&[(e.raw(), libc::POLLIN)], Some(Duration::ZERO)).unwrap()[0] & libc::POLLIN, 0);
        e.drain();
        assert_eq!(poll_fds(&[(e.raw(), libc::POLLIN)], Some(Duration::from_millis(1))).unwrap(), vec![0]);
    }

    #[test]
    fn descriptors_cross_a_socket() {
        let (a, b) = UnixStream::pair().unwrap();
        let e = EventFd::new().unwrap();
        send_with_fds(&a, b"hello!!!", &[e.raw(), e.raw()]).unwrap();
        let mut buf = [0u8; 8];
        let fds = recv_with_fds(&b, &mut buf, 2).unwrap();
        assert_eq!(&buf, b"hello!!!");
        assert_eq!(fds.len(), 2);
        // The received descriptor is the same eventfd.
        let got = EventFd::from_owned(fds.into_iter().next().unwrap());
        got.signal();
        assert_ne!(poll_fds(&[(e.raw(), libc::POLLIN)], Some(Duration::ZERO)).unwrap()[0] & libc::POLLIN, 0);
    }

    #[test]
    fn a_closed_peer_is_seen() {
        let (a, b) = UnixStream::pair().unwrap();
        assert!(!peer_closed(&a));
        drop(b);
        assert!(peer_closed(&a));
    }
}
