//! Property tests of a member's trailer and its 'PP' size field, as both
//! decoders read them: a trailer changed in either field is named with what
//! it holds and what the data has; a 'PP' size off by any amount is an error
//! of that member, never a panic, never data, the same member on one thread
//! and on several. 256 cases each; more with `PROPTEST_CASES`.

use peerpath_func::gzip::declared_output_bytes;
use peerpath_func::*;
use proptest::prelude::*;

fn encode(level: u32, input: &[u8]) -> Vec<u8> {
    let mut enc = MemberEncoder::new(Level::new(level).unwrap());
    let mut out = vec![0u8; member_bound_bytes(input.len())];
    let n = encode_member(&mut enc, Format::Gzip, input, &mut out);
    out.truncate(n);
    out
}

mod common;
use common::Dribble;

/// `members` with peerpath's end member after them, decoded on `threads`
/// threads (1: `run`), `step` bytes a read; the bytes out.
fn decode(members: &[&[u8]], step: usize, threads: usize) -> Result<Vec<u8>, StreamError> {
    let mut data = members.concat();
    data.extend_from_slice(&PEERPATH_END_MEMBER);
    let mut out = Vec::new();
    let mut d = StreamDecoder::new(Dribble { data: &data, step }, 0, 0);
    let sink = |b: &[u8]| {
        out.extend_from_slice(b);
        Ok(())
    };
    if threads == 1 {
        d.run(true, sink)?;
    } else {
        d.run_parallel(threads, true, sink)?;
    }
    Ok(out)
}

fn field(m: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(m[at..at + 4].try_into().unwrap())
}

/// The whole-member decoder's answer, where its declared output is small
/// enough to allocate here (`None` otherwise).
fn decode_whole(m: &[u8]) -> Option<Result<usize, MemberError>> {
    let h = match MemberHeader::parse(m) {
        Ok(h) => h,
        Err(e) => return Some(Err(MemberError::Header(e))),
    };
    match declared_output_bytes(&h, m) {
        Ok(n) if n <= 1 << 22 => Some(decode_member(&h, m, &mut vec![0u8; n])),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    }
}

/// What a trailer field is XORed with: nothing, its low byte, anything.
fn mask() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), 1u32..256, any::<u32>()]
}

proptest! {

    /// The trailer's CRC-32 and ISIZE changed (the 'PP' uncompressed size
    /// changed with ISIZE, or left): both decoders say what the trailer
    /// holds and what the data has, whatever the reads.
    #[test]
    fn a_changed_trailer_is_named_by_both_decoders(
        data in proptest::collection::vec(any::<u8>(), 0..20_000),
        level in 0u32..=12,
        (crc_mask, isize_mask) in (mask(), mask()).prop_map(|(c, i)| (c, if c == 0 && i == 0 { 1 } else { i })),
        pp_follows in any::<bool>(),
        step in 1usize..5000,
        threads in 1usize..4,
    ) {
        let mut m = encode(level, &data);
        let n = m.len();
        let (crc, length) = (field(&m, n - 8), field(&m, n - 4));
        prop_assert_eq!(u64::from(length), data.len() as u64);
        let (trailer_crc, trailer_isize) = (crc ^ crc_mask, length ^ isize_mask);
        m[n - 8..n - 4].copy_from_slice(&trailer_crc.to_le_bytes());
        m[n - 4..].copy_from_slice(&trailer_isize.to_le_bytes());
        if pp_follows {
            m[20..24].copy_from_slice(&trailer_isize.to_le_bytes());
        }
        let trailer = MemberError::Trailer { trailer_crc, trailer_isize, crc, length: data.len() as u64 };
        // The trailer's mismatch is named; or, where the 'PP' field agrees
        // with the changed ISIZE, a size field it makes impossible (above the
        // member limit, more than deflate expands to, less than the data
        // inflates to), as each decoder finds first: the same member.
        let named = |e: &MemberError| {
            *e == trailer || (pp_follows && matches!(e, MemberError::SizeField(why) if why.contains(&format!(" {trailer_isize} "))))
        };
        match decode(&[&m], step, threads) {
            Err(StreamError::Member { member: 0, offset: 0, error }) => prop_assert!(named(&error), "{} threads, {} bytes a read: {:?}", threads, step, error),
            other => prop_assert!(false, "{} threads, {} bytes a read: {:?}", threads, step, other),
        }
        match decode_whole(&m) {
            Some(Err(e)) if named(&e) => {}
            Some(Err(MemberError::SizesDisagree { uncompressed_bytes, trailer_isize: t })) => {
                prop_assert!(!pp_follows && isize_mask != 0);
                prop_assert_eq!((uncompressed_bytes, t), (length, trailer_isize));
            }
            None => prop_assert!(pp_follows && isize_mask != 0),
            other => prop_assert!(false, "whole member: {:?}", other),
        }
    }

    /// A 'PP' member size or uncompressed size off by any amount, in the
    /// second of two members: an error of that member, never a panic, never
    /// its data; the same member named on one thread and on several.
    #[test]
    fn a_pp_size_off_by_any_amount_is_that_members_error(
        data in proptest::collection::vec(any::<u8>(), 0..20_000),
        level in 0u32..=12,
        uncompressed in any::<bool>(),
        delta in prop_oneof![-300i64..=300, any::<u32>().prop_map(i64::from)],
        step in 1usize..5000,
        threads in 2usize..4,
    ) {
        let first = encode(1, b"the first member");
        let mut m = encode(level, &data);
        let at = if uncompressed { 20 } else { 16 };
        let declared = (i64::from(field(&m, at)) + delta).rem_euclid(1 << 32) as u32;
        prop_assume!(declared != field(&m, at));
        m[at..at + 4].copy_from_slice(&declared.to_le_bytes());
        let one = decode(&[&first, &m], step, 1);
        let many = decode(&[&first, &m], step, threads);
        match (&one, &many) {
            (Err(StreamError::Member { member: 1, offset: a, .. }), Err(StreamError::Member { member: 1, offset: b, .. })) => {
                prop_assert_eq!(*a, first.len() as u64);
                prop_assert_eq!(*b, first.len() as u64);
            }
            _ => prop_assert!(false, "run: {:?}; run_parallel on {} threads: {:?}", one, threads, many),
        }
        if let Some(r) = decode_whole(&m) {
            prop_assert!(r.is_err(), "whole member decoded with 'PP' size {}: {:?}", declared, r);
        }
    }
}
