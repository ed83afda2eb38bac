use crate::{Completion, EngineKind, IoBuf, IoEngine, IoOp, Waker};
use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

/// The fallback engine: each request runs to completion at submit time with
/// pread/pwrite (read/write without an offset, for pipes), so I/O does not
/// overlap with orchestration; compute workers still run in parallel.
#[derive(Default)]
pub struct SyncEngine<B> {
    done: VecDeque<Completion<B>>,
}

impl<B> SyncEngine<B> {
    pub fn new() -> Self {
        SyncEngine { done: VecDeque::new() }
    }
}

/// Reads `buf.len()` bytes of `fd` at `offset` on the calling thread
/// (`pread`, retrying EINTR), fewer at end of file: the bytes read.
pub fn pread_full(fd: RawFd, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    transfer_blocking(IoOp::Read, fd, Some(offset), buf.as_mut_ptr(), buf.len())
}

/// Runs one transfer to completion, retrying short writes and EINTR. Reads
/// return early at end of file.
pub(crate) fn transfer_blocking(op: IoOp, fd: RawFd, offset: Option<u64>, ptr: *mut u8, len: usize) -> io::Result<usize> {
    let mut done = 0usize;
    while done < len {
        // SAFETY: the caller guarantees ptr..ptr+len is a live buffer it owns
        // for the duration of the call; we pass the unfinished part of it.
        let (p, rest) = (unsafe { ptr.add(done) }, len - done);
        // A stream (no offset) may wait for ever on its other end: a job
        // server's transfers there end when it stops them (crate::stop).
        // SAFETY: as above.
        let stoppable = offset.is_none().then(|| unsafe { crate::stop::stream_transfer(fd, op == IoOp::Write, p, rest) }).flatten();
        let n = stoppable.unwrap_or_else(|| {
            // SAFETY: as above.
            let n = unsafe {
                match (op, offset) {
                    (IoOp::Read, Some(o)) => libc::pread(fd, p as *mut libc::c_void, rest, (o + done as u64) as libc::off_t),
                    (IoOp::Read, None) => libc::read(fd, p as *mut libc::c_void, rest),
                    (IoOp::Write, Some(o)) => libc::pwrite(fd, p as *const libc::c_void, rest, (o + done as u64) as libc::off_t),
                    (IoOp::Write, None) => libc::write(fd, p as *const libc::c_void, rest),
                }
            };
            if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
        });
        let n = match n {
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(crate::engine::PartlyWritten::wrap(err, op, offset, done)),
        };
        if n == 0 {
            if op == IoOp::Write {
                return Err(crate::engine::PartlyWritten::wrap(io::Error::new(io::ErrorKind::WriteZero, "write returned 0 bytes"), op, offset, done));
            }
            break;
        }
        done += n;
        // A positional read that comes back short has hit end of file (an
        // O_DIRECT retry at the unaligned remainder would fail with EINVAL).
        if op == IoOp::Read && offset.is_some() && done < len {
            break;
        }
    }
    Ok(done)
}

impl<B: IoBuf> IoEngine<B> for SyncEngine<B> {
    fn kind(&self) -> EngineKind {
        EngineKind::Syscalls
    }

    fn submit(&mut self, op: IoOp, fd: RawFd, offset: Option<u64>, len: usize, mut buf: B, token: u64)
        -> Result<(), (B, io::Error)> {
        assert!(len <= buf.io_capacity(), "request of {len} bytes into a {}-byte buffer", buf.io_capacity());
        if let Err(e) = crate::engine::check_direct_io(fd, &buf) {
            return Err((buf, e));
        }
        let result = transfer_blocking(op, fd, offset, buf.io_ptr(), len);
        self.done.push_back(Completion { token, op, buf, result });
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.done.len()
    }

    fn wait(&mut self, out: &mut Vec<Completion<B>>, waker: &Waker) -> io::Result<()> {
        if self.done.is_empty() {
            waker.wait_blocking();
        }
        out.extend(self.done.drain(..));
        Ok(())
    }
}
