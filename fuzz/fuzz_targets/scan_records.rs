//! The record filter (FASTA, FASTQ, lines) on arbitrary bytes: never a
//! panic, and the data cut into blocks by `BlockCutter` as the CLI's reader
//! cuts it (pieces and a block size the first two bytes pick; long FASTQ
//! blank runs shortened) gives what the whole data gives: the same counts
//! and kept records, or the same first malformed FASTQ record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_func::scan::{BlockCutter, Filter, Found, Malformed, RecordFormat};
use regex::bytes::Regex;

fn run(f: &Filter, data: &[u8], format: RecordFormat, step: usize, block: usize) -> (Result<Found, Malformed>, Vec<u8>) {
    let (mut cutter, mut sum, mut out) = (BlockCutter::new(Some(format), block), Found::default(), Vec::new());
    let mut each = |b: peerpath_func::scan::CutBlock| -> Result<(), Malformed> {
        let found = f.block(&b.data, b.format, b.at_end, Some(&mut out)).map_err(|m| Malformed { offset: b.offset as usize + m.offset, ..m })?;
        sum.add(&found);
        Ok(())
    };
    let mut cut = Ok(());
    for (i, piece) in data.chunks(step).enumerate() {
        cut = cut.and_then(|()| cutter.push(piece, (i + 1) * step >= data.len(), &mut each));
    }
    if data.is_empty() {
        cut = cutter.push(&[], true, &mut each);
    }
    (cut.map(|()| sum), out)
}

fuzz_target!(|data: &[u8]| {
    let Some((&[step, block], data)) = data.split_first_chunk::<2>() else { return };
    let f = Filter { motif: Some(Regex::new("A[CG]T|^K").expect("a motif")), min_length: Some(2), id_prefix: Some(b"r".to_vec()) };
    for format in [RecordFormat::Fasta, RecordFormat::Fastq, RecordFormat::Lines] {
        let mut whole_out = Vec::new();
        let whole = f.block(data, format, true, Some(&mut whole_out));
        let (blocks, out) = run(&f, data, format, usize::from(step) + 1, usize::from(block) + 1);
        match (&whole, &blocks) {
            (Ok(w), Ok(b)) if !data.is_empty() => assert_eq!((w.records, w.matched, w.matched_bases, &whole_out), (b.records, b.matched, b.matched_bases, &out), "{format:?}"),
            (Ok(_), Ok(b)) => assert_eq!((b.records, out.len()), (0, 0)),
            _ => assert_eq!(whole.err(), blocks.err(), "{format:?}"),
        }
    }
});
