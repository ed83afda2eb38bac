//! AES-256-XTS (IEEE 1619) for block-device images: length-preserving
//! encryption of data units (sectors), each with its index as the tweak
//! (little-endian in the 16-byte tweak, as dm-crypt's `plain64`), so an
//! image stays an image: the same size, any sector readable on its own.
//!
//! XTS hides data; it does not detect tampering (a changed sector decrypts
//! to garbage, not to an error): use peerpath-enc/1 (AES-256-GCM, `crypt`)
//! where that matters. The 512-bit XTS key is derived from peerpath's
//! 256-bit key with HKDF-SHA256 (salt "peerpath-xts/1", info
//! "peerpath-xts/1 aes-256-xts"), so one key file serves both formats.
//!
//! AWS-LC's XTS (its AES-NI/VAES code) through `aws-lc-sys`, the binding
//! aws-lc-rs is built on: aws-lc-rs itself offers no XTS mode.

use crate::crypt::{Key, OutputLen};
use aws_lc_rs::hkdf::{Salt, HKDF_SHA256};
use zeroize::Zeroizing;

const SALT: &[u8] = b"peerpath-xts/1";
const INFO: &[u8] = b"peerpath-xts/1 aes-256-xts";
/// The two AES-256 keys of XTS.
pub const XTS_KEY_BYTES: usize = 64;
/// The shortest data unit XTS can encrypt (one AES block).
pub const MIN_UNIT_BYTES: usize = 16;

/// Why data cannot be encrypted with XTS.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XtsError {
    #[error("a data unit of {0} bytes: XTS needs at least 16 (a file's last sector may be shorter than the others, but not shorter than 16 bytes)")]
    UnitTooShort(usize),
    #[error("the two halves of the XTS key are equal (IEEE 1619 forbids it)")]
    EqualHalves,
    #[error("AWS-LC refused the XTS operation")]
    Library,
}

/// The 512-bit XTS key. Zeroed on drop; `Debug` shows no byte of it.
pub struct XtsKey(Zeroizing<[u8; XTS_KEY_BYTES]>);

impl std::fmt::Debug for XtsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("XtsKey(<secret>)")
    }
}

impl XtsKey {
    /// The XTS key of a peerpath key (HKDF-SHA256).
    pub fn derive(master: &Key) -> Result<XtsKey, XtsError> {
        let prk = Salt::new(HKDF_SHA256, SALT).extract(master.secret());
        let mut k = Zeroizing::new([0u8; XTS_KEY_BYTES]);
        prk.expand(&[INFO], OutputLen(XTS_KEY_BYTES)).and_then(|okm| okm.fill(&mut k[..])).map_err(|_| XtsError::Library)?;
        XtsKey::from_raw(k)
    }

    /// A raw 512-bit key (key 1, then key 2), as test vectors give them.
    pub fn from_raw(k: Zeroizing<[u8; XTS_KEY_BYTES]>) -> Result<XtsKey, XtsError> {
        if k[..32] == k[32..] {
            return Err(XtsError::EqualHalves);
        }
        Ok(XtsKey(k))
    }
}

/// An AWS-LC cipher context for XTS in one direction (one per thread).
pub struct Xts {
    ctx: *mut aws_lc_sys::EVP_CIPHER_CTX,
    encrypt: bool,
}

// SAFETY: the context is owned by this value alone and used through &mut
// self only; AWS-LC contexts may move between threads.
unsafe impl Send for Xts {}

impl Drop for Xts {
    fn drop(&mut self) {
        // SAFETY: a context this value made and still owns (freeing zeroes its key schedule).
        unsafe { aws_lc_sys::EVP_CIPHER_CTX_free(self.ctx) };
    }
}

impl Xts {
    /// A context with `key` set, to encrypt or to decrypt.
    pub fn new(key: &XtsKey, encrypt: bool) -> Result<Xts, XtsError> {
        // SAFETY: allocates a context (null on failure, checked).
        let ctx = unsafe { aws_lc_sys::EVP_CIPHER_CTX_new() };
        if ctx.is_null() {
            return Err(XtsError::Library);
        }
        let x = Xts { ctx, encrypt };
        // SAFETY: a fresh context, AWS-LC's static XTS cipher, a 64-byte key
        // (what EVP_aes_256_xts takes) that outlives the call; no IV yet.
        let rc = unsafe { aws_lc_sys::EVP_CipherInit_ex(x.ctx, aws_lc_sys::EVP_aes_256_xts(), std::ptr::null_mut(), key.0.as_ptr(), std::ptr::null(), encrypt as i32) };
        if rc != 1 {
            return Err(XtsError::Library);
        }
        Ok(x)
    }

    /// Encrypts (or decrypts) `input` into `output` (the same length), as
    /// data units of `unit_bytes` (the last may be shorter, at least 16
    /// bytes) numbered from `first_unit`.
    pub fn apply(&mut self, first_unit: u64, unit_bytes: usize, input: &[u8], output: &mut [u8]) -> Result<(), XtsError> {
        assert_eq!(input.len(), output.len(), "XTS preserves the length");
        assert!(unit_bytes >= MIN_UNIT_BYTES && unit_bytes <= i32::MAX as usize, "a unit of 16 bytes to 2 GiB");
        for (k, (src, dst)) in input.chunks(unit_bytes).zip(output.chunks_mut(unit_bytes)).enumerate() {
            if src.len() < MIN_UNIT_BYTES {
                return Err(XtsError::UnitTooShort(src.len()));
            }
            let mut tweak = [0u8; 16];
            tweak[..8].copy_from_slice(&(first_unit + k as u64).to_le_bytes());
            let mut written: i32 = 0;
            // SAFETY: the context was set up with the key in `new`; a null
            // cipher and key keep them and set only the 16-byte tweak. Then
            // one update of exactly one data unit: `dst` has the same length
            // as `src` (XTS writes as many bytes as it reads), `written` is ours.
            let ok = unsafe {
                aws_lc_sys::EVP_CipherInit_ex(self.ctx, std::ptr::null(), std::ptr::null_mut(), std::ptr::null(), tweak.as_ptr(), self.encrypt as i32) == 1
                    && aws_lc_sys::EVP_CipherUpdate(self.ctx, dst.as_mut_ptr(), &mut written, src.as_ptr(), src.len() as i32) == 1
            };
            if !ok || written as usize != src.len() {
                return Err(XtsError::Library);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    fn raw_key(k1: &str, k2: &str) -> XtsKey {
        let mut k = Zeroizing::new([0u8; XTS_KEY_BYTES]);
        k[..32].copy_from_slice(&hex(k1));
        k[32..].copy_from_slice(&hex(k2));
        XtsKey::from_raw(k).unwrap()
    }

    fn key() -> XtsKey {
        XtsKey::derive(&Key::from_bytes(&[7u8; 32]).unwrap()).unwrap()
    }

    /// IEEE 1619-2007, XTS-AES-256 vector 10: key 1 = e's digits, key 2 =
    /// pi's, data unit 0xff of 512 bytes, plaintext 0..255 twice; the
    /// ciphertext's first and last 32 bytes (OpenSSL, through Python's
    /// `cryptography`, gives the same).
    #[test]
    fn the_ieee_1619_vector_10() {
        let k = raw_key("2718281828459045235360287471352662497757247093699959574966967627", "3141592653589793238462643383279502884197169399375105820974944592");
        let plain: Vec<u8> = (0..512).map(|i| (i % 256) as u8).collect();
        let mut out = vec![0u8; 512];
        Xts::new(&k, true).unwrap().apply(0xff, 512, &plain, &mut out).unwrap();
        assert_eq!(hex("1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b"), out[..32], "the vector's first 32 bytes");
        assert_eq!(hex("773dad38014bd2092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151"), out[480..], "its last 32 bytes");
        let mut back = vec![0u8; 512];
        Xts::new(&k, false).unwrap().apply(0xff, 512, &out, &mut back).unwrap();
        assert_eq!(back, plain);
    }

    #[test]
    fn units_round_trip_each_with_its_own_tweak() {
        let k = key();
        // Three identical 4 KiB sectors and a short last one (ciphertext stealing).
        let mut plain = vec![0x42u8; 3 * 4096];
        plain.extend((0..100u8).collect::<Vec<_>>());
        let mut enc = vec![0u8; plain.len()];
        Xts::new(&k, true).unwrap().apply(10, 4096, &plain, &mut enc).unwrap();
        assert_ne!(enc[..4096], enc[4096..8192], "the same plaintext in two sectors encrypts differently");
        assert_ne!(enc[..64], plain[..64]);
        let mut dec = vec![0u8; plain.len()];
        Xts::new(&k, false).unwrap().apply(10, 4096, &enc, &mut dec).unwrap();
        assert_eq!(dec, plain);
        // Sectors decrypt on their own (an image's random access), at their own index.
        let mut one = vec![0u8; 4096];
        Xts::new(&k, false).unwrap().apply(11, 4096, &enc[4096..8192], &mut one).unwrap();
        assert_eq!(one, plain[4096..8192]);
        Xts::new(&k, false).unwrap().apply(12, 4096, &enc[4096..8192], &mut one).unwrap();
        assert_ne!(one, plain[4096..8192], "at the wrong index it is garbage, not the data");
    }

    #[test]
    fn bad_units_and_keys_are_refused() {
        let k = key();
        let mut out = vec![0u8; 4096 + 10];
        let e = Xts::new(&k, true).unwrap().apply(0, 4096, &vec![0u8; 4096 + 10], &mut out).unwrap_err();
        assert_eq!(e, XtsError::UnitTooShort(10));
        let same = Zeroizing::new([9u8; XTS_KEY_BYTES]);
        assert_eq!(XtsKey::from_raw(same).unwrap_err(), XtsError::EqualHalves);
        assert_eq!(format!("{k:?}"), "XtsKey(<secret>)");
    }
}
