//! `peerpath-enc/1` files read as `decompress` and the chains read them:
//! the header opened, the length checked, then the blocks through
//! `BlockReader`, in order from a stream (`InOrder`) or at their offsets
//! from a plaintext offset on. The first byte picks the block size and
//! whether the plaintext is the rest of the input or a peerpath gzip
//! stream of it (a chain: members sealed, then inflated as they are
//! opened); the next four an edit of the sealed file (none, a bit flipped,
//! cut, lengthened) and the plaintext offset. Unchanged, every way reads
//! the plaintext; changed, every way refuses it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_func::crypt::{open_all, seal_all, BlockReader, FileCipher, InOrder, Key, SealedSource, HEADER_BYTES};
use peerpath_func::{encode_member, member_bound_bytes, Format, Level, MemberEncoder, StreamDecoder};
use std::io::Read;
use std::sync::Arc;

/// A sealed file in memory, read at offsets as `BlockReader` reads a `File`.
struct AtOffsets<'a>(&'a [u8]);

impl SealedSource for AtOffsets<'_> {
    fn read_block(&mut self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let at = usize::try_from(offset).ok().filter(|&o| o <= self.0.len() && self.0.len() - o >= buf.len());
        let at = at.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(&self.0[at..at + buf.len()]);
        Ok(())
    }
}

fn opened(key: &Key, file: &[u8]) -> Result<Arc<FileCipher>, String> {
    let c = FileCipher::open(key, file).map_err(|e| e.to_string())?;
    c.check_length(file.len() as u64).map_err(|e| e.to_string())?;
    Ok(Arc::new(c))
}

/// The plaintext, streamed in order after the header.
fn in_order(key: &Key, file: &[u8]) -> Result<Vec<u8>, String> {
    let c = opened(key, file)?;
    let mut out = Vec::new();
    BlockReader::new(InOrder(&file[HEADER_BYTES..]), c, 0).and_then(|mut r| r.read_to_end(&mut out)).map_err(|e| e.to_string())?;
    Ok(out)
}

/// The plaintext from `from` on, blocks read at their offsets.
fn from_offset(key: &Key, file: &[u8], from: u64) -> Result<Vec<u8>, String> {
    let c = opened(key, file)?;
    let mut out = Vec::new();
    BlockReader::new(AtOffsets(file), c, from).and_then(|mut r| r.read_to_end(&mut out)).map_err(|e| e.to_string())?;
    Ok(out)
}

/// A chain's reading side: blocks opened in order, members inflated on two threads.
fn inflated(key: &Key, file: &[u8]) -> Result<Vec<u8>, String> {
    let c = opened(key, file)?;
    let plain = BlockReader::new(InOrder(&file[HEADER_BYTES..]), c, 0).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    StreamDecoder::new(plain, 0, 0)
        .run_parallel(2, true, |b| {
            out.extend_from_slice(b);
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    Ok(out)
}

fuzz_target!(|input: &[u8]| {
    let Some((&[how, edit, a, b, c], data)) = input.split_first_chunk::<5>() else { return };
    let key = Key::from_bytes(&[9u8; 32]).expect("a 32-byte key");
    let block = 1 + u32::from(how & 0x7f) * 13;
    let chain = how & 0x80 != 0;
    let plain = if chain {
        let mut enc = MemberEncoder::new(Level::new(1).expect("level 1"));
        let mut members = Vec::new();
        for piece in data.chunks(97) {
            let mut out = vec![0u8; member_bound_bytes(piece.len())];
            let n = encode_member(&mut enc, Format::Gzip, piece, &mut out);
            members.extend_from_slice(&out[..n]);
        }
        members.extend_from_slice(Format::Gzip.end_marker());
        members
    } else {
        data.to_vec()
    };
    let sealed = seal_all(&key, block, &plain).expect("sealing never fails");
    let at = usize::from(u16::from_le_bytes([a, b]));
    let mut file = sealed.clone();
    match edit % 4 {
        0 => {}
        1 => file[at % sealed.len()] ^= 1 << (c % 8),
        2 => file.truncate(at % sealed.len()),
        _ => file.extend(std::iter::repeat_n(c, 1 + at % 64)),
    }
    let from = u64::from(c) * 7 % (plain.len() as u64 + 1);
    if file == sealed {
        assert_eq!(in_order(&key, &file).as_deref(), Ok(&plain[..]), "in order");
        assert_eq!(from_offset(&key, &file, from).as_deref(), Ok(&plain[from as usize..]), "from plaintext byte {from}");
        assert_eq!(open_all(&key, &file).map_err(|e| e.to_string()).as_deref(), Ok(&plain[..]));
        if chain {
            assert_eq!(inflated(&key, &file).as_deref(), Ok(data), "the chain's reading side");
        }
        return;
    }
    assert!(in_order(&key, &file).is_err(), "edit {edit} at {at}: read in order");
    assert!(from_offset(&key, &file, 0).is_err(), "edit {edit} at {at}: read at offsets");
    assert!(open_all(&key, &file).is_err(), "edit {edit} at {at}: opened whole");
    if chain {
        assert!(inflated(&key, &file).is_err(), "edit {edit} at {at}: the chain's reading side");
    }
});
