//! The record filter (FASTA, FASTQ, lines) on arbitrary bytes: never a
//! panic, and the data cut into blocks at `whole_records` (blocks of about
//! the size the first byte picks) gives what the whole data gives: the
//! same counts and kept records, or the same first malformed FASTQ record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_func::scan::{whole_records, Filter, Found, Malformed, RecordFormat};
use regex::bytes::Regex;

fn run(f: &Filter, data: &[u8], format: RecordFormat, step: usize) -> (Result<Found, Malformed>, Vec<u8>) {
    let (mut sum, mut out, mut at) = (Ok(Found::default()), Vec::new(), 0);
    while at < data.len() {
        // As the CLI's reader cuts: the whole records of the next `step` bytes, more bytes
        // while there is none yet, everything at the end.
        let mut end = (at + step).min(data.len());
        let cut = loop {
            match whole_records(&data[at..end], format, end == data.len()).filter(|&c| c > 0) {
                Some(c) => break at + c,
                None if end == data.len() => break data.len(),
                None => end = (end + step).min(data.len()),
            }
        };
        match f.block(&data[at..cut], format, cut == data.len(), Some(&mut out)) {
            Ok(found) => {
                if let Ok(s) = sum.as_mut() {
                    s.add(&found);
                }
            }
            Err(m) => return (Err(Malformed { offset: at + m.offset, ..m }), out),
        }
        at = cut;
    }
    (sum, out)
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, data)) = data.split_first() else { return };
    let f = Filter { motif: Some(Regex::new("A[CG]T|^K").expect("a motif")), min_length: Some(2), id_prefix: Some(b"r".to_vec()) };
    for format in [RecordFormat::Fasta, RecordFormat::Fastq, RecordFormat::Lines] {
        let mut whole_out = Vec::new();
        let whole = f.block(data, format, true, Some(&mut whole_out));
        let (blocks, out) = run(&f, data, format, usize::from(step) + 1);
        match (&whole, &blocks) {
            (Ok(w), Ok(b)) => assert_eq!((w.records, w.matched, w.matched_bases, &whole_out), (b.records, b.matched, b.matched_bases, &out), "{format:?}"),
            _ => assert_eq!(whole.err(), blocks.err(), "{format:?}"),
        }
    }
});
