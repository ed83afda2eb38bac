//! From a request's name to a file under the root, never outside it.

use std::fs::File;
use std::path::{Component, Path, PathBuf};

/// A file to send: open, with its length when it was opened.
#[derive(Debug)]
pub struct Resolved {
    pub file: File,
    pub len: u64,
    pub path: PathBuf,
}

/// Why a name gives no file.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not a clean relative name (`..`, NUL, absolute): a bad request.
    BadName,
    /// No such regular file under the root (or it leads outside the root).
    NotFound,
}

/// Resolves `name` (already percent-decoded, `/`-separated, relative to
/// the root) to a regular file inside `root` (canonical). `..`, empty or
/// NUL names are refused; a name that resolves (through symlinks)
/// outside the root is "not found", as a file that does not exist.
pub fn resolve(root: &Path, name: &[u8]) -> Result<Resolved, Refused> {
    use std::os::unix::ffi::OsStrExt;
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
    if clean.as_os_str().is_empty() {
        return Err(Refused::NotFound);
    }
    let full = root.join(&clean).canonicalize().map_err(|_| Refused::NotFound)?;
    if !full.starts_with(root) {
        return Err(Refused::NotFound);
    }
    let file = File::open(&full).map_err(|_| Refused::NotFound)?;
    let meta = file.metadata().map_err(|_| Refused::NotFound)?;
    if !meta.is_file() {
        return Err(Refused::NotFound);
    }
    Ok(Resolved { file, len: meta.len(), path: full })
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
        let root = root.canonicalize().unwrap();
        assert_eq!(resolve(&root, b"sub/a.txt").unwrap().len, 5);
        assert_eq!(resolve(&root, b"/sub/./a.txt").unwrap().len, 5);
        assert_eq!(resolve(&root, b"in").unwrap().len, 5, "a symlink inside the root is followed");
        assert_eq!(resolve(&root, b"out").unwrap_err(), Refused::NotFound, "a symlink out of the root is not");
        assert_eq!(resolve(&root, b"../secret").unwrap_err(), Refused::BadName);
        assert_eq!(resolve(&root, b"sub/../../secret").unwrap_err(), Refused::BadName);
        assert_eq!(resolve(&root, b"sub").unwrap_err(), Refused::NotFound, "a directory is not a file");
        assert_eq!(resolve(&root, b"a\0b").unwrap_err(), Refused::BadName);
        assert_eq!(resolve(&root, b"/").unwrap_err(), Refused::NotFound);
        assert_eq!(percent_decode(b"a%20b%2e"), Some(b"a b.".to_vec()));
        assert_eq!(percent_decode(b"bad%2"), None);
    }
}
