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
    #[error("{}", cannot_write(path, source, true))]
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
    #[error("{error}; {kept}", error = BeforeReplaced(error), kept = crate::job::kept_after_replacing(replaced))]
    AfterReplacing { error: Box<JobError>, replaced: Vec<PathBuf> },
    /// The job was stopped from outside (`cancel::cancel`: its client went away).
    #[error("cancelled: {why}")]
    Cancelled { why: String },
}

/// [`JobError::TargetIo`]'s message; a full file system's says that nothing was kept where
/// `nothing_kept` (not so once `--force` had replaced targets: [`BeforeReplaced`]).
fn cannot_write(path: &std::path::Path, e: &io::Error, nothing_kept: bool) -> String {
    let hint = if e.raw_os_error() != Some(libc::ENOSPC) {
        ""
    } else if path.as_os_str() == "-" {
        // Standard output cannot be taken back: say what is true.
        " (no space left where standard output goes)"
    } else if nothing_kept {
        " (no space left on the target's file system; nothing was kept)"
    } else {
        " (no space left on the target's file system)"
    };
    format!("cannot write {}: {e}{hint}", Quoted(path))
}

/// The error of a job that had replaced targets (`--force`) when it failed, as
/// [`JobError::AfterReplacing`] begins: what it says alone, less a "nothing was kept" that the
/// replaced targets make untrue (what was kept follows it).
struct BeforeReplaced<'a>(&'a JobError);

impl std::fmt::Display for BeforeReplaced<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            JobError::TargetIo { path, source } => f.write_str(&cannot_write(path, source, false)),
            e => e.fmt(f),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A full file system's error says that nothing was kept, unless `--force` had already
    /// replaced targets: then it says which, and nothing that contradicts it.
    #[test]
    fn a_full_file_system_says_nothing_was_kept_only_where_true() {
        let full = |name: &str| JobError::TargetIo { path: name.into(), source: io::Error::from_raw_os_error(libc::ENOSPC) };
        let alone = full("a\nb.gz").to_string();
        assert!(alone.starts_with(r"cannot write 'a'$'\n''b.gz': ") && alone.ends_with("(no space left on the target's file system; nothing was kept)"), "{alone}");
        let after = JobError::AfterReplacing { error: Box::new(full("b.gz")), replaced: vec!["a.gz".into()] };
        let text = after.to_string();
        assert!(!text.contains("nothing was kept"), "{text}");
        assert!(text.starts_with("cannot write b.gz: ") && text.contains("(no space left on the target's file system); the outputs under new names were removed"), "{text}");
        assert!(text.ends_with("--force had already replaced the existing file a.gz, and it keeps its new output"), "{text}");
        assert_eq!(after.exit_code(), 11);
        // Other errors read as they do alone.
        let exists = JobError::TargetExists { path: "c.gz".into() };
        let text = JobError::AfterReplacing { error: Box::new(JobError::TargetExists { path: "c.gz".into() }), replaced: vec!["a.gz".into()] }.to_string();
        assert!(text.starts_with(&format!("{exists}; the outputs under new names")), "{text}");
        let stdout = full("-").to_string();
        assert!(stdout.ends_with("(no space left where standard output goes)"), "{stdout}");
    }
}
