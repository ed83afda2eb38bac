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

/// Names for the tests below: one with a newline (its quoted form), one that is not UTF-8.
const NL: &str = "s\nrc";
const NL_QUOTED: &str = r"'s'$'\n''rc'";
const FF: &[u8] = b"u\xff";
const FF_QUOTED: &str = r"'u'$'\377'";

fn ff() -> &'static OsStr {
    OsStr::from_bytes(FF)
}

/// `OsStr::from_bytes` of `name` and `suffix` joined.
fn with_suffix(name: &[u8], suffix: &str) -> std::ffi::OsString {
    OsStr::from_bytes(&[name, suffix.as_bytes()].concat()).to_owned()
}

/// Asserts `text` is `n` lines, each beginning with `each` or one of `or` (no name's newline split
/// one), and that it names `quoted` (a name as [`NL_QUOTED`] quotes it), which a shell reads back
/// as `name`.
#[track_caller]
fn said_on_its_lines(text: &str, n: usize, (each, or): (&str, &[&str]), quoted: &str, name: &[u8]) {
    assert_eq!(text.lines().count(), n, "a line was split:\n{text}");
    assert!(text.lines().all(|l| l.starts_with(each) || or.iter().any(|p| l.starts_with(p))), "a line was split:\n{text}");
    assert!(text.contains(quoted), "{quoted} is not named:\n{text}");
    if let Some(read) = as_a_shell_reads(quoted) {
        assert_eq!(read, name, "a shell reads {quoted} back as the name");
    }
}

/// A job's errors (`JobError`) and the commands' own: a name with a newline or that is not UTF-8
/// is quoted, so the error stays one line and names the file exactly (it split the line, and
/// printed U+FFFD). `--verbose`'s "read via" lines too.
#[test]
fn errors_name_a_file_quoted_on_one_line() {
    let dir = scratch();
    let d = dir.path();
    // A source that is not there (exit 3), and one that is not gzip (exit 8).
    let o = run(pp(["compress", NL]).current_dir(d)).fails(3, &["cannot read source"]);
    said_on_its_lines(&o.stderr, 1, ("peerpath: error: ", &[]), NL_QUOTED, NL.as_bytes());
    std::fs::write(d.join(NL), b"plain text\n").unwrap();
    std::fs::write(d.join(ff()), b"plain text\n").unwrap();
    let o = run(pp([OsStr::new("decompress"), ff(), OsStr::new("-o"), OsStr::new("out")]).current_dir(d)).fails(8, &["not a gzip file"]);
    said_on_its_lines(&o.stderr, 1, ("peerpath: error: ", &[]), FF_QUOTED, FF);
    // No -o, and no suffix to take off (main's own message).
    let o = run(pp(["decompress", NL]).current_dir(d)).fails(2, &["unknown suffix"]);
    said_on_its_lines(&o.stderr, 1, ("peerpath: error: ", &[]), NL_QUOTED, NL.as_bytes());
    // verify's FAILED line and its error.
    let o = run(pp([OsStr::new("verify"), OsStr::new(NL), ff()]).current_dir(d));
    assert_eq!(o.code(), Some(8), "{}", o.describe());
    let report = o.stdout_str();
    let failed = lines(&report, "FAILED");
    assert!(failed.len() == 2 && failed[0].starts_with(&format!("{NL_QUOTED}: not a gzip file")) && failed[1].starts_with(&format!("{FF_QUOTED}: not a gzip file")), "{}", o.describe());
    said_on_its_lines(&o.stderr, 2, ("peerpath: error: ", &[]), NL_QUOTED, NL.as_bytes());
    assert!(o.stderr.contains(&format!("{FF_QUOTED}: not a gzip file")), "{}", o.describe());
    // A name that begins with a quote: quoted once, in the error and in its FAILED line.
    std::fs::write(d.join("'q.gz"), b"plain text\n").unwrap();
    let o = run(pp(["verify", "'q.gz"]).current_dir(d));
    assert_eq!(lines(&o.stdout_str(), "FAILED"), [r"\''q.gz': not a gzip file: starts with bytes 70 6c, not 1f 8b (exit 8)"], "{}", o.describe());
    // --verbose: how each file was read, a line each.
    compress_bytes(d, "plain", &sample()[..100_000], &[]);
    std::fs::rename(d.join("plain.gz"), d.join(with_suffix(FF, ".gz"))).unwrap();
    let o = run(pp([OsStr::new("decompress"), &with_suffix(FF, ".gz"), OsStr::new("-o"), OsStr::new("back"), OsStr::new("--verbose")]).current_dir(d)).ok();
    let said: Vec<&str> = o.stderr.lines().filter(|l| l.contains("read via")).collect();
    assert_eq!(said.len(), 1, "{}", o.describe());
    assert!(said[0].starts_with(r"peerpath: 'u'$'\377''.gz': read via "), "{}", o.describe());
    assert!(o.stderr.lines().all(|l| l.starts_with("peerpath: ")), "a line was split: {}", o.describe());
}

/// encrypt and decrypt: the report's line and the errors quote the names they give.
#[test]
fn encrypt_names_files_quoted() {
    let dir = scratch();
    let d = dir.path();
    run(pp(["keygen", "-o", "key"]).current_dir(d)).ok();
    for (name, quoted, target) in [(NL.as_bytes(), NL_QUOTED, r"'s'$'\n''rc.ppenc'"), (FF, FF_QUOTED, r"'u'$'\377''.ppenc'")] {
        std::fs::write(d.join(OsStr::from_bytes(name)), &sample()[..100_000]).unwrap();
        let o = run(pp([OsStr::new("encrypt"), OsStr::from_bytes(name), OsStr::new("--key-file"), OsStr::new("key")]).current_dir(d)).ok();
        said_on_its_lines(&o.stdout_str(), 1, (&format!("{quoted} -> {target}: encrypted "), &[]), quoted, name);
        // decrypt of a name without .ppenc: no output name to take.
        let o = run(pp([OsStr::new("decrypt"), OsStr::from_bytes(name), OsStr::new("--key-file"), OsStr::new("key")]).current_dir(d)).fails(2, &["is not NAME.ppenc"]);
        said_on_its_lines(&o.stderr, 1, ("peerpath: error: ", &[]), quoted, name);
    }
    let o = run(pp([OsStr::new("encrypt"), ff(), OsStr::new("-o"), OsStr::new("x"), OsStr::new("--key-file"), OsStr::new("k\ney")]).current_dir(d)).fails(2, &["cannot read key file"]);
    said_on_its_lines(&o.stderr, 1, ("peerpath: error: ", &[]), r"'k'$'\n''ey'", b"k\ney");
}

/// compress --ec and decompress --ec: their reports and errors quote the names they give.
#[test]
fn erasure_coded_sets_name_files_quoted() {
    let dir = scratch();
    let d = dir.path();
    let set = with_suffix(FF, "\nset");
    let set_quoted = r"'u'$'\377\n''set'";
    std::fs::write(d.join(NL), &sample()[..100_000]).unwrap();
    let o = run(pp([OsStr::new("compress"), OsStr::new("--ec"), OsStr::new("2+1"), OsStr::new(NL), OsStr::new("-o"), &set]).current_dir(d)).ok();
    let report = o.stdout_str();
    assert_eq!(report.lines().count(), 3, "a line was split:\n{report}");
    assert!(report.starts_with(&format!("{NL_QUOTED}: ")) && report.contains(&format!(" in {set_quoted}; ")), "{report}");
    let last = report.lines().last().unwrap();
    assert!(
        last.starts_with(&format!("{set_quoted}: `peerpath ec decode {set_quoted} -o FILE` gives back the ")) && last.contains(r"-byte 's'$'\n''rc.gz' it holds; ")
            && last.contains(&format!("`peerpath decompress --ec {set_quoted} -o FILE` the ")) && last.ends_with(r"-byte 's'$'\n''rc'"),
        "{report}"
    );
    if let Some(read) = as_a_shell_reads(set_quoted) {
        assert_eq!(read, set.as_bytes(), "a shell reads the quoted name back as the name");
    }
    let o = run(pp([OsStr::new("decompress"), OsStr::new("--ec"), &set, OsStr::new("-o"), OsStr::new("back\n")]).current_dir(d)).ok();
    let report = o.stdout_str();
    assert_eq!(report.lines().count(), 2, "a line was split:\n{report}");
    assert!(report.starts_with(&format!(r"{set_quoted} -> 'back'$'\n': ")), "{report}");
    assert_file_eq(&d.join("back\n"), &sample()[..100_000], "the set decodes");
    // A directory is not a file to code.
    std::fs::create_dir(d.join(ff())).unwrap();
    let o = run(pp([OsStr::new("compress"), OsStr::new("--ec"), OsStr::new("2+1"), ff(), OsStr::new("-o"), OsStr::new("set2")]).current_dir(d)).fails(2, &["--ec takes a regular file"]);
    said_on_its_lines(&o.stderr, 1, ("peerpath: error: ", &[]), FF_QUOTED, FF);
}

/// scan: `--count`'s name-and-count lines (one a file, as `grep -c`), its fallbacks and errors
/// quote the names they give.
#[test]
fn scan_names_files_quoted() {
    let dir = scratch();
    let d = dir.path();
    let records = b">r1\nACGT\n>r2\nTTTT\n";
    std::fs::write(d.join(NL), records).unwrap();
    std::fs::write(d.join(ff()), records).unwrap();
    let o = run(pp([OsStr::new("scan"), OsStr::new("--motif"), OsStr::new("ACG"), OsStr::new("--count"), OsStr::new(NL), ff()]).current_dir(d)).ok();
    assert_eq!(o.stdout_str(), format!("{NL_QUOTED}\t1\n{FF_QUOTED}\t1\n"), "{}", o.describe());
    // Another compressor's file: refused, named.
    std::fs::write(d.join(NL), b"\xfd7zXZ\0 not read").unwrap();
    let o = run(pp(["scan", "--motif", "A", NL]).current_dir(d)).fails(2, &["compressed with xz"]);
    said_on_its_lines(&o.stderr, 1, ("peerpath: error: ", &[]), NL_QUOTED, NL.as_bytes());
    // On an emulated device: gzip input goes to the host CPU, said naming the file (and refused with --no-fallback).
    compress_bytes(d, "r", records, &[]);
    std::fs::rename(d.join("r.gz"), d.join(ff())).unwrap();
    let o = run(pp([OsStr::new("scan"), OsStr::new("--motif"), OsStr::new("A"), OsStr::new("--count"), OsStr::new("--engine"), OsStr::new("emulated"), ff()]).current_dir(d)).ok();
    said_on_its_lines(&o.stderr, 3, ("peerpath: FALLBACK: ", &["scan: "]), FF_QUOTED, FF);
    assert!(o.stderr.starts_with(&format!("peerpath: FALLBACK: {FF_QUOTED}: gzip input")), "{}", o.describe());
    let o = run(pp([OsStr::new("scan"), OsStr::new("--motif"), OsStr::new("A"), OsStr::new("--count"), OsStr::new("--engine"), OsStr::new("emulated"), OsStr::new("--no-fallback"), ff()]).current_dir(d))
        .fails(15, &["(--no-fallback)"]);
    said_on_its_lines(&o.stderr, 1, ("peerpath: error: ", &[]), FF_QUOTED, FF);
}

/// `peerpath gzip`'s messages and listing quote names as peerpath's others do (GNU gzip 1.12 prints
/// them as they are, a newline splitting its line): a plain name is printed as gzip prints it.
#[test]
fn gzip_names_files_quoted() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join(NL), &sample()[..100_000]).unwrap();
    let target = r"'s'$'\n''rc.gz'";
    let o = run(pp(["gzip", "-v", NL]).current_dir(d)).ok();
    said_on_its_lines(&o.stderr, 1, (&format!("{NL_QUOTED}:\t"), &[]), NL_QUOTED, NL.as_bytes());
    assert!(o.stderr.trim_end().ends_with(&format!("% -- created {target}")), "{}", o.describe());
    let o = run(pp(["gzip", NL]).current_dir(d));
    assert_eq!(o.code(), Some(2), "{}", o.describe());
    said_on_its_lines(&o.stderr, 1, (&format!("peerpath gzip: {target} already exists; not overwritten"), &[]), target, b"s\nrc.gz");
    let o = run(pp(["gzip", "-l", &format!("{NL}.gz")]).current_dir(d)).ok();
    let listing = o.stdout_str();
    assert!(listing.lines().count() == 2 && listing.ends_with(&format!("% {NL_QUOTED}\n")), "{listing}");
    // A file that is not gzip: the error names it once, quoted.
    std::fs::write(d.join(ff()), b"plain").unwrap();
    let o = run(pp([OsStr::new("gzip"), OsStr::new("-t"), ff()]).current_dir(d));
    assert_eq!(o.code(), Some(1), "{}", o.describe());
    said_on_its_lines(&o.stderr, 1, ("peerpath gzip: ", &[]), FF_QUOTED, FF);
    assert_eq!(o.stderr.matches(FF_QUOTED).count(), 1, "named once: {}", o.describe());
    let o = run(pp(["gzip", "-d", NL]).current_dir(d));
    assert_eq!(o.code(), Some(2), "{}", o.describe());
    said_on_its_lines(&o.stderr, 1, (&format!("peerpath gzip: {NL_QUOTED}: unknown suffix -- ignored"), &[]), NL_QUOTED, NL.as_bytes());
}

/// serve: a directory that is not one is named quoted.
#[test]
fn serve_names_its_directory_quoted() {
    let dir = scratch();
    std::fs::write(dir.path().join(NL), b"x").unwrap();
    let o = run(pp(["serve", NL]).current_dir(dir.path())).fails(2, &["is not a directory"]);
    said_on_its_lines(&o.stderr, 1, ("peerpath: error: ", &[]), NL_QUOTED, NL.as_bytes());
}
