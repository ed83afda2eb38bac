use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What kind of thing a source is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A regular file of known size.
    Regular { size_bytes: u64 },
    /// A block device of known size.
    BlockDevice { size_bytes: u64 },
    /// A pipe, terminal or socket: read sequentially to its end.
    Stream,
}

impl SourceKind {
    pub fn size_bytes(&self) -> Option<u64> {
        match self {
            SourceKind::Regular { size_bytes } | SourceKind::BlockDevice { size_bytes } => Some(*size_bytes),
            SourceKind::Stream => None,
        }
    }
}

/// An opened file and how it was opened.
#[derive(Debug)]
pub struct OpenedFile {
    pub file: File,
    pub path: PathBuf,
    pub kind: SourceKind,
    pub direct: bool,
    /// Why O_DIRECT is off, if it is.
    pub direct_refused: Option<String>,
}

impl OpenedFile {
    /// Whether its bytes come from or go to storage (a regular file or a
    /// block device, also behind standard input or output), rather than a
    /// pipe, socket or character device.
    pub fn reaches_storage(&self) -> bool {
        match self.kind {
            SourceKind::Regular { .. } | SourceKind::BlockDevice { .. } => true,
            SourceKind::Stream => self.file.metadata().is_ok_and(|m| m.file_type().is_file() || m.file_type().is_block_device()),
        }
    }
}

fn open_with(path: &Path, opts: &OpenOptions, direct: bool) -> io::Result<File> {
    let mut o = opts.clone();
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

/// Opens a source read-only (never for writing: sources are never
/// modified), with O_DIRECT where the file system takes it and `want_direct`.
pub fn open_source(path: &Path, want_direct: bool) -> io::Result<OpenedFile> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    // Open without O_DIRECT first to learn what the path is; a FIFO must not
    // be opened twice (the writer would see two readers).
    let mut file = open_with(path, &opts, false)?;
    let meta = file.metadata()?;
    let ft = meta.file_type();
    let kind = if ft.is_file() {
        SourceKind::Regular { size_bytes: meta.len() }
    } else if ft.is_block_device() {
        SourceKind::BlockDevice { size_bytes: file.seek(SeekFrom::End(0))? }
    } else if ft.is_dir() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "is a directory"));
    } else {
        SourceKind::Stream
    };
    let (direct, direct_refused) = match kind {
        SourceKind::Stream => (false, Some("not a regular file or block device".to_string())),
        _ if !want_direct => (false, Some("O_DIRECT disabled (--no-direct)".to_string())),
        _ => match open_with(path, &opts, true) {
            Ok(f) => {
                file = f;
                (true, None)
            }
            Err(e) => (false, Some(format!("file system refused O_DIRECT ({e})"))),
        },
    };
    Ok(OpenedFile { file, path: path.to_path_buf(), kind, direct, direct_refused })
}

/// Creates a fresh temporary file next to `final_path` (same directory, so
/// the final rename is atomic), with O_DIRECT where possible.
pub fn open_target_tmp(final_path: &Path, want_direct: bool) -> io::Result<OpenedFile> {
    let dir = match final_path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = final_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true).mode(0o644);
    for attempt in 0..100u32 {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let tmp = dir.join(format!(".{name}.peerpath-tmp.{}.{:08x}{attempt}", std::process::id(), nanos));
        let (file, direct, refused) = if want_direct {
            match open_with(&tmp, &opts, true) {
                Ok(f) => (f, true, None),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    // tmpfs and some FUSE file systems refuse O_DIRECT at open;
                    // open_with may have created the file before refusing.
                    let _ = std::fs::remove_file(&tmp);
                    match open_with(&tmp, &opts, false) {
                        Ok(f) => (f, false, Some(format!("file system refused O_DIRECT ({e})"))),
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                        Err(e) => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        } else {
            match open_with(&tmp, &opts, false) {
                Ok(f) => (f, false, Some("O_DIRECT disabled (--no-direct)".to_string())),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        return Ok(OpenedFile { file, path: tmp, kind: SourceKind::Regular { size_bytes: 0 }, direct, direct_refused: refused });
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "could not find a free temporary name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_is_read_only_and_sized() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a");
        std::fs::write(&p, vec![1u8; 10_000]).unwrap();
        let f = open_source(&p, true).unwrap();
        assert_eq!(f.kind, SourceKind::Regular { size_bytes: 10_000 });
        use std::io::Write;
        assert!((&f.file).write(b"x").is_err(), "sources must be opened read-only");
    }

    #[test]
    fn directory_source_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(open_source(dir.path(), true).is_err());
    }

    #[test]
    fn temporary_target_lives_next_to_the_final_name() {
        let dir = tempfile::tempdir().unwrap();
        let t = open_target_tmp(&dir.path().join("x.gz"), true).unwrap();
        assert_eq!(t.path.parent().unwrap(), dir.path());
        assert!(t.path.file_name().unwrap().to_string_lossy().starts_with(".x.gz.peerpath-tmp."));
    }
}
