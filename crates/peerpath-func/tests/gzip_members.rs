use peerpath_func::gzip::{declared_output_bytes, BGZF_EOF_BLOCK};
use peerpath_func::*;
use proptest::prelude::*;
use std::io::Read;

fn sample(len: usize, seed: u64) -> Vec<u8> {
    // Protein-like text: compressible but not trivially.
    let alphabet = b"ACDEFGHIKLMNPQRSTVWY\n";
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            alphabet[(x % alphabet.len() as u64) as usize]
        })
        .collect()
}

fn encode(level: u32, format: Format, input: &[u8]) -> Vec<u8> {
    let mut enc = MemberEncoder::new(Level::new(level).unwrap());
    let mut out = vec![0u8; member_bound_bytes(input.len())];
    let n = encode_member(&mut enc, format, input, &mut out);
    out.truncate(n);
    out
}

/// `members` as peerpath ends a stream: with its end member.
fn ended(members: &[u8]) -> Vec<u8> {
    [members, &PEERPATH_END_MEMBER[..]].concat()
}

mod common;
use common::Dribble;

fn stream_decode(data: &[u8], step: usize) -> Result<Vec<u8>, StreamError> {
    let mut out = Vec::new();
    let mut d = StreamDecoder::new(Dribble { data, step }, 0, 0);
    d.run(true, |b| {
        out.extend_from_slice(b);
        Ok(())
    })?;
    Ok(out)
}

#[test]
fn every_level_round_trips_through_both_decoders() {
    let input = sample(300_000, 1);
    for level in 0..=Level::MAX {
        let member = encode(level, Format::Gzip, &input);
        let header = MemberHeader::parse(&member).unwrap();
        assert_eq!(header.sizes.unwrap().member_bytes(), member.len(), "level {level}");
        let mut out = vec![0u8; declared_output_bytes(&header, &member).unwrap()];
        assert_eq!(decode_member(&header, &member, &mut out).unwrap(), input.len());
        assert_eq!(out, input, "level {level}");
        assert_eq!(stream_decode(&ended(&member), 1 << 20).unwrap(), input, "level {level} streaming");
    }
}

#[test]
fn levels_0_to_3_use_isal_and_compress() {
    let input = sample(1 << 20, 2);
    for level in 1..=3 {
        assert_eq!(Level::new(level).unwrap().library(), "ISA-L igzip");
        let m = encode(level, Format::Gzip, &input);
        assert!(m.len() < input.len() * 7 / 10, "level {level} gave {}", m.len());
    }
    assert_eq!(Level::new(6).unwrap().library(), "libdeflate");
    assert!(Level::new(13).is_err());
}

#[test]
fn incompressible_data_is_stored_and_never_expands_past_the_bound() {
    let mut x = 0x9e3779b97f4a7c15u64;
    let input: Vec<u8> = (0..200_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    for level in [1, 6] {
        let m = encode(level, Format::Gzip, &input);
        assert!(m.len() <= member_bound_bytes(input.len()));
        assert_eq!(stream_decode(&ended(&m), 4096).unwrap(), input);
    }
}

#[test]
fn empty_block_is_a_valid_member() {
    for format in [Format::Gzip, Format::Bgzf] {
        let m = encode(1, format, &[]);
        assert_eq!(stream_decode(&m, 7).unwrap(), Vec::<u8>::new());
    }
}

#[test]
fn bgzf_members_carry_bsize_and_the_eof_block_parses() {
    let input = sample(BGZF_MAX_INPUT_BYTES, 3);
    let m = encode(1, Format::Bgzf, &input);
    let h = MemberHeader::parse(&m).unwrap();
    assert_eq!(h.sizes, Some(DeclaredSizes::Bgzf { member_bytes: m.len() as u32 }));
    let mut out = vec![0u8; BGZF_MAX_INPUT_BYTES];
    assert_eq!(decode_member(&h, &m, &mut out).unwrap(), input.len());
    let eof = MemberHeader::parse(&BGZF_EOF_BLOCK).unwrap();
    let mut none = [0u8; 0];
    assert_eq!(decode_member(&eof, &BGZF_EOF_BLOCK, &mut none).unwrap(), 0);
}

#[test]
fn the_end_member_is_an_empty_peerpath_member() {
    let h = MemberHeader::parse(&PEERPATH_END_MEMBER).unwrap();
    assert_eq!(h.sizes, Some(DeclaredSizes::Peerpath { member_bytes: 34, uncompressed_bytes: 0 }));
    assert!(!h.wants_an_end_member());
    assert_eq!(PEERPATH_END_MEMBER[..PEERPATH_HEADER_BYTES], peerpath_header(0, 34, 0));
    assert_eq!(decode_member(&h, &PEERPATH_END_MEMBER, &mut []).unwrap(), 0);
    assert_eq!(stream_decode(&PEERPATH_END_MEMBER, 5).unwrap(), Vec::<u8>::new());
    assert_eq!(Format::Gzip.end_marker(), &PEERPATH_END_MEMBER[..]);
    assert_eq!(Format::Bgzf.end_marker(), &BGZF_EOF_BLOCK[..]);
    // What every member of data asks for, and what an empty source's member does not.
    assert!(MemberHeader::parse(&encode(1, Format::Gzip, b"x")).unwrap().wants_an_end_member());
    assert!(!MemberHeader::parse(&encode(1, Format::Gzip, b"")).unwrap().wants_an_end_member());
    assert!(!MemberHeader::parse(&encode(1, Format::Bgzf, b"x")).unwrap().wants_an_end_member());
}

/// A stream cut at a member's end: every member checks, and only the
/// missing end member tells; both decoders say where it ends.
#[test]
fn a_stream_cut_at_a_member_end_lacks_its_end_member() {
    let (a, b) = (sample(70_000, 11), sample(50_000, 12));
    let mut whole = encode(1, Format::Gzip, &a);
    let cut_at = whole.len();
    whole.extend_from_slice(&encode(1, Format::Gzip, &b));
    whole.extend_from_slice(&PEERPATH_END_MEMBER);
    let cut = &whole[..cut_at];
    let expected: Vec<u8> = [a.clone(), b].concat();
    for threads in [1, 3] {
        assert_eq!(parallel_decode(&whole, 4096, threads).unwrap(), expected);
        match parallel_decode(cut, 4096, threads) {
            Err(StreamError::NoEndMember { offset }) => assert_eq!(offset, cut_at as u64, "{threads} threads"),
            other => panic!("{threads} threads: {other:?}"),
        }
        // Zero padding after the cut does not hide it.
        let padded = [cut, &[0u8; 512][..]].concat();
        assert!(matches!(parallel_decode(&padded, 4096, threads), Err(StreamError::NoEndMember { .. })), "{threads} threads");
        // Allowed: the members there are, as before end members.
        let mut out = Vec::new();
        let mut d = StreamDecoder::new(cut, 0, 0).allow_missing_end_member();
        d.run_parallel(threads, true, |x| {
            out.extend_from_slice(x);
            Ok(())
        })
        .unwrap();
        assert_eq!(out, a);
    }
    assert!(matches!(stream_decode(cut, 1000), Err(StreamError::NoEndMember { .. })));
    // Members that promise no end member: plain gzip's, BGZF's; but one of
    // them right after a member of peerpath's shows the file damaged there
    // (a cut stream joined to other data, or a member's 'PP' field hit).
    let plain = unsized_member(&a);
    assert_eq!(stream_decode(&plain, 1000).unwrap(), a);
    let bgzf = encode(1, Format::Bgzf, &a[..60_000]);
    assert_eq!(stream_decode(&bgzf, 1000).unwrap(), a[..60_000]);
    for other in [&plain, &bgzf] {
        let mixed = [cut, other].concat();
        for threads in [1, 2] {
            assert!(matches!(parallel_decode(&mixed, 1000, threads), Err(StreamError::NotPeerpathAfterPeerpath { offset, .. }) if offset == cut_at as u64), "{threads} threads");
        }
        let whole_then = [&whole[..], other].concat();
        assert!(parallel_decode(&whole_then, 1000, 2).is_ok());
        let mut d = StreamDecoder::new(&mixed[..], 0, 0).allow_missing_end_member();
        d.run(true, |_| Ok(())).unwrap();
        assert_eq!(d.missing_end_member(), Some(cut_at as u64));
    }
    // A decoder that starts where another left off, after a member that wanted an end member.
    let rest = [0u8; 100];
    let mut d = StreamDecoder::new(&rest[..], cut_at as u64, 2).after_member_wanting_an_end(Some(cut_at as u64));
    assert!(matches!(d.run(false, |_| Ok(())), Err(StreamError::NoEndMember { offset }) if offset == cut_at as u64));
    // BGZF without its end-of-file block: said, not an error.
    let mut d = StreamDecoder::new(&bgzf[..], 0, 0);
    d.run(true, |_| Ok(())).unwrap();
    assert!(d.ends_bgzf_without_eof());
    let ended_bgzf = [&bgzf[..], &BGZF_EOF_BLOCK[..]].concat();
    let mut d = StreamDecoder::new(&ended_bgzf[..], 0, 0);
    d.run(true, |_| Ok(())).unwrap();
    assert!(!d.ends_bgzf_without_eof());
    // An end member in the middle (files concatenated) ends nothing: the last member decides.
    let joined = [&whole[..], cut].concat();
    assert!(matches!(parallel_decode(&joined, 1000, 2), Err(StreamError::NoEndMember { .. })));
    let joined = [&whole[..], &whole[..]].concat();
    assert_eq!(parallel_decode(&joined, 1000, 2).unwrap().len(), 2 * expected.len());
}

#[test]
fn output_is_deterministic() {
    let input = sample(123_457, 4);
    for level in [0, 1, 3, 9] {
        assert_eq!(encode(level, Format::Gzip, &input), encode(level, Format::Gzip, &input));
    }
}

#[test]
fn stream_decoder_handles_multi_member_and_optional_header_fields() {
    // Hand-built member with FNAME, FCOMMENT, FHCRC and a foreign FEXTRA.
    let payload = sample(50_000, 5);
    let plain = encode(1, Format::Gzip, &payload);
    let header = MemberHeader::parse(&plain).unwrap();
    let body = &plain[header.header_bytes..];
    let mut h = vec![0x1f, 0x8b, 8, 0x04 | 0x08 | 0x10 | 0x02, 1, 2, 3, 4, 0, 3];
    h.extend_from_slice(&6u16.to_le_bytes());
    h.extend_from_slice(b"XY\x02\x00ab");
    h.extend_from_slice(b"name.txt\0a comment\0");
    let crc = (libdeflater::crc32(&h) & 0xffff) as u16;
    h.extend_from_slice(&crc.to_le_bytes());
    h.extend_from_slice(body);
    let parsed = MemberHeader::parse(&h).unwrap();
    assert_eq!(parsed.name.as_deref(), Some(&b"name.txt"[..]));
    assert_eq!(parsed.comment.as_deref(), Some(&b"a comment"[..]));
    assert_eq!(parsed.sizes, None);
    let mut two = h.clone();
    two.extend_from_slice(&ended(&plain));
    let mut expect = payload.clone();
    expect.extend_from_slice(&payload);
    for step in [1, 3, 4096, 1 << 20] {
        assert_eq!(stream_decode(&two, step).unwrap(), expect, "step {step}");
    }
    // A wrong header CRC is caught.
    let mut bad = h.clone();
    let at = parsed.header_bytes - 1;
    bad[at] ^= 1;
    assert!(matches!(MemberHeader::parse(&bad), Err(HeaderError::Corrupt { .. })));
}

#[test]
fn stream_errors_name_member_and_offset() {
    let input = sample(100_000, 6);
    let m = encode(1, Format::Gzip, &input);
    let mut two = m.clone();
    two.extend_from_slice(&ended(&m));
    // Flip a bit in the second member's CRC.
    let mut crc_bad = two.clone();
    let pos = 2 * m.len() - 6;
    crc_bad[pos] ^= 0x10;
    match stream_decode(&crc_bad, 1 << 16) {
        Err(StreamError::Member { member: 1, offset, error: MemberError::Trailer { .. } }) => assert_eq!(offset, m.len() as u64),
        other => panic!("{other:?}"),
    }
    // Truncation inside the second member.
    match stream_decode(&two[..m.len() + 100], 1 << 16) {
        Err(StreamError::Member { member: 1, error: MemberError::CutShort { at }, .. }) => assert_eq!(at, m.len() as u64 + 100),
        other => panic!("{other:?}"),
    }
    // Trailing garbage and trailing zeros.
    let mut garbage = m.clone();
    garbage.extend_from_slice(b"hello");
    assert!(matches!(stream_decode(&garbage, 99), Err(StreamError::TrailingGarbage { offset }) if offset == m.len() as u64));
    // Zeros as padding leaves them are ignored, as gzip ignores them; more are an end that
    // may be lost (a crash leaves zeros where data was not yet written), not a clean end.
    let pad = peerpath_func::gzip::MAX_ZERO_PADDING as usize;
    for (zeros, ok) in [(1, true), (10_240, true), (pad, true), (pad + 1, false), (1 << 20, false)] {
        let padded = [&two[..], &vec![0u8; zeros][..]].concat();
        match stream_decode(&padded, 4099) {
            Ok(out) if ok => assert_eq!(out.len(), 2 * input.len(), "{zeros} zeros"),
            Err(StreamError::ZeroTail { offset, bytes }) if !ok => assert_eq!((offset, bytes), (two.len() as u64, zeros as u64)),
            other => panic!("{zeros} zeros: {:?}", other.map(|o| o.len())),
        }
    }
    // A damaged start of the second of three members, followed by a member
    // that declares its sizes: corruption of member 1, not garbage.
    let mut three = two.clone();
    three.extend_from_slice(&m);
    three[m.len()] = b'x';
    match stream_decode(&three, 1 << 16) {
        Err(StreamError::Member { member: 1, offset, error: MemberError::Header(HeaderError::Corrupt { reason, .. }) }) => {
            assert_eq!(offset, m.len() as u64);
            assert!(reason.contains(&format!("at byte {}", 2 * m.len())), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let mut zeros = ended(&m);
    zeros.extend_from_slice(&[0u8; 512]);
    assert_eq!(stream_decode(&zeros, 99).unwrap(), input);
    assert!(matches!(stream_decode(b"", 1), Err(StreamError::Empty)));
    assert!(matches!(
        stream_decode(b"plain text", 1),
        Err(StreamError::Member { error: MemberError::Header(HeaderError::NotGzip(b'p', Some(b'l'))), .. })
    ));
}

#[test]
fn lying_size_fields_are_caught_without_overreading() {
    let input = sample(70_000, 7);
    let m = encode(1, Format::Gzip, &input);
    let h = MemberHeader::parse(&m).unwrap();
    // Declared member size larger than the data present.
    let mut big = m.clone();
    big[16..20].copy_from_slice(&((m.len() + 10) as u32).to_le_bytes());
    let hb = MemberHeader::parse(&big).unwrap();
    assert!(matches!(declared_output_bytes(&hb, &big), Err(MemberError::Truncated { .. })));
    // Declared uncompressed size disagreeing with the trailer.
    let mut lie = m.clone();
    lie[20..24].copy_from_slice(&1u32.to_le_bytes());
    let hl = MemberHeader::parse(&lie).unwrap();
    let disagree = MemberError::SizesDisagree { uncompressed_bytes: 1, trailer_isize: input.len() as u32 };
    assert_eq!(declared_output_bytes(&hl, &lie), Err(disagree));
    // Both sizes lie consistently (trailer rewritten too): the data is longer.
    let mut both = m.clone();
    both[20..24].copy_from_slice(&1000u32.to_le_bytes());
    let n = both.len();
    both[n - 4..].copy_from_slice(&1000u32.to_le_bytes());
    let hb2 = MemberHeader::parse(&both).unwrap();
    let mut out = vec![0u8; 1000];
    assert!(matches!(decode_member(&hb2, &both, &mut out), Err(MemberError::SizeField(_))));
    // A huge declared size is refused before allocation.
    let mut huge = m.clone();
    huge[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
    let n = huge.len();
    huge[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
    let hh = MemberHeader::parse(&huge).unwrap();
    assert!(matches!(declared_output_bytes(&hh, &huge), Err(MemberError::SizeField(_))));
    // Member size shorter than the real deflate data.
    let mut short = m.clone();
    short[16..20].copy_from_slice(&((m.len() - 100) as u32).to_le_bytes());
    let hs = MemberHeader::parse(&short).unwrap();
    let mut out = vec![0u8; input.len()];
    assert!(decode_member(&hs, &short, &mut out).is_err());
    let _ = h;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn round_trip_any_bytes(data in proptest::collection::vec(any::<u8>(), 0..20_000), level in 0u32..=12, step in 1usize..5000) {
        let m = encode(level, Format::Gzip, &data);
        prop_assert_eq!(stream_decode(&ended(&m), step).unwrap(), data.clone());
        let h = MemberHeader::parse(&m).unwrap();
        let mut out = vec![0u8; data.len()];
        prop_assert_eq!(decode_member(&h, &m, &mut out).unwrap(), data.len());
        prop_assert_eq!(out, data);
    }

    #[test]
    fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..4000)) {
        let _ = stream_decode(&data, 17);
        if let Ok(h) = MemberHeader::parse(&data) {
            if let Ok(n) = declared_output_bytes(&h, &data) {
                let mut out = vec![0u8; n];
                let _ = decode_member(&h, &data, &mut out);
            }
        }
    }

    #[test]
    fn mutated_members_never_panic(seed in any::<u64>(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut m = encode(1, Format::Gzip, &sample(5000, seed));
        for (pos, bits) in flips {
            let i = pos % m.len();
            m[i] ^= bits;
        }
        let _ = stream_decode(&m, 333);
        if let Ok(h) = MemberHeader::parse(&m) {
            if let Ok(n) = declared_output_bytes(&h, &m) {
                let mut out = vec![0u8; n];
                let _ = decode_member(&h, &m, &mut out);
            }
        }
    }
}

/// Found by cargo fuzz (gzip_reader): ISA-L handed back read-ahead bytes
/// (avail_in grew during a call) and computing "consumed" overflowed.
#[test]
fn regression_isal_rewind_does_not_overflow() {
    let data = [31u8, 139, 8, 8, 126, 0, 0, 126, 0, 244, 97, 105, 0, 3, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 253, 101, 255, 48];
    for step in [1, 2, 7, 81] {
        assert!(stream_decode(&data, step).is_err());
    }
}

/// `run_parallel`: what `run` decodes, in the same order, whatever mix of
/// sized (peerpath, BGZF) and unsized members; the same member named when
/// a damaged stream fails.
fn parallel_decode(data: &[u8], step: usize, threads: usize) -> Result<Vec<u8>, StreamError> {
    let mut out = Vec::new();
    let mut d = StreamDecoder::new(Dribble { data, step }, 0, 0);
    d.run_parallel(threads, true, |b| {
        out.extend_from_slice(b);
        Ok(())
    })?;
    assert_eq!(d.bytes_out, out.len() as u64);
    Ok(out)
}

/// A member without size fields (a plain gzip header before peerpath's deflate body).
fn unsized_member(input: &[u8]) -> Vec<u8> {
    let m = encode(1, Format::Gzip, input);
    let h = MemberHeader::parse(&m).unwrap();
    let mut plain = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    plain.extend_from_slice(&m[h.header_bytes..]);
    plain
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn run_parallel_decodes_what_run_decodes(kinds in proptest::collection::vec(0u8..3, 1..12), seed in any::<u64>(), threads in 2usize..5, step in 1usize..70_000, damage in proptest::option::of((any::<usize>(), 1u8..=255)), cut in proptest::option::of(any::<usize>())) {
        let mut stream = Vec::new();
        for (i, k) in kinds.iter().enumerate() {
            let input = sample(1 + (seed as usize + i * 7919) % 40_000, seed ^ i as u64);
            stream.extend_from_slice(&match k {
                0 => encode(1, Format::Gzip, &input),
                1 => encode(1, Format::Bgzf, &input[..input.len().min(60_000)]),
                _ => unsized_member(&input),
            });
        }
        if let Some((at, bits)) = damage {
            let at = at % stream.len();
            stream[at] ^= bits;
        }
        if let Some(c) = cut {
            stream.truncate(c % (stream.len() + 1));
        }
        let one = stream_decode(&stream, step);
        let many = parallel_decode(&stream, step, threads);
        match (&one, &many) {
            (Ok(a), Ok(b)) => prop_assert!(a == b, "outputs differ"),
            (Err(StreamError::Member { member: a, .. }), Err(StreamError::Member { member: b, .. })) => prop_assert_eq!(a, b, "{:?} / {:?}", one, many),
            (Err(a), Err(b)) => prop_assert_eq!(std::mem::discriminant(a), std::mem::discriminant(b), "{:?} / {:?}", a, b),
            _ => prop_assert!(false, "one thread: {:?}, {} threads: {:?}", one.as_ref().map(|v| v.len()), threads, many.as_ref().map(|v| v.len())),
        }
    }
}

/// A member whose 'PP' field declares more bytes than the stream holds: a
/// whole stream whose field lies (the member ends sooner: corrupt), or one
/// cut inside that member (truncated). `run_parallel` inflates it to tell
/// which, as `run` does (it called both cut short), and reads no more than
/// streaming takes: it read up to the declared 4 GiB into memory first.
#[test]
fn a_member_declaring_more_than_the_stream_holds_is_inflated_to_tell_a_lie_from_a_cut() {
    let a = sample(70_000, 21);
    let mut m = encode(1, Format::Gzip, &a);
    m[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
    let lie = format!("declares 4294967295 member bytes, the member has {}", m.len());
    let whole = ended(&m);
    for threads in [1, 3] {
        match parallel_decode(&whole, 4096, threads) {
            Err(StreamError::Member { member: 0, offset: 0, error: MemberError::SizeField(why) }) => assert!(why.contains(&lie), "{threads} threads: {why}"),
            other => panic!("{threads} threads: {other:?}"),
        }
        match parallel_decode(&m[..m.len() / 2], 4096, threads) {
            Err(StreamError::Member { member: 0, offset: 0, error: MemberError::CutShort { .. } }) => {}
            other => panic!("{threads} threads, cut: {other:?}"),
        }
    }
    // Followed by far more than a member holds: found out within the decoder's buffer.
    struct Counted<R>(R, u64);
    impl<R: Read> Read for Counted<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.read(buf)?;
            self.1 += n as u64;
            Ok(n)
        }
    }
    let mut input = Counted(std::io::Cursor::new(&whole).chain(std::io::repeat(0).take(400 << 20)), 0);
    let r = StreamDecoder::new(&mut input, 0, 0).run_parallel(3, true, |_| Ok(()));
    assert!(matches!(r, Err(StreamError::Member { error: MemberError::SizeField(_), .. })), "{r:?}");
    assert!(input.1 < 16 << 20, "read {} bytes", input.1);
}

/// A member whose 'PP' member size is a byte off: the trailer where it puts
/// it is not the member's, so its ISIZE disagrees with the uncompressed size.
/// Both decoders inflate it and name the member size as the lie (workers of
/// `run_parallel` blamed the uncompressed size, from the wrong trailer).
#[test]
fn a_member_size_a_byte_off_is_named_as_the_lie() {
    let a = sample(70_000, 22);
    let m = encode(1, Format::Gzip, &a);
    for declared in [m.len() + 1, m.len() - 1] {
        let mut b = m.clone();
        b[16..20].copy_from_slice(&(declared as u32).to_le_bytes());
        let whole = ended(&[&m[..], &b[..]].concat());
        let lie = format!("declares {declared} member bytes, the member has {}", m.len());
        for threads in [1, 3] {
            match parallel_decode(&whole, 4096, threads) {
                Err(StreamError::Member { member: 1, error: MemberError::SizeField(why), .. }) => assert_eq!(why, lie, "{threads} threads"),
                other => panic!("{threads} threads: {other:?}"),
            }
        }
    }
}

/// A trailer that does not match its data names the field that differs,
/// what the trailer says and what the data has, in the same words from the
/// streaming decoder (whatever its reads) and from the whole-member one.
#[test]
fn a_trailer_mismatch_says_what_the_trailer_and_the_data_have() {
    let input = sample(100_000, 9);
    let m = encode(1, Format::Gzip, &input);
    let n = m.len();
    let crc = u32::from_le_bytes(m[n - 8..n - 4].try_into().unwrap());
    let bad_crc = crc ^ 0x0100_0000;
    let crc_words = format!("CRC-32 mismatch: the trailer says CRC-32 {bad_crc:#010x}, the data has {crc:#010x}");
    let mut flipped_crc = m.clone();
    flipped_crc[n - 5] ^= 0x01;
    // The trailer's ISIZE one more than the data (the 'PP' field too, so
    // that the whole-member decoder gets as far as inflating).
    let mut longer = m.clone();
    let isize = input.len() as u32 + 1;
    longer[n - 4..].copy_from_slice(&isize.to_le_bytes());
    longer[20..24].copy_from_slice(&isize.to_le_bytes());
    let length_words = format!("length mismatch: the trailer says {isize} bytes (ISIZE), the data has {}", input.len());
    let mut both = longer.clone();
    both[n - 5] ^= 0x01;
    for (what, member, wanted) in [
        ("CRC", &flipped_crc, crc_words.clone()),
        ("ISIZE", &longer, length_words.clone()),
        ("both", &both, format!("{crc_words}; {length_words}")),
    ] {
        let h = MemberHeader::parse(member).unwrap();
        let mut out = vec![0u8; input.len() + 1];
        match decode_member(&h, member, &mut out) {
            Err(e @ MemberError::Trailer { .. }) => assert_eq!(e.to_string(), wanted, "{what}, whole"),
            other => panic!("{what}, whole: {other:?}"),
        }
        for step in [1, 7, 4096, 1 << 20] {
            match stream_decode(&ended(member), step) {
                Err(StreamError::Member { member: 0, offset: 0, error: e @ MemberError::Trailer { .. } }) => {
                    assert_eq!(e.to_string(), wanted, "{what}, streaming {step} bytes a read")
                }
                other => panic!("{what}, streaming {step} bytes a read: {other:?}"),
            }
        }
    }
}

/// A member of more than 4 GiB (zeros: a literal, then matches of 258 at
/// distance 1 in a fixed-Huffman block) whose trailer does not match: the
/// error gives the data's whole length, not its length mod 2^32 (it said
/// "length 12345" of 4 GiB and 12345 bytes).
#[test]
fn a_trailer_mismatch_after_4_gib_names_the_whole_length() {
    struct Bits(Vec<u8>, u64, u32);
    impl Bits {
        /// A Huffman code of `len` bits, sent most significant bit first.
        fn code(&mut self, code: u32, len: u32) {
            self.1 |= u64::from(code.reverse_bits() >> (32 - len)) << self.2;
            self.2 += len;
            while self.2 >= 8 {
                self.0.push(self.1 as u8);
                self.1 >>= 8;
                self.2 -= 8;
            }
        }
    }
    let matches = (1u64 << 32) / 258 + 1000;
    let length = 1 + 258 * matches;
    let mut b = Bits(vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3], 0, 0);
    b.code(0b110, 3); // BFINAL, then BTYPE 01 (fixed), least significant bit first
    b.code(0x30, 8); // literal 0
    for _ in 0..matches {
        b.code(0b1100_0101, 8); // length 258
        b.code(0, 5); // distance 1
    }
    b.code(0, 7); // end of block
    let mut m = b.0;
    if b.2 > 0 {
        m.push(b.1 as u8); // its last bits, padded to a byte
    }
    m.extend_from_slice(&[0; 4]); // not the CRC-32 of the zeros
    m.extend_from_slice(&(length as u32).to_le_bytes());
    let mut d = StreamDecoder::new(&m[..], 0, 0);
    match d.run(true, |_| Ok(())) {
        Err(StreamError::Member { member: 0, offset: 0, error: e @ MemberError::Trailer { .. } }) => {
            let wanted = format!("length mismatch: the trailer says {} bytes (ISIZE), the data has {length} ({} mod 2^32)", length as u32, length as u32);
            assert!(e.to_string().contains(&wanted), "{e}");
        }
        other => panic!("{other:?}"),
    }
}
