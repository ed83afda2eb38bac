use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

/// Wakes a thread blocked in [`crate::IoEngine::wait`]: an eventfd that
/// worker threads write and the engine reads.
#[derive(Clone, Debug)]
pub struct Waker {
    fd: Arc<OwnedFd>,
}

impl Waker {
    pub fn new() -> io::Result<Self> {
        // SAFETY: eventfd takes plain integers and returns a new fd or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a freshly created descriptor that nothing else owns.
        Ok(Waker { fd: Arc::new(unsafe { OwnedFd::from_raw_fd(fd) }) })
    }

    /// Wakes the waiting thread (any number of wakes before it reads
    /// collapse into one).
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our eventfd. It can only
        // fail if the counter would overflow, which a reader prevents.
        unsafe { libc::write(self.fd.as_raw_fd(), &one as *const u64 as *const libc::c_void, 8) };
    }

    /// Blocks until woken, and resets the counter.
    pub fn wait_blocking(&self) {
        let mut value: u64 = 0;
        loop {
            // SAFETY: reads 8 bytes into a valid u64 from our eventfd.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), &mut value as *mut u64 as *mut libc::c_void, 8) };
            if n == 8 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return;
            }
        }
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
