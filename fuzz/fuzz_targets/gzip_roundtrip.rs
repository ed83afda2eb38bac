//! gzip members from the encoder, read back: arbitrary data (the first
//! byte picks the level, 0-12, and the format, peerpath's or BGZF; the
//! second the block size) compressed block by block into members and ended
//! as peerpath ends a stream. Each member's header parses to the sizes it
//! declares, its declared output is its block, and it decodes to its block;
//! the stream decodes to the data on one thread and on several; the encoder
//! gives the same bytes twice. And peerpath's header, from any sizes,
//! parses back to those sizes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_func::gzip::declared_output_bytes;
use peerpath_func::{decode_member, encode_member, member_bound_bytes, peerpath_header, DeclaredSizes, Format, Level, MemberEncoder, MemberHeader, StreamDecoder, PEERPATH_HEADER_BYTES};

fn stream(data: &[u8], threads: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut d = StreamDecoder::new(data, 0, 0);
    d.run_parallel(threads, true, |b| {
        out.extend_from_slice(b);
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok(out)
}

fuzz_target!(|input: &[u8]| {
    let Some((&[how, block], data)) = input.split_first_chunk::<2>() else { return };
    let level = u32::from(how & 0x7f) % 13;
    let format = if how & 0x80 != 0 { Format::Bgzf } else { Format::Gzip };
    let block = 1 + usize::from(block) * 37;
    let mut enc = MemberEncoder::new(Level::new(level).expect("levels 0-12"));
    let mut file = Vec::new();
    let blocks: Vec<&[u8]> = if data.is_empty() { vec![data] } else { data.chunks(block).collect() };
    for b in blocks {
        let mut out = vec![0u8; member_bound_bytes(b.len())];
        let n = encode_member(&mut enc, format, b, &mut out);
        let member = &out[..n];
        let mut again = vec![0u8; member_bound_bytes(b.len())];
        let m = encode_member(&mut enc, format, b, &mut again);
        assert_eq!(&again[..m], member, "level {level}: the encoder is not deterministic");
        let h = MemberHeader::parse(member).expect("the encoder's header parses");
        match (format, h.sizes) {
            (Format::Gzip, Some(DeclaredSizes::Peerpath { member_bytes, uncompressed_bytes })) => assert_eq!((member_bytes as usize, uncompressed_bytes as usize), (n, b.len())),
            (Format::Bgzf, Some(DeclaredSizes::Bgzf { member_bytes })) => assert_eq!(member_bytes as usize, n),
            (f, s) => panic!("{f:?} member declares {s:?}"),
        }
        assert_eq!(declared_output_bytes(&h, member), Ok(b.len()));
        let mut decoded = vec![0u8; b.len()];
        assert_eq!(decode_member(&h, member, &mut decoded), Ok(b.len()));
        assert!(decoded == b, "level {level} {format:?}: a member decodes to other bytes");
        file.extend_from_slice(member);
    }
    file.extend_from_slice(format.end_marker());
    assert_eq!(stream(&file, 1).as_deref(), Ok(data), "level {level} {format:?}, one thread");
    assert_eq!(stream(&file, 3).as_deref(), Ok(data), "level {level} {format:?}, three threads");
    if let Some(sizes) = data.first_chunk::<9>() {
        let (xfl, member_bytes, uncompressed_bytes) = (sizes[0], u32::from_le_bytes(sizes[1..5].try_into().expect("4 bytes")), u32::from_le_bytes(sizes[5..].try_into().expect("4 bytes")));
        let h = MemberHeader::parse(&peerpath_header(xfl, member_bytes, uncompressed_bytes)).expect("peerpath's header parses");
        assert_eq!((h.header_bytes, h.sizes), (PEERPATH_HEADER_BYTES, Some(DeclaredSizes::Peerpath { member_bytes, uncompressed_bytes })));
    }
});
