//! Content-defined chunking and fingerprints (the CPU oracle of the
//! deduplication function): FastCDC (2020, normalised, the `fastcdc`
//! crate) cuts a stream where its content says, so an insertion moves only
//! the chunks around it; each chunk is named by its BLAKE3 (or SHA-256)
//! digest.

use std::io::Read;

/// Chunk sizes in bytes: FastCDC cuts no chunk shorter than `min` (but the
/// last) nor longer than `max`, and aims at `avg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkParams {
    pub min: usize,
    pub avg: usize,
    pub max: usize,
}

impl Default for ChunkParams {
    /// 16 KiB / 64 KiB / 256 KiB (the sizes restic and FastCDC's paper use around 8-64 KiB).
    fn default() -> Self {
        ChunkParams { min: 16 << 10, avg: 64 << 10, max: 256 << 10 }
    }
}

impl ChunkParams {
    /// Checks the sizes against what FastCDC takes (min 64 B-1 MiB, avg 256 B-4 MiB, max 1 KiB-16 MiB, min <= avg <= max).
    pub fn new(min: usize, avg: usize, max: usize) -> Result<ChunkParams, String> {
        use fastcdc::v2020::{AVERAGE_MAX, AVERAGE_MIN, MAXIMUM_MAX, MAXIMUM_MIN, MINIMUM_MAX, MINIMUM_MIN};
        let ok = (MINIMUM_MIN..=MINIMUM_MAX).contains(&min) && (AVERAGE_MIN..=AVERAGE_MAX).contains(&avg) && (MAXIMUM_MIN..=MAXIMUM_MAX).contains(&max) && min <= avg && avg <= max;
        if ok {
            Ok(ChunkParams { min, avg, max })
        } else {
            Err(format!(
                "chunk sizes min {min}, avg {avg}, max {max}: need {MINIMUM_MIN} <= min <= {MINIMUM_MAX}, {AVERAGE_MIN} <= avg <= {AVERAGE_MAX}, {MAXIMUM_MIN} <= max <= {MAXIMUM_MAX}, min <= avg <= max"
            ))
        }
    }
}

/// How chunks are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fingerprint {
    Blake3,
    Sha256,
}

impl Fingerprint {
    pub fn name(self) -> &'static str {
        match self {
            Fingerprint::Blake3 => "blake3",
            Fingerprint::Sha256 => "sha256",
        }
    }

    pub fn parse(s: &str) -> Option<Fingerprint> {
        match s {
            "blake3" => Some(Fingerprint::Blake3),
            "sha256" => Some(Fingerprint::Sha256),
            _ => None,
        }
    }

    /// The 32-byte digest of `data`.
    pub fn digest(self, data: &[u8]) -> [u8; 32] {
        match self {
            Fingerprint::Blake3 => *blake3::hash(data).as_bytes(),
            Fingerprint::Sha256 => aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, data).as_ref().try_into().expect("32 bytes"),
        }
    }
}

/// One chunk of a stream: where it starts, its bytes and its digest.
#[derive(Debug)]
pub struct Chunk {
    pub offset: u64,
    pub data: Vec<u8>,
    pub digest: [u8; 32],
}

/// The chunks of `source`, in order, each with its digest.
pub fn chunks<R: Read>(source: R, p: ChunkParams, fp: Fingerprint) -> impl Iterator<Item = std::io::Result<Chunk>> {
    fastcdc::v2020::StreamCDC::new(source, p.min, p.avg, p.max).map(move |c| match c {
        Ok(c) => Ok(Chunk { offset: c.offset, digest: fp.digest(&c.data), data: c.data }),
        Err(fastcdc::v2020::Error::IoError(e)) => Err(e),
        Err(e) => Err(std::io::Error::other(e.to_string())),
    })
}

/// [`chunks`], with the fingerprints computed on `hashers` threads of
/// their own while the next chunks are cut (cutting is sequential: FastCDC's
/// rolling hash runs through every byte; digests are independent): the same
/// chunks in the same order. At most about 130 chunks are in flight (two
/// queues of 64 and one a thread), each at most `max` bytes.
pub fn chunks_pipelined<R: Read + Send + 'static>(source: R, p: ChunkParams, fp: Fingerprint, hashers: usize) -> impl Iterator<Item = std::io::Result<Chunk>> {
    use std::sync::mpsc::sync_channel;
    const IN_FLIGHT: usize = 64;
    let (cut_tx, cut_rx) = sync_channel::<(u64, std::io::Result<(u64, Vec<u8>)>)>(IN_FLIGHT);
    let (done_tx, done_rx) = sync_channel::<(u64, std::io::Result<Chunk>)>(IN_FLIGHT);
    std::thread::Builder::new()
        .name("peerpath-cdc".into())
        .spawn(move || {
            for (seq, c) in fastcdc::v2020::StreamCDC::new(source, p.min, p.avg, p.max).enumerate() {
                let c = match c {
                    Ok(c) => Ok((c.offset, c.data)),
                    Err(fastcdc::v2020::Error::IoError(e)) => Err(e),
                    Err(e) => Err(std::io::Error::other(e.to_string())),
                };
                let stop = c.is_err();
                if cut_tx.send((seq as u64, c)).is_err() || stop {
                    return;
                }
            }
        })
        .expect("a thread for chunking");
    let cut_rx = std::sync::Arc::new(std::sync::Mutex::new(cut_rx));
    for _ in 0..hashers.max(1) {
        let (cut_rx, done_tx) = (cut_rx.clone(), done_tx.clone());
        std::thread::Builder::new()
            .name("peerpath-hash".into())
            .spawn(move || loop {
                let next = cut_rx.lock().expect("the chunk queue's lock").recv();
                let Ok((seq, c)) = next else { return };
                let c = c.map(|(offset, data)| Chunk { offset, digest: fp.digest(&data), data });
                if done_tx.send((seq, c)).is_err() {
                    return;
                }
            })
            .expect("a thread for hashing");
    }
    drop(done_tx);
    let mut pending = std::collections::BTreeMap::new();
    let mut next = 0u64;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed {
            return None;
        }
        while !pending.contains_key(&next) {
            let (seq, c) = done_rx.recv().ok()?;
            pending.insert(seq, c);
        }
        let c = pending.remove(&next).expect("checked above");
        next += 1;
        failed = c.is_err();
        Some(c)
    })
}

/// The chunk boundaries of a block, as (offset, length). Without `at_end`
/// the last chunk is left out: more data after the block could move its
/// end, so it must start the next block (the carry). Chunking a stream in
/// blocks this way gives exactly [`chunks`]'s boundaries.
pub fn cut_points(data: &[u8], p: ChunkParams, at_end: bool) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = fastcdc::v2020::FastCDC::new(data, p.min, p.avg, p.max).map(|c| (c.offset, c.length)).collect();
    if !at_end {
        v.pop();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::protein_like as data;

    #[test]
    fn chunks_cover_the_stream_within_their_bounds() {
        let p = ChunkParams::new(1024, 4096, 16384).unwrap();
        let d = data(1 << 20, 3);
        let cs: Vec<Chunk> = chunks(&d[..], p, Fingerprint::Blake3).collect::<Result<_, _>>().unwrap();
        let mut at = 0u64;
        for (i, c) in cs.iter().enumerate() {
            assert_eq!(c.offset, at);
            assert!(c.data.len() <= p.max && (c.data.len() >= p.min || i == cs.len() - 1));
            assert_eq!(c.digest, *blake3::hash(&c.data).as_bytes());
            at += c.data.len() as u64;
        }
        assert_eq!(at, d.len() as u64);
        assert!(cs.len() > 100, "{} chunks", cs.len());
        assert_eq!(chunks(&[][..], p, Fingerprint::Blake3).count(), 0, "an empty stream has no chunks");
    }

    /// The property deduplication rests on: an insertion changes only the chunks near it.
    #[test]
    fn an_insertion_changes_only_the_chunks_around_it() {
        let p = ChunkParams::new(1024, 4096, 16384).unwrap();
        let d = data(1 << 20, 5);
        let mut edited = d.clone();
        edited.splice(500_000..500_000, b"an insertion of a few bytes".iter().copied());
        let names = |v: &[u8]| chunks(v, p, Fingerprint::Sha256).map(|c| c.unwrap().digest).collect::<std::collections::HashSet<_>>();
        let (a, b) = (names(&d), names(&edited));
        let shared = a.intersection(&b).count();
        assert!(shared + 4 >= a.len(), "{shared} of {} chunks shared", a.len());
    }

    /// Hashing on other threads gives the same chunks, in order, and an
    /// error where the source fails.
    #[test]
    fn pipelined_chunks_are_the_sequential_ones() {
        let p = ChunkParams::new(1024, 4096, 16384).unwrap();
        let d = data(3 << 20, 11);
        let want: Vec<(u64, [u8; 32], usize)> = chunks(&d[..], p, Fingerprint::Blake3).map(|c| c.map(|c| (c.offset, c.digest, c.data.len())).unwrap()).collect();
        for hashers in [1, 3] {
            let got: Vec<(u64, [u8; 32], usize)> = chunks_pipelined(std::io::Cursor::new(d.clone()), p, Fingerprint::Blake3, hashers).map(|c| c.map(|c| (c.offset, c.digest, c.data.len())).unwrap()).collect();
            assert_eq!(got, want, "{hashers} hashing threads");
        }
        struct Failing(usize);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.0 == 0 {
                    return Err(std::io::Error::other("the disk went away"));
                }
                let n = buf.len().min(self.0);
                buf[..n].fill(7);
                self.0 -= n;
                Ok(n)
            }
        }
        let got: Vec<std::io::Result<Chunk>> = chunks_pipelined(Failing(100_000), p, Fingerprint::Sha256, 2).collect();
        assert!(got.last().unwrap().as_ref().is_err_and(|e| e.to_string().contains("went away")), "the error comes last");
        assert!(got[..got.len() - 1].iter().all(|c| c.is_ok()));
    }

    /// Blocks cut with a carry give the stream's chunks exactly.
    #[test]
    fn blocks_with_a_carry_give_the_streams_chunks() {
        let p = ChunkParams::new(1024, 4096, 16384).unwrap();
        let d = data(700_000, 8);
        let stream: Vec<(u64, usize)> = chunks(&d[..], p, Fingerprint::Blake3).map(|c| c.map(|c| (c.offset, c.data.len())).unwrap()).collect();
        for block in [20_000usize, 65_536, 100_003] {
            let (mut got, mut start, mut at) = (Vec::new(), 0usize, 0usize);
            loop {
                at = (at + block).min(d.len());
                let end = at == d.len();
                for (o, l) in cut_points(&d[start..at], p, end) {
                    got.push(((start + o) as u64, l));
                }
                start = got.last().map_or(0, |&(o, l)| o as usize + l);
                if end {
                    break;
                }
            }
            assert_eq!(got, stream, "blocks of {block}");
        }
    }

    #[test]
    fn sizes_outside_fastcdc_ranges_are_refused_and_digests_are_the_standard_ones() {
        assert!(ChunkParams::new(16, 4096, 16384).is_err());
        assert!(ChunkParams::new(8192, 4096, 16384).unwrap_err().contains("min <= avg"));
        // FIPS 180-2's "abc" and BLAKE3's empty-input digest.
        assert_eq!(Fingerprint::Sha256.digest(b"abc")[..4], [0xba, 0x78, 0x16, 0xbf]);
        assert_eq!(Fingerprint::Blake3.digest(b"")[..4], [0xaf, 0x13, 0x49, 0xb9]);
    }
}
