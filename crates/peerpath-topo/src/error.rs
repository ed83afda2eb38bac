//! Typed errors. Every error that comes from a file names the file.

use std::path::PathBuf;

/// Everything that can go wrong while reading, loading or querying a topology.
#[derive(Debug, thiserror::Error)]
pub enum TopoError {
    /// A file or directory could not be read (missing, permission, I/O error).
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The topology file the user named (`--file`) could not be opened or read: missing,
    /// permission, a directory, an I/O error (the user's input, as a source is, not a malformed
    /// topology; a file too large or not UTF-8 is [`TopoError::Io`], malformed).
    #[error("cannot read {path}: {source}")]
    FileUnreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A file was read but its content is not what the kernel writes there.
    #[error("malformed {path}: expected {expected}, found {found:?}")]
    Parse {
        path: PathBuf,
        /// What the kernel writes there, in words.
        expected: &'static str,
        /// The start of what was found (at most 64 characters, lossy UTF-8).
        found: String,
    },

    /// A symlink points nowhere (the device it names has gone).
    #[error("dangling symlink {path} -> {target}")]
    DanglingSymlink { path: PathBuf, target: PathBuf },

    /// A symlink resolves outside the sysfs root, or symlinks form a loop.
    #[error("{path}: {what}")]
    BadLink { path: PathBuf, what: String },

    /// The parent chain of a device loops or is deeper than any real PCIe tree.
    #[error("parent chain of {device} loops or exceeds {limit} levels (at {path})")]
    ParentLoop {
        device: String,
        path: PathBuf,
        limit: usize,
    },

    /// The sysfs root does not look like sysfs.
    #[error("{path} is not a sysfs root: {what}")]
    NotSysfs { path: PathBuf, what: String },

    /// A topology file could not be parsed.
    #[error("topology file{}: {source}", .path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    TomlParse {
        path: Option<PathBuf>,
        #[source]
        source: Box<toml::de::Error>,
    },

    /// The model could not be written as TOML.
    #[error("cannot write topology as TOML: {0}")]
    TomlWrite(#[from] toml::ser::Error),

    /// The model could not be written as JSON.
    #[error("cannot write topology as JSON: {0}")]
    Json(#[from] serde_json::Error),

    /// The model is inconsistent (a dangling reference, a loop, a duplicate).
    #[error("invalid topology: {0}")]
    Invalid(String),
    /// A device named for a role it cannot play (a bridge as storage, an SSD as a compute
    /// device): the request's fault, not the topology's.
    #[error("{0}")]
    WrongRole(String),

    /// A name given by the user (BDF, nvme0, nvme0n1, md0, ...) names nothing in the model.
    #[error("no device {name:?} in this topology (give a PCI address like 0000:01:00.0, a controller like nvme0, a block device like nvme0n1, or a GPU like gpu0)")]
    UnknownDevice { name: String },

    /// A name given by the user that names more than one thing, or nothing any more (a firmware
    /// label on two functions): never one of them picked.
    #[error("{name:?} names no one device: {why}; give a PCI address like 0000:01:00.0")]
    AmbiguousName { name: String, why: String },
}

/// Result alias for this crate.
pub type Result<T, E = TopoError> = std::result::Result<T, E>;

impl TopoError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        TopoError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn parse(path: impl Into<PathBuf>, expected: &'static str, found: &[u8]) -> Self {
        let shown: String = String::from_utf8_lossy(found).chars().take(64).collect();
        TopoError::Parse {
            path: path.into(),
            expected,
            found: shown,
        }
    }
}
