//! The emulated NIC with memory (seed 002's answer for data movers): a
//! process that owns a memory (a shared-memory file it maps) and sends
//! from it. The server places hot objects in that memory (the kernel
//! copies them from the file with `sendfile`, never through the server's
//! own memory), builds only headers, and hands the NIC a descriptor: the
//! client's socket (passed with SCM_RIGHTS), the header and trailer bytes,
//! and the payload's range in the NIC's memory. The NIC sends header,
//! payload and trailer with one `writev` and answers how many bytes went.
//! On hardware with NIC memory (or devmem TCP) the same descriptors go to
//! the real NIC.
//!
//! Many descriptors are in flight at once: each client connection has its
//! own channel to the NIC (a Unix socket; the NIC serves each on a thread),
//! and its socket is passed once, with its first descriptor. The host does
//! not wait for the NIC's answer to a descriptor (that wait cost two
//! context switches a request): answers are taken as they come, before the
//! connection's next descriptor and while it waits for its client, and all
//! of them before this process writes any byte of its own on the client's
//! socket ([`Channel::settle`]), so nothing it writes overtakes a response the
//! NIC still owes. Objects are placed under a lock; evicting them (when the
//! memory is full) first takes every channel's owed answers, so the NIC
//! never sends bytes that are being overwritten.
//!
//! Wire format on a channel, host -> NIC: u32 header length, u32 trailer
//! length, u64 offset, u64 length (LE), then the header and trailer bytes,
//! with the client's socket as ancillary data on the channel's first
//! descriptor; NIC -> host: u64 bytes sent (u64::MAX: the send failed). The
//! first channel is the control channel: when it closes, the NIC exits.

use crate::lru::Lru;
use crate::stats::NicCounts;
use crate::Resolved;
use peerpath_mem::MappedRegion;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Sends `bytes` with one file descriptor as SCM_RIGHTS.
fn send_with_fd(sock: &UnixStream, bytes: &[u8], fd: RawFd) -> std::io::Result<()> {
    // SAFETY: msghdr and the control buffer are plain C structs we fill
    // completely; CMSG_* compute positions inside `control`, which is large
    // enough for one int (CMSG_SPACE) and aligned for a cmsghdr (u64s); the
    // iovec points at `bytes`, alive across the call.
    unsafe {
        let mut iov = libc::iovec { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() };
        let mut control = [0u64; 8];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
        if libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) != bytes.len() as isize {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Receives up to `buf.len()` bytes and the file descriptor sent with them.
fn recv_with_fd(sock: &UnixStream, buf: &mut [u8]) -> std::io::Result<(usize, Option<OwnedFd>)> {
    // SAFETY: as in send_with_fd, for receiving: the kernel writes at most
    // buf.len() bytes and the control messages that fit into buffers we own
    // (the control buffer aligned for a cmsghdr); CMSG_NXTHDR stays inside
    // what it wrote; every descriptor received is ours to own (wrapped at once).
    unsafe {
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let mut control = [0u64; 8];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        // Interrupted (EINTR): received nothing, so tried again (it ended the channel).
        let n = loop {
            let n = libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n >= 0 {
                break n;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        };
        // The first descriptor is the one asked for; any more (a confused peer) are closed.
        let mut fds = Vec::new();
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c);
                let count = ((*c).cmsg_len - (data as usize - c as usize)) / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.cast::<RawFd>().add(i))));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        Ok((n as usize, fds.into_iter().next()))
    }
}

/// The NIC process: makes its memory, listens on `socket`, and serves each
/// channel the host opens on its own thread, until the first (the control
/// channel) closes.
pub fn nic_main(socket: &Path, memory: &Path, bytes: usize) -> Result<(), String> {
    let region = std::sync::Arc::new(MappedRegion::create_shared(memory, bytes, "emulated NIC").map_err(|e| format!("NIC memory: {e}"))?);
    let listener = UnixListener::bind(socket).map_err(|e| format!("NIC socket {}: {e}", socket.display()))?;
    let (control, _) = listener.accept().map_err(|e| e.to_string())?;
    let socket = socket.to_path_buf();
    std::thread::spawn(move || {
        // The host is gone when its control channel closes (or fails), not
        // when a read of it is interrupted (EINTR).
        let mut b = [0u8; 1];
        while let Err(e) = (&control).read(&mut b) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                break;
            }
        }
        let _ = std::fs::remove_file(&socket);
        std::process::exit(0);
    });
    loop {
        let (channel, _) = listener.accept().map_err(|e| e.to_string())?;
        let region = region.clone();
        std::thread::spawn(move || serve_channel(&channel, &region));
    }
}

/// The fixed part of a descriptor: header and trailer lengths, payload offset and length.
const DESCRIPTOR_BYTES: usize = 24;
/// Answers owed on a channel before a new descriptor takes those there.
const ANSWERS_TAKEN_TOGETHER: usize = 16;
/// Header and trailer bytes a descriptor carries at most.
pub const MAX_INLINE_BYTES: usize = 4096;

/// One channel: a client connection's descriptors, in order.
fn serve_channel(host: &UnixStream, region: &MappedRegion) {
    let mut client: Option<OwnedFd> = None;
    let mut msg = [0u8; DESCRIPTOR_BYTES + MAX_INLINE_BYTES];
    loop {
        let (n, fd) = match recv_with_fd(host, &mut msg[..DESCRIPTOR_BYTES]) {
            Ok((0, _)) | Err(_) => return,
            Ok(x) => x,
        };
        if fd.is_some() {
            client = fd;
        }
        if n < DESCRIPTOR_BYTES && (&*host).read_exact(&mut msg[n..DESCRIPTOR_BYTES]).is_err() {
            return;
        }
        let word = |at: usize, len: usize| msg[at..at + len].iter().rev().fold(0u64, |v, &b| v << 8 | b as u64);
        let (hlen, tlen, off, len) = (word(0, 4) as usize, word(4, 4) as usize, word(8, 8) as usize, word(16, 8) as usize);
        if hlen + tlen > MAX_INLINE_BYTES || (&*host).read_exact(&mut msg[DESCRIPTOR_BYTES..DESCRIPTOR_BYTES + hlen + tlen]).is_err() {
            return;
        }
        let inline = &msg[DESCRIPTOR_BYTES..DESCRIPTOR_BYTES + hlen + tlen];
        let sent = match (&client, off.checked_add(len).is_some_and(|e| e <= region.len())) {
            (Some(c), true) => {
                // SAFETY: [off, off + len) lies inside the mapping (checked); the
                // kernel only reads it; the host evicts nothing before it has
                // this descriptor's answer.
                let payload = unsafe { std::slice::from_raw_parts(region.as_ptr().add(off), len) };
                send_all(c.as_raw_fd(), [&inline[..hlen], payload, &inline[hlen..]]).unwrap_or(u64::MAX)
            }
            _ => u64::MAX,
        };
        if (&*host).write_all(&sent.to_le_bytes()).is_err() {
            return;
        }
    }
}

/// Writes `parts` to `fd` in order (writev until all is sent); returns the bytes sent.
fn send_all(fd: RawFd, parts: [&[u8]; 3]) -> std::io::Result<u64> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut done = 0usize;
    while done < total {
        // What is left of each part after `done` bytes.
        let mut skip = done;
        let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; 3];
        let mut count = 0;
        for p in parts {
            let rest = &p[skip.min(p.len())..];
            skip -= skip.min(p.len());
            if !rest.is_empty() {
                iov[count] = libc::iovec { iov_base: rest.as_ptr() as *mut libc::c_void, iov_len: rest.len() };
                count += 1;
            }
        }
        // SAFETY: `count` iovecs over live slices; the kernel reads them only.
        let n = unsafe { libc::writev(fd, iov.as_ptr(), count as libc::c_int) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        done += n as usize;
    }
    Ok(total as u64)
}

/// The server's side of the NIC: the process, its memory file, what is
/// placed where, and the socket channels connect to.
pub struct Nic {
    child: std::sync::Mutex<std::process::Child>,
    /// The control channel: the NIC exits when it closes.
    _control: UnixStream,
    socket: PathBuf,
    placement: std::sync::Mutex<Placement>,
    /// Held shared from placing an object to handing its descriptor over;
    /// evicting takes it alone (and then takes every channel's owed answers).
    issuing: std::sync::RwLock<()>,
    /// Every channel opened (those of closed connections are dropped as found).
    channels: std::sync::Mutex<Vec<std::sync::Weak<std::sync::Mutex<ChannelState>>>>,
}

/// What is placed where in the NIC's memory: a least-recently-used cache
/// of whole objects in page-aligned extents.
struct Placement {
    memory: File,
    bytes: u64,
    /// Objects larger than this stay on the host path (at most half of `bytes`).
    max_object: u64,
    /// Free extents, offset -> length (adjacent ones merged).
    free: std::collections::BTreeMap<u64, u64>,
    /// Per file placed: its extent (offset, length in whole pages).
    placed: Lru<(u64, u64)>,
    /// Extents of replaced versions: descriptors in flight may still point
    /// into them, so they are freed only at the next eviction, once the NIC
    /// has answered everything.
    retired: Vec<(u64, u64)>,
    counts: NicCounts,
}

/// A descriptor handed to the NIC: its payload bytes, the request (the
/// connection's count) and status of the response it is part of, and,
/// once that request is counted as sent, where its latency is
/// ([`crate::Stats::record`]: withdrawn if the NIC could not send it).
#[derive(Clone, Copy, Debug)]
pub struct Handed {
    pub payload: u64,
    pub request: u64,
    pub status: u16,
    pub latency_at: Option<usize>,
}

/// A client connection's channel to the NIC.
pub struct Channel {
    state: std::sync::Arc<std::sync::Mutex<ChannelState>>,
}

struct ChannelState {
    sock: UnixStream,
    /// Whether the client's socket went with an earlier descriptor.
    client_passed: bool,
    /// The payload bytes of each descriptor handed over and not yet answered, oldest first.
    owed: std::collections::VecDeque<Handed>,
    /// Payload bytes of descriptors the NIC answered it could not send (the client failed).
    failed: bool,
    /// Descriptors the NIC could not send, not yet taken by [`Channel::take_failed`].
    failed_sends: Vec<Handed>,
    /// Why the channel broke (the NIC is gone), if it did.
    gone: Option<String>,
    /// When the last answer owed was taken (or the channel opened): the NIC
    /// had sent every response handed to it by then.
    settled_at: Instant,
}

impl ChannelState {
    /// Takes the NIC's owed answers: every one if `all` (waiting for them),
    /// else those already there.
    fn take_answers(&mut self, all: bool) {
        while self.gone.is_none() && !self.owed.is_empty() {
            let mut answer = [0u8; 8];
            let flags = if all { 0 } else { libc::MSG_DONTWAIT };
            // SAFETY: recv into a buffer we own, of its length, on our socket.
            let n = unsafe { libc::recv(self.sock.as_raw_fd(), answer.as_mut_ptr().cast(), 8, flags) };
            let got = match n {
                8 => Ok(()),
                0 => Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "its channel closed")),
                n if n > 0 => (&self.sock).read_exact(&mut answer[n as usize..]),
                _ => Err(std::io::Error::last_os_error()),
            };
            match got {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    self.lost(format!("the emulated NIC is gone: {e}"));
                    return;
                }
            }
            let handed = self.owed.pop_front().expect("an answer was owed");
            if u64::from_le_bytes(answer) == u64::MAX {
                self.failed = true;
                self.failed_sends.push(handed);
            }
            if self.owed.is_empty() {
                self.settled_at = Instant::now();
            }
        }
    }

    /// The NIC is gone (`why`): the responses it owed an answer for are not known to be sent
    /// (the one in flight was cut short), so they are as ones it could not send. They were
    /// left owed, counted as sent: a response cut short by the NIC's death was a 200, its
    /// whole payload counted, not aborted.
    fn lost(&mut self, why: String) {
        self.gone = Some(why);
        let owed = std::mem::take(&mut self.owed);
        self.failed_sends.extend(owed);
    }

    /// What the answers taken so far say: the NIC gone, or a send failed.
    fn verdict(&self) -> Result<(), NicMiss> {
        if let Some(why) = &self.gone {
            return Err(NicMiss::Gone(why.clone()));
        }
        if self.failed {
            return Err(NicMiss::ClientFailed);
        }
        Ok(())
    }
}

impl Channel {
    fn state(&self) -> std::sync::MutexGuard<'_, ChannelState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the answers already there (never waits): an error if the NIC
    /// is gone or could not send to the client (close the connection).
    pub fn poll(&self) -> Result<(), NicMiss> {
        let mut s = self.state();
        s.take_answers(false);
        s.verdict()
    }

    /// Waits for every answer the NIC owes: after it, nothing is in flight
    /// on the client's socket, and this process may write its own bytes there.
    pub fn settle(&self) -> Result<(), NicMiss> {
        let mut s = self.state();
        s.take_answers(true);
        s.verdict()
    }

    /// `None` while the NIC may still be sending a response handed to it
    /// (an answer is owed); else when it was last seen to have sent them
    /// all (the answers taken so far: call [`Channel::poll`] first). A
    /// client's idle time counts from then, not from the hand-over.
    pub fn idle_since(&self) -> Option<Instant> {
        let s = self.state();
        s.owed.is_empty().then_some(s.settled_at)
    }

    /// The descriptors the NIC said it could not send (the client failed),
    /// each once: taken from the channel.
    pub fn take_failed(&self) -> Vec<Handed> {
        std::mem::take(&mut self.state().failed_sends)
    }

    /// `request` is counted as sent, its latency at `latency_at`: kept with
    /// its descriptors, answered or not (the newest, so looked for from the end).
    pub fn counted(&self, request: u64, latency_at: usize) {
        let mut s = self.state();
        let s = &mut *s;
        for h in s.owed.iter_mut().rev().take_while(|h| h.request >= request).chain(s.failed_sends.iter_mut().rev().take_while(|h| h.request >= request)) {
            if h.request == request {
                h.latency_at = Some(latency_at);
            }
        }
    }
}

impl Drop for Nic {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Why the NIC did not send a payload.
pub enum NicMiss {
    /// Larger than the largest object placed (at most half the NIC's
    /// memory): never placed there; nothing was sent, the host sends it.
    TooLarge,
    /// It could not be placed (the reason); nothing was sent, the host sends it.
    NotPlaced(String),
    /// Sending to the client failed: close the connection.
    ClientFailed,
    /// The NIC is gone (the reason), perhaps mid-response: close the
    /// connection and use the host path from now on.
    Gone(String),
}

/// Why an object is not in the NIC's memory yet.
enum PlaceMiss {
    Miss(NicMiss),
    /// No room left: evict (once nothing in flight points into it) and retry.
    Full,
}

impl Nic {
    /// Starts an emulated NIC process (`program` with `args`, to which the
    /// socket and memory paths and size are appended) with `bytes` of memory.
    pub fn start(program: &Path, args: &[&str], bytes: u64, max_object: u64) -> Result<Nic, String> {
        // Files, not a directory: the NIC removes its socket when this
        // process is gone, even killed, and then nothing is left. Named by
        // process and by NIC within it (a library may start several).
        static STARTED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let name = format!("peerpath-nic-{}-{}", std::process::id(), STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let socket = std::env::temp_dir().join(format!("{name}.sock"));
        let shm = Path::new("/dev/shm");
        let memory = if shm.is_dir() { shm } else { socket.parent().unwrap_or(shm) }.join(format!("{name}.mem"));
        // Files of this name are a dead process's (process ids are unique
        // among the living); a stale socket would refuse the bind.
        for stale in [&socket, &memory] {
            let _ = std::fs::remove_file(stale);
        }
        let mut child = std::process::Command::new(program)
            .args(args)
            .arg(&socket)
            .arg(&memory)
            .arg(bytes.to_string())
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting the emulated NIC: {e}"))?;
        let mut said = child.stderr.take().expect("piped");
        let deadline = Instant::now() + Duration::from_secs(10);
        let not_started = |child: &mut std::process::Child, why: String| {
            // Reaped (no zombie), and its files gone if it made any.
            let _ = child.kill();
            let _ = child.wait();
            for f in [&socket, &memory] {
                let _ = std::fs::remove_file(f);
            }
            Err(format!("the emulated NIC did not start: {why}"))
        };
        let sock = loop {
            match UnixStream::connect(&socket) {
                Ok(s) => break s,
                Err(e) => {
                    // A NIC that cannot start says why on its standard error and
                    // exits: its reason, at once (not the deadline's bare refusal).
                    if let Ok(Some(status)) = child.try_wait() {
                        let mut reason = String::new();
                        let _ = said.read_to_string(&mut reason);
                        let reason = reason.trim().trim_start_matches("peerpath nic-serve: ");
                        return not_started(&mut child, if reason.is_empty() { status.to_string() } else { format!("{reason} ({status})") });
                    }
                    if Instant::now() >= deadline {
                        return not_started(&mut child, format!("no answer on its socket within 10 s: {e}"));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        };
        let file = match std::fs::OpenOptions::new().write(true).open(&memory) {
            Ok(f) => f,
            Err(e) => return not_started(&mut child, format!("its memory: {e}")),
        };
        // What the NIC says later (it says nothing while it works) still reaches this process's standard error.
        std::thread::spawn(move || std::io::copy(&mut said, &mut std::io::stderr()));
        // The NIC keeps its mapping; the name is not needed any more.
        let _ = std::fs::remove_file(&memory);
        let placement = Placement::new(file, bytes, max_object);
        Ok(Nic {
            child: std::sync::Mutex::new(child),
            _control: sock,
            socket,
            placement: std::sync::Mutex::new(placement),
            issuing: std::sync::RwLock::new(()),
            channels: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// What its memory's cache did so far.
    pub fn counts(&self) -> NicCounts {
        self.placement.lock().unwrap_or_else(|e| e.into_inner()).counts.clone()
    }
}

impl Placement {
    fn new(memory: File, bytes: u64, max_object: u64) -> Placement {
        let bytes = bytes / 4096 * 4096;
        let free = if bytes > 0 { [(0, bytes)].into() } else { Default::default() };
        let max_object = max_object.min(bytes / 2);
        Placement { memory, bytes, max_object, free, placed: Lru::default(), retired: Vec::new(), counts: NicCounts::default() }
    }

    fn not_placed(&mut self, e: std::io::Error) -> PlaceMiss {
        let why = format!("placing an object in NIC memory: {e}");
        self.counts.not_placed += 1;
        self.counts.last_error = Some(why.clone());
        PlaceMiss::Miss(NicMiss::NotPlaced(why))
    }

    /// Where `found` is in the NIC's memory, placing it there first if it
    /// is not (the kernel copies it). The file as it was opened: a replaced
    /// file (a new inode, as a memcached `set` or any atomic rename makes) is
    /// placed afresh even with the same length and modification time.
    fn place(&mut self, found: &Resolved) -> Result<u64, PlaceMiss> {
        let (file, len) = (&found.file, found.len);
        if let Some(&(off, _)) = self.placed.get(found) {
            self.counts.hits += 1;
            return Ok(off);
        }
        if len > self.max_object {
            self.counts.too_large += 1;
            return Err(PlaceMiss::Miss(NicMiss::TooLarge));
        }
        let extent = Self::extent_of(len);
        // First fit: a free extent at least this long.
        let Some((&off, &free_len)) = self.free.iter().find(|(_, &l)| l >= extent) else {
            // Full: make room once nothing in flight points into it.
            return Err(PlaceMiss::Full);
        };
        // sendfile(2) to the memory file: a kernel copy from the page cache
        // (copy_file_range refuses most pairs of file systems since 5.19).
        // SAFETY: lseek on a descriptor we hold.
        if unsafe { libc::lseek(self.memory.as_raw_fd(), off as libc::off_t, libc::SEEK_SET) } < 0 {
            return Err(self.not_placed(std::io::Error::last_os_error()));
        }
        let (mut src_off, mut left) = (0 as libc::off_t, len as usize);
        while left > 0 {
            // SAFETY: sendfile between two descriptors we hold, with an offset variable we own.
            let n = unsafe { libc::sendfile(self.memory.as_raw_fd(), file.as_raw_fd(), &mut src_off, left) };
            if n <= 0 {
                let e = if n == 0 { std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the file shrank") } else { std::io::Error::last_os_error() };
                return Err(self.not_placed(e));
            }
            left -= n as usize;
        }
        self.free.remove(&off);
        if free_len > extent {
            self.free.insert(off + extent, free_len - extent);
        }
        self.counts.misses += 1;
        if let Some(old) = self.placed.insert(found, (off, extent)) {
            // A replaced version: its extent waits for the next eviction.
            self.retired.push(old);
        }
        Ok(off)
    }

    /// Makes room for an object of `len` bytes: frees the replaced versions'
    /// extents, then evicts the least recently used objects until one free
    /// extent holds it and an eighth of the memory is free (so that the next
    /// misses do not each stop every connection to evict again). The caller
    /// holds the in-flight lock alone and has taken every answer the NIC owed.
    fn make_room(&mut self, len: u64) {
        for (off, extent) in std::mem::take(&mut self.retired) {
            self.release(off, extent);
        }
        let (extent, headroom) = (Self::extent_of(len), self.bytes / 8);
        loop {
            let fits = self.free.values().any(|&l| l >= extent);
            if fits && self.free.values().sum::<u64>() >= headroom {
                return;
            }
            let Some((off, extent)) = self.placed.pop_oldest() else { return };
            self.release(off, extent);
            self.counts.evictions += 1;
        }
    }

    /// Returns an extent to the free ones, merged with its neighbours.
    fn release(&mut self, mut off: u64, mut len: u64) {
        if let Some((&before, &before_len)) = self.free.range(..off).next_back() {
            if before + before_len == off {
                self.free.remove(&before);
                (off, len) = (before, before_len + len);
            }
        }
        if let Some(after_len) = self.free.remove(&(off + len)) {
            len += after_len;
        }
        self.free.insert(off, len);
    }

    /// The memory an object of `len` bytes holds: whole pages, at least one.
    fn extent_of(len: u64) -> u64 {
        len.max(1).next_multiple_of(4096)
    }
}

impl Nic {
    /// Hands the NIC a descriptor: send `header`, then `range_len` bytes
    /// from `range_at` of the object `found` from its memory, then
    /// `trailer`, on `client`, through the connection's `channel` (opened
    /// on first use). Returns the payload bytes handed over; the NIC's
    /// answer is taken later ([`Channel::poll`], [`Channel::settle`]).
    /// `tag`: the request it answers (the connection's count) and its
    /// status, given back with a descriptor the NIC could not send.
    #[allow(clippy::too_many_arguments)]
    pub fn send(&self, channel: &mut Option<Channel>, client: RawFd, header: &[u8], trailer: &[u8], found: &Resolved, range_at: u64, range_len: u64, tag: (u64, u16)) -> Result<u64, NicMiss> {
        let len = found.len;
        if header.len() + trailer.len() > MAX_INLINE_BYTES {
            return Err(NicMiss::NotPlaced("a header longer than the NIC takes".into()));
        }
        if let Some(ch) = channel.as_ref() {
            // Answers are taken a batch at a time (a receive that finds
            // nothing is a system call a request for nothing); failures
            // already taken end the connection now.
            let mut s = ch.state();
            if s.owed.len() >= ANSWERS_TAKEN_TOGETHER {
                s.take_answers(false);
            }
            s.verdict()?;
        }
        let (_issuing, off) = loop {
            let issuing = self.issuing.read().unwrap_or_else(|e| e.into_inner());
            let placed = self.placement.lock().unwrap_or_else(|e| e.into_inner()).place(found);
            match placed {
                Ok(off) => break (issuing, off),
                Err(PlaceMiss::Miss(m)) => return Err(m),
                Err(PlaceMiss::Full) => {
                    drop(issuing);
                    let _alone = self.issuing.write().unwrap_or_else(|e| e.into_inner());
                    // Nothing is between placing and handing over now; wait
                    // until the NIC has answered every descriptor handed over.
                    let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
                    channels.retain(|c| c.strong_count() > 0);
                    for c in channels.iter().filter_map(std::sync::Weak::upgrade) {
                        c.lock().unwrap_or_else(|e| e.into_inner()).take_answers(true);
                    }
                    drop(channels);
                    self.placement.lock().unwrap_or_else(|e| e.into_inner()).make_room(len);
                }
            }
        };
        let gone = |e: std::io::Error| NicMiss::Gone(format!("the emulated NIC is gone: {e}"));
        if channel.is_none() {
            let sock = UnixStream::connect(&self.socket).map_err(gone)?;
            let state = std::sync::Arc::new(std::sync::Mutex::new(ChannelState { sock, client_passed: false, owed: Default::default(), failed: false, failed_sends: Vec::new(), gone: None, settled_at: Instant::now() }));
            let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
            // Closed connections' entries go as new ones come (at most the connection limit stay).
            channels.retain(|c| c.strong_count() > 0);
            channels.push(std::sync::Arc::downgrade(&state));
            drop(channels);
            *channel = Some(Channel { state });
        }
        let mut ch = channel.as_ref().expect("just opened").state();
        let mut msg = Vec::with_capacity(DESCRIPTOR_BYTES + header.len() + trailer.len());
        msg.extend_from_slice(&(header.len() as u32).to_le_bytes());
        msg.extend_from_slice(&(trailer.len() as u32).to_le_bytes());
        msg.extend_from_slice(&(off + range_at).to_le_bytes());
        msg.extend_from_slice(&range_len.to_le_bytes());
        msg.extend_from_slice(header);
        msg.extend_from_slice(trailer);
        let handed = if ch.client_passed { (&ch.sock).write_all(&msg) } else { send_with_fd(&ch.sock, &msg, client) };
        if let Err(e) = handed {
            ch.lost(format!("the emulated NIC is gone: {e}"));
            return Err(gone(e));
        }
        ch.client_passed = true;
        ch.owed.push_back(Handed { payload: range_len, request: tag.0, status: tag.1, latency_at: None });
        Ok(range_len)
    }

    /// The NIC's process id (tests kill it to see the server fail over).
    pub fn process_id(&self) -> u32 {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).id()
    }

    /// The NIC process's CPU time so far (user + system, every thread of
    /// it), from /proc/PID/stat; `None` where that cannot be read. The
    /// process is reaped only when this is dropped, so a NIC that died is
    /// still read (a zombie's figures are its last).
    pub fn process_cpu(&self) -> Option<Duration> {
        peerpath_metrics::process_cpu(self.process_id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signal that interrupts a channel's receive (EINTR: a handler
    /// without SA_RESTART, or any on a socket with a receive timeout) does
    /// not end the channel: the receive is tried again and gets what comes.
    #[test]
    fn an_interrupted_receive_is_tried_again() {
        extern "C" fn nothing(_: libc::c_int) {}
        // SAFETY: a handler that does nothing, for SIGUSR2 (no other test uses
        // it), without SA_RESTART so that a blocked receive fails with EINTR.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = nothing as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            assert_eq!(libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut()), 0);
        }
        let (a, b) = UnixStream::pair().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let receiver = std::thread::spawn(move || {
            // SAFETY: this thread's own id.
            tx.send(unsafe { libc::pthread_self() }).unwrap();
            let mut buf = [0u8; 8];
            recv_with_fd(&b, &mut buf).map(|(n, fd)| (buf[..n].to_vec(), fd.is_some())).map_err(|e| e.to_string())
        });
        let thread = rx.recv().unwrap();
        // Signals while it waits (the first ones may come before it does).
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(10));
            // SAFETY: a live thread of this process (it waits until `a` sends).
            unsafe { libc::pthread_kill(thread, libc::SIGUSR2) };
        }
        let f = tempfile::tempfile().unwrap();
        let sent = send_with_fd(&a, b"answer", f.as_raw_fd());
        assert_eq!(receiver.join().unwrap(), Ok((b"answer".to_vec(), true)), "the receive gave up at a signal");
        sent.unwrap();
    }

    /// A channel whose NIC is gone gives back, as not sent, the descriptors it owed an answer
    /// for (one may have been cut short mid-send), each once; those answered stay answered.
    #[test]
    fn descriptors_a_gone_nic_owed_are_not_delivered() {
        let (host, nic) = UnixStream::pair().unwrap();
        let handed = |request, payload| Handed { payload, request, status: 200, latency_at: Some(request as usize) };
        let state = ChannelState { sock: host, client_passed: true, owed: [handed(0, 10), handed(1, 20), handed(2, 30)].into(), failed: false, failed_sends: Vec::new(), gone: None, settled_at: Instant::now() };
        let ch = Channel { state: std::sync::Arc::new(std::sync::Mutex::new(state)) };
        (&nic).write_all(&10u64.to_le_bytes()).unwrap();
        assert!(ch.poll().is_ok() && ch.take_failed().is_empty(), "the first sent");
        drop(nic);
        assert!(matches!(ch.settle(), Err(NicMiss::Gone(_))));
        let lost: Vec<(u64, u64)> = ch.take_failed().iter().map(|h| (h.request, h.payload)).collect();
        assert_eq!(lost, [(1, 20), (2, 30)]);
        assert!(matches!(ch.settle(), Err(NicMiss::Gone(_))) && ch.take_failed().is_empty(), "given back once");
    }

    /// A NIC process that exits at start is not waited for (10 s), and its
    /// reason is in the error.
    #[test]
    fn a_nic_that_exits_at_start_is_an_error_with_its_reason() {
        let Err(why) = Nic::start(Path::new("/bin/sh"), &["-c", "echo 'peerpath nic-serve: no memory for you' >&2; exit 3", "nic"], 1 << 20, 1 << 19) else { panic!("a NIC that exits started") };
        assert_eq!(why, "the emulated NIC did not start: no memory for you (exit status: 3)");
    }

    /// A file of `len` bytes, each `byte`, as the server resolves it.
    fn object(dir: &Path, name: &str, len: usize, byte: u8) -> Resolved {
        let path = dir.join(name);
        std::fs::write(&path, vec![byte; len]).unwrap();
        let file = File::open(&path).unwrap();
        let version = crate::resolve::Version::of(&file.metadata().unwrap());
        Resolved { file, len: len as u64, path: name.into(), version }
    }

    fn placed(p: &mut Placement, o: &Resolved) -> u64 {
        match p.place(o) {
            Ok(off) => off,
            Err(PlaceMiss::Full) => {
                p.make_room(o.len);
                p.place(o).unwrap_or_else(|_| panic!("{} placed after making room", o.path.display()))
            }
            Err(_) => panic!("{} not placed", o.path.display()),
        }
    }

    fn memory_at(memory: &Path, off: u64, len: usize) -> Vec<u8> {
        let all = std::fs::read(memory).unwrap();
        all[off as usize..off as usize + len].to_vec()
    }

    #[test]
    fn the_least_recently_used_objects_go_first_and_each_lies_whole_in_its_extent() {
        let dir = tempfile::tempdir().unwrap();
        let memory_path = dir.path().join("memory");
        let memory = File::create(&memory_path).unwrap();
        memory.set_len(64 << 10).unwrap();
        let mut p = Placement::new(memory, 64 << 10, u64::MAX);
        // Four objects of 3 pages and a bit (16 KiB extents) fill the 64 KiB.
        let objects: Vec<Resolved> = (0..6).map(|i| object(dir.path(), &format!("o{i}"), 12_300, b'a' + i as u8)).collect();
        let mut at = Vec::new();
        for o in &objects[..4] {
            at.push(placed(&mut p, o));
        }
        assert_eq!((p.counts.misses, p.counts.hits, p.counts.evictions), (4, 0, 0));
        let mut sorted = at.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 16 << 10, 32 << 10, 48 << 10], "page-aligned, not overlapping");
        // o0 used again: o1 is now the least recent.
        assert_eq!(placed(&mut p, &objects[0]), at[0]);
        assert_eq!(p.counts.hits, 1);
        assert!(matches!(p.place(&objects[4]), Err(PlaceMiss::Full)));
        // Evicting o1 frees one extent, which holds o4 and is more than the
        // eighth of the memory (8 KiB) to keep free: one eviction is enough.
        let o4 = placed(&mut p, &objects[4]);
        assert_eq!(p.counts.evictions, 1, "one object evicted, not everything");
        assert_eq!(o4, at[1], "o4 took o1's place: o1 was the least recently used");
        assert!(p.placed.peek(Path::new("o0")).is_some() && p.placed.peek(Path::new("o1")).is_none());
        // Every object placed lies whole at its offset.
        for (name, o) in [("o0", &objects[0]), ("o2", &objects[2]), ("o3", &objects[3]), ("o4", &objects[4])] {
            let off = p.placed.peek(Path::new(name)).expect("placed").0;
            assert_eq!(memory_at(&memory_path, off, o.len as usize), vec![std::fs::read(dir.path().join(name)).unwrap()[0]; o.len as usize]);
        }
        // o1 again is a miss that evicts o2 (o0 was used after it).
        placed(&mut p, &objects[1]);
        assert!(p.placed.peek(Path::new("o2")).is_none() && p.placed.peek(Path::new("o0")).is_some());
        assert_eq!((p.counts.misses, p.counts.hits, p.counts.evictions), (6, 1, 2));
    }

    #[test]
    fn freed_extents_merge_so_a_larger_object_fits_where_small_ones_were() {
        let dir = tempfile::tempdir().unwrap();
        let memory = File::create(dir.path().join("memory")).unwrap();
        memory.set_len(64 << 10).unwrap();
        let mut p = Placement::new(memory, 64 << 10, u64::MAX);
        let small: Vec<Resolved> = (0..16).map(|i| object(dir.path(), &format!("s{i}"), 4096, i as u8)).collect();
        for o in &small {
            placed(&mut p, o);
        }
        assert!(p.free.is_empty(), "16 pages fill the memory: {:?}", p.free);
        // 32 KiB: the eight least recent pages (s0..s7, adjacent) merge into one extent.
        let big = object(dir.path(), "big", 32 << 10, 0xee);
        assert_eq!(placed(&mut p, &big), 0);
        assert_eq!(p.counts.evictions, 8);
        assert!((8..16).all(|i| p.placed.peek(Path::new(&format!("s{i}"))).is_some()));
        // Over half the memory: never placed.
        let huge = object(dir.path(), "huge", (32 << 10) + 1, 1);
        assert!(matches!(p.place(&huge), Err(PlaceMiss::Miss(NicMiss::TooLarge))));
        // Nor over the size limit asked for.
        let memory = File::create(dir.path().join("memory2")).unwrap();
        memory.set_len(64 << 10).unwrap();
        let mut p = Placement::new(memory, 64 << 10, 8192);
        assert!(matches!(p.place(&object(dir.path(), "over", 8193, 1)), Err(PlaceMiss::Miss(NicMiss::TooLarge))));
        assert_eq!(placed(&mut p, &object(dir.path(), "at", 8192, 1)), 0);
        assert_eq!((p.counts.too_large, p.counts.misses), (1, 1));
    }

    #[test]
    fn a_replaced_objects_old_extent_is_kept_until_the_next_eviction() {
        let dir = tempfile::tempdir().unwrap();
        let memory = File::create(dir.path().join("memory")).unwrap();
        memory.set_len(32 << 10).unwrap();
        let mut p = Placement::new(memory, 32 << 10, u64::MAX);
        let v1 = object(dir.path(), "k", 8192, 1);
        let first = placed(&mut p, &v1);
        // A new version (a new inode, as a rename makes).
        std::fs::remove_file(dir.path().join("k")).unwrap();
        let v2 = object(dir.path(), "k", 8192, 2);
        assert_ne!(v1.version.ino, v2.version.ino);
        let second = placed(&mut p, &v2);
        assert_ne!(first, second, "descriptors in flight may still point at the old version");
        assert_eq!(p.retired, vec![(first, 8192)]);
        // Fill the rest; the next miss frees the retired extent first, and
        // that is all the room it needs.
        for name in ["a", "b"] {
            placed(&mut p, &object(dir.path(), name, 8192, 3));
        }
        assert!(p.free.is_empty());
        let c = object(dir.path(), "c", 8192, 4);
        assert!(matches!(p.place(&c), Err(PlaceMiss::Full)));
        assert_eq!(placed(&mut p, &c), first);
        assert!(p.retired.is_empty());
        assert_eq!(p.counts.evictions, 0);
        assert!(["k", "a", "b", "c"].iter().all(|n| p.placed.peek(Path::new(n)).is_some()));
    }
}
