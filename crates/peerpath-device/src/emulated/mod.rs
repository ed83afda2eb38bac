//! The emulated computational storage processor (CSP): a device in a
//! process of its own, driven through NVMe-style queue pairs in shared
//! memory. `docs/queue-format.md` is the contract (what a real device
//! backend must meet); `layout.rs` is its code.
//!
//! Three files per device, all owner-only (0600), removed when it stops:
//!
//! | file | what |
//! |---|---|
//! | `<dir>/peerpath-csp-<name>.mem` | device memory (the host maps it, as it would map `p2pmem/allocate`) |
//! | `<dir>/peerpath-csp-<name>.queues` | header + queue pairs (doorbells, data page, SQ, CQ) |
//! | `<dir>/peerpath-csp-<name>.sock` | Unix socket: a host claims a queue pair and receives its two eventfds |
//!
//! and the name's lock, `<dir>/peerpath-csp-<name>.lock` (empty, `flock`ed
//! by the device before it makes the others; see `name_lock.rs`).
//!
//! Wake-ups: one eventfd per direction and queue pair, passed over the
//! socket (SCM_RIGHTS), signalled only when the other side said it sleeps
//! (a need-wake word next to the doorbells, virtio-style). The socket also
//! tells each side when the other is gone.

mod host;
pub mod layout;
mod name_lock;
mod server;
mod shared;

pub use host::{ConnectOptions, EmulatedCsp, SpawnOptions};
pub use layout::{Geometry, Identify, CQE_BYTES, OPCODE_GET_STATS, OPCODE_IDENTIFY, QUEUE_MAGIC, QUEUE_VERSION, SQE_BYTES};
pub use server::{default_dir, serve, ServeOptions, FAILED_LINE_PREFIX, READY_LINE_PREFIX};

use crate::request::DeviceError;
use peerpath_mem::RegionError;
use std::io;
use std::path::{Path, PathBuf};

/// "PPC1": first word of the claim message and of its reply.
pub(crate) const CLAIM_MAGIC: u32 = u32::from_le_bytes(*b"PPC1");
/// Claim any free queue pair.
pub(crate) const CLAIM_ANY: u32 = u32::MAX;
pub(crate) const CLAIM_OK: u32 = 0;
pub(crate) const CLAIM_NO_FREE_QUEUE: u32 = 1;
pub(crate) const CLAIM_BAD_REQUEST: u32 = 2;

/// The files of one emulated device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CspPaths {
    pub memory: PathBuf,
    pub queues: PathBuf,
    pub socket: PathBuf,
    /// The name's lock: only its holder makes, replaces or removes the three above.
    pub lock: PathBuf,
}

impl CspPaths {
    /// The files of device `name` in `dir`. Names are 1-32 letters,
    /// digits, '-' or '_'.
    pub fn new(dir: &Path, name: &str) -> Result<CspPaths, CspError> {
        let ok = (1..=32).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(CspError::BadName { name: name.to_string() });
        }
        let file = |ext: &str| dir.join(format!("peerpath-csp-{name}.{ext}"));
        let paths = CspPaths { memory: file("mem"), queues: file("queues"), socket: file("sock"), lock: file("lock") };
        // sockaddr_un holds 108 bytes with the terminating zero.
        if paths.socket.as_os_str().len() > 107 {
            return Err(CspError::BadOption(format!("{}: socket path longer than 107 bytes; use a shorter --dir", paths.socket.display())));
        }
        Ok(paths)
    }

    /// The device's three files (not its lock).
    pub fn all(&self) -> [&Path; 3] {
        [&self.memory, &self.queues, &self.socket]
    }

    /// Removes the files that exist (errors other than "not there" ignored:
    /// this runs on the way out). Only for the holder of the name's lock:
    /// anyone else may be removing another device's files.
    pub fn remove_all(&self) {
        for p in self.all() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Why an emulated device could not be started, reached or run.
#[derive(Debug, thiserror::Error)]
pub enum CspError {
    #[error("invalid device name {name:?}: use 1-32 letters, digits, '-' or '_'")]
    BadName { name: String },
    #[error("{0}")]
    BadOption(String),
    #[error("a device with this name is already running (it holds {}); pick another --name or stop it", path.display())]
    AlreadyRunning { path: PathBuf },
    #[error(transparent)]
    Region(#[from] RegionError),
    #[error("cannot {operation} {}: {source}", path.display())]
    Io { operation: &'static str, path: PathBuf, source: io::Error },
    #[error("cannot connect to {}: {source} (is `peerpath csp serve --name {name}` running?)", socket.display())]
    Connect { name: String, socket: PathBuf, source: io::Error },
    #[error("cannot start the device process {}: {source}", program.display())]
    Spawn { program: PathBuf, source: io::Error },
    #[error("the device process for {name} exited before it was ready ({status}): {why}")]
    ExitedEarly { name: String, status: String, why: String },
    #[error("the device process for {name} was not ready within {waited_ms} ms")]
    StartTimeout { name: String, waited_ms: u64 },
    #[error("{}: not a usable peerpath CSP queue file: {detail}", path.display())]
    BadQueueFile { path: PathBuf, detail: String },
    #[error("device {name} refused the connection: {reason}")]
    Refused { name: String, reason: String },
    #[error(transparent)]
    Device(#[from] DeviceError),
}
