//! The streaming gzip reader on arbitrary bytes, fed in pieces of a size
//! the input chooses: it must return an error or the data, never panic,
//! hang or read out of bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_func::StreamDecoder;

#[path = "common/pieces.rs"]
mod pieces;
use pieces::Pieces;

fuzz_target!(|input: &[u8]| {
    let (step, data) = match input.split_first() {
        Some((s, rest)) => (*s as usize + 1, rest),
        None => (1, input),
    };
    let mut produced = 0usize;
    let mut d = StreamDecoder::new(Pieces { data, step }, 0, 0);
    let _ = d.run(true, |out| {
        produced += out.len();
        // Deflate expands at most ~1032x; anything beyond is a decoder bug.
        assert!(produced <= data.len().saturating_mul(1100) + 1024);
        Ok(())
    });
});
