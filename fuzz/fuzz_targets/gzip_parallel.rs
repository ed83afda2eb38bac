//! The streaming gzip reader's parallel path (`StreamDecoder::run_parallel`,
//! what `decompress` of a pipe and `decompress --ec` use) against its
//! one-thread path (`run`) on arbitrary bytes: the first byte picks the
//! workers (2 or 3), the piece size the input arrives in, and the options
//! (any zero padding, a missing end member allowed); both give the same
//! output, or fail at the same place (a member's error names the same
//! member at the same offset, though the words may differ: the one-thread
//! path streams it, the workers decode it whole; any other error is the
//! same error), never a panic or an output beyond what deflate can expand to.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_func::{StreamDecoder, StreamError};

#[path = "common/pieces.rs"]
mod pieces;
use pieces::Pieces;

/// Where and how a stream failed: a member's error by its place, any other by its text.
fn failure(e: StreamError) -> String {
    match e {
        StreamError::Member { member, offset, .. } => format!("member {member} at byte {offset}"),
        e => e.to_string(),
    }
}

fn decode(data: &[u8], mode: u8, threads: usize) -> (Result<(), String>, Vec<u8>) {
    let step = [1, 7, 64, 4096, usize::MAX][usize::from(mode >> 3) % 5];
    let mut d = StreamDecoder::new(Pieces { data, step }, 0, 0);
    if mode & 2 != 0 {
        d = d.any_zero_padding();
    }
    if mode & 4 != 0 {
        d = d.allow_missing_end_member();
    }
    let mut out = Vec::new();
    let sink = |b: &[u8]| {
        out.extend_from_slice(b);
        // Deflate expands at most ~1032x; anything beyond is a decoder bug.
        assert!(out.len() <= data.len().saturating_mul(1100) + 1024);
        Ok(())
    };
    let r = if threads == 1 { d.run(mode & 0x80 != 0, sink) } else { d.run_parallel(threads, mode & 0x80 != 0, sink) };
    (r.map_err(failure), out)
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, data)) = input.split_first() else { return };
    let one = decode(data, mode, 1);
    let many = decode(data, mode, 2 + usize::from(mode & 1));
    match (&one, &many) {
        ((Ok(()), a), (Ok(()), b)) => assert!(a == b, "outputs differ: {} and {} bytes", a.len(), b.len()),
        ((Err(a), _), (Err(b), _)) => assert_eq!(a, b, "they fail at different places"),
        _ => panic!("one thread: {:?}, {} bytes; parallel: {:?}, {} bytes", one.0, one.1.len(), many.0, many.1.len()),
    }
});
