use crate::report::Quoted;
use std::io;
use std::path::PathBuf;

/// Why a job failed. Each class has its own exit code (see [`JobError::exit_code`]). A file is
/// named as the reports name it ([`Quoted`]): its message stays one line, with the name's bytes.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("{0}")]
    Usage(String),
    #[error("cannot read source {path}: {source}", path = Quoted(path))]
    SourceUnreadable { path: PathBuf, source: io::Error },
    #[error("target {path} exists (use --force to overwrite)", path = Quoted(path))]
    TargetExists { path: PathBuf },
    /// An existing target a command never replaces, even with --force.
    #[error("target {path} exists: {why}", path = Quoted(path))]
    TargetKept { path: PathBuf, why: String },
    #[error("target directory {path} exists (a new one is made; it never replaces or merges into another)", path = Quoted(path))]
    TargetDirExists { path: PathBuf },
    #[error("source and target are the same file: {path}", path = Quoted(path))]
    SameFile { path: PathBuf },
    /// A target that is one of the files a job reads from (a set's shard or
    /// manifest) or lies in a store it reads from: never written, even with --force.
    #[error("target {path} is {what}: a source is never a target, even with --force", path = Quoted(path))]
    PartOfSource { path: PathBuf, what: String },
    #[error("{path}: member {member} at byte {offset}: {detail}", path = Quoted(path))]
    Corrupt { path: PathBuf, member: u64, offset: u64, detail: String },
    /// Damaged data that is not one gzip member (erasure-coded shards, their manifest).
    #[error("{path}: {detail}", path = Quoted(path))]
    Damaged { path: PathBuf, detail: String },
    #[error("{path}: truncated: member {member} at byte {offset}: {detail}", path = Quoted(path))]
    Truncated { path: PathBuf, member: u64, offset: u64, detail: String },
    /// A file cut short that is not a gzip file (an encrypted file).
    #[error("{path}: {detail}", path = Quoted(path))]
    TruncatedFile { path: PathBuf, detail: String },
    #[error("{path}: wrong key: the header's key check does not match this key (nothing was written)", path = Quoted(path))]
    WrongKey { path: PathBuf },
    #[error("{path}: not a gzip file: {detail}", path = Quoted(path))]
    NotGzip { path: PathBuf, detail: String },
    #[error("{path}: trailing garbage after the last member, at byte {offset}", path = Quoted(path))]
    TrailingGarbage { path: PathBuf, offset: u64 },
    /// More zeros after the last member than padding leaves: its end may be lost.
    #[error("{path}: {detail}", path = Quoted(path))]
    ZeroTail { path: PathBuf, detail: String },
    #[error("{path}: empty file (a gzip file holds at least one member)", path = Quoted(path))]
    EmptyArchive { path: PathBuf },
    #[error("cannot write {path}: {source}{hint}", hint = enospc_hint(path, source), path = Quoted(path))]
    TargetIo { path: PathBuf, source: io::Error },
    #[error("error reading {path}: {detail}", path = Quoted(path))]
    SourceIo { path: PathBuf, detail: String },
    #[error("{detail}")]
    Device { detail: String },
    #[error("{path}: the output failed its check and was not kept: {detail}", path = Quoted(path))]
    Verify { path: PathBuf, detail: String },
    #[error("internal error: {0}")]
    Internal(String),
    /// Memory a job needs that could not be had (the machine's, or the address-space limit);
    /// the text starts "out of memory:" and says how much, and how to do with less.
    #[error("{0}")]
    OutOfMemory(String),
    /// A malformed sysfs tree or topology file, an unknown device name.
    #[error("{0}")]
    Topology(String),
    /// A job that failed putting its outputs in place once `--force` had replaced existing
    /// targets, which keep their new outputs ([`crate::job::kept_after_replacing`]): `error`'s
    /// exit code.
    #[error("{error}; {kept}", kept = crate::job::kept_after_replacing(replaced))]
    AfterReplacing { error: Box<JobError>, replaced: Vec<PathBuf> },
    /// The job was stopped from outside (`cancel::cancel`: its client went away).
    #[error("cancelled: {why}")]
    Cancelled { why: String },
}

fn enospc_hint(path: &std::path::Path, e: &io::Error) -> &'static str {
    if e.raw_os_error() != Some(libc::ENOSPC) {
        ""
    } else if path.as_os_str() == "-" {
        // Standard output cannot be taken back: say what is true.
        " (no space left where standard output goes)"
    } else {
        " (no space left on the target's file system; nothing was kept)"
    }
}

impl JobError {
    /// Distinct non-zero exit codes per class of failure, documented in the README.
    pub fn exit_code(&self) -> i32 {
        match self {
            JobError::Internal(_) | JobError::OutOfMemory(_) => 1,
            JobError::AfterReplacing { error, .. } => error.exit_code(),
            JobError::Usage(_) => 2,
            JobError::SourceUnreadable { .. } => 3,
            JobError::TargetExists { .. } | JobError::TargetDirExists { .. } | JobError::TargetKept { .. } => 4,
            JobError::SameFile { .. } | JobError::PartOfSource { .. } => 5,
            JobError::Corrupt { .. } | JobError::Damaged { .. } => 6,
            JobError::Truncated { .. } | JobError::TruncatedFile { .. } => 7,
            JobError::NotGzip { .. } => 8,
            JobError::TrailingGarbage { .. } | JobError::ZeroTail { .. } => 9,
            JobError::EmptyArchive { .. } => 10,
            JobError::TargetIo { .. } => 11,
            JobError::SourceIo { .. } => 12,
            JobError::Topology(_) => 13,
            JobError::Device { .. } => 15,
            JobError::Verify { .. } => 16,
            JobError::WrongKey { .. } => 17,
            // As a shell reports a job ended by Ctrl-C (128 + SIGINT).
            JobError::Cancelled { .. } => 130,
        }
    }
}

pub type Result<T> = std::result::Result<T, JobError>;

impl JobError {
    /// An encrypted file's failure (peerpath-enc/1) as the job error, and exit code, it gets:
    /// wrong key 17, short file 7, anything else damaged (6).
    pub fn from_crypt(path: &std::path::Path, e: peerpath_func::crypt::CryptError) -> JobError {
        use peerpath_func::crypt::CryptError;
        let path = path.to_path_buf();
        match e {
            CryptError::WrongKey => JobError::WrongKey { path },
            CryptError::Truncated { .. } | CryptError::TruncatedHeader(_) => JobError::TruncatedFile { path, detail: e.to_string() },
            other => JobError::Damaged { path, detail: other.to_string() },
        }
    }
}
