use crate::{Completion, EngineKind, FixedBufferStats, FixedSpan, IoBuf, IoEngine, IoOp, Waker};
use io_uring::{opcode, types, IoUring, Submitter};
use std::any::Any;
use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;

const WAKER_TOKEN: u64 = u64::MAX;

/// Slots of the (sparse) fixed-buffer table: a pool's buffers take one
/// each, a large region a few (its doubling prefixes).
const FIXED_SLOTS: u32 = 256;
/// A large mapping is registered by prefixes, the first this long and each
/// next twice the last (capped at the mapping): pinning faults pages in, and
/// a job that uses the first tens of MiB of a 512 MiB device memory should
/// not allocate all of it. Prefixes overlap; a transfer takes the shortest
/// that covers it, so no slot is ever replaced while requests use it.
const MIN_FIXED_PREFIX: usize = 8 << 20;
/// The kernel's limit on one registered buffer (`io_buffer_validate`: 1 GiB).
const MAX_FIXED_BYTES: usize = 1 << 30;

struct Pending<B> {
    token: u64,
    op: IoOp,
    fd: RawFd,
    offset: Option<u64>,
    len: usize,
    done: usize,
    /// Index of the registered buffer the transfer lies in, if any.
    fixed: Option<u16>,
    buf: B,
}

/// The ring's fixed-buffer table: mappings registered on first use (pages
/// pinned once, not at every transfer, as SPDK and fio's `fixedbufs` do).
struct FixedTable {
    /// Whether the kernel gave us a sparse table (Linux 5.19+).
    enabled: bool,
    next_slot: u32,
    /// Registered prefixes by mapping start address: (bytes, slot).
    spans: HashMap<usize, Vec<(usize, u16)>>,
    /// Mappings the kernel refused to register; not tried again.
    refused_bases: Vec<usize>,
    /// Keeps registered mappings mapped until the ring (declared before this
    /// table in the engine, so dropped first) has released them.
    owners: Vec<Arc<dyn Any + Send + Sync>>,
    stats: FixedBufferStats,
}

impl FixedTable {
    fn new(ring: &IoUring) -> Self {
        let mut stats = FixedBufferStats::default();
        let enabled = match ring.submitter().register_buffers_sparse(FIXED_SLOTS) {
            Ok(()) => true,
            Err(e) => {
                stats.refused = Some(format!("no sparse fixed-buffer table (Linux 5.19+): {e}"));
                false
            }
        };
        FixedTable { enabled, next_slot: 0, spans: HashMap::new(), refused_bases: Vec::new(), owners: Vec::new(), stats }
    }

    /// The registered buffer that `ptr..ptr + len` lies in, registering a
    /// prefix of its mapping first if none covers it yet.
    fn slot_for(&mut self, submitter: &Submitter<'_>, span: Option<FixedSpan>, ptr: *const u8, len: usize) -> Option<u16> {
        let slot = self.lookup(submitter, span, ptr, len);
        if slot.is_some() {
            self.stats.fixed_transfers += 1;
        } else {
            self.stats.other_transfers += 1;
        }
        slot
    }

    fn lookup(&mut self, submitter: &Submitter<'_>, span: Option<FixedSpan>, ptr: *const u8, len: usize) -> Option<u16> {
        let span = span?;
        let end = (ptr as usize).checked_sub(span.base as usize)? + len;
        let mut prefix = MIN_FIXED_PREFIX;
        while prefix < end {
            prefix *= 2;
        }
        self.covering(submitter, span, end, prefix)
    }

    /// A registered prefix of `span` covering its first `end` bytes:
    /// registers the first `prefix` bytes if none does yet.
    fn covering(&mut self, submitter: &Submitter<'_>, span: FixedSpan, end: usize, prefix: usize) -> Option<u16> {
        if !self.enabled || end > span.len || end > MAX_FIXED_BYTES {
            return None;
        }
        let base = span.base as usize;
        if let Some(&(_, slot)) = self.spans.get(&base).and_then(|list| list.iter().find(|(l, _)| *l >= end)) {
            return Some(slot);
        }
        if self.refused_bases.contains(&base) || self.next_slot == FIXED_SLOTS {
            return None;
        }
        let prefix = prefix.max(end).min(span.len).min(MAX_FIXED_BYTES);
        let iov = libc::iovec { iov_base: span.base as *mut libc::c_void, iov_len: prefix };
        let started = peerpath_metrics::thread_cpu_now();
        // SAFETY: base..base + prefix lies in a mapping that span.owner keeps
        // mapped; the owner is stored below and outlives the ring, which
        // unpins the pages when it is dropped.
        let registered = unsafe { submitter.register_buffers_update(self.next_slot, &[iov], None) };
        self.stats.registration_cpu_s += peerpath_metrics::thread_cpu_now().minus(&started).total_s();
        match registered {
            Ok(()) => {
                let slot = self.next_slot as u16;
                self.next_slot += 1;
                let list = self.spans.entry(base).or_default();
                // Bytes registered: each mapping's longest prefix (a longer
                // prefix of the same mapping re-pins the shorter one's pages).
                let before = list.iter().map(|(l, _)| *l).max().unwrap_or(0);
                list.push((prefix, slot));
                list.sort_unstable();
                self.owners.push(span.owner);
                self.stats.registered_bytes += prefix.saturating_sub(before) as u64;
                Some(slot)
            }
            Err(e) => {
                self.refused_bases.push(base);
                let why = if e.raw_os_error() == Some(libc::ENOMEM) {
                    format!("{e}: pinned memory is over RLIMIT_MEMLOCK (ulimit -l); transfers pin pages one by one instead")
                } else {
                    format!("{e}: the kernel would not pin this memory; transfers pin pages one by one instead")
                };
                self.stats.refused.get_or_insert(format!("registering {} MiB failed: {why}", prefix >> 20));
                None
            }
        }
    }
}

/// io_uring engine. Buffers that offer a [`FixedSpan`] (pool buffers,
/// emulated device memory) are registered with the ring on first use and
/// moved with READ_FIXED/WRITE_FIXED; others (P2P memory, which cannot be
/// long-term pinned, and one-off buffers) with plain READ/WRITE.
pub struct UringEngine<B> {
    ring: IoUring,
    fixed: FixedTable,
    slots: Vec<Option<Pending<B>>>,
    free_slots: Vec<usize>,
    unsubmitted: usize,
    waker_armed: bool,
    waker_value: Box<u64>,
    /// Eventfds whose signal also ends a wait (devices' completion
    /// signals), each with a one-shot poll in the ring while armed; user
    /// data `WATCH_TOKEN_BASE - index`. Entries are never removed (an
    /// index stays its token); an unwatched one keeps `fd` None.
    watched: Vec<Watched>,
    /// Descriptors whose requests go to io-wq (IOSQE_ASYNC).
    kernel_workers: Vec<RawFd>,
    /// Transfers the kernel cancelled that were done by plain syscalls, and their bytes.
    by_syscalls: (u64, u64),
}

struct Watched {
    fd: Option<RawFd>,
    armed: bool,
}

/// User data of cancel requests (their own completions are ignored).
const CANCEL_TOKEN: u64 = WAKER_TOKEN - 1;
/// User data of the polls on watched eventfds count down from here.
const WATCH_TOKEN_BASE: u64 = WAKER_TOKEN - 2;
/// At most this many watched descriptors (devices of one job).
const MAX_WATCHED: usize = 1 << 16;

// SAFETY: the ring and the raw pointers it holds into our buffers are only
// used by the thread that owns the engine; moving the whole engine to
// another thread moves them together.
unsafe impl<B: Send> Send for UringEngine<B> {}

impl<B: IoBuf> UringEngine<B> {
    pub fn new(queue_depth: u32) -> io::Result<Self> {
        // One extra entry for the armed waker read.
        let ring = IoUring::new((queue_depth + 1).next_power_of_two())?;
        Ok(UringEngine {
            fixed: FixedTable::new(&ring),
            ring,
            slots: Vec::new(),
            free_slots: Vec::new(),
            unsubmitted: 0,
            waker_armed: false,
            waker_value: Box::new(0),
            watched: Vec::new(),
            kernel_workers: Vec::new(),
            by_syscalls: (0, 0),
        })
    }

    fn push(&mut self, entry: io_uring::squeue::Entry) -> io::Result<()> {
        // SAFETY: every entry points into a buffer owned by a Pending slot (or
        // into waker_value), which lives until its completion is reaped.
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            self.ring.submit()?;
            self.unsubmitted = 0;
        }
        self.unsubmitted += 1;
        Ok(())
    }

    fn push_slot(&mut self, slot: usize) -> io::Result<()> {
        let p = self.slots[slot].as_mut().expect("pending slot");
        // SAFETY: done < len <= capacity, so the pointer stays in the buffer.
        let ptr = unsafe { p.buf.io_ptr().add(p.done) };
        // The engine's transfers are buffers of the pool or device memory, far below 4 GiB; a
        // longer one would be cut short here and its short read taken for the end of the file.
        let len = u32::try_from(p.len - p.done).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "one transfer of 4 GiB or more"))?;
        let offset = p.offset.map(|o| o + p.done as u64).unwrap_or(u64::MAX); // -1: current position
        let flags = if self.kernel_workers.contains(&p.fd) { io_uring::squeue::Flags::ASYNC } else { io_uring::squeue::Flags::empty() };
        let fd = types::Fd(p.fd);
        let entry = match (p.op, p.fixed) {
            (IoOp::Read, None) => opcode::Read::new(fd, ptr, len).offset(offset).build(),
            (IoOp::Write, None) => opcode::Write::new(fd, ptr, len).offset(offset).build(),
            (IoOp::Read, Some(index)) => opcode::ReadFixed::new(fd, ptr, len, index).offset(offset).build(),
            (IoOp::Write, Some(index)) => opcode::WriteFixed::new(fd, ptr, len, index).offset(offset).build(),
        }
        .flags(flags)
        .user_data(slot as u64);
        self.push(entry)
    }

    fn arm_waker(&mut self, waker: &Waker) -> io::Result<()> {
        if !self.waker_armed {
            let ptr = &mut *self.waker_value as *mut u64 as *mut u8;
            let entry = opcode::Read::new(types::Fd(waker.raw_fd()), ptr, 8).offset(u64::MAX).build().user_data(WAKER_TOKEN);
            self.push(entry)?;
            self.waker_armed = true;
        }
        // Watched eventfds: a poll, not a read (a device's eventfd is
        // non-blocking, and a read of it in the ring would end at once
        // with EAGAIN); the signal is consumed when the poll fires.
        for i in 0..self.watched.len() {
            if let Watched { fd: Some(fd), armed: false } = self.watched[i] {
                let entry = opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32).build().user_data(WATCH_TOKEN_BASE - i as u64);
                self.push(entry)?;
                self.watched[i].armed = true;
            }
        }
        Ok(())
    }

    /// A completion of a watched eventfd's poll: consumes the signal.
    /// Returns whether it should end the wait (false once unwatched).
    fn on_watch_fired(&mut self, user_data: u64) -> bool {
        let w = &mut self.watched[(WATCH_TOKEN_BASE - user_data) as usize];
        w.armed = false;
        let Some(fd) = w.fd else { return false };
        let mut value: u64 = 0;
        // SAFETY: reads at most 8 bytes into a valid u64 from a descriptor
        // the caller keeps open while it is watched; an empty non-blocking
        // eventfd just fails with EAGAIN.
        unsafe { libc::read(fd, &mut value as *mut u64 as *mut libc::c_void, 8) };
        true
    }

    fn is_watch_token(&self, user_data: u64) -> bool {
        user_data <= WATCH_TOKEN_BASE && WATCH_TOKEN_BASE - user_data < self.watched.len() as u64
    }
}

impl<B: IoBuf> IoEngine<B> for UringEngine<B> {
    fn kind(&self) -> EngineKind {
        EngineKind::IoUring
    }

    fn submit(&mut self, op: IoOp, fd: RawFd, offset: Option<u64>, len: usize, buf: B, token: u64)
        -> Result<(), (B, io::Error)> {
        assert!(len <= buf.io_capacity(), "request of {len} bytes into a {}-byte buffer", buf.io_capacity());
        if let Err(e) = crate::engine::check_direct_io(fd, &buf) {
            return Err((buf, e));
        }
        let mut buf = buf;
        let ptr = buf.io_ptr();
        let fixed = self.fixed.slot_for(&self.ring.submitter(), buf.fixed_span(), ptr, len);
        let pending = Pending { token, op, fd, offset, len, done: 0, fixed, buf };
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.slots[s] = Some(pending);
                s
            }
            None => {
                self.slots.push(Some(pending));
                self.slots.len() - 1
            }
        };
        if let Err(e) = self.push_slot(slot) {
            let p = self.slots[slot].take().expect("just stored");
            self.free_slots.push(slot);
            return Err((p.buf, e));
        }
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.slots.len() - self.free_slots.len()
    }

    fn copy_on_kernel_workers(&mut self, fd: RawFd) {
        if !self.kernel_workers.contains(&fd) {
            self.kernel_workers.push(fd);
        }
    }

    fn wait(&mut self, out: &mut Vec<Completion<B>>, waker: &Waker) -> io::Result<()> {
        self.arm_waker(waker)?;
        let before = out.len();
        let mut woken = false;
        while out.len() == before && !woken {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            self.unsubmitted = 0;
            let cqes: Vec<(u64, i32)> = self.ring.completion().map(|c| (c.user_data(), c.result())).collect();
            for (user_data, res) in cqes {
                if user_data == WAKER_TOKEN {
                    self.waker_armed = false;
                    woken = true;
                    continue;
                }
                if user_data == CANCEL_TOKEN {
                    continue; // a cancel request's own completion
                }
                if self.is_watch_token(user_data) {
                    woken |= self.on_watch_fired(user_data);
                    continue;
                }
                let slot = user_data as usize;
                let finished = {
                    let p = self.slots[slot].as_mut().expect("completion for a live slot");
                    if res == -libc::ECANCELED {
                        // This engine cancels no transfer before its drop: the kernel could not
                        // start an io-wq worker for it (the process's or user's thread limit, a
                        // cgroup's pids.max). It is done here by plain syscalls, as the fallback
                        // engine does every transfer; the report says so.
                        self.by_syscalls.0 += 1;
                        self.by_syscalls.1 += (p.len - p.done) as u64;
                        Some(finish_by_syscalls(p))
                    } else if res < 0 {
                        Some(Err(crate::engine::PartlyWritten::wrap(io::Error::from_raw_os_error(-res), p.op, p.offset, p.done)))
                    } else if res == 0 && p.op == IoOp::Write {
                        Some(Err(crate::engine::PartlyWritten::wrap(io::Error::new(io::ErrorKind::WriteZero, "write returned 0 bytes"), p.op, p.offset, p.done)))
                    } else {
                        p.done += res as usize;
                        // Reads complete on their first result: short means end of file.
                        if p.op == IoOp::Read || p.done >= p.len {
                            Some(Ok(p.done))
                        } else {
                            None
                        }
                    }
                };
                match finished {
                    Some(result) => {
                        let p = self.slots[slot].take().expect("live slot");
                        self.free_slots.push(slot);
                        out.push(Completion { token: p.token, op: p.op, buf: p.buf, result });
                    }
                    // A short write: the rest is sent. Where it cannot be queued, the transfer
                    // ends with that error (the completions after it in this batch are still
                    // handled: dropped, their slots would wait for completions already taken).
                    None => {
                        if let Err(e) = self.push_slot(slot) {
                            let p = self.slots[slot].take().expect("live slot");
                            self.free_slots.push(slot);
                            let result = Err(crate::engine::PartlyWritten::wrap(e, p.op, p.offset, p.done));
                            out.push(Completion { token: p.token, op: p.op, buf: p.buf, result });
                        }
                    }
                }
            }
            if woken {
                break;
            }
        }
        Ok(())
    }

    fn watch_eventfd(&mut self, fd: RawFd) -> bool {
        if self.watched.len() >= MAX_WATCHED {
            return false;
        }
        self.watched.push(Watched { fd: Some(fd), armed: false });
        true
    }

    fn unwatch_eventfd(&mut self, fd: RawFd) {
        for i in 0..self.watched.len() {
            if self.watched[i].fd == Some(fd) {
                self.watched[i].fd = None;
                if self.watched[i].armed {
                    // Its completion (cancelled, or fired meanwhile) is reaped
                    // by a later wait or by drop, and ignored.
                    let entry = opcode::PollRemove::new(WATCH_TOKEN_BASE - i as u64).build().user_data(CANCEL_TOKEN);
                    let _ = self.push(entry);
                }
            }
        }
    }

    fn register_ahead(&mut self, span: FixedSpan, bytes: usize) {
        let bytes = bytes.min(span.len);
        self.fixed.covering(&self.ring.submitter(), span, bytes, bytes);
    }

    fn fixed_buffers(&self) -> Option<FixedBufferStats> {
        Some(self.fixed.stats.clone())
    }

    fn done_by_syscalls(&self) -> Option<String> {
        let (n, bytes) = self.by_syscalls;
        (n > 0).then(|| {
            format!(
                "io_uring transfers cancelled by the kernel (ECANCELED: no io-wq worker thread could start for them, at the process's or user's thread limit or a cgroup's pids.max) and done by pread/pwrite on the orchestrating thread instead: {n}, of {bytes} bytes in all"
            )
        })
    }
}

/// The rest of `p`'s transfer by `pread`/`pwrite` on this thread: all the
/// bytes it moved, or its error (a sequential write's, with how many went out).
fn finish_by_syscalls<B: IoBuf>(p: &mut Pending<B>) -> io::Result<usize> {
    // SAFETY: done < len <= capacity (a read completes on its first result, so only a
    // write has bytes done), and the buffer stays in its slot across the call.
    let ptr = unsafe { p.buf.io_ptr().add(p.done) };
    let offset = p.offset.map(|o| o + p.done as u64);
    match crate::sync::transfer_blocking(p.op, p.fd, offset, ptr, p.len - p.done) {
        Ok(n) => Ok(p.done + n),
        Err(e) => {
            let (more, cause) = crate::engine::PartlyWritten::split(e);
            Err(crate::engine::PartlyWritten::wrap(cause, p.op, p.offset, p.done + more))
        }
    }
}

impl<B> UringEngine<B> {
    /// The ring failed while requests may still be in flight: the kernel can
    /// still write into their buffers (an O_DIRECT read's DMA is not stopped
    /// by closing the ring), so none of that memory is given back: the
    /// buffers, the waker's word and the registered mappings are leaked.
    fn leak_what_the_kernel_may_write(&mut self) {
        for p in self.slots.iter_mut().filter_map(Option::take) {
            std::mem::forget(p.buf);
        }
        std::mem::forget(std::mem::replace(&mut self.waker_value, Box::new(0)));
        std::mem::forget(std::mem::take(&mut self.fixed.owners));
    }
}

impl<B> Drop for UringEngine<B> {
    fn drop(&mut self) {
        // Requests still in flight point into buffers we are about to free:
        // wait for the kernel to finish with them first. Each is cancelled
        // (a read of a pipe or socket may never end by itself; an O_DIRECT
        // transfer the kernel has started is not cancelled and is waited
        // for), and so are the armed waker read and device polls (their
        // completions count; the cancels' own do not).
        let armed_watches = self.watched.iter().filter(|w| w.armed).count();
        let live = self.slots.iter().filter(|s| s.is_some()).count() + usize::from(self.waker_armed) + armed_watches;
        if live == 0 {
            return;
        }
        let mut cancels = Vec::new();
        for (slot, _) in self.slots.iter().enumerate().filter(|(_, s)| s.is_some()) {
            cancels.push(opcode::AsyncCancel::new(slot as u64).build().user_data(CANCEL_TOKEN));
        }
        if self.waker_armed {
            cancels.push(opcode::AsyncCancel::new(WAKER_TOKEN).build().user_data(CANCEL_TOKEN));
        }
        for (i, w) in self.watched.iter().enumerate() {
            // An unwatched one whose removal could not be queued is removed here too (a
            // second removal of one already gone fails, harmlessly).
            if w.armed {
                cancels.push(opcode::PollRemove::new(WATCH_TOKEN_BASE - i as u64).build().user_data(CANCEL_TOKEN));
            }
        }
        for entry in cancels {
            // SAFETY: cancel and poll-remove entries reference no memory.
            while unsafe { self.ring.submission().push(&entry) }.is_err() {
                match self.ring.submit() {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => return self.leak_what_the_kernel_may_write(),
                }
            }
        }
        let mut remaining = live;
        while remaining > 0 {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                // A signal (a handler of SIGTERM, SIGUSR1, ...) ends the wait: wait again.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.leak_what_the_kernel_may_write(),
            }
            for c in self.ring.completion() {
                if c.user_data() != CANCEL_TOKEN {
                    remaining = remaining.saturating_sub(1);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use peerpath_mem::AlignedBuf;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::{Duration, Instant};

    /// Runs the test `name` of this binary alone in a child process with `var` set
    /// (where it changes what only a process of its own may: its user, its limits),
    /// and checks it passed within a minute.
    fn in_a_child(name: &str, var: &str) {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(var, "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && said.contains("1 passed"), "{}: {said}", out.status);
        if let Some(skipped) = said.lines().find(|l| l.starts_with("skipped")) {
            println!("{skipped}");
        }
    }

    #[test]
    fn a_transfer_the_kernel_had_no_worker_for_is_done_by_syscalls() {
        const CHILD: &str = "PEERPATH_TEST_URING_NO_WORKERS";
        if std::env::var_os(CHILD).is_none() {
            return in_a_child("uring::tests::a_transfer_the_kernel_had_no_worker_for_is_done_by_syscalls", CHILD);
        }
        // No new thread for this process's user (RLIMIT_NPROC, which root is not held
        // to: root becomes nobody): io-wq's worker cannot start, as under a cgroup's
        // pids.max, and the kernel cancels (ECANCELED) the request it was for.
        // SAFETY: geteuid has no preconditions; setresgid and setresuid change this
        // process's (this child's) credentials, every thread's.
        if unsafe { libc::geteuid() } == 0 && unsafe { libc::setresgid(65534, 65534, 65534) != 0 || libc::setresuid(65534, 65534, 65534) != 0 } {
            return println!("skipped: root could not become nobody ({})", io::Error::last_os_error());
        }
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes the struct it is given; setrlimit reads it.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut limit) }, 0);
        limit.rlim_cur = 1;
        // SAFETY: as above.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &limit) }, 0);
        assert!(std::thread::Builder::new().spawn(|| ()).is_err(), "no thread can start now");
        let mut engine = match UringEngine::<AlignedBuf>::new(4) {
            Ok(e) => e,
            Err(e) => return println!("skipped: no io_uring here ({e})"),
        };
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both are open descriptors owned by nothing else.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // Always to an io-wq worker (IOSQE_ASYNC).
        engine.copy_on_kernel_workers(w.as_raw_fd());
        let mut buf = AlignedBuf::new(4096);
        buf.set_len(4096);
        buf.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        engine.submit(IoOp::Write, w.as_raw_fd(), None, 4096, buf, 7).map_err(|e| e.1).unwrap();
        let waker = Waker::new().unwrap();
        let mut out = Vec::new();
        while out.is_empty() {
            engine.wait(&mut out, &waker).unwrap();
        }
        let c = out.pop().unwrap();
        assert_eq!((c.token, c.op), (7, IoOp::Write));
        assert_eq!(c.result.expect("written all the same"), 4096);
        let said = engine.done_by_syscalls().expect("the engine says a transfer went by syscalls");
        assert!(said.starts_with("io_uring transfers cancelled by the kernel (ECANCELED") && said.ends_with("instead: 1, of 4096 bytes in all"), "{said}");
        let mut back = vec![0u8; 4096];
        // SAFETY: reads at most 4096 bytes into a buffer that long.
        let n = unsafe { libc::read(r.as_raw_fd(), back.as_mut_ptr() as *mut libc::c_void, 4096) };
        assert_eq!(n, 4096);
        assert!(back.iter().enumerate().all(|(i, &b)| b == i as u8));
    }
}
