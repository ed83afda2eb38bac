//! How reports name files and formats: a name that is not UTF-8 keeps its exact bytes in JSON
//! (`source_bytes`, `target_bytes`), a name with a control character stays on its report line
//! (shell-quoted, as GNU `ls` quotes it), and `decompress` names the format its input is in
//! (BGZF, peerpath's 'PP' members, plain gzip).

mod common;

use common::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The text report's lines of `kind` (`file`, `FAILED`, ...): what follows the label.
fn lines<'a>(report: &'a str, kind: &str) -> Vec<&'a str> {
    report.lines().filter_map(|l| l.trim_start().strip_prefix(kind)).map(str::trim_start).collect()
}

/// What a shell makes of `quoted` (bash reads `$'...'`), where bash is installed.
fn as_a_shell_reads(quoted: &str) -> Option<Vec<u8>> {
    let bash = tool("bash")?;
    Some(sys(&bash, &[OsStr::new("-c"), OsStr::new(&format!("printf %s {quoted}"))], None))
}

/// JSON's byte list of a name, as `source_bytes` holds it.
fn byte_list(name: &[u8]) -> serde_json::Value {
    name.iter().map(|&b| serde_json::Value::from(b)).collect()
}

#[test]
fn json_keeps_the_exact_bytes_of_a_name_that_is_not_utf8() {
    let dir = scratch();
    let d = dir.path();
    // Two names that differ only in a byte that is not UTF-8: their strings read the same.
    let (ff, fe, good) = (OsStr::from_bytes(b"a\xffb"), OsStr::from_bytes(b"a\xfeb"), OsStr::new("good.fa"));
    for n in [ff, fe, good] {
        std::fs::write(d.join(n), &sample()[..100_000]).unwrap();
    }
    let v = run(pp([OsStr::new("compress"), ff, fe, good, OsStr::new("--json")]).current_dir(d)).ok().json();
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 3, "{v}");
    for (f, name) in files.iter().zip([b"a\xffb".as_slice(), b"a\xfeb"]) {
        assert_eq!(f["source"], "a\u{fffd}b", "the string as before: {f}");
        assert_eq!(f["source_bytes"], byte_list(name), "{f}");
        assert_eq!(f["target_bytes"], byte_list(&[name, b".gz"].concat()), "{f}");
    }
    assert!(files[2].get("source_bytes").is_none() && files[2].get("target_bytes").is_none(), "a UTF-8 name has its string only: {}", files[2]);
    // verify: a bad file's name in `failed`, a good one's in `files`.
    std::fs::write(d.join(OsStr::from_bytes(b"cut\xff.gz")), &std::fs::read(d.join(OsStr::from_bytes(b"a\xffb.gz"))).unwrap()[..100]).unwrap();
    let o = run(pp([OsStr::new("verify"), OsStr::from_bytes(b"cut\xff.gz"), OsStr::from_bytes(b"a\xffb.gz"), OsStr::new("--json")]).current_dir(d));
    assert_eq!(o.code(), Some(7), "{}", o.describe());
    let v = o.json();
    assert_eq!(v["failed"][0]["source_bytes"], byte_list(b"cut\xff.gz"), "{v}");
    assert_eq!(v["files"][0]["source_bytes"], byte_list(b"a\xffb.gz"), "{v}");
    // The text report prints them exactly too, as `ls` quotes them.
    let o = run(pp([OsStr::new("decompress"), OsStr::from_bytes(b"a\xffb.gz"), OsStr::new("-o"), OsStr::from_bytes(b"out\xff")]).current_dir(d)).ok();
    let text = o.stdout_str();
    assert_eq!(lines(&text, "file"), [r"'a'$'\377''b.gz' -> 'out'$'\377'"], "{text}");
    if let Some(read) = as_a_shell_reads(r"'a'$'\377''b.gz'") {
        assert_eq!(read, b"a\xffb.gz", "a shell reads the quoted name back as the name");
    }
    assert_file_eq(&d.join(OsStr::from_bytes(b"out\xff")), &sample()[..100_000], "the file the report names");
}

#[test]
fn a_control_character_in_a_name_is_quoted_and_the_report_keeps_one_line_per_file() {
    let dir = scratch();
    let d = dir.path();
    let odd = "x\ny\t'z.fa";
    std::fs::write(d.join(odd), &sample()[..200_000]).unwrap();
    std::fs::write(d.join("plain name.fa"), &sample()[..100_000]).unwrap();
    let o = run(pp(["compress", odd, "plain name.fa", "-T", "2"]).current_dir(d)).ok();
    let report = o.stdout_str();
    // Every line is the report's own: a label after two spaces (the first line aside), none a piece of a name.
    assert!(report.lines().skip(1).all(|l| l.is_empty() || l.starts_with("  ")), "a line was split:\n{report}");
    let quoted = r"'x'$'\n''y'$'\t'\''z.fa'";
    assert_eq!(lines(&report, "file"), [format!("{quoted} -> 'x'$'\\n''y'$'\\t'\\''z.fa.gz'"), "plain name.fa -> plain name.fa.gz".into()], "{report}");
    assert!(report.contains(&format!("storage {quoted} -> ")), "the ledger quotes it too:\n{report}");
    if let Some(read) = as_a_shell_reads(quoted) {
        assert_eq!(read, odd.as_bytes(), "a shell reads the quoted name back as the name");
    }
    // verify: a bad file's FAILED line names it quoted, on one line.
    let bad = "bad\none.gz";
    std::fs::write(d.join(bad), &std::fs::read(d.join(format!("{odd}.gz"))).unwrap()[..100]).unwrap();
    let v = run(pp(["verify", bad, "plain name.fa.gz"]).current_dir(d));
    assert_eq!(v.code(), Some(7), "{}", v.describe());
    let report = v.stdout_str();
    let failed = lines(&report, "FAILED");
    assert!(failed.len() == 1 && failed[0].starts_with(r"'bad'$'\n''one.gz'"), "{report}");
    assert!(report.lines().skip(1).all(|l| l.is_empty() || l.starts_with("  ")), "a line was split:\n{report}");
}

/// One member holding `data` (at most 64 KiB less one) in a stored deflate block: BGZF's, with the 'BC' subfield (the
/// member's size less one), or a plain gzip member, without an extra field.
fn member(data: &[u8], bgzf: bool) -> Vec<u8> {
    let len = u16::try_from(data.len()).expect("a stored block holds under 64 KiB");
    let mut m = vec![0x1f, 0x8b, 8, if bgzf { 4 } else { 0 }, 0, 0, 0, 0, 0, 0xff];
    if bgzf {
        let bsize = (18 + 5 + data.len() + 8 - 1) as u16;
        m.extend_from_slice(&[6, 0, b'B', b'C', 2, 0]);
        m.extend_from_slice(&bsize.to_le_bytes());
    }
    m.push(1); // a final stored block
    m.extend_from_slice(&len.to_le_bytes());
    m.extend_from_slice(&(!len).to_le_bytes());
    m.extend_from_slice(data);
    m.extend_from_slice(&crc32(data).to_le_bytes());
    m.extend_from_slice(&(data.len() as u32).to_le_bytes());
    m
}

/// BGZF as htslib writes it, made here by hand: members with the 'BC' subfield, then its
/// end-of-file block (an empty member with 'BC').
fn bgzf(data: &[u8]) -> Vec<u8> {
    let mut f: Vec<u8> = data.chunks(40_000).flat_map(|c| member(c, true)).collect();
    f.extend(member(&[], true));
    assert_eq!(members(&f).len(), data.len().div_ceil(40_000) + 1, "a BGZF file, as the members walk reads one");
    f
}

fn format_said(d: &Path, args: &[&OsStr], stdin: Option<Vec<u8>>) -> (String, String) {
    let text = run_full(pp(args).current_dir(d), stdin.clone(), DEADLINE).ok().stdout_str();
    let mut json_args = args.to_vec();
    json_args.push(OsStr::new("--json"));
    let json = run_full(pp(json_args).current_dir(d), stdin, DEADLINE).ok().json();
    let said = lines(&text, "format");
    assert_eq!(said.len(), 1, "{text}");
    let format = json["format"].as_str().unwrap().to_string();
    assert_eq!(said[0], format, "the text and JSON name the same format");
    (format, text)
}

#[test]
fn decompress_and_verify_name_the_format_of_their_input() {
    let dir = scratch();
    let d = dir.path();
    let data = &sample()[..150_000];
    std::fs::write(d.join("b.bgz"), bgzf(data)).unwrap();
    std::fs::write(d.join("plain.gz"), data.chunks(60_000).flat_map(|c| member(c, false)).collect::<Vec<u8>>()).unwrap();
    compress_bytes(d, "p", data, &[]);
    const BGZF: &str = "BGZF (htslib)";
    const PEERPATH: &str = "gzip (multi-member, 'PP' size subfield)";
    let os = |s: &'static str| OsStr::new(s);
    for (args, stdin, want) in [
        (vec![os("decompress"), os("b.bgz"), os("-o"), os("b.out"), os("--force")], None, BGZF),
        (vec![os("verify"), os("b.bgz")], None, BGZF),
        // From a pipe: decoded streaming, the format read from what the decoder read.
        (vec![os("decompress"), os("-"), os("-o"), os("pipe.out"), os("--force")], Some(bgzf(data)), BGZF),
        (vec![os("verify"), os("p.gz")], None, PEERPATH),
        (vec![os("verify"), os("plain.gz")], None, "gzip"),
        (vec![os("verify"), os("b.bgz"), os("p.gz"), os("b.bgz")], None, "BGZF (htslib) + gzip (multi-member, 'PP' size subfield)"),
    ] {
        let (said, text) = format_said(d, &args, stdin);
        assert_eq!(said, want, "{args:?}:\n{text}");
    }
    assert_file_eq(&d.join("b.out"), data, "the hand-made BGZF decodes");
    assert_file_eq(&d.join("pipe.out"), data, "the hand-made BGZF decodes from a pipe");
    // And bgzip's own, where htslib's tools are installed.
    if let Some(t) = tools_or_skip("decompress_and_verify_name_the_format_of_their_input (bgzip's file)", &["bgzip"]) {
        std::fs::write(d.join("h"), data).unwrap();
        sys(&t[0], &[OsStr::new("-f"), d.join("h").as_os_str()], None);
        assert_eq!(format_said(d, &[os("verify"), os("h.gz")], None).0, BGZF);
    }
}
