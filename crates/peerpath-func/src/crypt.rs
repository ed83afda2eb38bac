//! Authenticated encryption of files in blocks (the CPU oracle of the
//! encryption function): AES-256-GCM from aws-lc (its VAES/AVX-512 and
//! AES-NI paths), format `peerpath-enc/1` (docs/encryption-format.md).
//!
//! A file is a 72-byte header and then its plaintext in blocks of
//! `block_bytes` (the last one shorter, one empty block for an empty file),
//! each sealed as ciphertext followed by a 16-byte tag:
//!
//! | bytes | field |
//! |---|---|
//! | 0-7 | magic `PPENCv1\0` |
//! | 8 | algorithm (1: AES-256-GCM) |
//! | 9-11 | zero |
//! | 12-15 | block bytes (LE) |
//! | 16-23 | plaintext bytes (LE) |
//! | 24-39 | file id (random) |
//! | 40-55 | key check: HKDF-SHA256(key, salt = "peerpath-enc/1", "peerpath-enc/1 key check") |
//! | 56-71 | header tag: GCM over no plaintext, header bytes 0-55 as associated data, nonce index 2^64-1 |
//!
//! The block key is HKDF-SHA256(key, salt = file id, "peerpath-enc/1
//! aes-256-gcm"): a fresh key per file, so block nonces (four file-id bytes
//! and the block index, big-endian) never repeat under one key. Each
//! block's associated data is the format name, the file id and the block
//! index: a block moved to another position or into another file fails.
//! The header tag makes the block size and the plaintext size (so the file's
//! exact length) authentic: truncation, or a block cut off, is found before
//! any block is read. The key check (one value per key, like a key's
//! fingerprint) tells a wrong key from tampering.
//!
//! Keys never appear in `Debug` output and are zeroed when dropped.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, Tag, UnboundKey, AES_256_GCM};
use aws_lc_rs::hkdf::{Salt, HKDF_SHA256};
use zeroize::Zeroizing;

pub const MAGIC: &[u8; 8] = b"PPENCv1\0";
pub const HEADER_BYTES: usize = 72;
pub const TAG_BYTES: usize = 16;
pub const KEY_BYTES: usize = 32;
const ALGORITHM_AES_256_GCM: u8 = 1;
/// The format's name: the first bytes of every block's associated data and the key check's salt.
pub const FORMAT: &[u8] = b"peerpath-enc/1";
const INFO_BLOCK_KEY: &[u8] = b"peerpath-enc/1 aes-256-gcm";
const INFO_KEY_CHECK: &[u8] = b"peerpath-enc/1 key check";
/// The header tag's nonce index; no block has it (a file would need 2^64 blocks).
const HEADER_INDEX: u64 = u64::MAX;
/// The largest block: a block's index and length stay far inside GCM's limits (2^36 - 32 bytes).
pub const MAX_BLOCK_BYTES: u32 = 1 << 30;

/// A 256-bit key. Zeroed on drop; `Debug` shows no byte of it.
pub struct Key(Zeroizing<[u8; KEY_BYTES]>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(<secret>)")
    }
}

impl Key {
    /// A key file's contents: 32 raw bytes, or 64 hexadecimal digits
    /// (surrounding white space allowed). The error never quotes the input.
    pub fn from_bytes(text: &[u8]) -> Result<Key, String> {
        let mut k = Zeroizing::new([0u8; KEY_BYTES]);
        if text.len() == KEY_BYTES {
            k.copy_from_slice(text);
            return Ok(Key(k));
        }
        let trimmed = text.trim_ascii();
        if trimmed.len() != 2 * KEY_BYTES {
            return Err(format!("a key is {KEY_BYTES} raw bytes or {} hexadecimal digits (this is {} bytes, {} without the white space around them)", 2 * KEY_BYTES, text.len(), trimmed.len()));
        }
        for (i, pair) in trimmed.chunks(2).enumerate() {
            let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
            match (hex(pair[0]), hex(pair[1])) {
                (Some(h), Some(l)) => k[i] = h << 4 | l,
                _ => return Err("a hexadecimal key holds only the digits 0-9 and a-f".into()),
            }
        }
        Ok(Key(k))
    }

    /// The key's bytes, for deriving other keys from it (never printed).
    pub(crate) fn secret(&self) -> &[u8] {
        &self.0[..]
    }

    /// A new random key, as 64 hexadecimal digits and a newline (what `peerpath keygen` writes).
    pub fn generate_hex() -> Result<Zeroizing<String>, String> {
        let mut k = Zeroizing::new([0u8; KEY_BYTES]);
        aws_lc_rs::rand::fill(&mut k[..]).map_err(|_| "the system's random source failed".to_string())?;
        let mut s = Zeroizing::new(String::with_capacity(2 * KEY_BYTES + 1));
        for b in k.iter() {
            s.push(char::from_digit((b >> 4) as u32, 16).expect("a nibble"));
            s.push(char::from_digit((b & 15) as u32, 16).expect("a nibble"));
        }
        s.push('\n');
        Ok(s)
    }
}

/// Why a file cannot be decrypted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptError {
    #[error("not a peerpath-enc file (no PPENCv1 header)")]
    NotEncrypted,
    #[error("truncated: {0} bytes, less than the {HEADER_BYTES}-byte header")]
    TruncatedHeader(usize),
    #[error("unsupported header: algorithm {0}, reserved bytes {1:02x?} (this build reads algorithm 1, AES-256-GCM, with reserved bytes 0)")]
    Unsupported(u8, [u8; 3]),
    #[error("wrong key: the header's key check does not match this key")]
    WrongKey,
    #[error("the header fails authentication (block size or length changed): the file was tampered with")]
    BadHeader,
    #[error("truncated: the header says {expected} bytes, the file has {actual}; block {block} (plaintext bytes {start}..) is incomplete or missing")]
    Truncated { expected: u64, actual: u64, block: u64, start: u64 },
    #[error("{actual} bytes where the header says {expected}: data after the last block")]
    TooLong { expected: u64, actual: u64 },
    #[error("block {block} (plaintext bytes {start}..{end}) fails authentication: tampered, moved from another position or from another file")]
    Block { block: u64, start: u64, end: u64 },
}

/// The authenticated header: sizes and file id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub block_bytes: u32,
    pub plaintext_bytes: u64,
    pub file_id: [u8; 16],
}

impl Layout {
    /// Blocks in the file (an empty file has one, empty).
    pub fn blocks(&self) -> u64 {
        self.plaintext_bytes.div_ceil(self.block_bytes as u64).max(1)
    }
    /// Plaintext bytes of block `i`.
    pub fn plain_len(&self, i: u64) -> usize {
        let start = i * self.block_bytes as u64;
        (self.plaintext_bytes.saturating_sub(start)).min(self.block_bytes as u64) as usize
    }
    /// Where block `i`'s plaintext starts.
    pub fn plain_start(&self, i: u64) -> u64 {
        i * self.block_bytes as u64
    }
    /// Where sealed block `i` starts in the file.
    pub fn sealed_offset(&self, i: u64) -> u64 {
        HEADER_BYTES as u64 + i * (self.block_bytes as u64 + TAG_BYTES as u64)
    }
    /// The whole file's length.
    pub fn file_bytes(&self) -> u64 {
        HEADER_BYTES as u64 + self.plaintext_bytes + self.blocks() * TAG_BYTES as u64
    }
    fn block_error(&self, i: u64) -> CryptError {
        let start = self.plain_start(i);
        CryptError::Block { block: i, start, end: start + self.plain_len(i) as u64 }
    }
}

/// The per-file state: the block key and the layout. Seals and opens
/// blocks independently, so blocks can be done on any thread in any order.
pub struct FileCipher {
    key: LessSafeKey,
    layout: Layout,
}

/// An HKDF output length (aws-lc-rs takes it as a `KeyType`).
pub(crate) struct OutputLen(pub(crate) usize);

impl aws_lc_rs::hkdf::KeyType for OutputLen {
    fn len(&self) -> usize {
        self.0
    }
}

/// The file's block key: HKDF-SHA256 with the file id as salt.
fn block_key(master: &Key, file_id: &[u8; 16]) -> LessSafeKey {
    aes_key(&block_key_bytes(master, file_id))
}

fn block_key_bytes(master: &Key, file_id: &[u8; 16]) -> Zeroizing<[u8; KEY_BYTES]> {
    let prk = Salt::new(HKDF_SHA256, file_id).extract(&master.0[..]);
    let mut k = Zeroizing::new([0u8; KEY_BYTES]);
    prk.expand(&[INFO_BLOCK_KEY], OutputLen(KEY_BYTES)).and_then(|okm| okm.fill(&mut k[..])).expect("32 bytes is within HKDF-SHA256's output");
    k
}

fn aes_key(bytes: &[u8; KEY_BYTES]) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &bytes[..]).expect("a 32-byte AES-256 key"))
}

/// What a device needs to seal one file's blocks: the file's block key,
/// then its file id. The master key never leaves the host; this material
/// opens and forges only that file's blocks. Zeroed when dropped.
pub const DEVICE_KEY_BYTES: usize = KEY_BYTES + 16;

/// The device material ([`DEVICE_KEY_BYTES`]) for the file `file_id`.
pub fn device_key(master: &Key, file_id: &[u8; 16]) -> Zeroizing<[u8; DEVICE_KEY_BYTES]> {
    let mut m = Zeroizing::new([0u8; DEVICE_KEY_BYTES]);
    m[..KEY_BYTES].copy_from_slice(&block_key_bytes(master, file_id)[..]);
    m[KEY_BYTES..].copy_from_slice(file_id);
    m
}

/// Opens sealed block `index` in place with a file's device material: `buf`
/// holds the ciphertext and its tag; afterwards its first `len - TAG_BYTES`
/// bytes are the plaintext. `None` if the material, index or length cannot
/// be a block's, or the block is not authentic (tampered, another position
/// or file, another key): then the buffer holds no plaintext.
pub fn open_block_with(material: &[u8], index: u64, buf: &mut [u8]) -> Option<()> {
    let material: &[u8; DEVICE_KEY_BYTES] = material.try_into().ok()?;
    if index == HEADER_INDEX || buf.len() < TAG_BYTES || buf.len() - TAG_BYTES > MAX_BLOCK_BYTES as usize {
        return None;
    }
    let key = aes_key(material[..KEY_BYTES].try_into().expect("32 bytes"));
    let file_id: &[u8; 16] = material[KEY_BYTES..].try_into().expect("16 bytes");
    key.open_in_place(nonce(file_id, index), Aad::from(&block_aad(file_id, index)), buf).ok().map(|_| ())
}

/// Seals block `index` in place with a file's device material: `buf` holds
/// the plaintext and `TAG_BYTES` of room, as for [`FileCipher::seal`], and
/// gets the same bytes. `None` if the material is not [`DEVICE_KEY_BYTES`]
/// long or the index is the header's.
pub fn seal_block_with(material: &[u8], index: u64, buf: &mut [u8]) -> Option<()> {
    let material: &[u8; DEVICE_KEY_BYTES] = material.try_into().ok()?;
    if index == HEADER_INDEX || buf.len() < TAG_BYTES || buf.len() - TAG_BYTES > MAX_BLOCK_BYTES as usize {
        return None;
    }
    let key = aes_key(material[..KEY_BYTES].try_into().expect("32 bytes"));
    let file_id: &[u8; 16] = material[KEY_BYTES..].try_into().expect("16 bytes");
    let (data, tag_room) = buf.split_at_mut(buf.len() - TAG_BYTES);
    let tag: Tag = key.seal_in_place_separate_tag(nonce(file_id, index), Aad::from(&block_aad(file_id, index)), data).ok()?;
    tag_room.copy_from_slice(tag.as_ref());
    Some(())
}

/// The key's check value (the same in every file made with the key).
fn key_check(master: &Key) -> [u8; 16] {
    let prk = Salt::new(HKDF_SHA256, FORMAT).extract(&master.0[..]);
    let mut check = [0u8; 16];
    prk.expand(&[INFO_KEY_CHECK], OutputLen(16)).and_then(|okm| okm.fill(&mut check)).expect("16 bytes is within HKDF-SHA256's output");
    check
}

fn nonce(file_id: &[u8; 16], index: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[..4].copy_from_slice(&file_id[..4]);
    n[4..].copy_from_slice(&index.to_be_bytes());
    Nonce::assume_unique_for_key(n)
}

fn block_aad(file_id: &[u8; 16], index: u64) -> [u8; 38] {
    let mut a = [0u8; 38];
    a[..14].copy_from_slice(FORMAT);
    a[14..30].copy_from_slice(file_id);
    a[30..].copy_from_slice(&index.to_be_bytes());
    a
}

/// The authenticated header of a file with this layout.
fn header(key: &LessSafeKey, l: &Layout, check: &[u8; 16]) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[..8].copy_from_slice(MAGIC);
    h[8] = ALGORITHM_AES_256_GCM;
    h[12..16].copy_from_slice(&l.block_bytes.to_le_bytes());
    h[16..24].copy_from_slice(&l.plaintext_bytes.to_le_bytes());
    h[24..40].copy_from_slice(&l.file_id);
    h[40..56].copy_from_slice(check);
    let tag = key.seal_in_place_separate_tag(nonce(&l.file_id, HEADER_INDEX), Aad::from(&h[..56]), &mut []).expect("sealing nothing cannot fail");
    h[56..].copy_from_slice(tag.as_ref());
    h
}

/// Seals a stream whose length is known only at its end (the output of a
/// compressor): blocks in order as they fill, each at its place in the file,
/// and the header (which holds the length) last. Same format and checks as
/// [`FileCipher`].
pub struct StreamSealer {
    key: LessSafeKey,
    check: [u8; 16],
    layout: Layout,
    next: u64,
    ended: bool,
}

impl StreamSealer {
    /// A new file: a random file id.
    pub fn new(master: &Key, block_bytes: u32) -> Result<StreamSealer, String> {
        if block_bytes == 0 || block_bytes > MAX_BLOCK_BYTES {
            return Err(format!("the block size must be 1 byte to {} MiB", MAX_BLOCK_BYTES >> 20));
        }
        let mut file_id = [0u8; 16];
        aws_lc_rs::rand::fill(&mut file_id).map_err(|_| "the system's random source failed".to_string())?;
        let key = block_key(master, &file_id);
        Ok(StreamSealer { key, check: key_check(master), layout: Layout { block_bytes, plaintext_bytes: 0, file_id }, next: 0, ended: false })
    }

    pub fn block_bytes(&self) -> usize {
        self.layout.block_bytes as usize
    }

    /// Seals the next block in place: `buf` holds its plaintext followed by
    /// `TAG_BYTES` of room. Every block but the last is full; a short (or,
    /// for an empty stream, empty) block is the last. Returns its offset in
    /// the file.
    pub fn seal_next(&mut self, buf: &mut [u8]) -> u64 {
        let n = buf.len() - TAG_BYTES;
        let i = self.next;
        let (data, tag_room) = buf.split_at_mut(n);
        let aad = block_aad(&self.layout.file_id, i);
        let tag: Tag = self.key.seal_in_place_separate_tag(nonce(&self.layout.file_id, i), Aad::from(&aad), data).expect("a block under GCM's size limit");
        tag_room.copy_from_slice(tag.as_ref());
        self.count_sealed(n)
    }

    /// The file's id (for its device material: [`device_key`]).
    pub fn file_id(&self) -> [u8; 16] {
        self.layout.file_id
    }

    /// Counts the next block, of `n` plaintext bytes, sealed elsewhere (by a
    /// device, with this file's [`device_key`]): the same rules and
    /// bookkeeping as [`StreamSealer::seal_next`]. Returns its offset.
    pub fn count_sealed(&mut self, n: usize) -> u64 {
        assert!(!self.ended, "a block after the last (short) one");
        assert!(n <= self.block_bytes(), "a block of {n} bytes");
        self.ended = n < self.block_bytes();
        let i = self.next;
        self.next += 1;
        self.layout.plaintext_bytes += n as u64;
        self.layout.sealed_offset(i)
    }

    /// Blocks sealed so far.
    pub fn blocks(&self) -> u64 {
        self.next
    }

    /// The header, once the last block is sealed (a stream that ended on a
    /// block boundary has no short block: its layout says so).
    pub fn header(&self) -> [u8; HEADER_BYTES] {
        assert!(self.next > 0 && self.layout.blocks() == self.next, "the header of a stream not sealed to its end");
        header(&self.key, &self.layout, &self.check)
    }

    /// The whole file's length, header included.
    pub fn file_bytes(&self) -> u64 {
        self.layout.file_bytes()
    }
}

impl FileCipher {
    /// For a new file: a random file id, and the header to write first.
    pub fn create(master: &Key, block_bytes: u32, plaintext_bytes: u64) -> Result<(FileCipher, [u8; HEADER_BYTES]), String> {
        let mut file_id = [0u8; 16];
        aws_lc_rs::rand::fill(&mut file_id).map_err(|_| "the system's random source failed".to_string())?;
        Self::create_with_id(master, block_bytes, plaintext_bytes, file_id)
    }

    /// As [`FileCipher::create`] with a given file id (tests; a file id must never repeat under one key).
    pub fn create_with_id(master: &Key, block_bytes: u32, plaintext_bytes: u64, file_id: [u8; 16]) -> Result<(FileCipher, [u8; HEADER_BYTES]), String> {
        if block_bytes == 0 || block_bytes > MAX_BLOCK_BYTES {
            return Err(format!("the block size must be 1 byte to {} MiB", MAX_BLOCK_BYTES >> 20));
        }
        let key = block_key(master, &file_id);
        let layout = Layout { block_bytes, plaintext_bytes, file_id };
        let h = header(&key, &layout, &key_check(master));
        Ok((FileCipher { key, layout }, h))
    }

    /// Reads a header: the format, the key check, then the header's tag.
    pub fn open(master: &Key, header: &[u8]) -> Result<FileCipher, CryptError> {
        if header.len() < MAGIC.len() || &header[..8] != MAGIC {
            // The start of the magic and no more: a file cut inside its header.
            return Err(if !header.is_empty() && MAGIC.starts_with(header) { CryptError::TruncatedHeader(header.len()) } else { CryptError::NotEncrypted });
        }
        if header.len() < HEADER_BYTES {
            return Err(CryptError::TruncatedHeader(header.len()));
        }
        if header[8] != ALGORITHM_AES_256_GCM || header[9..12] != [0, 0, 0] {
            return Err(CryptError::Unsupported(header[8], [header[9], header[10], header[11]]));
        }
        let block_bytes = u32::from_le_bytes(header[12..16].try_into().expect("4 bytes"));
        let plaintext_bytes = u64::from_le_bytes(header[16..24].try_into().expect("8 bytes"));
        let file_id: [u8; 16] = header[24..40].try_into().expect("16 bytes");
        if aws_lc_rs::constant_time::verify_slices_are_equal(&key_check(master), &header[40..56]).is_err() {
            return Err(CryptError::WrongKey);
        }
        let key = block_key(master, &file_id);
        let mut tag = [0u8; TAG_BYTES];
        tag.copy_from_slice(&header[56..HEADER_BYTES]);
        let mut empty = tag;
        key.open_in_place(nonce(&file_id, HEADER_INDEX), Aad::from(&header[..56]), &mut empty).map_err(|_| CryptError::BadHeader)?;
        if block_bytes == 0 || block_bytes > MAX_BLOCK_BYTES {
            return Err(CryptError::BadHeader);
        }
        Ok(FileCipher { key, layout: Layout { block_bytes, plaintext_bytes, file_id } })
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Checks the file's length against the header: a short file names the
    /// first block it cuts (none of which is read).
    pub fn check_length(&self, file_bytes: u64) -> Result<(), CryptError> {
        let l = &self.layout;
        let expected = l.file_bytes();
        if file_bytes > expected {
            return Err(CryptError::TooLong { expected, actual: file_bytes });
        }
        if file_bytes < expected {
            let block = (0..l.blocks()).find(|&i| l.sealed_offset(i) + (l.plain_len(i) + TAG_BYTES) as u64 > file_bytes).unwrap_or(0);
            return Err(CryptError::Truncated { expected, actual: file_bytes, block, start: l.plain_start(block) });
        }
        Ok(())
    }

    /// Encrypts block `index` in place: `buf` holds its plaintext followed by
    /// `TAG_BYTES` of room; afterwards it holds the sealed block.
    pub fn seal(&self, index: u64, buf: &mut [u8]) {
        let n = buf.len() - TAG_BYTES;
        assert_eq!(n, self.layout.plain_len(index), "block {index} has {n} bytes");
        let (data, tag_room) = buf.split_at_mut(n);
        let aad = block_aad(&self.layout.file_id, index);
        let tag: Tag = self.key.seal_in_place_separate_tag(nonce(&self.layout.file_id, index), Aad::from(&aad), data).expect("a block under GCM's size limit");
        tag_room.copy_from_slice(tag.as_ref());
    }

    /// Decrypts sealed block `index` in place; the plaintext is the first
    /// `len - TAG_BYTES` bytes. On failure the buffer's contents are not plaintext.
    pub fn open_block(&self, index: u64, buf: &mut [u8]) -> Result<(), CryptError> {
        if index >= self.layout.blocks() || buf.len() != self.layout.plain_len(index) + TAG_BYTES {
            return Err(self.layout.block_error(index));
        }
        let aad = block_aad(&self.layout.file_id, index);
        self.key.open_in_place(nonce(&self.layout.file_id, index), Aad::from(&aad), buf).map(|_| ()).map_err(|_| self.layout.block_error(index))
    }
}

/// Where a [`BlockReader`] gets sealed blocks: a file (read at each block's
/// offset), or a stream that holds them in order ([`InOrder`]).
pub trait SealedSource {
    fn read_block(&mut self, buf: &mut [u8], offset: u64) -> std::io::Result<()>;
}

impl SealedSource for std::fs::File {
    fn read_block(&mut self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
    }
}

/// Sealed blocks read in order from a stream positioned just after the header.
pub struct InOrder<R>(pub R);

impl<R: std::io::Read> SealedSource for InOrder<R> {
    fn read_block(&mut self, buf: &mut [u8], _offset: u64) -> std::io::Result<()> {
        self.0.read_exact(buf)
    }
}

/// Reads the plaintext of an encrypted file from a plaintext offset on,
/// block by block, each authenticated before a byte of it is returned (for
/// a one-thread streaming consumer; a failing block is an I/O error that
/// names it). From an [`InOrder`] stream, only from offset 0.
pub struct BlockReader<S = std::fs::File> {
    file: S,
    cipher: std::sync::Arc<FileCipher>,
    next: u64,
    buf: Vec<u8>,
    at: usize,
}

impl<S: SealedSource> BlockReader<S> {
    pub fn new(file: S, cipher: std::sync::Arc<FileCipher>, plain_offset: u64) -> std::io::Result<BlockReader<S>> {
        let b = cipher.layout().block_bytes as u64;
        let mut r = BlockReader { file, cipher, next: plain_offset / b, buf: Vec::new(), at: 0 };
        r.fill()?;
        r.at = (plain_offset % b) as usize;
        Ok(r)
    }

    fn fill(&mut self) -> std::io::Result<()> {
        let l = *self.cipher.layout();
        self.buf.clear();
        self.at = 0;
        if self.next >= l.blocks() {
            return Ok(());
        }
        self.buf.resize(l.plain_len(self.next) + TAG_BYTES, 0);
        self.file.read_block(&mut self.buf, l.sealed_offset(self.next))?;
        self.cipher.open_block(self.next, &mut self.buf).map_err(std::io::Error::other)?;
        self.buf.truncate(self.buf.len() - TAG_BYTES);
        self.next += 1;
        Ok(())
    }
}

impl<S: SealedSource> std::io::Read for BlockReader<S> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.buf.len() {
            self.fill()?;
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Encrypts `plain` whole (tests, small inputs): header and sealed blocks.
pub fn seal_all(master: &Key, block_bytes: u32, plain: &[u8]) -> Result<Vec<u8>, String> {
    let (c, header) = FileCipher::create(master, block_bytes, plain.len() as u64)?;
    let l = *c.layout();
    let mut out = Vec::with_capacity(l.file_bytes() as usize);
    out.extend_from_slice(&header);
    for i in 0..l.blocks() {
        let start = out.len();
        let p = l.plain_start(i) as usize;
        out.extend_from_slice(&plain[p..p + l.plain_len(i)]);
        out.extend_from_slice(&[0u8; TAG_BYTES]);
        c.seal(i, &mut out[start..]);
    }
    Ok(out)
}

/// Decrypts a whole file (tests, small inputs): the plaintext, or the first failure.
pub fn open_all(master: &Key, file: &[u8]) -> Result<Vec<u8>, CryptError> {
    let c = FileCipher::open(master, file)?;
    c.check_length(file.len() as u64)?;
    let l = *c.layout();
    let mut out = Vec::with_capacity(l.plaintext_bytes as usize);
    for i in 0..l.blocks() {
        let at = l.sealed_offset(i) as usize;
        let mut b = file[at..at + l.plain_len(i) + TAG_BYTES].to_vec();
        c.open_block(i, &mut b)?;
        out.extend_from_slice(&b[..l.plain_len(i)]);
    }
    Ok(out)
}

#[cfg(test)]
mod stream_tests {
    use super::*;

    /// A stream sealed block by block, in pieces of any size, opens as the
    /// file `seal_all` would make (same reader, same checks).
    #[test]
    fn a_sealed_stream_opens_whole_for_every_length_around_the_block_size() {
        let key = Key::from_bytes(&[7u8; 32]).unwrap();
        let block = 1000u32;
        for len in [0usize, 1, 999, 1000, 1001, 2000, 2999, 5000] {
            let plain: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let mut s = StreamSealer::new(&key, block).unwrap();
            let mut file = vec![0u8; HEADER_BYTES];
            let mut chunks: Vec<&[u8]> = plain.chunks(block as usize).collect();
            if chunks.last().is_none_or(|c| c.len() == block as usize) && len % block as usize == 0 && len > 0 {
                // ended on a boundary: no short block
            } else if chunks.is_empty() {
                chunks.push(&[]);
            }
            for c in chunks {
                let mut buf = c.to_vec();
                buf.resize(c.len() + TAG_BYTES, 0);
                let at = s.seal_next(&mut buf) as usize;
                assert_eq!(at, file.len(), "len {len}: blocks back to back");
                file.extend_from_slice(&buf);
            }
            file[..HEADER_BYTES].copy_from_slice(&s.header());
            assert_eq!(file.len() as u64, s.file_bytes());
            assert_eq!(open_all(&key, &file).unwrap(), plain, "len {len}");
            let wrong = Key::from_bytes(&[8u8; 32]).unwrap();
            assert!(matches!(open_all(&wrong, &file), Err(CryptError::WrongKey)));
            // Read back from any plaintext offset, block by block.
            let path = std::env::temp_dir().join(format!("ppenc-stream-{}-{len}", std::process::id()));
            std::fs::write(&path, &file).unwrap();
            let cipher = std::sync::Arc::new(FileCipher::open(&key, &file[..HEADER_BYTES]).unwrap());
            for from in [0usize, 1, 999, 1000, len / 2, len] {
                if from > len {
                    continue;
                }
                let mut r = BlockReader::new(std::fs::File::open(&path).unwrap(), cipher.clone(), from as u64).unwrap();
                let mut got = Vec::new();
                std::io::Read::read_to_end(&mut r, &mut got).unwrap();
                assert_eq!(got, plain[from..], "len {len} from {from}");
            }
            std::fs::remove_file(&path).unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> Key {
        Key::from_bytes(&[b; 32]).unwrap()
    }

    /// A device's material seals a block into the bytes the file's cipher
    /// makes; other material, index or a short key does not.
    #[test]
    fn device_material_seals_as_the_file_cipher_does() {
        let id = [3u8; 16];
        let (c, _) = FileCipher::create_with_id(&key(1), 100, 250, id).unwrap();
        let material = device_key(&key(1), &id);
        for (index, len) in [(0u64, 100usize), (1, 100), (2, 50)] {
            let plain: Vec<u8> = (0..len).map(|i| (i * 7 + index as usize) as u8).collect();
            let mut want = plain.clone();
            want.resize(len + TAG_BYTES, 0);
            c.seal(index, &mut want);
            let mut got = plain.clone();
            got.resize(len + TAG_BYTES, 0);
            seal_block_with(&material[..], index, &mut got).unwrap();
            assert_eq!(got, want, "block {index}");
            let mut other = plain.clone();
            other.resize(len + TAG_BYTES, 0);
            seal_block_with(&device_key(&key(2), &id)[..], index, &mut other).unwrap();
            assert_ne!(other, want, "another key");
        }
        // And opens them again; a flipped bit, another index or another file's material does not.
        let mut sealed = vec![9u8; 30];
        sealed.resize(30 + TAG_BYTES, 0);
        seal_block_with(&material[..], 4, &mut sealed).unwrap();
        let mut b = sealed.clone();
        open_block_with(&material[..], 4, &mut b).unwrap();
        assert_eq!(&b[..30], &[9u8; 30]);
        for (m, i, flip) in [(device_key(&key(1), &id), 5u64, false), (device_key(&key(1), &[4u8; 16]), 4, false), (device_key(&key(1), &id), 4, true)] {
            let mut b = sealed.clone();
            if flip {
                b[3] ^= 1;
            }
            assert!(open_block_with(&m[..], i, &mut b).is_none(), "index {i}, flipped {flip}");
        }
        let mut buf = [0u8; 20];
        assert!(seal_block_with(&material[..47], 0, &mut buf).is_none(), "short material");
        assert!(seal_block_with(&material[..], u64::MAX, &mut buf).is_none(), "the header's index");
        assert!(seal_block_with(&material[..], 0, &mut buf[..15]).is_none(), "no room for the tag");
    }

    /// The AEAD itself against Project Wycheproof's AES-GCM vectors (256-bit
    /// keys, 96-bit nonces, 128-bit tags: the parameters this format uses),
    /// valid and invalid alike.
    #[test]
    fn aes_256_gcm_matches_the_wycheproof_vectors() {
        let set = wycheproof::aead::TestSet::load(wycheproof::aead::TestName::AesGcm).unwrap();
        let mut checked = 0;
        for g in set.test_groups.iter().filter(|g| g.key_size == 256 && g.nonce_size == 96 && g.tag_size == 128) {
            for t in &g.tests {
                let k = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &t.key).unwrap());
                let n = || Nonce::try_assume_unique_for_key(&t.nonce).unwrap();
                let mut sealed = t.ct.to_vec();
                sealed.extend_from_slice(&t.tag);
                let opened = k.open_in_place(n(), Aad::from(&t.aad[..]), &mut sealed).map(|p| p.to_vec());
                match t.result {
                    wycheproof::TestResult::Invalid => assert!(opened.is_err(), "test {}: an invalid case opened", t.tc_id),
                    _ => {
                        assert_eq!(opened.unwrap(), &t.pt[..], "test {}", t.tc_id);
                        let mut data = t.pt.to_vec();
                        let tag = k.seal_in_place_separate_tag(n(), Aad::from(&t.aad[..]), &mut data).unwrap();
                        assert_eq!((&data[..], tag.as_ref()), (&t.ct[..], &t.tag[..]), "test {}", t.tc_id);
                    }
                }
                checked += 1;
            }
        }
        assert!(checked >= 60, "{checked} vectors checked");
    }

    #[test]
    fn keys_are_raw_or_hex_and_never_shown() {
        let hex = b"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
        let k = Key::from_bytes(hex).unwrap();
        assert_eq!(k.0[..4], [0, 1, 2, 3]);
        assert_eq!(format!("{k:?}"), "Key(<secret>)");
        assert!(Key::from_bytes(b"short").unwrap_err().contains("32 raw bytes"));
        assert!(Key::from_bytes(&[b'g'; 64]).is_err());
        let g = Key::generate_hex().unwrap();
        assert_eq!(g.len(), 65);
        assert!(Key::from_bytes(g.as_bytes()).is_ok());
        assert_ne!(*Key::generate_hex().unwrap(), *g, "fresh keys differ");
    }

    #[test]
    fn round_trips_at_every_block_boundary() {
        let k = key(1);
        for (size, bs) in [(0usize, 16u32), (1, 16), (15, 16), (16, 16), (17, 16), (48, 16), (100_000, 4096), (5, 1)] {
            let plain: Vec<u8> = (0..size).map(|i| (i * 7 + 3) as u8).collect();
            let sealed = seal_all(&k, bs, &plain).unwrap();
            assert_eq!(sealed.len() as u64, FileCipher::open(&k, &sealed).unwrap().layout().file_bytes());
            assert_eq!(open_all(&k, &sealed).unwrap(), plain, "{size} bytes in blocks of {bs}");
            if size >= 4 {
                assert_ne!(&sealed[HEADER_BYTES..HEADER_BYTES + 4], &plain[..4], "ciphertext is not the plaintext");
            }
        }
    }

    #[test]
    fn every_kind_of_damage_is_named() {
        let k = key(2);
        let plain: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let sealed = seal_all(&k, 1000, &plain).unwrap();
        let l = *FileCipher::open(&k, &sealed).unwrap().layout();
        assert_eq!(open_all(&key(3), &sealed), Err(CryptError::WrongKey));
        assert_eq!(open_all(&k, b"plain text"), Err(CryptError::NotEncrypted));
        assert_eq!(open_all(&k, b""), Err(CryptError::NotEncrypted));
        assert_eq!(open_all(&k, &sealed[..5]), Err(CryptError::TruncatedHeader(5)), "cut inside the magic");
        // Any flipped byte: in a block it names the block, in the header it fails the header.
        for at in [0usize, 8, 13, 20, 30, 45, 60, HEADER_BYTES, HEADER_BYTES + 1015, l.sealed_offset(4) as usize + 500, sealed.len() - 1] {
            let mut bad = sealed.clone();
            bad[at] ^= 1;
            let e = open_all(&k, &bad).unwrap_err();
            let want_block = (0..l.blocks()).rev().find(|&i| l.sealed_offset(i) as usize <= at);
            match (at, e.clone()) {
                (0..=7, CryptError::NotEncrypted) | (8..=11, CryptError::Unsupported(..)) | (40..=55, CryptError::WrongKey) => {}
                (12..=39 | 56..=71, CryptError::BadHeader) => {}
                (_, CryptError::Block { block, .. }) if Some(block) == want_block => {}
                _ => panic!("byte {at} flipped: {e}"),
            }
        }
        // Truncated (inside a block or at a block boundary) and extended.
        for cut in [sealed.len() - 1, l.sealed_offset(9) as usize, l.sealed_offset(3) as usize + 7, HEADER_BYTES] {
            match open_all(&k, &sealed[..cut]) {
                Err(CryptError::Truncated { block, .. }) => assert!(l.sealed_offset(block) <= cut as u64, "cut at {cut}: block {block}"),
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
        let mut long = sealed.clone();
        long.push(0);
        assert!(matches!(open_all(&k, &long), Err(CryptError::TooLong { .. })));
        // Two blocks swapped: the first of them fails.
        let (a, b) = (l.sealed_offset(2) as usize, l.sealed_offset(3) as usize);
        let mut swapped = sealed.clone();
        let block2 = sealed[a..b].to_vec();
        swapped.copy_within(b..b + (b - a), a);
        swapped[b..b + (b - a)].copy_from_slice(&block2);
        assert_eq!(open_all(&k, &swapped), Err(CryptError::Block { block: 2, start: 2000, end: 3000 }));
        // A block from another file (same key, same position) fails.
        let other = seal_all(&k, 1000, &plain).unwrap();
        let mut mixed = sealed.clone();
        mixed[a..b].copy_from_slice(&other[a..b]);
        assert_eq!(open_all(&k, &mixed), Err(CryptError::Block { block: 2, start: 2000, end: 3000 }));
        assert_ne!(sealed, other, "each file has its own id, so its own key and ciphertext");
        // A header changed to claim fewer bytes (a truncation hidden in the header) fails the header.
        let mut shorter = sealed[..l.sealed_offset(9) as usize].to_vec();
        shorter[16..24].copy_from_slice(&9000u64.to_le_bytes());
        assert_eq!(open_all(&k, &shorter), Err(CryptError::BadHeader));
    }

    proptest::proptest! {
        /// Fuzzing the reader: any bytes give an error, never a panic; any
        /// byte of a real file changed, or any cut, gives an error, never
        /// other plaintext.
        #[test]
        fn no_input_panics_and_no_change_goes_unnoticed(junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), at in 0usize..5000, byte in 1u8..=255, cut in 0usize..5000) {
            let k = key(9);
            let _ = open_all(&k, &junk);
            let mut framed = MAGIC.to_vec();
            framed.extend_from_slice(&junk);
            let _ = open_all(&k, &framed);
            let plain: Vec<u8> = (0..3000u32).map(|i| (i * 31 % 256) as u8).collect();
            let sealed = seal_all(&k, 700, &plain).unwrap();
            let mut bad = sealed.clone();
            let i = at % bad.len();
            bad[i] ^= byte;
            proptest::prop_assert!(open_all(&k, &bad).is_err(), "byte {} changed", i);
            proptest::prop_assert!(open_all(&k, &sealed[..cut % sealed.len()]).is_err());
        }
    }
}
