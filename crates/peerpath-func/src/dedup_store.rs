//! A dedup store's records as `peerpath dedup` reads them back: where a
//! chunk lies and how it is kept ([`Stored`], from the index's columns), the
//! checks a record passes before it sizes a buffer, a compressed chunk's
//! member decoded, and a file's recipe split into its digests. The store
//! itself (its SQLite index, its pack files) is the CLI's.

use crate::MemberHeader;

/// How a chunk lies in its pack (the index's `codec` column): as it is.
pub const RAW: u8 = 0;
/// As one gzip member holding it.
pub const GZIP_MEMBER: u8 = 1;
/// A chunk's digest (BLAKE3 or SHA-256): a file's recipe is its chunks' digests, in order.
pub const DIGEST_BYTES: usize = 32;

/// Where a chunk is and how it is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stored {
    pub pack: i64,
    pub offset: u64,
    /// Bytes in the pack.
    pub len: usize,
    pub codec: u8,
    /// The chunk's own size.
    pub size: usize,
}

/// How a chunk's bytes in its pack become the chunk ([`Stored::kept`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kept {
    /// They are the chunk.
    Raw,
    /// They are a gzip member holding it ([`decode_chunk`]).
    Member,
}

/// A column of a chunk's row whose integer no record holds: its index among (pack, offset,
/// len, codec, size), and the integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfRange {
    pub column: usize,
    pub value: i64,
}

impl Stored {
    /// A record from the index's columns `pack`, `offset`, `len`, `codec` and `size` (SQLite's
    /// integers). A negative offset, length or size, or a codec past a byte, is the index's
    /// damage (a negative offset read as a huge one made the pack's read fail as I/O: EINVAL).
    pub fn from_columns(pack: i64, offset: i64, len: i64, codec: i64, size: i64) -> Result<Stored, OutOfRange> {
        let at = |column: usize, value: i64| OutOfRange { column, value };
        Ok(Stored {
            pack,
            offset: u64::try_from(offset).map_err(|_| at(1, offset))?,
            len: usize::try_from(len).map_err(|_| at(2, len))?,
            codec: u8::try_from(codec).map_err(|_| at(3, codec))?,
            size: usize::try_from(size).map_err(|_| at(4, size))?,
        })
    }

    /// A damaged index must not size a buffer: a chunk is at most `max` bytes (the store's
    /// chunking), its member a bound of that.
    pub fn check_sizes(&self, max: usize) -> Result<(), String> {
        if self.size > max || self.len > crate::member_bound_bytes(max) {
            return Err(format!("pack {} at byte {}: the index says {} bytes for a chunk of at most {max}: the index is damaged", self.pack, self.offset, self.len.max(self.size)));
        }
        Ok(())
    }

    /// How the chunk is kept: a codec this build knows, and a raw chunk's two sizes the same.
    pub fn kept(&self) -> Result<Kept, String> {
        match self.codec {
            RAW if self.size != self.len => Err(format!("pack {} at byte {}: the index says {} bytes stored raw for a chunk of {}: the index is damaged", self.pack, self.offset, self.len, self.size)),
            RAW => Ok(Kept::Raw),
            GZIP_MEMBER => Ok(Kept::Member),
            other => Err(format!("pack {} at byte {}: unknown chunk codec {other}", self.pack, self.offset)),
        }
    }
}

/// Decodes a chunk's member into `out`, which the index sized: one gzip member holding exactly
/// that many bytes, its CRC-32 checked.
pub fn decode_chunk(member: &[u8], out: &mut [u8]) -> Result<(), String> {
    let size = out.len();
    let header = MemberHeader::parse(member).map_err(|e| e.to_string())?;
    let declared = crate::gzip::declared_output_bytes(&header, member).map_err(|e| e.to_string())?;
    if declared != size || header.sizes.is_none_or(|s| s.member_bytes() != member.len()) {
        return Err(format!("it declares {declared} bytes in a {}-byte member; the index says {size} bytes in {}", header.sizes.map_or(0, |s| s.member_bytes()), member.len()));
    }
    crate::decode_member(&header, member, out).map(|_| ()).map_err(|e| e.to_string())
}

/// A file's recipe (the index's `chunks`) as its chunks' digests, in order; one whose length is
/// not a whole number of digests is damage (said after the file's name), on every path that
/// reads it (restore, verify, gc, stats).
pub fn recipe_digests(recipe: &[u8]) -> Result<&[[u8; DIGEST_BYTES]], String> {
    match recipe.as_chunks::<DIGEST_BYTES>() {
        (digests, []) => Ok(digests),
        _ => Err(format!("its recipe is {} bytes, not a whole number of {DIGEST_BYTES}-byte digests: the index is damaged", recipe.len())),
    }
}

/// A file's permission bits as its record keeps them (the index's `mode`: none in a store made
/// before they were kept, and none for what came through a pipe): more than `0o777` is damage.
pub fn file_mode(mode: Option<i64>) -> Result<Option<u32>, String> {
    match mode {
        None => Ok(None),
        Some(m) => u32::try_from(m).ok().filter(|m| m & !0o777 == 0).map(Some).ok_or_else(|| format!("its mode is {m}, not permission bits (0 to 0o777): the index is damaged")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row's integers become a record only where they are a place, a size and a codec: a
    /// negative offset was read at 2^64 - 5 (pread: EINVAL, said as an unreadable pack, exit 3).
    #[test]
    fn a_row_of_negative_numbers_is_out_of_range() {
        assert_eq!(Stored::from_columns(-1, 7, 5, 1, 9), Ok(Stored { pack: -1, offset: 7, len: 5, codec: GZIP_MEMBER, size: 9 }));
        for (column, row) in [(1, [0, -5, 5, 0, 5]), (2, [0, 0, -1, 0, 5]), (3, [0, 0, 5, 256, 5]), (3, [0, 0, 5, -1, 5]), (4, [0, 0, 5, 0, i64::MIN])] {
            assert_eq!(Stored::from_columns(row[0], row[1], row[2], row[3], row[4]), Err(OutOfRange { column, value: row[column] }), "{row:?}");
        }
    }

    /// A mode is permission bits or damage; none kept is none.
    #[test]
    fn a_mode_is_permission_bits_or_damage() {
        assert_eq!(file_mode(None), Ok(None));
        assert_eq!(file_mode(Some(0o755)), Ok(Some(0o755)));
        assert_eq!(file_mode(Some(0)), Ok(Some(0)));
        for bad in [-1, 0o1000, 0o4755, i64::MAX, i64::MIN] {
            assert!(file_mode(Some(bad)).is_err_and(|e| e.contains(&format!("its mode is {bad}"))), "{bad}");
        }
    }

    /// Restore and gc split a recipe alike: whole digests, or damage that says its length.
    #[test]
    fn a_recipe_is_whole_digests_or_damage() {
        let recipe: Vec<u8> = (0..96).collect();
        assert_eq!(recipe_digests(&recipe).map(<[[u8; 32]]>::concat), Ok(recipe.clone()));
        assert_eq!(recipe_digests(&[]).map(<[_]>::len), Ok(0));
        let e = recipe_digests(&recipe[..70]).unwrap_err();
        assert_eq!(e, "its recipe is 70 bytes, not a whole number of 32-byte digests: the index is damaged");
    }
}
