//! A scratch directory for a target that needs files: one per process,
//! under the temporary directory, named after the target and the process.
//! libFuzzer ends a run with `exit`, which drops no static, so each start
//! first removes those left by processes of the same target that are gone.

use std::path::PathBuf;

pub fn scratch_dir(target: &str) -> PathBuf {
    let base = std::env::temp_dir();
    let prefix = format!("peerpath-fuzz-{target}-");
    for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix(&prefix) {
            if !std::path::Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = base.join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}
