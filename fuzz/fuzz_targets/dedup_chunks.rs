//! A dedup store's chunking settings and its cutter on arbitrary bytes: the
//! sizes a store's index holds (`min`, `avg`, `max`, read back as any
//! numbers) and its hash name, checked as `dedup` checks them, then data
//! (the rest of the input, or runs of one byte it describes, which the
//! cutter counts rather than cuts) cut by `chunk_digests` (what the CPU
//! device and the host run) against the `fastcdc` crate's own stream cutter
//! and `cut_points`: the same chunks, each within the sizes, covering the
//! data, with the fingerprint's digest. Fingerprint names read back to
//! themselves.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_func::dedup::{chunk_digests, chunks, cut_points, ChunkParams, Fingerprint};

fuzz_target!(|input: &[u8]| {
    let Some((head, rest)) = input.split_first_chunk::<7>() else { return };
    let size = |a: u8, b: u8, shift: u32| (usize::from(u16::from_le_bytes([a, b])) << shift) >> 4;
    // Sizes around FastCDC's ranges (min 64 B-1 MiB, avg 256 B-4 MiB, max 1 KiB-16 MiB) and past them.
    let (min, avg, max) = (size(head[0], head[1], 4), size(head[2], head[3], 6), size(head[4], head[5], 8));
    let fp = if head[6] & 1 == 0 { Fingerprint::Blake3 } else { Fingerprint::Sha256 };
    assert_eq!(Fingerprint::parse(fp.name()), Some(fp));
    if let Ok(text) = std::str::from_utf8(rest) {
        if let Some(f) = Fingerprint::parse(text) {
            assert_eq!(f.name(), text);
        }
    }
    let Ok(p) = ChunkParams::new(min, avg, max) else { return };
    let data: Vec<u8> = if head[6] & 2 == 0 {
        rest.to_vec()
    } else {
        // (byte, length in units of 64 bytes) pairs: long runs from a short input.
        rest.chunks(2).take(64).flat_map(|r| std::iter::repeat_n(r[0], 64 * usize::from(*r.get(1).unwrap_or(&1)))).collect()
    };
    let at_end = head[6] & 4 == 0;
    let cut = chunk_digests(&data, p, fp, at_end);
    let points = cut_points(&data, p, at_end);
    assert_eq!(cut.iter().map(|&(o, l, _)| (o, l)).collect::<Vec<_>>(), points, "{p:?}: chunk_digests and cut_points cut differently");
    let mut next = 0;
    for (i, &(o, l, d)) in cut.iter().enumerate() {
        assert_eq!(o, next, "{p:?}: chunk {i} does not start where the one before ended");
        assert!(l <= p.max && (l >= p.min || o + l == data.len()), "{p:?}: chunk {i} of {l} bytes");
        assert_eq!(d, fp.digest(&data[o..o + l]), "{p:?}: chunk {i}'s digest");
        next = o + l;
    }
    if at_end {
        assert_eq!(next, data.len(), "{p:?}: the chunks do not cover the data");
        let streamed: Vec<(usize, usize, [u8; 32])> = chunks(&data[..], p, fp).map(|c| c.map(|c| (c.offset as usize, c.data().len(), c.digest))).collect::<Result<_, _>>().expect("reading memory never fails");
        assert_eq!(cut, streamed, "{p:?}: chunk_digests and the stream cutter differ");
    }
});
