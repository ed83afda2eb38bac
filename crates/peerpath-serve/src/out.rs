//! What a connection still has to send: its responses queued in order
//! (headers, protocol lines, payloads by reference: a cached object, a
//! file range) and sent without holding a worker while the client is
//! slow. A send waits at most [`PATIENCE`] (the socket's send timeout); a
//! client that takes less than that has its connection handed back to the
//! reactor, which waits in epoll for the socket to be writable, and any
//! worker goes on from where the send stopped. So a client that reads
//! slowly (or not at all: a slow-read attack) costs memory, not a thread;
//! one that takes nothing for the write timeout (`--read-timeout`'s value)
//! is closed. A request is counted once its last byte is sent.
//!
//! The NIC sends its own payloads (devmem); SEND_ZC's sends still wait in
//! their worker (bounded by the write timeout): both first send what is
//! queued here, so nothing overtakes.

use crate::hostcache::Object;
use crate::{Conn, Next};
use std::collections::VecDeque;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest one send waits for the client before the connection is
/// handed back to the reactor (the socket's send timeout; also the most a
/// worker spends sending to one connection at a turn).
pub(crate) const PATIENCE: Duration = Duration::from_millis(50);

/// Queued chunks past which a response waits for what is before it (a
/// `get` of many keys, each a file held open, to a client that is slow).
const MAX_QUEUED: usize = 64;

/// One piece of output.
pub(crate) enum Chunk {
    /// Bytes of this process (a header, a small payload, a protocol line), sent from `.1`.
    Bytes(Vec<u8>, usize),
    /// An object in the host memory cache, bytes `.1..2`.
    Object(Arc<Object>, usize, usize),
    /// `.2` bytes of a file from offset `.1`, read into the worker's
    /// buffer and sent (host mode without the cache).
    Read(File, u64, u64),
    /// The same, by `sendfile(2)`.
    Sendfile(File, u64, u64),
    /// A request answered (its number on the connection): counted once all before it is sent.
    Done(Done, u64),
}

/// A request's figures, counted when its response is sent.
pub(crate) struct Done {
    pub started: Instant,
    pub payload: u64,
    pub copied: u64,
    pub from_host: u64,
    pub status: u16,
}

/// How a turn of sending ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Flushed {
    /// Everything is sent.
    Empty,
    /// The client takes no more for now: wait until its socket is writable.
    Blocked,
    /// The client is gone (or a file shrank): close the connection.
    Failed,
}

/// The output queue of a connection.
#[derive(Default)]
pub(crate) struct Out {
    chunks: VecDeque<Chunk>,
}

impl Out {
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    pub fn push(&mut self, c: Chunk) {
        if !matches!(&c, Chunk::Bytes(b, _) if b.is_empty()) {
            self.chunks.push_back(c);
        }
    }
}

/// Why a send fails: the kernel's error, or a file that shrank under it.
pub(crate) fn shrank() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the file shrank while it was sent")
}

impl Conn<'_> {
    /// Queues `c` after what is queued (the write timeout counts from now
    /// if nothing was).
    pub(crate) fn queue(&mut self, c: Chunk) {
        if self.out.is_empty() {
            self.sent_at = Instant::now();
        }
        self.out.push(c);
    }

    /// Queues bytes of this process (joined to queued bytes before them).
    pub(crate) fn queue_bytes(&mut self, b: &[u8]) {
        match self.out.chunks.back_mut() {
            Some(Chunk::Bytes(v, _)) => v.extend_from_slice(b),
            _ => self.queue(Chunk::Bytes(b.to_vec(), 0)),
        }
    }

    /// Counts a request once its response, queued before this, is sent;
    /// as aborted at once if a send on the connection failed (what was
    /// queued is dropped) or a response the NIC owed on it did.
    pub(crate) fn request_done(&mut self, d: Done) {
        self.requests += 1;
        if self.failed || self.broken {
            self.aborted_from.get_or_insert(self.requests - 1);
            self.shared.aborted(self.over);
        } else {
            self.out.push(Chunk::Done(d, self.requests - 1));
        }
    }

    /// Answers a request that is not read (a refused connection's, one too long or not whole
    /// in time) with what `answer` writes, and closes the connection after it. Counted under
    /// `status` as every answer is: once sent (aborted if it cannot be), its latency from now,
    /// when the server had all it answers from. (These were counted at once with no latency,
    /// 0 us among the others', whether sent or not; a refused connection's not at all.)
    pub(crate) fn refuse_unread(&mut self, status: u16, answer: impl FnOnce(&mut Self)) -> Next {
        let started = Instant::now();
        answer(self);
        self.request_done(Done { started, payload: 0, copied: 0, from_host: 0, status });
        Next::Close
    }

    /// Sends what is queued, each send waiting at most [`PATIENCE`], for at
    /// most about that long in all.
    pub(crate) fn send_turn(&mut self) -> Flushed {
        let start = Instant::now();
        loop {
            match self.send_front() {
                Ok(true) => {}
                Ok(false) if self.out.is_empty() => return Flushed::Empty,
                Ok(false) => return Flushed::Blocked,
                Err(_) => {
                    self.drop_output();
                    return Flushed::Failed;
                }
            }
            if self.out.is_empty() {
                return Flushed::Empty;
            }
            if start.elapsed() >= PATIENCE {
                return Flushed::Blocked;
            }
        }
    }

    /// Sends everything queued, waiting as long as the client takes
    /// something within the write timeout; false if it failed or stopped.
    pub(crate) fn drain(&mut self, until: Option<Instant>) -> bool {
        if self.out.is_empty() {
            return true;
        }
        loop {
            match self.send_turn() {
                Flushed::Empty => return true,
                Flushed::Failed => return false,
                Flushed::Blocked => {}
            }
            let deadline = until.map_or(self.deadline(), |u| u.min(self.deadline()));
            if !self.wait_writable(deadline) {
                self.drop_output();
                return false;
            }
        }
    }

    /// Waits (at most a tick) for the socket to be writable; false if `deadline` has passed.
    fn wait_writable(&self, deadline: Instant) -> bool {
        use rustix::event::{PollFd, PollFlags};
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        let wait = (deadline - now).min(crate::event::TICK);
        let mut fds = [PollFd::new(&self.stream, PollFlags::OUT)];
        let _ = rustix::event::poll(&mut fds, Some(&rustix::event::Timespec { tv_sec: 0, tv_nsec: wait.as_nanos() as _ }));
        true
    }

    /// Sends `bytes` now, after everything queued, with `flags` (MSG_MORE:
    /// SEND_ZC's header), waiting for the client as long as it takes some
    /// within the write timeout; false if it failed or stopped taking.
    pub(crate) fn send_now(&mut self, mut bytes: &[u8], flags: libc::c_int) -> bool {
        if !self.drain(None) {
            return false;
        }
        self.sent_at = Instant::now();
        while !bytes.is_empty() {
            // SAFETY: send from a slice we hold, of its length, on our socket.
            let n = unsafe { libc::send(self.stream.as_raw_fd(), bytes.as_ptr() as *const libc::c_void, bytes.len(), flags | libc::MSG_NOSIGNAL) };
            if n >= 0 {
                self.shared.counters.bytes_written.fetch_add(n as u64, Ordering::Relaxed);
                bytes = &bytes[n as usize..];
                self.sent_at = Instant::now();
                continue;
            }
            if blocked_or(std::io::Error::last_os_error()).is_err() || !self.wait_writable(self.sent_at + self.shared.config.read_timeout) {
                return false;
            }
        }
        true
    }

    /// After a response is queued: sends at once if nothing waited before
    /// it (one turn); a queue grown long behind a slow client is sent
    /// first, whole. False if the connection failed.
    pub(crate) fn send_queued(&mut self, was_empty: bool) -> bool {
        if was_empty {
            return self.send_turn() != Flushed::Failed;
        }
        self.out.chunks.len() < MAX_QUEUED || self.drain(None)
    }

    /// What to do after a request: go on reading (`None`), wait for the
    /// socket to be writable, or close.
    pub(crate) fn after_request(&mut self) -> Option<Next> {
        match self.send_turn() {
            Flushed::Empty => None,
            Flushed::Blocked => Some(Next::Write),
            Flushed::Failed => Some(Next::Close),
        }
    }

    /// The connection fails: queued requests are counted as aborted (they
    /// were counted under their status, 200s, with nothing sent), the rest
    /// dropped, and so is every request answered after this on it.
    pub(crate) fn drop_output(&mut self) {
        self.failed = true;
        for c in std::mem::take(&mut self.out.chunks) {
            if let Chunk::Done(..) = c {
                self.shared.aborted(self.over);
            }
        }
    }

    /// The request at the front is sent: counted, and the client's time (idle,
    /// or a request it pipelined) counts from now, not from before a long response.
    fn count_front(&mut self) {
        if let Some(Chunk::Done(d, request)) = self.out.chunks.pop_front() {
            let latency_at = self.shared.done(d.started.elapsed(), d.payload, d.copied, d.from_host, d.status, self.over);
            // Devmem: the NIC may yet fail to send it; its descriptors keep where its latency is.
            if let Some(ch) = &self.nic {
                ch.counted(request, latency_at);
            }
            self.answered();
        }
    }

    /// One send from the front of the queue: Ok(true) if it made progress,
    /// Ok(false) if the queue is empty or the client took nothing within
    /// [`PATIENCE`].
    fn send_front(&mut self) -> std::io::Result<bool> {
        let progress = match self.out.chunks.front_mut() {
            None => return Ok(false),
            Some(Chunk::Done(..)) => {
                self.count_front();
                return Ok(true);
            }
            Some(Chunk::Bytes(..) | Chunk::Object(..)) => self.send_memory()?,
            Some(Chunk::Sendfile(file, offset, left)) => {
                let mut off = *offset as libc::off_t;
                let want = (*left).min(1 << 30) as usize;
                // SAFETY: sendfile on two descriptors we hold; `off` is a
                // valid offset variable the kernel advances.
                let n = unsafe { libc::sendfile(self.stream.as_raw_fd(), file.as_raw_fd(), &mut off, want) };
                match n {
                    0 => return Err(shrank()),
                    n if n > 0 => {
                        *offset += n as u64;
                        *left -= n as u64;
                        if *left == 0 {
                            self.out.chunks.pop_front();
                        }
                        n as usize
                    }
                    _ => blocked_or(std::io::Error::last_os_error())?,
                }
            }
            Some(Chunk::Read(..)) => self.send_read()?,
        };
        if progress > 0 {
            self.sent_at = Instant::now();
            self.shared.counters.bytes_written.fetch_add(progress as u64, Ordering::Relaxed);
        }
        Ok(progress > 0)
    }

    /// Sends the memory chunks at the front (up to 8) with one sendmsg;
    /// MSG_MORE when a file's bytes follow them.
    fn send_memory(&mut self) -> std::io::Result<usize> {
        let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; 8];
        let mut count = 0;
        let mut more = 0;
        for c in &self.out.chunks {
            let part: &[u8] = match c {
                Chunk::Bytes(b, at) => &b[*at..],
                Chunk::Object(o, at, end) => &o[*at..*end],
                Chunk::Done(..) => continue,
                Chunk::Sendfile(..) => {
                    more = libc::MSG_MORE;
                    break;
                }
                Chunk::Read(..) => break,
            };
            iov[count] = libc::iovec { iov_base: part.as_ptr() as *mut libc::c_void, iov_len: part.len() };
            count += 1;
            if count == iov.len() {
                break;
            }
        }
        // SAFETY: a msghdr (zeroed: no address, no control data) over
        // `count` iovecs of slices the queue holds, unchanged across the
        // call; the kernel reads them only.
        let n = unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = iov.as_mut_ptr();
            msg.msg_iovlen = count as _;
            libc::sendmsg(self.stream.as_raw_fd(), &msg, more | libc::MSG_NOSIGNAL)
        };
        if n < 0 {
            return blocked_or(std::io::Error::last_os_error());
        }
        // Take off what went.
        let mut left = n as usize;
        while let Some(front) = self.out.chunks.front_mut() {
            let (at, end) = match front {
                Chunk::Bytes(b, at) => (at, b.len()),
                Chunk::Object(_, at, end) => (at, *end),
                Chunk::Done(..) if left > 0 => {
                    self.count_front();
                    continue;
                }
                _ => break,
            };
            let take = left.min(end - *at);
            *at += take;
            left -= take;
            if *at < end {
                break;
            }
            self.out.chunks.pop_front();
        }
        Ok(n as usize)
    }

    /// Host mode without the cache: reads the front file's next bytes into
    /// the worker's buffer (at [`crate::PAYLOAD_SKEW`]) and sends them;
    /// what the client does not take yet is kept as bytes of its own.
    fn send_read(&mut self) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let Some(Chunk::Read(file, offset, left)) = self.out.chunks.front_mut() else { return Ok(0) };
        let buf = self.host_buf.get_or_insert_with(crate::host_buffer);
        let buf = &mut buf[crate::PAYLOAD_SKEW..];
        let want = buf.len().min(*left as usize);
        let got = file.read_at(&mut buf[..want], *offset)?;
        if got == 0 {
            return Err(shrank());
        }
        // SAFETY: send from the buffer we hold, of its length, on our socket.
        let n = unsafe { libc::send(self.stream.as_raw_fd(), buf.as_ptr() as *const libc::c_void, got, libc::MSG_NOSIGNAL) };
        if n < 0 {
            // Nothing went: the bytes are read again next time.
            return blocked_or(std::io::Error::last_os_error());
        }
        let n = n as usize;
        *offset += got as u64;
        *left -= got as u64;
        let rest = buf[n..got].to_vec();
        if *left == 0 {
            self.out.chunks.pop_front();
        }
        if !rest.is_empty() {
            self.out.chunks.push_front(Chunk::Bytes(rest, 0));
        }
        Ok(n)
    }
}

/// A send's error: "took nothing in time" is no progress, not a failure.
fn blocked_or(e: std::io::Error) -> std::io::Result<usize> {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => Ok(0),
        _ => Err(e),
    }
}
