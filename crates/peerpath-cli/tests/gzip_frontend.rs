//! `peerpath gzip` (and `ppgz`) in the pipelines people already run:
//! tar -I, sort | ... | gzip -d, pigz -d, tar -czf output, gzip's exit statuses.

mod common;

use common::*;
use std::process::Command;

fn sh(script: &str, dir: &std::path::Path) -> Out {
    let mut c = Command::new("sh");
    c.arg("-ec").arg(script).current_dir(dir).env("PP", bin());
    run(&mut c)
}

#[test]
fn tar_and_pipes_work_through_peerpath_gzip() {
    let Some(_) = tools_or_skip("tar_and_pipes_work_through_peerpath_gzip", &["tar", "gzip", "sort", "cmp", "diff"]) else { return };
    let dir = scratch();
    let d = dir.path();
    std::fs::create_dir(d.join("tree")).unwrap();
    std::fs::write(d.join("tree/a.fa"), sample()).unwrap();
    std::fs::write(d.join("tree/r.bin"), random_bytes(300_000, 7)).unwrap();
    std::fs::write(d.join("tree/empty"), b"").unwrap();
    let o = sh(
        r#"
        tar -I "$PP gzip" -cf x.tar.gz tree
        gzip -t x.tar.gz
        mkdir out && tar -I "$PP gzip" -xf x.tar.gz -C out && diff -r tree out/tree
        tar -czf y.tar.gz tree && "$PP" gzip -d -c y.tar.gz | tar -t > list && grep -q tree/a.fa list
        sort tree/a.fa > sorted.ref
        sort tree/a.fa | "$PP" gzip -p 2 | gzip -d | cmp - sorted.ref
        gzip -c tree/a.fa | "$PP" gzip -d | cmp - tree/a.fa
        ln -s "$PP" ppgz && ./ppgz -c9 tree/r.bin | gzip -d | cmp - tree/r.bin
        "#,
        d,
    );
    assert_eq!(o.code(), Some(0), "{}", o.stderr);
    if tool("pigz").is_some() {
        let o = sh(r#""$PP" gzip -c tree/a.fa | pigz -d | cmp - tree/a.fa"#, d);
        assert_eq!(o.code(), Some(0), "pigz -d reads peerpath gzip's output: {}", o.stderr);
    } else {
        eprintln!("SKIPPED (pigz part): pigz is not installed");
    }
}

#[test]
fn files_keep_their_sources_and_gzip_s_exit_statuses_hold() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s.fa");
    std::fs::write(&src, sample()).unwrap();
    // Compress: the source stays, s.fa.gz appears; -v says what it did.
    let o = run(&mut pp(args!["gzip", "-v", &src]));
    assert_eq!(o.code(), Some(0), "{}", o.stderr);
    assert!(src.exists() && d.join("s.fa.gz").exists());
    assert!(o.stderr.contains("created"), "{}", o.stderr);
    // A name that already has the suffix: a warning, exit 2, nothing made.
    let o = run(&mut pp(args!["gzip", d.join("s.fa.gz")]));
    assert_eq!(o.code(), Some(2), "{}", o.stderr);
    assert!(!d.join("s.fa.gz.gz").exists());
    // An existing target without -f: an error, exit 1, the target unchanged.
    let before = std::fs::read(d.join("s.fa.gz")).unwrap();
    let o = run(&mut pp(args!["gzip", &src]));
    assert_eq!(o.code(), Some(1), "{}", o.stderr);
    assert_eq!(std::fs::read(d.join("s.fa.gz")).unwrap(), before);
    // -t, -l, -d; an unknown suffix on -d is a warning.
    assert_eq!(run(&mut pp(args!["gzip", "-t", d.join("s.fa.gz")])).code(), Some(0));
    let l = run(&mut pp(args!["gzip", "-l", d.join("s.fa.gz")]));
    let listing = String::from_utf8_lossy(&l.stdout).into_owned();
    assert!(listing.contains(&sample().len().to_string()) && listing.contains("s.fa"), "{listing}");
    std::fs::rename(&src, d.join("orig.fa")).unwrap();
    assert_eq!(run(&mut pp(args!["gzip", "-d", d.join("s.fa.gz")])).code(), Some(0));
    assert_eq!(std::fs::read(&src).unwrap(), sample());
    assert_eq!(run(&mut pp(args!["gzip", "-d", d.join("orig.fa")])).code(), Some(2));
    // A corrupt file: exit 1.
    let mut bad = before.clone();
    let n = bad.len();
    bad[n / 2] ^= 0x55;
    std::fs::write(d.join("bad.gz"), &bad).unwrap();
    assert_eq!(run(&mut pp(args!["gzip", "-t", d.join("bad.gz")])).code(), Some(1));
    // Bad options: exit 1 with the usage.
    let o = run(&mut pp(["gzip", "-x"]));
    assert_eq!(o.code(), Some(1));
    assert!(o.stderr.contains("usage: peerpath gzip"), "{}", o.stderr);
}

/// As gzip: compressed data is neither written to nor read from a terminal
/// without -f (a terminal made by script(1)); messages name a file once.
#[test]
fn compressed_data_never_goes_to_a_terminal_without_force() {
    let Some(script) = tool("script") else {
        eprintln!("SKIPPED compressed_data_never_goes_to_a_terminal_without_force: script(1) not installed");
        return;
    };
    let in_terminal = |cmd: &str| {
        let o = std::process::Command::new(&script).args(["-qec", cmd, "/dev/null"]).stdin(std::process::Stdio::null()).output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let (code, out) = in_terminal(&format!("echo hi | {} gzip", bin()));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("compressed data not written to a terminal. Use -f to force compression.") && !out.contains('\u{1f}'), "{out:?}");
    let (code, out) = in_terminal(&format!("echo hi | {} gzip -f | wc -c", bin()));
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = in_terminal(&format!("{} gzip -d", bin()));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("compressed data not read from a terminal"), "{out}");
    let dir = scratch();
    let cut = dir.path().join("cut.gz");
    std::fs::write(&cut, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1]).unwrap();
    let o = run(&mut pp(args!["gzip", "-t", &cut]));
    assert_eq!(o.code(), Some(1));
    assert_eq!(o.stderr.matches("cut.gz").count(), 1, "named once: {}", o.stderr);
}
