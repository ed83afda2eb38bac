//! The parallel path's member decoder on arbitrary bytes: header parsing,
//! declared sizes and in-place inflate must never panic or over-allocate.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_func::gzip::declared_output_bytes;
use peerpath_func::{decode_member, MemberHeader, MAX_MEMBER_UNCOMPRESSED_BYTES};

fuzz_target!(|data: &[u8]| {
    let Ok(header) = MemberHeader::parse(data) else { return };
    let Ok(out_len) = declared_output_bytes(&header, data) else { return };
    assert!(out_len <= MAX_MEMBER_UNCOMPRESSED_BYTES);
    // Keep the fuzzer's memory small: cap what we allocate for a member.
    if out_len > 16 << 20 {
        return;
    }
    let mut out = vec![0u8; out_len];
    if let Ok(n) = decode_member(&header, data, &mut out) {
        assert_eq!(n, out_len);
    }
});
