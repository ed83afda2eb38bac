//! Zero-copy socket sends from memory this process maps: io_uring's
//! `SEND_ZC` (Linux 6.0), asking the kernel to report whether it copied the
//! bytes after all (`IORING_SEND_ZC_REPORT_USAGE`, Linux 6.2). Each send
//! gives two completions: its result, then a notification once the kernel
//! no longer reads the pages; the notification's result carries
//! `IORING_NOTIF_USAGE_ZC_COPIED` when the data was copied (on loopback it
//! always is: the receiving socket is on this host; a NIC that gathers from
//! user pages sends them as they are).
//!
//! The notification comes only once the peer has acknowledged the data (TCP
//! frees its segments then), so [`ZcSender::send`] waits for the result
//! alone and keeps the buffer until its notifications arrive: they are
//! taken as they come, on later sends, and [`ZcSender::settle`] waits for
//! the rest. Waiting for each notification before answering on would hold
//! a response's next bytes behind the client's delayed ACK (~40 ms a
//! request on memcached's `get`, whose END line follows the payload).

use io_uring::{cqueue, opcode, types, IoUring};
use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// `IORING_SEND_ZC_REPORT_USAGE` (include/uapi/linux/io_uring.h): the
/// notification says whether the kernel copied.
const SEND_ZC_REPORT_USAGE: u16 = 1 << 3;
/// `IORING_NOTIF_USAGE_ZC_COPIED`: set in a notification's result when the
/// kernel copied the data.
const NOTIF_USAGE_ZC_COPIED: u32 = 1 << 31;
/// The largest part sent by one request.
const MAX_PART_BYTES: usize = 1 << 30;
/// Sends whose notifications may be outstanding at once; the next send
/// waits for the oldest beyond it (the ring's completion queue holds twice
/// the ring's entries).
const MAX_UNSETTLED_PARTS: usize = 32;
/// Bytes kept for outstanding notifications at most; beyond them a send
/// waits for notifications first.
const MAX_UNSETTLED_BYTES: u64 = 64 << 20;
/// The user data of cancel requests (part numbers count up from 0).
const CANCEL_USER_DATA: u64 = u64::MAX;

/// What zero-copy sends did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZcSent {
    pub bytes: u64,
    /// Bytes the kernel's notifications said it copied after all.
    pub copied_bytes: u64,
}

/// A buffer the kernel may read after [`ZcSender::send`] returned.
///
/// # Safety
/// `as_ref()` gives the same bytes at every call, at an address that does not
/// change when the value moves (heap memory or a mapping it owns or keeps
/// alive, not bytes stored inline), unchanged and valid until the value is dropped.
pub unsafe trait ZcBuf: AsRef<[u8]> {}

/// A small io_uring that sends from memory with `SEND_ZC`, one send at a
/// time. Each buffer `B` is kept until the kernel's notifications for it
/// say it no longer reads it; then it is dropped (an owned mapping unmaps
/// itself then).
pub struct ZcSender<B: ZcBuf> {
    ring: IoUring,
    next_part: u64,
    next_buffer: u64,
    /// Per part sent whose last completion has not come (its result, or the
    /// notification after a result with more to come): its buffer and bytes.
    parts: HashMap<u64, (u64, u64)>,
    /// Per buffer kept: the buffer and how many of its parts are not yet notified.
    buffers: HashMap<u64, (B, usize)>,
    /// Bytes of the parts not yet notified.
    unsettled_bytes: u64,
    /// Notified so far: bytes, and bytes the kernel said it copied.
    settled: ZcSent,
}

/// Whether this kernel's io_uring has `SEND_ZC` (a small ring, probed).
pub fn send_zc_supported() -> io::Result<()> {
    has_send_zc(&IoUring::new(2)?)
}

fn has_send_zc(ring: &IoUring) -> io::Result<()> {
    let mut probe = io_uring::Probe::new();
    ring.submitter().register_probe(&mut probe)?;
    if !probe.is_supported(opcode::SendZc::CODE) {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "this kernel's io_uring has no SEND_ZC (Linux 6.0 or later)"));
    }
    Ok(())
}

impl<B: ZcBuf> ZcSender<B> {
    /// A ring for zero-copy sends, or why this kernel cannot do them.
    pub fn new() -> io::Result<ZcSender<B>> {
        let ring = IoUring::new(MAX_UNSETTLED_PARTS as u32)?;
        has_send_zc(&ring)?;
        Ok(ZcSender {
            ring,
            next_part: 0,
            next_buffer: 0,
            parts: HashMap::new(),
            buffers: HashMap::new(),
            unsettled_bytes: 0,
            settled: ZcSent::default(),
        })
    }

    /// Sends all of `buf` on the connected socket `fd` (`flags`: send(2)'s,
    /// MSG_NOSIGNAL added), part by part, waiting for each part's result
    /// (the bytes are then queued on the socket, so what is sent next
    /// follows them) but not its notification: `buf` is kept until then.
    /// Returns the bytes sent. A part that waits longer than `timeout` for
    /// room on the socket (a peer that stopped reading: io_uring does not
    /// apply the socket's send timeout) is cancelled: `TimedOut`.
    pub fn send(&mut self, fd: RawFd, buf: B, flags: i32, timeout: Duration) -> io::Result<u64> {
        self.reap(None)?;
        let (ptr, len) = (buf.as_ref().as_ptr(), buf.as_ref().len());
        let id = self.next_buffer;
        self.next_buffer += 1;
        // Owed once for the send itself: no part's last completion may drop it while more
        // parts are still to be sent from it.
        self.buffers.insert(id, (buf, 1));
        // Every way out of the parts goes past the send's own hold on the buffer, below (a `?`
        // there kept it until the sender was dropped).
        let result = self.send_parts(fd, (ptr, len), flags, timeout, id);
        if let Some((_, owed)) = self.buffers.get_mut(&id) {
            *owed -= 1;
        }
        self.release_if_done(id);
        result
    }

    /// The parts of buffer `id` (`ptr`, `len`), each waited for: the bytes sent.
    fn send_parts(&mut self, fd: RawFd, (ptr, len): (*const u8, usize), flags: i32, timeout: Duration, id: u64) -> io::Result<u64> {
        let mut sent = 0usize;
        loop {
            if sent == len {
                return Ok(sent as u64);
            }
            let deadline = Instant::now() + timeout;
            while self.parts.len() >= MAX_UNSETTLED_PARTS || self.unsettled_bytes >= MAX_UNSETTLED_BYTES {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "earlier sends' notifications did not come in time"));
                }
                self.wait(left)?;
                self.reap(None)?;
            }
            let part = (len - sent).min(MAX_PART_BYTES);
            let part_id = self.next_part;
            self.next_part += 1;
            // SAFETY: the pointer and length lie within `buf` (ZcBuf: the same bytes at the
            // same address wherever the value moves), which `self.buffers` owns until every
            // part of it has had its last completion (`reap`: owed from submission, so a
            // part cancelled and not yet answered keeps it); a buffer still owed one when the
            // sender is dropped is leaked, never freed.
            let sqe = opcode::SendZc::new(types::Fd(fd), unsafe { ptr.add(sent) }, part as u32).flags(flags | libc::MSG_NOSIGNAL).zc_flags(SEND_ZC_REPORT_USAGE).build().user_data(part_id);
            // SAFETY: as above: the memory the entry points at outlives the request.
            if unsafe { self.ring.submission().push(&sqe) }.is_err() {
                return Err(io::Error::other("the SEND_ZC ring is full"));
            }
            self.parts.insert(part_id, (id, 0));
            if let Some((_, owed)) = self.buffers.get_mut(&id) {
                *owed += 1;
            }
            let deadline = Instant::now() + timeout;
            let r = loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    self.cancel(part_id)?;
                    break -libc::ETIMEDOUT;
                }
                self.wait(left)?;
                if let Some(r) = self.reap(Some(part_id))? {
                    break r;
                }
            };
            match r {
                n if n > 0 => sent += n as usize,
                0 => return Err(io::Error::new(io::ErrorKind::WriteZero, "SEND_ZC sent nothing")),
                e if -e == libc::EINTR => {}
                e if -e == libc::ETIMEDOUT => return Err(io::Error::new(io::ErrorKind::TimedOut, "the peer took no data for the send timeout: the send was cancelled")),
                e if -e == libc::EINVAL => return Err(io::Error::new(io::ErrorKind::Unsupported, "SEND_ZC refused its usage report (Linux 6.2 or later)")),
                e => return Err(io::Error::from_raw_os_error(-e)),
            }
        }
    }

    /// Drops buffer `id` if none of its parts still waits for a notification.
    fn release_if_done(&mut self, id: u64) {
        if self.buffers.get(&id).is_some_and(|(_, owed)| *owed == 0) {
            self.buffers.remove(&id);
        }
    }

    /// Takes the completions there are (submitting what is queued);
    /// returns the result of part `want` if it came.
    fn reap(&mut self, want: Option<u64>) -> io::Result<Option<i32>> {
        self.ring.submit()?;
        let mut wanted = None;
        let done: Vec<(u64, i32, u32)> = self.ring.completion().map(|c| (c.user_data(), c.result(), c.flags())).collect();
        for (part_id, result, flags) in done {
            if cqueue::notif(flags) {
                let Some((buffer, bytes)) = self.parts.remove(&part_id) else { continue };
                self.unsettled_bytes -= bytes;
                self.settled.bytes += bytes;
                if result as u32 & NOTIF_USAGE_ZC_COPIED != 0 {
                    self.settled.copied_bytes += bytes;
                }
                if let Some((_, owed)) = self.buffers.get_mut(&buffer) {
                    *owed -= 1;
                }
                self.release_if_done(buffer);
                continue;
            }
            if Some(part_id) == want {
                wanted = Some(result);
            }
            if cqueue::more(flags) {
                // A notification is due: the part stays owed until it comes (a negative
                // result sends no bytes).
                let bytes = result.max(0) as u64;
                if let Some(p) = self.parts.get_mut(&part_id) {
                    p.1 = bytes;
                    self.unsettled_bytes += bytes;
                }
            } else if let Some((buffer, _)) = self.parts.remove(&part_id) {
                // Its last completion: the kernel is done with its bytes.
                if let Some((_, owed)) = self.buffers.get_mut(&buffer) {
                    *owed -= 1;
                }
                self.release_if_done(buffer);
            }
        }
        Ok(wanted)
    }

    /// Waits up to `left` for a completion (submitting what is queued).
    fn wait(&mut self, left: Duration) -> io::Result<()> {
        let ts = types::Timespec::new().sec(left.as_secs()).nsec(left.subsec_nanos());
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Cancels part `part_id`'s send (its result, and any notification, are
    /// taken as they come like any other's: its buffer is kept until then,
    /// having been owed since the part was submitted).
    fn cancel(&mut self, part_id: u64) -> io::Result<()> {
        let sqe = opcode::AsyncCancel::new(part_id).build().user_data(CANCEL_USER_DATA);
        // SAFETY: a cancel entry holds no memory of ours.
        unsafe { self.ring.submission().push(&sqe) }.map_err(|_| io::Error::other("the SEND_ZC ring is full"))?;
        self.ring.submit()?;
        Ok(())
    }

    /// Waits up to `limit` for every outstanding notification (each buffer
    /// is dropped as its last arrives); false if some did not come in time
    /// (a peer that stopped acknowledging): those buffers are kept.
    pub fn settle(&mut self, limit: Duration) -> io::Result<bool> {
        let deadline = Instant::now() + limit;
        while !self.parts.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            self.wait(left)?;
            self.reap(None)?;
        }
        Ok(true)
    }

    /// What the notifications taken so far said.
    pub fn settled(&self) -> ZcSent {
        self.settled
    }
}

impl<B: ZcBuf> Drop for ZcSender<B> {
    fn drop(&mut self) {
        if self.settle(Duration::from_secs(1)).unwrap_or(false) {
            return;
        }
        // The kernel may still read these: never free them. (A peer that
        // stopped acknowledging; bounded by MAX_UNSETTLED_BYTES a sender.)
        // Said without eprintln!, which panics when stderr is closed (a server's may be).
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "peerpath: SEND_ZC buffers still owed a notification when their ring closed, kept, not freed: {}", self.buffers.len());
        for (_, (b, _)) in self.buffers.drain() {
            std::mem::forget(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::rc::Rc;

    /// A buffer the test still sees (to tell when the sender dropped it).
    struct Held(Rc<Vec<u8>>);
    impl AsRef<[u8]> for Held {
        fn as_ref(&self) -> &[u8] {
            &self.0
        }
    }
    // SAFETY: the bytes are the Vec's, on the heap, shared by no writer.
    unsafe impl ZcBuf for Held {}

    /// Over loopback every byte arrives, in order, and the kernel reports
    /// copying them (the receiver is on this host); each buffer is dropped
    /// once its notifications have come, not before.
    #[test]
    fn loopback_sends_arrive_in_order_and_buffers_are_kept_until_notified() {
        let mut z: ZcSender<Held> = match ZcSender::new() {
            Ok(z) => z,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let pieces: Vec<Rc<Vec<u8>>> = (0..40u32).map(|p| Rc::new((0..(75_000 + p * 1_001)).map(|i| (i * 7 + i / 977 + p) as u8).collect())).collect();
        let want: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
        let reader = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            got
        });
        let s = std::net::TcpStream::connect(addr).unwrap();
        for p in &pieces {
            match z.send(s.as_raw_fd(), Held(p.clone()), 0, Duration::from_secs(20)) {
                Ok(n) => assert_eq!(n, p.len() as u64),
                Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                    eprintln!("skipped: {e}");
                    return;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(z.parts.len() <= MAX_UNSETTLED_PARTS);
        assert!(z.settle(Duration::from_secs(20)).unwrap(), "notifications came");
        assert!(pieces.iter().all(|p| Rc::strong_count(p) == 1), "every buffer dropped once notified");
        drop(s);
        let sent = z.settled();
        assert_eq!(sent.bytes, want.len() as u64);
        assert_eq!(sent.copied_bytes, want.len() as u64, "loopback copies");
        assert!(reader.join().unwrap() == want);
        // A closed peer: an error, not a signal.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        drop(l.accept().unwrap());
        drop(l);
        let mut failed = false;
        for _ in 0..50 {
            if z.send(s.as_raw_fd(), Held(pieces[0].clone()), 0, Duration::from_secs(20)).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed, "sending to a closed peer kept succeeding");
        // A peer that takes nothing: the send gives up after its timeout.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_peer, _) = l.accept().unwrap();
        let big = Held(Rc::new(vec![7u8; 64 << 20]));
        let t = Instant::now();
        let e = z.send(s.as_raw_fd(), big, 0, Duration::from_millis(300)).expect_err("a peer that reads nothing");
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    }
}
