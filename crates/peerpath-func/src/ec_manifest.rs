//! An erasure-coded set's manifest (`peerpath ec`, `compress --ec`): its
//! JSON text, parsed and checked for everything the commands rely on before
//! any of it sizes a buffer or names a file, and the checks made of a
//! manifest once parsed that need no file system. Reading the manifest's
//! file, and the shards, is the CLI's (`peerpath ec`).

use crate::ec::RsCode;
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

/// A set's manifest file, in its directory.
pub const MANIFEST: &str = "manifest.json";
/// The manifest of a set whose shards lie in directories of their own.
pub const PLACED_SCHEMA: &str = "peerpath/ec-manifest/2";
/// The manifest of a set whose shards lie in its directory.
pub const SCHEMA: &str = "peerpath/ec-manifest/1";
/// The largest unit `encode` makes (and a manifest may name).
pub const MAX_UNIT_BYTES: usize = 256 << 20;
/// The largest manifest file the commands read (4 GiB): one past it is damaged, never read
/// (a sparse or padded file had it all read into memory). A manifest's text is at most 20 bytes
/// a checksum (`        4294967295,` on a line of its own) besides its names ([`NAMES_BYTES`]),
/// and a set has one checksum per shard per stripe: 4 GiB holds 211 million, RS(32+32) of
/// 433 GB at 4 KiB units, 111 TB at 1 MiB (the default); `encode` makes no set with more
/// ([`max_stripes`]), so this never refuses a manifest peerpath wrote.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 30;
/// A manifest's text per checksum, at most: a line of the pretty-printed list.
const TEXT_PER_CHECKSUM: u64 = 20;
/// A manifest's text besides its checksums, at most, with room to spare: its fields, the
/// source's name (255 bytes, each up to 6 as JSON escapes it, and as a list of numbers) and each
/// of up to 255 shards' names and directories (4096 bytes, escaped: 24 KiB).
const NAMES_BYTES: u64 = 64 << 20;

/// The most stripes a set of `n` shards may have for its manifest to stay within
/// [`MAX_MANIFEST_BYTES`].
pub fn max_stripes(n: usize) -> u64 {
    (MAX_MANIFEST_BYTES - NAMES_BYTES) / (TEXT_PER_CHECKSUM * n.max(1) as u64)
}

/// Shard `i`'s file name in the set's directory: `shard-NNN`.
pub fn shard_name(i: usize) -> String {
    format!("shard-{i:03}")
}

/// Shard `i`'s file name in a directory of its own: `SET.shard-NNN`.
pub fn placed_name(set: &str, i: usize) -> String {
    format!("{set}.{}", shard_name(i))
}

/// The name of the manifest's copy kept beside each placed shard.
pub fn copy_name(set: &str) -> String {
    format!("{set}.{MANIFEST}")
}

/// Whether `set` may name a placed set's files (`SET.shard-NNN`, `SET.manifest.json`): not
/// empty, not hidden.
pub fn set_name_ok(set: &str) -> bool {
    !set.is_empty() && !set.starts_with('.')
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
pub struct Manifest {
    pub schema: String,
    pub code: String,
    /// The source's (or the chain's stream's) file name as text: U+FFFD in place of bytes that
    /// are not UTF-8 ([`Manifest::source_name`] gives them back).
    pub source: String,
    /// The name's exact bytes, where it is not UTF-8 (as the reports' `*_bytes` fields): two
    /// names that differ only there read the same in `source`. Absent otherwise, and from
    /// manifests made before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_name_bytes: Option<Vec<u8>>,
    pub source_bytes: u64,
    /// The CRC-32 (zlib's) of the source's bytes. It follows from the data units' CRC-32s and
    /// `source_bytes` ([`Manifest::source_crc`]), so a manifest whose length or checksums were
    /// changed is found damaged when it is read, on every path (a length grown into the last
    /// stripe's padding decoded zeros with no word). Absent from manifests made before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_crc32: Option<u32>,
    pub data_shards: usize,
    pub parity_shards: usize,
    pub unit_bytes: usize,
    pub stripes: u64,
    /// Per shard: its file (in the directory) and the CRC-32 of each of its units.
    pub shards: Vec<ShardEntry>,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
pub struct ShardEntry {
    pub file: String,
    /// The directory holding the shard where it is not the set's own
    /// (`ec encode --shard-dir`, one per drive): an absolute path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    pub crc32: Vec<u32>,
}

impl Manifest {
    pub fn new(source: String, source_bytes: u64, (k, m, unit): (usize, usize, usize), stripes: u64, crcs: Vec<Vec<u32>>) -> Manifest {
        let mut manifest = Manifest {
            schema: SCHEMA.into(),
            code: "Reed-Solomon over GF(2^8), ISA-L's Cauchy matrix".into(),
            source,
            source_name_bytes: None,
            source_bytes,
            source_crc32: None,
            data_shards: k,
            parity_shards: m,
            unit_bytes: unit,
            stripes,
            shards: crcs.into_iter().enumerate().map(|(i, crc32)| ShardEntry { file: shard_name(i), dir: None, crc32 }).collect(),
        };
        manifest.source_crc32 = Some(manifest.source_crc());
        manifest
    }

    /// Names the source by its file name's exact bytes: `source`, and `source_name_bytes` where
    /// they are not UTF-8.
    pub fn name_source(&mut self, name: &[u8]) {
        self.source = String::from_utf8_lossy(name).into_owned();
        self.source_name_bytes = std::str::from_utf8(name).is_err().then(|| name.to_vec());
    }

    /// The source's file name, exactly: `source_name_bytes` where the manifest has them.
    pub fn source_name(&self) -> &[u8] {
        self.source_name_bytes.as_deref().unwrap_or(self.source.as_bytes())
    }

    /// Data shards, parity shards, unit bytes, stripes, and the stream's length.
    pub fn shape(&self) -> (usize, usize, usize, u64, u64) {
        (self.data_shards, self.parity_shards, self.unit_bytes, self.stripes, self.source_bytes)
    }

    /// The CRC-32 of shard `i`'s unit in stripe `s`.
    pub fn crc(&self, i: usize, s: u64) -> u32 {
        self.shards[i].crc32[s as usize]
    }

    /// The manifest's text, as written.
    pub fn text(&self) -> String {
        serde_json::to_string_pretty(self).expect("manifest serialises")
    }

    /// Names each shard `SET.shard-NNN` in `dirs[i]` (absolute, UTF-8), as a set placed in
    /// directories of its own.
    pub fn place_shards(&mut self, set: &str, dirs: &[&str]) {
        self.schema = PLACED_SCHEMA.into();
        for (i, (entry, d)) in self.shards.iter_mut().zip(dirs).enumerate() {
            entry.file = placed_name(set, i);
            entry.dir = Some(d.to_string());
        }
    }

    /// Where shard `i` lies when the set's directory is `set_dir`: there, or in the directory
    /// the manifest names for it (checked when it was parsed).
    pub fn shard_path_in(&self, set_dir: &Path, i: usize) -> PathBuf {
        self.shards[i].dir.as_ref().map_or(set_dir, Path::new).join(&self.shards[i].file)
    }

    /// Shard `i` in messages: its file name, or its whole path where it lies outside the set's directory.
    pub fn shard_label(&self, i: usize) -> String {
        match &self.shards[i].dir {
            Some(d) => Path::new(d).join(&self.shards[i].file).display().to_string(),
            None => self.shards[i].file.clone(),
        }
    }

    /// Whether the shards lie in directories of their own (`--shard-dir`).
    pub fn placed(&self) -> bool {
        self.shards.iter().any(|s| s.dir.is_some())
    }

    /// A placed set's copies of its manifest: `SET.manifest.json` beside each shard.
    pub fn copies(&self) -> Vec<PathBuf> {
        let Some(set) = self.shards.first().and_then(|s| s.file.strip_suffix(&format!(".{}", shard_name(0)))) else { return Vec::new() };
        let mut dirs: Vec<&str> = self.shards.iter().filter_map(|s| s.dir.as_deref()).collect();
        dirs.sort_unstable();
        dirs.dedup();
        dirs.into_iter().map(|d| Path::new(d).join(copy_name(set))).collect()
    }

    /// The source's CRC-32, from the data units' CRC-32s: in stripe order they are the CRC-32
    /// of the source followed by the last stripe's zero padding, whose length the manifest
    /// gives. Shapes as [`parse`] checks them (a CRC-32 per stripe per shard).
    pub fn source_crc(&self) -> u32 {
        let (k, unit) = (self.data_shards, self.unit_bytes as u64);
        let after_unit = crc32_shift::after_zeros(unit);
        let mut padded = 0u32;
        for s in 0..self.stripes as usize {
            for shard in &self.shards[..k] {
                padded = crc32_shift::mul(after_unit, padded) ^ shard.crc32[s];
            }
        }
        let padding = (u128::from(self.stripes) * u128::from(k as u64 * unit)).saturating_sub(u128::from(self.source_bytes));
        crc32_shift::without_zeros(padded, u64::try_from(padding).unwrap_or(u64::MAX))
    }

    /// Where stripe `s` (its k data units, `stripe`) is the last and holds data past the
    /// source's end (its padding is the encoder's zeros), the first such byte's offset in the
    /// stream: a manifest whose `source_bytes` was made smaller (the CRC-32s are of the units,
    /// not of it) would otherwise decode a file cut short, with no word.
    pub fn data_in_padding_at(&self, s: u64, stripe: &[u8]) -> Option<u64> {
        let start = s * stripe.len() as u64;
        if s + 1 != self.stripes || self.source_bytes < start {
            return None;
        }
        let end = (self.source_bytes - start) as usize;
        stripe.get(end..).and_then(|pad| pad.iter().position(|&b| b != 0)).map(|at| start + (end + at) as u64)
    }

    /// A manifest whose length ends before data the last stripe holds at byte `at` of the stream.
    pub fn data_in_padding(&self, at: u64) -> String {
        format!("the manifest says the source is {} bytes, but the last stripe holds data at byte {at} (not the encoder's zero padding): the manifest is damaged", self.source_bytes)
    }
}

/// A manifest file's bytes: text that [`parse`] accepts. Bytes that are not text are a damaged
/// manifest, not an unreadable one.
pub fn parse_bytes(bytes: &[u8]) -> Result<(Manifest, RsCode), String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not an ec manifest: not UTF-8 text (byte {})", e.valid_up_to()))?;
    parse(text)
}

/// A manifest's text, checked for everything the commands rely on: the
/// code, sizes within what `encode` makes (so no buffer is sized by an
/// absurd field), one checksum per stripe, and shard names that stay in
/// the directory.
pub fn parse(text: &str) -> Result<(Manifest, RsCode), String> {
    let m: Manifest = serde_json::from_str(text).map_err(|e| format!("not an ec manifest: {e}"))?;
    // Shard counts whose sum is past usize (RsCode::new adds them: it overflowed) are no code:
    // refused below, as no list of shard entries is that long.
    let n = m.data_shards.checked_add(m.parity_shards);
    let code = n.map(|_| RsCode::new(m.data_shards, m.parity_shards)).transpose()?;
    let stripe_bytes = (m.data_shards as u64).checked_mul(m.unit_bytes as u64).filter(|_| (1..=MAX_UNIT_BYTES).contains(&m.unit_bytes));
    let stripes_ok = stripe_bytes.is_some_and(|b| m.stripes == m.source_bytes.div_ceil(b).max(1));
    let name_ok = |f: &str| !f.is_empty() && f != "." && f != ".." && !f.contains(['/', '\0']);
    // A repair writes the shards' files: one in the set's directory must be
    // shard-NNN, one in a directory of its own SET.shard-NNN, with its own
    // index, in an absolute directory without `..`: a manifest cannot make
    // a repair write any other file.
    let placed_ok = |i: usize, s: &ShardEntry| match &s.dir {
        // In the set's own directory a shard is shard-NNN (not, say, manifest.json).
        None => m.schema != PLACED_SCHEMA && s.file == shard_name(i),
        Some(d) => {
            let p = Path::new(d);
            let set = s.file.strip_suffix(&format!(".{}", shard_name(i)));
            m.schema == PLACED_SCHEMA && p.is_absolute() && !d.contains('\0') && p.components().all(|c| c != Component::ParentDir) && set.is_some_and(set_name_ok)
        }
    };
    // Each check says what failed: the damage is found by its name.
    let fault = if m.schema != SCHEMA && m.schema != PLACED_SCHEMA {
        Some(format!("schema {:?} is neither {SCHEMA} nor {PLACED_SCHEMA}", m.schema))
    } else if n != Some(m.shards.len()) {
        Some(format!("{} shard entries for {} data + {} parity shards", m.shards.len(), m.data_shards, m.parity_shards))
    } else if !(1..=MAX_UNIT_BYTES).contains(&m.unit_bytes) {
        Some(format!("unit_bytes {} is not 1 byte to 256 MiB", m.unit_bytes))
    } else if !stripes_ok {
        Some(format!("stripes {} is not what {} source bytes in stripes of {} x {} bytes make", m.stripes, m.source_bytes, m.data_shards, m.unit_bytes))
    } else if let Some((i, s)) = m.shards.iter().enumerate().find(|(_, s)| s.crc32.len() as u64 != m.stripes) {
        Some(format!("shard {i} ({}) has {} checksums for {} stripes", s.file, s.crc32.len(), m.stripes))
    } else if let Some((i, s)) = m.shards.iter().enumerate().find(|&(i, s)| !name_ok(&s.file) || !placed_ok(i, s)) {
        let placed = if m.schema == PLACED_SCHEMA { format!("SET.{} in an absolute directory without '..'", shard_name(i)) } else { format!("{} in the set's directory, without a \"dir\" ({PLACED_SCHEMA} places shards)", shard_name(i)) };
        Some(format!("shard {i} is named {:?}{}, not {placed}", s.file, s.dir.as_ref().map(|d| format!(" in {d:?}")).unwrap_or_default()))
    } else if let Some(c) = m.source_crc32.filter(|&c| c != m.source_crc()) {
        Some(format!("source_crc32 {c} is not the CRC-32 that the data units' checksums make of {} source bytes (source_bytes, a data unit's checksum or source_crc32 itself was changed)", m.source_bytes))
    } else {
        None
    };
    match fault {
        Some(f) => Err(format!("inconsistent manifest: {f}")),
        // (Shard counts past usize have failed the shard entries' check.)
        None => Ok((m, code.expect("a code for shard counts as many as the shard entries"))),
    }
}

/// CRC-32 arithmetic crc32fast does not offer (its `combine` appends; nothing removes): a CRC-32
/// register is a polynomial over GF(2) modulo the CRC's; n zero bytes appended multiply it by
/// x^(8n), so they are removed by multiplying by x^(-8n). `mul` is zlib's `multmodp` (crc32.c),
/// over the reflected polynomial, in which x^i is bit 31 - i.
mod crc32_shift {
    const POLY: u32 = 0xedb8_8320;
    /// x^0.
    const ONE: u32 = 1 << 31;
    /// x^8: one byte.
    const X8: u32 = 1 << 23;
    /// x^-1 = (p(x) - 1) / x (p's constant term is 1): p without x^0, one degree down, plus x^31.
    const X_INVERSE: u32 = ((POLY & !ONE) << 1) | 1;

    /// a x b modulo the CRC-32 polynomial.
    pub(super) fn mul(a: u32, mut b: u32) -> u32 {
        let mut m = ONE;
        let mut p = 0;
        while m != 0 {
            if a & m != 0 {
                p ^= b;
            }
            m >>= 1;
            b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        }
        p
    }

    fn pow(mut base: u32, mut e: u64) -> u32 {
        let mut p = ONE;
        while e > 0 {
            if e & 1 != 0 {
                p = mul(p, base);
            }
            base = mul(base, base);
            e >>= 1;
        }
        p
    }

    /// What a CRC-32 register is multiplied by when n zero bytes follow: x^(8n).
    pub(super) fn after_zeros(n: u64) -> u32 {
        pow(X8, n)
    }

    /// The CRC-32 of n zero bytes: the register starts as all ones and ends inverted.
    fn of_zeros(n: u64) -> u32 {
        mul(after_zeros(n), !0) ^ !0
    }

    /// The CRC-32 of a message, given the CRC-32 of it followed by n zero bytes
    /// (crc(a ++ b) = crc(a) x^(8 len(b)) + crc(b), as zlib's `crc32_combine`).
    pub(super) fn without_zeros(crc: u32, n: u64) -> u32 {
        mul(pow(pow(X_INVERSE, 8), n), crc ^ of_zeros(n))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::crc32;
        use proptest::prelude::*;

        #[test]
        fn x_inverse_is_the_inverse_of_x() {
            assert_eq!(mul(X_INVERSE, 1 << 30), ONE);
        }

        proptest! {
            #[test]
            fn zeros_appended_are_removed_and_combine_as_zlib_s(data in proptest::collection::vec(any::<u8>(), 0..300), zeros in 0usize..5000, split in 0usize..300) {
                let mut padded = data.clone();
                padded.resize(data.len() + zeros, 0);
                prop_assert_eq!(of_zeros(zeros as u64), crc32(&vec![0; zeros]));
                prop_assert_eq!(without_zeros(crc32(&padded), zeros as u64), crc32(&data));
                let (a, b) = data.split_at(split.min(data.len()));
                prop_assert_eq!(mul(after_zeros(b.len() as u64), crc32(a)) ^ crc32(b), crc32(&data));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn valid() -> String {
        Manifest::new("s".into(), 10_000, (3, 2, 4096), 1, (0..5).map(|i| vec![i]).collect()).text()
    }

    /// The same set with its shards in directories of their own.
    fn placed() -> String {
        let (mut m, _) = parse(&valid()).unwrap();
        let dirs: Vec<String> = (0..5).map(|i| format!("/mnt/ssd{i}/sets")).collect();
        m.place_shards("photos", &dirs.iter().map(String::as_str).collect::<Vec<_>>());
        m.text()
    }

    /// A manifest decides which files a repair writes: only SET.shard-NNN
    /// (its own index) in an absolute directory without `..`.
    #[test]
    fn a_placed_manifest_names_only_its_own_shard_files_in_absolute_directories() {
        let (m, _) = parse(&placed()).unwrap();
        assert_eq!(m.shard_path_in(Path::new("/elsewhere"), 3), Path::new("/mnt/ssd3/sets/photos.shard-003"));
        assert_eq!(m.shard_label(0), "/mnt/ssd0/sets/photos.shard-000");
        for (from, to) in [
            ("/mnt/ssd1/sets", "mnt/ssd1/sets"),
            ("/mnt/ssd1/sets", "/mnt/ssd1/../../etc"),
            ("photos.shard-001", "passwd"),
            ("photos.shard-001", "photos.shard-002"),
            ("photos.shard-001", ".shard-001"),
            ("photos.shard-001", ".x.shard-001"),
            ("photos.shard-001", "a/b.shard-001"),
            ("peerpath/ec-manifest/2", "peerpath/ec-manifest/1"),
        ] {
            assert!(parse(&placed().replacen(from, to, 1)).is_err(), "{from} -> {to}");
        }
        // Schema 2 without directories, or a directory in schema 1: refused.
        assert!(parse(&valid().replace(SCHEMA, PLACED_SCHEMA)).is_err());
        assert!(parse(&valid().replacen("\"crc32\"", "\"dir\": \"/x\", \"crc32\"", 1)).is_err());
    }

    /// A name that is not UTF-8 keeps its bytes (its text alone read the same for `a\xffb` and
    /// `a\xfeb`); a UTF-8 one, and a manifest made before the field, have the text only.
    #[test]
    fn a_source_name_that_is_not_utf8_keeps_its_bytes() {
        let mut texts = Vec::new();
        for name in [b"a\xffb".as_slice(), b"a\xfeb", "a\u{fffd}b".as_bytes()] {
            let (mut m, _) = parse(&valid()).unwrap();
            m.name_source(name);
            let (back, _) = parse(&m.text()).unwrap();
            assert_eq!(back.source_name(), name);
            assert_eq!(back.source, "a\u{fffd}b");
            texts.push(m.text());
        }
        assert!(texts[0] != texts[1] && texts[1] != texts[2], "three names, three manifests");
        assert!(texts[0].contains("\"source_name_bytes\"") && !texts[2].contains("source_name_bytes"), "{}", texts[2]);
        let (old, _) = parse(&valid()).unwrap();
        assert_eq!((old.source_name(), old.source_name_bytes.as_deref()), (b"s".as_slice(), None));
    }

    /// A manifest's text is at most 20 bytes a checksum besides names of at most `NAMES_BYTES`,
    /// worst cases throughout (255 shards, every checksum 10 digits, names of escaped bytes at
    /// their longest): what `max_stripes` lets `encode` make, the readers take.
    #[test]
    fn a_manifest_s_text_stays_within_what_max_stripes_allows() {
        let (k, m, unit) = (254, 1, 1);
        let text = |stripes: u64| {
            let mut man = Manifest::new(String::new(), stripes * k as u64, (k, m, unit), stripes, vec![vec![u32::MAX; stripes as usize]; k + m]);
            man.name_source(&[0xff; 255]);
            let dirs: Vec<String> = (0..k + m).map(|i| format!("/{}{i}", "\u{1}".repeat(4080))).collect();
            man.place_shards(&"\u{1}".repeat(245), &dirs.iter().map(String::as_str).collect::<Vec<_>>());
            man.text().len() as u64
        };
        // Stripes of as many digits: only the checksums differ.
        let (one, more) = (text(100), text(140));
        assert!(one <= NAMES_BYTES, "{one} bytes besides the checksums");
        assert!(more - one <= TEXT_PER_CHECKSUM * (k + m) as u64 * 40, "{} bytes for {} checksums", more - one, (k + m) * 40);
        assert!(max_stripes(k + m) * (k + m) as u64 * TEXT_PER_CHECKSUM + NAMES_BYTES <= MAX_MANIFEST_BYTES);
    }

    /// Shard counts whose sum is past usize: refused (RsCode::new's sum overflowed: a panic
    /// in a debug build, a capacity overflow in a release one; `ec verify` exited 101).
    #[test]
    fn shard_counts_past_any_sum_are_refused() {
        for (k, m) in [(u64::MAX, 1), (u64::MAX, u64::MAX), (1 << 63, 1 << 63)] {
            let text = valid().replace("\"data_shards\": 3", &format!("\"data_shards\": {k}")).replace("\"parity_shards\": 2", &format!("\"parity_shards\": {m}"));
            let e = parse(&text).err().unwrap_or_else(|| panic!("{k} + {m} parsed"));
            assert!(e.contains(&format!("5 shard entries for {k} data + {m} parity shards")), "{e}");
        }
    }

    #[test]
    fn a_valid_manifest_parses_and_lying_fields_do_not() {
        assert!(parse(&valid()).is_ok());
        for (from, to) in [("\"unit_bytes\": 4096", "\"unit_bytes\": 1099511627776"), ("\"stripes\": 1", "\"stripes\": 2"), ("shard-001", "../x"), ("shard-001", "manifest.json"), ("shard-001", "shard-002"), ("\"data_shards\": 3", "\"data_shards\": 300")] {
            assert!(parse(&valid().replace(from, to)).is_err(), "{to}");
        }
        // The length, a data unit's checksum and the source's CRC-32 answer for each other
        // (a parity unit's checksum is no part of the source's).
        for (from, to) in [("\"source_bytes\": 10000", "\"source_bytes\": 10001"), ("\"source_bytes\": 10000", "\"source_bytes\": 9999"), ("[\n        1\n      ]", "[\n        7\n      ]")] {
            let text = valid().replace(from, to);
            assert_ne!(text, valid(), "{from}");
            let e = parse(&text).unwrap_err();
            assert!(e.contains("source_crc32") && e.contains("is not the CRC-32"), "{e}");
        }
        let text = valid().replace("[\n        4\n      ]", "[\n        7\n      ]");
        assert!(text != valid() && parse(&text).is_ok());
        // A manifest made before the field: still read.
        let old = valid().lines().filter(|l| !l.contains("source_crc32")).collect::<Vec<_>>().join("\n");
        assert!(parse(&old).is_ok_and(|(m, _)| m.source_crc32.is_none()), "{old}");
    }

    proptest! {
        /// Fuzzing: any text, and any byte of a valid manifest changed,
        /// gives a manifest or an error, never a panic; what parses has
        /// units the commands can allocate.
        #[test]
        fn manifests_never_panic(text in "\\PC{0,400}", at in 0usize..2000, byte in any::<u8>()) {
            let _ = parse(&text);
            for base in [valid(), placed()] {
                let mut v = base.into_bytes();
                let i = at % v.len();
                v[i] = byte;
                if let Ok((m, _)) = parse_bytes(&v) {
                    prop_assert!(m.unit_bytes <= MAX_UNIT_BYTES && m.shards.len() == m.data_shards + m.parity_shards);
                    // Whatever a manifest says, a shard's path is its own file name in a directory without `..`.
                    for i in 0..m.shards.len() {
                        let p = m.shard_path_in(Path::new("/set"), i);
                        prop_assert!(p.is_absolute() && p.components().all(|c| c != Component::ParentDir), "{}", p.display());
                        prop_assert!(p.file_name().unwrap().to_string_lossy().ends_with(&shard_name(i)), "{}", p.display());
                    }
                }
            }
        }
    }
}
