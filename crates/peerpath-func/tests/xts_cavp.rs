//! NIST CAVP XTS-AES-256 known answers (`tests/data/XTSGenAES256.rsp`, the
//! data-unit-sequence-number form, unmodified; its source is in
//! `tests/data/README.md`) against peerpath's XTS, both directions.
//!
//! The file also holds data units of 140 and 250 bits, which end inside a
//! byte; a disk's sectors never do, and `Xts::apply` takes whole bytes, so
//! those are counted and skipped, and the test checks how many ran.

use peerpath_func::xts::{Xts, XtsKey, XTS_KEY_BYTES};
use zeroize::Zeroizing;

struct Vector {
    section: &'static str,
    count: u32,
    unit_bits: usize,
    key: Vec<u8>,
    unit: u64,
    plain: Vec<u8>,
    cipher: Vec<u8>,
}

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex {s:?}");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The file's vectors, in its order: `[ENCRYPT]` then `[DECRYPT]`, each a
/// blank-line-separated group of `Name = value` lines.
fn vectors() -> Vec<Vector> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/XTSGenAES256.rsp")).expect("the vector file");
    let mut out = Vec::new();
    let mut section = "";
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut flush = |section: &'static str, fields: &mut Vec<(String, String)>| {
        if fields.is_empty() {
            return;
        }
        let get = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_else(|| panic!("{section} vector without {name}: {fields:?}"));
        out.push(Vector {
            section,
            count: get("COUNT").parse().unwrap(),
            unit_bits: get("DataUnitLen").parse().unwrap(),
            key: hex(&get("Key")),
            unit: get("DataUnitSeqNumber").parse().unwrap(),
            plain: hex(&get("PT")),
            cipher: hex(&get("CT")),
        });
        fields.clear();
    };
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            flush(section, &mut fields);
        } else if line == "[ENCRYPT]" || line == "[DECRYPT]" {
            flush(section, &mut fields);
            section = if line == "[ENCRYPT]" { "encrypt" } else { "decrypt" };
        } else {
            let (k, v) = line.split_once('=').unwrap_or_else(|| panic!("not `name = value`: {line:?}"));
            fields.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    flush(section, &mut fields);
    out
}

#[test]
fn every_whole_byte_nist_cavp_vector_encrypts_and_decrypts_to_its_answer() {
    let all = vectors();
    assert_eq!(all.len(), 1000, "NIST's file holds 500 encrypt and 500 decrypt vectors");
    let (mut checked, mut skipped) = ([0usize; 2], 0usize);
    for v in &all {
        if !v.unit_bits.is_multiple_of(8) {
            skipped += 1;
            continue;
        }
        assert_eq!(v.unit_bits / 8, v.plain.len(), "{} {}: the unit is the data", v.section, v.count);
        let mut k = Zeroizing::new([0u8; XTS_KEY_BYTES]);
        k.copy_from_slice(&v.key);
        let key = XtsKey::from_raw(k).unwrap();
        let (encrypt, input, want) = if v.section == "encrypt" { (true, &v.plain, &v.cipher) } else { (false, &v.cipher, &v.plain) };
        let mut got = vec![0u8; input.len()];
        Xts::new(&key, encrypt).unwrap().apply(v.unit, input.len(), input, &mut got).unwrap();
        assert_eq!(&got, want, "{} vector {} (data unit {}, {} bits)", v.section, v.count, v.unit, v.unit_bits);
        // And back the other way: the answer returns the input.
        let mut back = vec![0u8; input.len()];
        Xts::new(&key, !encrypt).unwrap().apply(v.unit, input.len(), want, &mut back).unwrap();
        assert_eq!(&back, input, "{} vector {} inverted", v.section, v.count);
        checked[encrypt as usize] += 1;
    }
    assert_eq!(checked, [300, 300], "300 whole-byte vectors each way (decrypt, encrypt)");
    assert_eq!(skipped, 400, "the 140- and 250-bit units");
}
