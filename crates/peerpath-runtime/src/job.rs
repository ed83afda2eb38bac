//! What every job shares: options, source/target checks, naming.

use crate::error::{JobError, Result};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Called with (uncompressed bytes done, total if known).
pub type Progress = Arc<dyn Fn(u64, Option<u64>) + Send + Sync>;

#[derive(Clone)]
pub struct CommonOptions {
    /// Compute worker threads.
    pub threads: usize,
    pub queue_depth: u32,
    /// Use O_DIRECT where the file system takes it.
    pub direct: bool,
    /// Use pread/pwrite instead of io_uring.
    pub sync_io: bool,
    /// Overwrite existing targets.
    pub force: bool,
    pub progress: Option<Progress>,
}

impl Default for CommonOptions {
    fn default() -> Self {
        CommonOptions {
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            queue_depth: 8,
            direct: true,
            sync_io: false,
            force: false,
            progress: None,
        }
    }
}

/// "-" names standard input or output.
pub fn is_std_stream(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// Checks a target before anything is written: refuses an existing target
/// without `force`, and refuses a target that is the source itself.
pub fn check_target(source: &Path, target: &Path, force: bool) -> Result<()> {
    if is_std_stream(target) {
        return Ok(());
    }
    let Ok(tmeta) = std::fs::metadata(target) else { return Ok(()) };
    if !is_std_stream(source) {
        if let Ok(smeta) = std::fs::metadata(source) {
            if smeta.dev() == tmeta.dev() && smeta.ino() == tmeta.ino() {
                return Err(JobError::SameFile { path: target.to_path_buf() });
            }
        }
    }
    if tmeta.is_dir() {
        return Err(JobError::Usage(format!("target {} is a directory", target.display())));
    }
    // Targets are replaced by renaming a finished temporary file over them;
    // doing that to /dev/null or a FIFO would replace the device node.
    if !tmeta.is_file() {
        return Err(JobError::Usage(format!(
            "target {} is not a regular file; write to standard output with -o - and redirect it",
            target.display()
        )));
    }
    if !force {
        return Err(JobError::TargetExists { path: target.to_path_buf() });
    }
    Ok(())
}

/// Refuses two pairs writing the same target.
pub fn check_distinct_targets(targets: &[PathBuf]) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for t in targets {
        if !is_std_stream(t) && !seen.insert(t) {
            return Err(JobError::Usage(format!("two sources would both write {}", t.display())));
        }
    }
    Ok(())
}

/// Target names for `sources` given `--output` (a file for one source, a
/// directory for several) and a function naming one target from a source.
pub fn plan_targets(sources: &[PathBuf], output: Option<&Path>, name: impl Fn(&Path) -> Result<PathBuf>) -> Result<Vec<PathBuf>> {
    let targets = match output {
        None => sources
            .iter()
            .map(|s| {
                if is_std_stream(s) {
                    Err(JobError::Usage("reading standard input needs --output (a file, or - for standard output)".into()))
                } else {
                    name(s)
                }
            })
            .collect::<Result<Vec<_>>>()?,
        Some(o) if sources.len() == 1 && !o.is_dir() => vec![o.to_path_buf()],
        Some(o) if is_std_stream(o) => return Err(JobError::Usage("several sources cannot all go to standard output".into())),
        Some(o) => {
            if !o.exists() {
                std::fs::create_dir_all(o).map_err(|e| JobError::TargetIo { path: o.to_path_buf(), source: e })?;
            }
            sources
                .iter()
                .map(|s| {
                    if is_std_stream(s) {
                        return Err(JobError::Usage("standard input cannot go to a directory; name the target file".into()));
                    }
                    let n = name(s)?;
                    Ok(o.join(n.file_name().expect("named targets have a file name")))
                })
                .collect::<Result<Vec<_>>>()?
        }
    };
    check_distinct_targets(&targets)?;
    Ok(targets)
}
