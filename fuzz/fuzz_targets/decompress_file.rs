//! `peerpath decompress FILE` (peerpath_runtime's file job: members found
//! by their declared sizes, decoded in parallel in place, padding and end
//! markers checked) against the streaming reader (`StreamDecoder::run`,
//! what reads a pipe) on arbitrary bytes: the first byte picks whether a
//! missing end member is allowed and whether `verify` runs too. Where the
//! reader decodes the bytes, the job writes exactly its output; where the
//! job succeeds, the reader agrees; a job that fails leaves no output and
//! no temporary; `verify` passes exactly where `decompress` does.
#![no_main]

#[path = "common/scratch.rs"]
mod scratch;

use libfuzzer_sys::fuzz_target;
use peerpath_func::StreamDecoder;
use peerpath_runtime::job::CommonOptions;
use peerpath_runtime::{decompress, verify, DecompressOptions};
use std::path::PathBuf;
use std::sync::OnceLock;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| scratch::scratch_dir("decompress_file"))
}

fn streamed(data: &[u8], allow_missing_end: bool) -> Option<Vec<u8>> {
    let mut d = StreamDecoder::new(data, 0, 0);
    if allow_missing_end {
        d = d.allow_missing_end_member();
    }
    let mut out = Vec::new();
    d.run(true, |b| {
        out.extend_from_slice(b);
        Ok(())
    })
    .ok()?;
    Some(out)
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, data)) = input.split_first() else { return };
    let (src, out) = (dir().join("src.gz"), dir().join("out"));
    std::fs::write(&src, data).expect("a scratch file");
    let _ = std::fs::remove_file(&out);
    let opts = DecompressOptions {
        common: CommonOptions { threads: 2, direct: false, sync_io: mode & 4 == 0, durable: false, force: true, ..CommonOptions::default() },
        key: None,
        gpu: None,
        allow_missing_end_member: mode & 1 != 0,
    };
    let job = decompress(&[(src.clone(), out.clone())], &opts).map_err(|e| e.to_string());
    let want = streamed(data, mode & 1 != 0);
    match (&job, &want) {
        (Ok(_), Some(w)) => assert!(std::fs::read(&out).expect("the output") == *w, "the job's output is not the reader's"),
        (Ok(_), None) => panic!("the job decoded what the reader refuses ({} bytes out)", std::fs::metadata(&out).map_or(0, |m| m.len())),
        (Err(e), Some(w)) => panic!("the job refused what the reader decodes ({} bytes): {e}", w.len()),
        (Err(_), None) => assert!(!out.exists(), "a failed job left its output"),
    }
    let left: Vec<_> = std::fs::read_dir(dir()).expect("the scratch directory").flatten().map(|e| e.file_name()).filter(|n| n != "src.gz" && n != "out").collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    if mode & 2 != 0 {
        assert_eq!(verify(&[src], &opts).is_ok(), job.is_ok(), "verify and decompress disagree: {job:?}");
    }
});
