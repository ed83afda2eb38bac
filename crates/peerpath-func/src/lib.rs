//! Functions on blocks of bytes (layer 1): the reference (CPU) implementation
//! that every device must match byte for byte.
//!
//! Today: gzip members (RFC 1952) in two layouts, peerpath's multi-member
//! gzip with a size subfield and BGZF, compressed with ISA-L (levels 0-3)
//! or libdeflate (levels 4-12), and decoded with ISA-L's inflate.

pub mod gzip;
mod isal;
pub mod crypt;
pub mod dedup;
pub mod dedup_store;
pub mod ec;
pub mod ec_manifest;
pub mod sample;
pub mod xts;
pub mod scan;

pub use gzip::{
    crc32, decode_member, encode_member, member_bound_bytes, peerpath_header, plain_member_body, Format, Level, MemberEncoder, MemberError, MemberHeader,
    DeclaredSizes, HeaderError, StreamDecoder, StreamError, BGZF_EOF_BLOCK, BGZF_MAX_INPUT_BYTES,
    MAX_MEMBER_UNCOMPRESSED_BYTES, PEERPATH_END_MEMBER, PEERPATH_HEADER_BYTES,
};
