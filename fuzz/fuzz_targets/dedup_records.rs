//! A dedup store's records as `dedup restore`, `verify` and `gc` read them
//! back (`peerpath_func::dedup_store`): a chunk's row in the index (pack,
//! offset, len, codec, size: any integers), the store's largest chunk, and
//! a pack: the input's bytes, or a chunk of them kept as `dedup store`
//! keeps it (raw, or a gzip member where that is smaller), its row then the
//! right one changed by the input's numbers. A row is refused as damage
//! before it sizes a buffer (nothing larger than the store's chunks is
//! allocated), or its bytes are read where it says (at an offset a read can
//! be at: a row is never an I/O error) and become a chunk of the size it
//! says, the one kept where the row is right, or the damage is said; never a
//! panic. A file's recipe splits into whole digests or is damage.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_func::dedup_store::{decode_chunk, recipe_digests, Kept, Stored, DIGEST_BYTES, GZIP_MEMBER, RAW};
use peerpath_func::{encode_member, member_bound_bytes, Format, Level, MemberEncoder};

/// The largest chunk a store's index may say (`ChunkParams`: 1 KiB to 16 MiB, even).
fn store_max(b: [u8; 3]) -> usize {
    let n = usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16;
    (1024 + n % ((16 << 20) - 1024 + 1)) & !1
}

fuzz_target!(|input: &[u8]| {
    let Some((head, rest)) = input.split_first_chunk::<44>() else { return };
    let columns: [i64; 5] = std::array::from_fn(|i| i64::from_le_bytes(head[8 * i..8 * i + 8].try_into().expect("8 bytes")));
    let max = store_max([head[40], head[41], head[42]]);
    let mode = head[43];

    // A recipe: whole digests, in order, or damage that says how long it is.
    match recipe_digests(rest) {
        Ok(digests) => assert!(rest.len() % DIGEST_BYTES == 0 && digests.concat() == rest),
        Err(e) => assert!(rest.len() % DIGEST_BYTES != 0 && e.contains(&format!("is {} bytes", rest.len())), "{e}"),
    }

    // The pack, and the row that is right for it (where it holds a chunk kept as a store keeps it).
    let (pack, kept) = if mode & 1 == 0 {
        (rest.to_vec(), None)
    } else {
        let chunk = &rest[..rest.len().min(max)];
        let mut member = vec![0; member_bound_bytes(chunk.len())];
        let n = encode_member(&mut MemberEncoder::new(Level::new(u32::from(mode >> 1) % 13).expect("0-12")), Format::Gzip, chunk, &mut member);
        member.truncate(n);
        let (pack, codec) = if n < chunk.len() { (member, GZIP_MEMBER) } else { (chunk.to_vec(), RAW) };
        let right = [0, 0, pack.len() as i64, i64::from(codec), chunk.len() as i64];
        (pack, Some((right, chunk)))
    };
    let exact = kept.filter(|_| columns == [0; 5]).map(|(_, chunk)| chunk);
    let row: [i64; 5] = match kept {
        Some((right, _)) => std::array::from_fn(|i| right[i] ^ columns[i]),
        None => columns,
    };
    let at = match Stored::from_columns(row[0], row[1], row[2], row[3], row[4]) {
        Ok(at) => at,
        Err(e) => {
            assert!(exact.is_none() && row[e.column] == e.value && (e.value < 0 || (e.column == 3 && e.value > 255)), "{e:?} of {row:?}");
            return;
        }
    };

    // `Packs::read_at_end`, on the pack in memory.
    if let Err(e) = at.check_sizes(max) {
        assert!(exact.is_none() && e.contains("the index is damaged"), "{e}");
        return;
    }
    assert!(at.size <= max && at.len <= member_bound_bytes(max), "{at:?} sizes a buffer past a chunk of {max}");
    let how = match at.kept() {
        Ok(how) => how,
        Err(e) => {
            assert!(exact.is_none(), "{e}");
            return;
        }
    };
    // pread(2) refuses an offset past an off_t (EINVAL): a row saying one would be an I/O
    // error of the pack (exit 3), not the damage it is.
    assert!(i64::try_from(at.offset).is_ok(), "{at:?}: its offset is no file offset, so reading it fails as I/O, not as damage");
    let Some(bytes) = usize::try_from(at.offset).ok().and_then(|o| pack.get(o..o.checked_add(at.len)?)) else {
        assert!(exact.is_none(), "the pack ends before its chunk");
        return;
    };
    let chunk = match how {
        Kept::Raw => bytes.to_vec(),
        Kept::Member => {
            let mut out = vec![0; at.size];
            if let Err(e) = decode_chunk(bytes, &mut out) {
                assert!(exact.is_none(), "a chunk kept as a member does not decode: {e}");
                return;
            }
            out
        }
    };
    assert_eq!(chunk.len(), at.size, "{at:?}");
    if let Some(want) = exact {
        assert!(chunk == want, "a chunk kept reads back as other bytes");
    }
});
