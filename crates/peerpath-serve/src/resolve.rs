//! From a request's name to a file under the root, never outside it.

use std::fs::File;
use std::path::{Component, Path, PathBuf};

/// A file to send: open, with its length when it was opened.
#[derive(Debug)]
pub struct Resolved {
    pub file: File,
    pub len: u64,
    pub path: PathBuf,
    /// Which version of the file was opened (the caches' objects are made
    /// from one version and are not another's).
    pub version: Version,
}

/// A version of a file, as its metadata tells it: a replaced file (another
/// inode, as a rename makes) or a rewritten one (its length, modification or
/// change time) is another version. The change time is the kernel's own,
/// which no `touch -d` sets back; on kernels with multigrain timestamps
/// (6.13 on, for ext4, XFS, btrfs and tmpfs) it is fine-grained once it has
/// been read, so that two writes within one clock tick after a version was
/// seen are told apart from it as well.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    pub len: u64,
    pub ino: u64,
    dev: u64,
    /// Seconds and nanoseconds since the epoch.
    pub(crate) mtime: (i64, i64),
    pub(crate) ctime: (i64, i64),
}

impl Version {
    pub fn of(meta: &std::fs::Metadata) -> Version {
        use std::os::unix::fs::MetadataExt;
        Version { len: meta.len(), ino: meta.ino(), dev: meta.dev(), mtime: (meta.mtime(), meta.mtime_nsec()), ctime: (meta.ctime(), meta.ctime_nsec()) }
    }
}

/// Why a name gives no file.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not a clean relative name (`..`, NUL, absolute): a bad request.
    BadName,
    /// No such regular file under the root (or it leads outside the root).
    NotFound,
}

/// The served directory, opened once: names are resolved beneath it.
#[derive(Debug)]
pub struct Root {
    /// Canonical path (for the names of resolved files).
    pub path: PathBuf,
    dir: std::os::fd::OwnedFd,
}

impl Root {
    /// Opens `path` (canonical) as the root of every name.
    pub fn open(path: &Path) -> std::io::Result<Root> {
        let dir = std::fs::File::open(path)?;
        if !dir.metadata()?.is_dir() {
            return Err(std::io::Error::other(format!("{} is not a directory", path.display())));
        }
        Ok(Root { path: path.to_path_buf(), dir: dir.into() })
    }
}

/// Resolves `name` (already percent-decoded, `/`-separated, relative to
/// the root) to a regular file inside the root. `..`, empty or NUL names
/// are refused; a name that resolves (through symlinks) outside the root
/// is "not found", as a file that does not exist.
///
/// One `openat2(RESOLVE_BENEATH)` from the root's descriptor: the kernel
/// refuses any step out of the root (a `..` reached through a symlink, an
/// absolute symlink, even one back into the root), in one system call where
/// `canonicalize` takes one per path component (it was most of a 4 KiB
/// request's cost). Kernels before 5.6 (no `openat2`) canonicalize instead.
///
/// Names are opened with O_NONBLOCK: opening a FIFO for reading otherwise
/// waits for a writer, which held a worker for good (and, one request per
/// worker, the whole server). Only a regular file is served, told by the
/// opened descriptor's type (a FIFO, a device, a directory: not found);
/// O_NONBLOCK changes nothing for one (pread, sendfile and mmap ignore it).
pub fn resolve(root: &Root, name: &[u8]) -> Result<Resolved, Refused> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    if name.is_empty() || name.contains(&0) {
        return Err(Refused::BadName);
    }
    let rel = Path::new(std::ffi::OsStr::from_bytes(name));
    let mut clean = PathBuf::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => clean.push(p),
            Component::CurDir => {}
            Component::RootDir => {}
            Component::ParentDir | Component::Prefix(_) => return Err(Refused::BadName),
        }
    }
    // A name ending in `/` (or `/.`) names a directory, which is never served: `components`
    // drops the ending, and `a.txt/` was served as `a.txt` (the kernel says ENOTDIR).
    if clean.as_os_str().is_empty() || matches!(name.rsplit(|&b| b == b'/').next(), Some(b"" | b".")) {
        return Err(Refused::NotFound);
    }
    let file = match open_beneath(root, &clean) {
        Ok(f) => f,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
            // No openat2 here (or a seccomp filter refuses it): canonicalize.
            let full = root.path.join(&clean).canonicalize().map_err(|_| Refused::NotFound)?;
            if !full.starts_with(&root.path) {
                return Err(Refused::NotFound);
            }
            std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&full).map_err(|_| Refused::NotFound)?
        }
        Err(_) => return Err(Refused::NotFound),
    };
    // The opened descriptor's type, not the name's: what is sent is what was checked.
    let meta = file.metadata().map_err(|_| Refused::NotFound)?;
    if !meta.is_file() {
        return Err(Refused::NotFound);
    }
    Ok(Resolved { file, len: meta.len(), path: root.path.join(&clean), version: Version::of(&meta) })
}

/// `openat2(root, rel, O_RDONLY | O_NONBLOCK, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`.
fn open_beneath(root: &Root, rel: &Path) -> std::io::Result<File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(rel.as_os_str().as_bytes()).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: open_how is a plain struct of integers; zero is its default.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: openat2 with a descriptor we hold, a NUL-terminated path and
    // an open_how of the size passed; it returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_openat2, root.dir.as_raw_fd(), c.as_ptr(), &how as *const libc::open_how, std::mem::size_of::<libc::open_how>()) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd as i32) })
}

/// Percent-decodes a URL path (`%2F` stays a byte of the name; a bad escape is `None`).
pub fn percent_decode(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
            let (h, l) = (hex(*s.get(i + 1)?)?, hex(*s.get(i + 2)?)?);
            out.push(h << 4 | l);
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_under_the_root() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), b"hello").unwrap();
        std::fs::write(d.path().join("secret"), b"no").unwrap();
        std::os::unix::fs::symlink(d.path().join("secret"), root.join("out")).unwrap();
        std::os::unix::fs::symlink("sub/a.txt", root.join("in")).unwrap();
        std::os::unix::fs::symlink(root.canonicalize().unwrap().join("sub/a.txt"), root.join("abs")).unwrap();
        let root = Root::open(&root.canonicalize().unwrap()).unwrap();
        assert_eq!(resolve(&root, b"sub/a.txt").unwrap().len, 5);
        assert_eq!(resolve(&root, b"sub/a.txt").unwrap().path, root.path.join("sub/a.txt"));
        assert_eq!(resolve(&root, b"/sub/./a.txt").unwrap().len, 5);
        assert_eq!(resolve(&root, b"in").unwrap().len, 5, "a symlink inside the root is followed");
        assert_eq!(resolve(&root, b"out").unwrap_err(), Refused::NotFound, "a symlink out of the root is not");
        assert_eq!(resolve(&root, b"abs").unwrap_err(), Refused::NotFound, "an absolute symlink is not, even into the root");
        assert!(Root::open(&root.path.join("sub/a.txt")).is_err(), "a file is no root");
        assert_eq!(resolve(&root, b"../secret").unwrap_err(), Refused::BadName);
        assert_eq!(resolve(&root, b"sub/../../secret").unwrap_err(), Refused::BadName);
        assert_eq!(resolve(&root, b"sub").unwrap_err(), Refused::NotFound, "a directory is not a file");
        assert_eq!(resolve(&root, b"a\0b").unwrap_err(), Refused::BadName);
        assert_eq!(resolve(&root, b"/").unwrap_err(), Refused::NotFound);
        assert_eq!(resolve(&root, b"sub/a.txt/").unwrap_err(), Refused::NotFound, "a name ending in / is a directory's");
        assert_eq!(resolve(&root, b"sub/a.txt/.").unwrap_err(), Refused::NotFound, "so is one ending in /.");
        assert_eq!(percent_decode(b"a%20b%2e"), Some(b"a b.".to_vec()));
        assert_eq!(percent_decode(b"bad%2"), None);
    }
    /// A FIFO is refused at once: opening it for reading waited for a writer
    /// forever (a worker held for each request, then the whole server).
    #[test]
    fn a_fifo_is_not_found_at_once() {
        let d = tempfile::tempdir().unwrap();
        let fifo = std::ffi::CString::new(d.path().join("fifo").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "{}", std::io::Error::last_os_error());
        let root = Root::open(&d.path().canonicalize().unwrap()).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        // On a thread: without O_NONBLOCK the open never returns (the timeout is a hang guard only).
        std::thread::spawn(move || tx.send(resolve(&root, b"fifo").map(|r| r.len)));
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(60)).expect("resolving a FIFO hung"), Err(Refused::NotFound));
    }
}
