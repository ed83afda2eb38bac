//! Who may make, replace and remove a device's files: the one process that
//! holds its name's lock (`flock` on `<dir>/peerpath-csp-<name>.lock`).
//!
//! The name is taken before any file is made, and atomically. Looking for a
//! live socket was not enough: two devices started at once with one name
//! both found none and both went on (both running, or the loser removing
//! the winner's files on its way out). The kernel releases the lock of a
//! process however it ends (SIGKILL too), so files found under a free lock
//! are a dead device's, safe to replace.
//!
//! The holder removes the lock file as it stops, after the device's files
//! and while it still holds the lock; whoever locked the file just before
//! it went away sees that the name now leads elsewhere (or nowhere), and
//! tries again on what is there.

use super::{CspError, CspPaths};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

/// The lock of one device name, held while this value lives. Dropped, it
/// removes the device's files (once [`NameLock::own_files`] said they are
/// this process's), then the lock file, then releases the lock.
pub(crate) struct NameLock {
    paths: CspPaths,
    file: File,
    files_ours: bool,
}

impl NameLock {
    /// Takes the name's lock; `None` if another process holds it (a device
    /// runs, or starts, under that name).
    pub(crate) fn try_take(paths: &CspPaths) -> Result<Option<NameLock>, CspError> {
        let lock = &paths.lock;
        let io_err = |operation, source| CspError::Io { operation, path: lock.clone(), source };
        let not_ours = || {
            let source = io::Error::new(io::ErrorKind::AlreadyExists, "it exists and is not a lock file a device left: remove it, or give another --name or --dir");
            CspError::Io { operation: "lock", path: lock.clone(), source }
        };
        loop {
            // Not through a symbolic link: what it points to is not ours to lock or remove.
            let opened = std::fs::OpenOptions::new().read(true).write(true).create(true).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(lock);
            let file = match opened {
                Ok(f) => f,
                Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::EISDIR)) => return Err(not_ours()),
                Err(e) => return Err(io_err("create", e)),
            };
            let held = file.metadata().map_err(|e| io_err("read", e))?;
            // A device's lock file is empty; a FIFO, a device node or a file with data is someone else's.
            if !held.is_file() || held.len() != 0 {
                return Err(not_ours());
            }
            // SAFETY: flock on a descriptor we own; the lock lives as long as `file`.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EWOULDBLOCK) => return Ok(None),
                    Some(libc::EINTR) => continue,
                    _ => return Err(io_err("lock", e)),
                }
            }
            // Its holder may have removed it between our open and our lock (it stopped): a
            // lock on a file no longer under the name claims nothing.
            match std::fs::symlink_metadata(lock) {
                Ok(now) if (now.dev(), now.ino()) == (held.dev(), held.ino()) => {
                    return Ok(Some(NameLock { paths: paths.clone(), file, files_ours: false }))
                }
                _ => continue,
            }
        }
    }

    /// From now on the device's files under this name are this process's:
    /// dropping the lock removes them.
    pub(crate) fn own_files(&mut self) {
        self.files_ours = true;
    }
}

impl Drop for NameLock {
    fn drop(&mut self) {
        // If the name no longer leads to our lock file (someone removed it by hand), another
        // device may hold a new one and own the files: leave everything as it is.
        let still_ours = match (self.file.metadata(), std::fs::symlink_metadata(&self.paths.lock)) {
            (Ok(held), Ok(now)) => (now.dev(), now.ino()) == (held.dev(), held.ino()),
            _ => false,
        };
        if !still_ours {
            return;
        }
        if self.files_ours {
            self.paths.remove_all();
        }
        let _ = std::fs::remove_file(&self.paths.lock);
        // The lock itself goes with `file`, after the names are gone.
    }
}

/// Removes the files of a device that ended without removing them (killed),
/// unless a device has taken the name since: those are then its files.
pub(crate) fn remove_files_left(paths: &CspPaths) {
    if let Ok(Some(mut lock)) = NameLock::try_take(paths) {
        lock.own_files();
    }
}
