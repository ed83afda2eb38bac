//! ec manifests (`peerpath ec`, `compress --ec`, `decompress --ec`) as the
//! commands read them (`ec_manifest::parse_bytes`): the input's bytes, or a
//! manifest as `ec` makes one (code, sizes and checksums from the input, its
//! shards in the set's directory or placed in directories of their own) with
//! bytes of the input spliced in. A manifest or an error, never a panic;
//! what parses holds no more stripes and shards than its text has checksums
//! (a manifest claiming 2^60 stripes sizes nothing), writes out as `ec`
//! writes it and parses back to itself, names each shard's file in the set's
//! directory or, placed, in an absolute directory without `..` (and its
//! copies beside them), and its last stripe's padding check finds exactly
//! the bytes past the source's end that are not zero. What `Manifest::new`
//! makes of a parsed manifest's numbers parses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_func::ec_manifest::{copy_name, parse, parse_bytes, shard_name, Manifest, MAX_UNIT_BYTES, PLACED_SCHEMA, SCHEMA};
use std::path::{Component, Path};

/// A manifest as `ec encode` writes one, from the input's numbers, then up to three of its
/// numbers (shards, unit, stripes, length, CRC-32) changed to any the input gives, and the rest
/// of the input spliced into its text at a place the input picks.
fn spliced(mode: u8, input: &[u8]) -> Vec<u8> {
    let Some((h, rest)) = input.split_first_chunk::<8>() else { return input.to_vec() };
    let (k, p) = (usize::from(h[0] % 8) + 1, usize::from(h[1] % 4) + 1);
    let unit = usize::from(u16::from_le_bytes([h[2], h[3]]) % 4096) + 1;
    // At most 16 stripes: the text stays a few KiB.
    let source_bytes = u64::from(u16::from_le_bytes([h[4], h[5]])) % (16 * (k * unit) as u64 + 1);
    let stripes = source_bytes.div_ceil((k * unit) as u64).max(1);
    let mut seed = u32::from_le_bytes([h[6], h[7], h[0], h[1]]) | 1;
    let crcs = (0..k + p)
        .map(|_| {
            (0..stripes)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    seed
                })
                .collect()
        })
        .collect();
    let mut m = Manifest::new("source".into(), source_bytes, (k, p, unit), stripes, crcs);
    if mode & 2 != 0 {
        let dirs: Vec<String> = (0..k + p).map(|i| format!("/mnt/d{i}")).collect();
        m.place_shards("set", &dirs.iter().map(String::as_str).collect::<Vec<_>>());
    }
    let mut rest = rest;
    for _ in 0..(mode >> 2) % 4 {
        let Some((&field, after)) = rest.split_first() else { break };
        let Some((v, after)) = after.split_first_chunk::<8>() else { break };
        let v = u64::from_le_bytes(*v);
        match field % 6 {
            0 => m.data_shards = v as usize,
            1 => m.parity_shards = v as usize,
            2 => m.unit_bytes = v as usize,
            3 => m.stripes = v,
            4 => m.source_bytes = v,
            _ => m.source_crc32 = Some(v as u32),
        }
        rest = after;
    }
    let mut text = m.text().into_bytes();
    let Some((s, insert)) = rest.split_first_chunk::<3>() else { return text };
    let at = usize::from(u16::from_le_bytes([s[0], s[1]])) % (text.len() + 1);
    let cut = usize::from(s[2] % 32).min(text.len() - at);
    text.splice(at..at + cut, insert.iter().copied());
    text
}

/// `p` is absolute and has no `..` in it.
fn contained(p: &Path) -> bool {
    p.is_absolute() && p.components().all(|c| c != Component::ParentDir)
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else { return };
    let text = if mode & 1 == 0 { rest.to_vec() } else { spliced(mode, rest) };
    let Ok((m, code)) = parse_bytes(&text) else { return };
    let (k, p, unit, stripes, source_bytes) = m.shape();
    assert_eq!((code.data_shards(), code.parity_shards()), (k, p));
    assert!((1..=MAX_UNIT_BYTES).contains(&unit) && m.shards.len() == k + p && k + p <= 255);
    // Every stripe of every shard has a checksum in the text, each at least a digit and a comma.
    let checksums = u128::from(stripes) * (k + p) as u128;
    assert!(checksums * 2 <= text.len() as u128 + 1, "{stripes} stripes of {} shards from {} bytes of text", k + p, text.len());
    assert!(m.source_crc32.is_none_or(|c| c == m.source_crc()));

    // Written as `ec` writes it, it reads back to itself.
    let written = m.text();
    let (again, _) = parse(&written).unwrap_or_else(|e| panic!("a manifest read does not read back once written: {e}\n{written}"));
    assert_eq!(again, m, "a manifest read back differs");
    assert_eq!(again.text(), written);
    // What an encoder makes of its numbers reads.
    let made = Manifest::new(m.source.clone(), source_bytes, (k, p, unit), stripes, m.shards.iter().map(|s| s.crc32.clone()).collect());
    if let Err(e) = parse(&made.text()) {
        panic!("a manifest made by Manifest::new does not read: {e}");
    }

    // Shards: named as their index, in the set's directory, or placed in absolute directories
    // without `..`; the copies of a placed manifest beside them.
    let set = Path::new("/set");
    assert_eq!(m.placed(), m.schema == PLACED_SCHEMA);
    assert!(m.schema == SCHEMA || m.schema == PLACED_SCHEMA);
    for (i, s) in m.shards.iter().enumerate() {
        let path = m.shard_path_in(set, i);
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned());
        assert_eq!(file.as_deref(), Some(s.file.as_str()), "shard {i}: {}", path.display());
        match &s.dir {
            None => assert_eq!(path, set.join(shard_name(i)), "shard {i}"),
            Some(d) => {
                assert!(contained(&path) && path.parent() == Some(Path::new(d)), "shard {i}: {}", path.display());
                assert!(s.file.ends_with(&format!(".{}", shard_name(i))) && !s.file.starts_with('.'), "shard {i}: {}", path.display());
            }
        }
    }
    for c in m.copies() {
        let name = c.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        assert!(contained(&c) && m.shards.iter().any(|s| s.dir.as_deref().map(Path::new) == c.parent()), "a copy at {}", c.display());
        assert!(name.ends_with(&copy_name("")) && !name.starts_with('.'), "a copy at {}", c.display());
    }

    // The last stripe's padding, where a stripe is small: the input's bytes, zeros from a place it picks.
    let stripe_bytes = k * unit;
    if stripe_bytes <= 1 << 16 {
        let s = stripes - 1;
        let start = s * stripe_bytes as u64;
        let zeros_from = usize::from(mode >> 2) * stripe_bytes / 63;
        let stripe: Vec<u8> = (0..stripe_bytes).map(|i| if i < zeros_from { text[i % text.len()] } else { 0 }).collect();
        let end = (source_bytes - start) as usize;
        let first = stripe[end..].iter().position(|&b| b != 0).map(|at| start + (end + at) as u64);
        assert_eq!(m.data_in_padding_at(s, &stripe), first);
        if s > 0 {
            assert_eq!(m.data_in_padding_at(s - 1, &stripe), None, "a stripe before the last has no padding");
        }
    }
});
