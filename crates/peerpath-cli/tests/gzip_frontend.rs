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
    // A name that already has the suffix: said, nothing made, exit 0 (gzip 1.12's status).
    let o = run(&mut pp(args!["gzip", d.join("s.fa.gz")]));
    assert_eq!(o.code(), Some(0), "{}", o.stderr);
    assert!(o.stderr.contains("already has .gz suffix -- unchanged"), "{}", o.stderr);
    assert!(!d.join("s.fa.gz.gz").exists());
    // An existing target without -f: gzip's warning, exit 2, the target unchanged.
    let before = std::fs::read(d.join("s.fa.gz")).unwrap();
    let o = run(&mut pp(args!["gzip", &src]));
    assert_eq!(o.code(), Some(2), "{}", o.stderr);
    assert!(o.stderr.contains("already exists; not overwritten"), "{}", o.stderr);
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
    // peerpath compress -o - too (it wrote the binary to the terminal).
    let (code, out) = in_terminal(&format!("echo hi | {} compress - -o -", bin()));
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("not written to a terminal") && !out.contains('\u{1f}'), "{out:?}");
    let (code, out) = in_terminal(&format!("echo hi | {} compress - -o - -f -q | wc -c", bin()));
    assert_eq!(code, Some(0), "{out}");
    for mode in ["-d", "-t", "-l"] {
        // -t and -l waited on the terminal for input.
        let (code, out) = in_terminal(&format!("{} gzip {mode}", bin()));
        assert_eq!(code, Some(1), "{mode}: {out}");
        assert!(out.contains("compressed data not read from a terminal"), "{mode}: {out}");
    }
    let dir = scratch();
    let cut = dir.path().join("cut.gz");
    std::fs::write(&cut, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1]).unwrap();
    let o = run(&mut pp(args!["gzip", "-t", &cut]));
    assert_eq!(o.code(), Some(1));
    assert_eq!(o.stderr.matches("cut.gz").count(), 1, "named once: {}", o.stderr);
}

/// gzip's ways with names and kinds of files: `-d x` reads x.gz, its other suffixes in any
/// case, a missing file said so (1), a device or FIFO skipped (2) rather than its .gz made
/// beside it, `-dcf` passing a file that is not gzip through, `-l` totals, and `--json` one
/// report a line. Where gzip is installed, its exit statuses and outputs are compared.
#[test]
fn names_and_kinds_of_files_are_taken_as_gzip_takes_them() {
    let dir = scratch();
    let d = dir.path();
    let gz = |args: &[&std::ffi::OsStr]| {
        let mut c = pp(["gzip"]);
        c.args(args).current_dir(d);
        run(&mut c)
    };
    let os = |s: &str| std::ffi::OsString::from(s);
    std::fs::write(d.join("a"), sample()).unwrap();
    assert_eq!(gz(&[&os("a")]).code(), Some(0));
    std::fs::rename(d.join("a"), d.join("a.orig")).unwrap();
    // -d a: a.gz is read, a made.
    let o = gz(&[&os("-d"), &os("a")]);
    assert_eq!(o.code(), Some(0), "{}", o.stderr);
    assert_eq!(std::fs::read(d.join("a")).unwrap(), sample());
    // Other suffixes, in any case; -t and -l find x.gz too.
    for (name, plain) in [("b.GZ", "b"), ("c-gz", "c"), ("e_z", "e"), ("f.taz", "f.tar")] {
        std::fs::copy(d.join("a.gz"), d.join(name)).unwrap();
        let o = gz(&[&os("-d"), &os(name)]);
        assert_eq!(o.code(), Some(0), "{name}: {}", o.stderr);
        assert_eq!(std::fs::read(d.join(plain)).unwrap(), sample(), "{name}");
    }
    std::fs::remove_file(d.join("a")).unwrap();
    assert_eq!(gz(&[&os("-t"), &os("a")]).code(), Some(0), "a.gz is found");
    // A missing file: named, exit 1 (it was "unknown suffix", 2).
    let o = gz(&[&os("-d"), &os("nothing")]);
    assert_eq!(o.code(), Some(1), "{}", o.stderr);
    assert!(o.stderr.contains("nothing: No such file or directory"), "{}", o.stderr);
    // A character device or a FIFO: skipped with gzip's warning, nothing made in /dev.
    let fifo = d.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for f in [std::path::Path::new("/dev/null"), &fifo] {
        let o = gz(&[f.as_os_str()]);
        assert_eq!(o.code(), Some(2), "{}", o.stderr);
        assert!(o.stderr.contains("is not a directory or a regular file - ignored"), "{}", o.stderr);
    }
    assert!(!std::path::Path::new("/dev/null.gz").exists() && !d.join("fifo.gz").exists());
    // -dcf: a file that is not gzip comes out as it is (zcat -f); gzip data is decoded.
    std::fs::write(d.join("plain.txt"), b"not compressed\n").unwrap();
    std::fs::write(d.join("one"), b"x").unwrap();
    for f in ["plain.txt", "one", "a.gz"] {
        let o = gz(&[&os("-dcf"), &os(f)]);
        assert_eq!(o.code(), Some(0), "{f}: {}", o.stderr);
        let want = if f == "a.gz" { sample().to_vec() } else { std::fs::read(d.join(f)).unwrap() };
        assert_eq!(o.stdout, want, "{f}");
    }
    // So is standard input (`... | zcat -f`), a pipe or a file, empty too; gzip data from a
    // pipe is decoded whole after the two bytes that told it apart.
    std::fs::write(d.join("empty"), b"").unwrap();
    for f in ["plain.txt", "one", "a.gz", "empty"] {
        let bytes = std::fs::read(d.join(f)).unwrap();
        let want = if f == "a.gz" { sample().to_vec() } else { bytes.clone() };
        let piped = run_full(pp(["gzip", "-dcf"]).current_dir(d), Some(bytes), std::time::Duration::from_secs(120));
        assert_eq!((piped.code(), &piped.stdout), (Some(0), &want), "{f} from a pipe: {}", piped.stderr);
        // (`run` would give it /dev/null.)
        let filed = pp(["gzip", "-dcf", "-"]).current_dir(d).stdin(std::fs::File::open(d.join(f)).unwrap()).output().unwrap();
        assert_eq!((filed.status.code(), &filed.stdout), (Some(0), &want), "{f} as standard input: {}", String::from_utf8_lossy(&filed.stderr));
    }
    // Without -f it is an error, naming the one byte there is.
    let o = gz(&[&os("-dc"), &os("one")]);
    assert_eq!(o.code(), Some(1));
    assert!(o.stderr.contains("the one byte 78"), "{}", o.stderr);
    // -l of two files: a totals line; --json: one report a line.
    let o = gz(&[&os("-l"), &os("a.gz"), &os("b.GZ")]);
    let listing = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(listing.lines().count(), 4, "{listing}");
    let total = (2 * sample().len()).to_string();
    assert!(listing.lines().last().unwrap().contains(&total) && listing.ends_with("(totals)\n"), "{listing}");
    // -l of a file that is not gzip: the error, and no header on standard output (as gzip).
    let o = gz(&[&os("-l"), &os("one")]);
    assert_eq!(o.code(), Some(1));
    assert!(o.stdout.is_empty(), "{}", String::from_utf8_lossy(&o.stdout));
    for args in [&["-l", "--json", "a.gz", "b.GZ"][..], &["-t", "--json", "a.gz", "b.GZ"]] {
        let o = gz(&args.iter().map(|a| os(a)).collect::<Vec<_>>().iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
        let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).expect("one JSON report a line")).collect();
        assert_eq!(lines.len(), 2, "{args:?}");
        assert!(lines.iter().all(|v| v["bytes_out"] == sample().len()), "{args:?}");
    }
    if tool("gzip").is_none() {
        eprintln!("SKIPPED (against gzip): gzip is not installed");
        return;
    }
    // gzip itself agrees on each exit status above.
    for args in [&["-d", "-c", "a"][..], &["-d", "-c", "nothing"], &["-c", "/dev/null"], &["-dcf", "plain.txt"], &["/dev/null"]] {
        let theirs = Command::new("gzip").args(args).current_dir(d).output().unwrap();
        let o = gz(&args.iter().map(|a| os(a)).collect::<Vec<_>>().iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
        assert_eq!(o.code(), theirs.status.code(), "{args:?}: {}", o.stderr);
        if theirs.status.success() && args[0] != "-c" {
            assert_eq!(o.stdout, theirs.stdout, "{args:?}");
        }
    }
}

/// What a helper found against gzip 1.12: an error outranks a warning in the exit status
/// (2 passed a corrupt archive as "warnings only"); directories are skipped (2), or walked
/// with -r; a symbolic link is refused without -c or -f (1); gzip's suffixes in any case;
/// -n, -N, pigz's -T and -V are taken; a lone 0x1f byte is passed through by -dcf.
#[test]
fn gzip_s_statuses_options_and_kinds_of_names_hold() {
    let dir = scratch();
    let d = dir.path();
    let gz = |args: &[&str]| {
        let mut c = pp(["gzip"]);
        c.args(args).current_dir(d);
        run(&mut c)
    };
    std::fs::write(d.join("plain"), b"x").unwrap();
    let mut bad = compress_bytes(d, "src", sample(), &[]);
    let n = bad.len();
    bad[n - 8] ^= 1;
    std::fs::write(d.join("badcrc.gz"), &bad).unwrap();
    std::fs::create_dir(d.join("dir")).unwrap();
    std::fs::write(d.join("dir/inner"), b"inner\n").unwrap();
    std::os::unix::fs::symlink("plain", d.join("lnk")).unwrap();
    std::fs::write(d.join("X.GZ"), b"x").unwrap();
    let statuses: [(&[&str], i32, &str); 6] = [
        (&["-d", "badcrc.gz", "plain"], 1, "plain: unknown suffix -- ignored"),
        (&["nonexistent", "X.GZ"], 1, "X.GZ already has .GZ suffix -- unchanged"),
        (&["dir"], 2, "dir is a directory -- ignored"),
        (&["lnk"], 1, "lnk: Too many levels of symbolic links"),
        (&["-d", "dir"], 2, "dir is a directory -- ignored"),
        (&["-9n", "-N", "-T", "-c", "plain"], 0, ""),
    ];
    for (args, code, said) in statuses {
        let o = gz(args);
        assert_eq!(o.code(), Some(code), "{args:?}: {}", o.stderr);
        assert!(o.stderr.contains(said), "{args:?}: {}", o.stderr);
        if let (Some(gzip), true) = (tool("gzip"), code != 0) {
            let theirs = Command::new(gzip).args(args).current_dir(d).output().unwrap();
            assert_eq!(theirs.status.code(), Some(code), "gzip {args:?} agrees: {}", String::from_utf8_lossy(&theirs.stderr));
        }
    }
    assert!(!d.join("lnk.gz").exists() && !d.join("X.GZ.gz").exists() && !d.join("dir.gz").exists());
    // -c follows the link, and so do -t and -l (gzip runs them as if to standard output).
    assert_eq!(gz(&["-c", "lnk"]).code(), Some(0));
    std::os::unix::fs::symlink("badcrc.gz", d.join("lnk.gz")).unwrap();
    std::fs::write(d.join("badcrc.gz"), compress_bytes(d, "src2", sample(), &[])).unwrap();
    assert_eq!(gz(&["-t", "lnk.gz"]).code(), Some(0));
    assert_eq!(gz(&["-l", "lnk.gz"]).code(), Some(0));
    std::fs::remove_file(d.join("lnk.gz")).unwrap();
    // peerpath's own .gzip and .bgz are not gzip's suffixes: compressed, as gzip does.
    std::fs::write(d.join("f.gzip"), b"x").unwrap();
    assert_eq!(gz(&["f.gzip"]).code(), Some(0));
    assert!(d.join("f.gzip.gz").exists());
    // -r: the files under the directory, each beside itself; -dr back (-f: the source is kept).
    // A link inside is refused (1) as gzip refuses it, after the others are done.
    std::os::unix::fs::symlink("inner", d.join("dir/inner-link")).unwrap();
    let o = gz(&["-r", "dir"]);
    assert_eq!(o.code(), Some(1), "{}", o.stderr);
    assert!(o.stderr.contains("dir/inner-link: Too many levels of symbolic links"), "{}", o.stderr);
    std::fs::remove_file(d.join("dir/inner-link")).unwrap();
    assert!(d.join("dir/inner.gz").exists());
    std::fs::rename(d.join("dir/inner"), d.join("inner.orig")).unwrap();
    assert_eq!(gz(&["-dr", "dir"]).code(), Some(0));
    assert_eq!(std::fs::read(d.join("dir/inner")).unwrap(), b"inner\n");
    // -rt and -rl follow a link in the tree to its file, as gzip: one to a plain file is skipped
    // as that file is (it failed as "not a gzip file", exit 1), one to a .gz is read.
    std::os::unix::fs::symlink("inner", d.join("dir/to-plain")).unwrap();
    std::os::unix::fs::symlink("inner.gz", d.join("dir/to-gz.gz")).unwrap();
    assert_eq!(gz(&["-c", "dir/inner"]).code(), Some(0));
    std::fs::write(d.join("dir/inner.gz"), gz(&["-c", "dir/inner"]).stdout).unwrap();
    for flag in ["-rt", "-rl"] {
        let o = gz(&[flag, "dir"]);
        assert_eq!(o.code(), Some(0), "{flag}: {}", o.stderr);
    }
    assert!(String::from_utf8_lossy(&gz(&["-rl", "dir"]).stdout).contains("dir/to-gz"));
    std::fs::remove_file(d.join("dir/to-plain")).unwrap();
    std::fs::remove_file(d.join("dir/to-gz.gz")).unwrap();
    std::fs::remove_file(d.join("dir/inner.gz")).unwrap();
    // -d -S with the tail of one of gzip's suffixes: the builtin is tried first (x.gz -> x, not x.).
    std::fs::write(d.join("s.gz"), gz(&["-c", "dir/inner"]).stdout).unwrap();
    assert_eq!(gz(&["-d", "-S", "gz", "s.gz"]).code(), Some(0));
    assert!(d.join("s").exists() && !d.join("s.").exists());
    std::fs::remove_file(d.join("s")).unwrap();
    assert!(String::from_utf8_lossy(&gz(&["-V"]).stdout).starts_with("peerpath gzip "));
    assert!(gz(&["--rsyncable", "plain"]).stderr.contains("--rsyncable is not supported"));
    // -dcf of one byte that begins gzip's magic: passed through, as gzip does.
    std::fs::write(d.join("one"), [0x1f]).unwrap();
    let o = gz(&["-dcf", "one"]);
    assert_eq!((o.code(), o.stdout.as_slice()), (Some(0), &[0x1f][..]), "{}", o.stderr);
}

/// As gzip does, the output keeps its source's owner and group where this process may give
/// them (root): root's `peerpath gzip` of a user's 0600 file left a file only root could read.
#[test]
fn outputs_keep_the_sources_owner_where_they_may() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED outputs_keep_the_sources_owner_where_they_may: not root (only root gives files away)");
        return;
    }
    let dir = scratch();
    let src = dir.path().join("theirs.txt");
    std::fs::write(&src, &sample()[..100_000]).unwrap();
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&src, Some(65534), Some(65534)).unwrap();
    run(&mut pp(args!["gzip", "-k", &src])).ok();
    let gz = std::fs::metadata(dir.path().join("theirs.txt.gz")).unwrap();
    assert_eq!((gz.uid(), gz.gid(), gz.mode() & 0o7777), (65534, 65534, 0o600));
    run(&mut pp(args!["compress", &src, "-o", dir.path().join("c.gz"), "-q"])).ok();
    let c = std::fs::metadata(dir.path().join("c.gz")).unwrap();
    assert_eq!((c.uid(), c.gid()), (65534, 65534));
    run(&mut pp(args!["decompress", dir.path().join("c.gz"), "-o", dir.path().join("back"), "-q"])).ok();
    let b = std::fs::metadata(dir.path().join("back")).unwrap();
    assert_eq!((b.uid(), b.gid(), b.mode() & 0o7777), (65534, 65534, 0o600));
}

/// `gzip -r` with symbolic links in the tree, as gzip 1.12 does it: without -c or -f every link is
/// refused (1), a link to a directory too; with -f (or -c) links are followed, to files and to
/// directories, whose files are compressed beside them (through the link). peerpath said a
/// followed link to a directory "is a directory -- ignored" (2) and left its files. Unlike gzip,
/// a directory is walked once: a link back into the tree is said (2), not walked round until
/// the names are too long.
#[test]
fn gzip_r_follows_links_to_directories_as_gzip_does() {
    let dir = scratch();
    // A fresh tree in `at`: t/a, t/sub/b, out/o, t/dirlink -> ../out, t/filelink -> a.
    let tree = |at: &std::path::Path| {
        std::fs::create_dir_all(at.join("t/sub")).unwrap();
        std::fs::create_dir_all(at.join("out")).unwrap();
        std::fs::write(at.join("t/a"), b"a\n").unwrap();
        std::fs::write(at.join("t/sub/b"), b"b\n").unwrap();
        std::fs::write(at.join("out/o"), b"o\n").unwrap();
        std::os::unix::fs::symlink("../out", at.join("t/dirlink")).unwrap();
        std::os::unix::fs::symlink("a", at.join("t/filelink")).unwrap();
    };
    // The names under `at` (links as themselves), in order.
    fn names(at: &std::path::Path, under: &std::path::Path, v: &mut Vec<String>) {
        for e in std::fs::read_dir(at).unwrap().flatten() {
            let p = e.path();
            v.push(p.strip_prefix(under).unwrap().display().to_string());
            if e.file_type().unwrap().is_dir() {
                names(&p, under, v);
            }
        }
    }
    let listing = |at: &std::path::Path| {
        let mut v = Vec::new();
        names(at, at, &mut v);
        v.sort();
        v
    };
    // The lines of what a run wrote to standard output, decompressed, in order.
    let lines = |gz: &[u8]| {
        if gz.is_empty() {
            return Vec::new();
        }
        let mut c = pp(["gzip", "-dc"]);
        let mut v: Vec<String> = String::from_utf8(run_full(&mut c, Some(gz.to_vec()), DEADLINE).ok().stdout).unwrap().lines().map(str::to_string).collect();
        v.sort();
        v
    };
    // The flags, the exit status, what is said, the files made, the lines written out.
    type Case<'a> = (&'a str, i32, &'a [&'a str], &'a [&'a str], &'a [&'a str]);
    let expected: [Case; 3] = [
        ("-r", 1, &["t/dirlink: Too many levels of symbolic links", "t/filelink: Too many levels of symbolic links"], &["t/a.gz", "t/sub/b.gz"], &[]),
        ("-rf", 0, &[], &["out/o.gz", "t/a.gz", "t/filelink.gz", "t/sub/b.gz"], &[]),
        ("-rc", 0, &[], &[], &["a", "a", "b", "o"]),
    ];
    for (k, (flags, code, said, made, out)) in expected.into_iter().enumerate() {
        let at = dir.path().join(format!("peerpath{k}"));
        tree(&at);
        let before = listing(&at);
        let o = run(pp(["gzip", flags, "t"]).current_dir(&at));
        assert_eq!(o.code(), Some(code), "{flags}: {}", o.describe());
        assert!(said.iter().all(|s| o.stderr.contains(s)) && o.stderr.lines().count() == said.len(), "{flags}: {}", o.describe());
        let mut want: Vec<String> = before.iter().cloned().chain(made.iter().map(|m| m.to_string())).collect();
        want.sort();
        assert_eq!(listing(&at), want, "{flags}: the files made");
        assert_eq!(lines(&o.stdout), *out, "{flags}: the files written to standard output");
        // gzip's own, where it is here (-k: it keeps its sources as peerpath always does).
        if let Some(gzip) = tool("gzip") {
            let theirs = dir.path().join(format!("gzip{k}"));
            tree(&theirs);
            let g = Command::new(&gzip).args(["-k", flags, "t"]).current_dir(&theirs).output().unwrap();
            assert_eq!(g.status.code(), Some(code), "gzip -k {flags}: {}", String::from_utf8_lossy(&g.stderr));
            assert_eq!(listing(&theirs), want, "gzip -k {flags} makes the same files");
            assert_eq!(lines(&g.stdout), *out, "gzip -k {flags} writes the same files");
        }
    }
    // Links back into the tree, followed (-f): each directory walked once, each file compressed once.
    let at = dir.path().join("loops");
    tree(&at);
    std::os::unix::fs::symlink(".", at.join("t/self")).unwrap();
    std::os::unix::fs::symlink("..", at.join("t/sub/up")).unwrap();
    let o = run_full(pp(["gzip", "-rc", "t"]).current_dir(&at), None, HANG_DEADLINE);
    assert_eq!(o.code(), Some(2), "{}", o.describe());
    assert!(o.stderr.contains("peerpath gzip: t/self: the directory t is walked already") && o.stderr.contains("peerpath gzip: t/sub/up: the directory t is walked already"), "{}", o.describe());
    assert_eq!(lines(&o.stdout), ["a", "a", "b", "o"]);
    let o = run_full(pp(["gzip", "-rfq", "t"]).current_dir(&at), None, HANG_DEADLINE);
    assert_eq!((o.code(), o.stderr.as_str()), (Some(2), ""), "-q: no word, the warning's status");
    assert!(at.join("out/o.gz").exists() && at.join("t/sub/b.gz").exists() && !at.join("t/self").join("a.gz.gz").exists());
}

/// What a differential run against gzip 1.12 (`gzip -k`) found: a file with other hard links is
/// left alone without -c or -f (a warning, exit 2: peerpath compressed or decompressed it, 0), in
/// a tree too, before its name is looked at (`-dr` skipped it silently); in a tree, `-drf` and
/// `-rtf` skip names without a compressed suffix silently as `-dr` does (they were warned of, 2,
/// or read as "not a gzip file", 1); `-dq` skips a name without a compressed suffix silently with status 0 (it was 2);
/// pigz's -m and -M (--no-time, --time) and gzip's --synchronous are taken (they were refused, 1).
#[test]
fn hard_links_quiet_suffixes_and_time_options_as_gzip() {
    let dir = scratch();
    // A fresh copy in `at`: h and hl one file, g1.gz and g2.gz one file, d/f and d/f2 one file.
    let setup = |at: &std::path::Path| {
        std::fs::create_dir_all(at.join("d")).unwrap();
        std::fs::write(at.join("h"), b"hello\n").unwrap();
        std::fs::hard_link(at.join("h"), at.join("hl")).unwrap();
        std::fs::write(at.join("g1.gz"), compress_bytes(at, "src", b"hello\n", &[])).unwrap();
        std::fs::hard_link(at.join("g1.gz"), at.join("g2.gz")).unwrap();
        std::fs::write(at.join("d/f"), b"in\n").unwrap();
        std::fs::hard_link(at.join("d/f"), at.join("d/f2")).unwrap();
        std::fs::write(at.join("nosuf"), b"x").unwrap();
    };
    let listing = |at: &std::path::Path| {
        let mut v: Vec<String> = Vec::new();
        for sub in [".", "d"] {
            v.extend(std::fs::read_dir(at.join(sub)).unwrap().flatten().map(|e| format!("{sub}/{}", e.file_name().to_string_lossy())));
        }
        v.sort();
        v
    };
    // The flags and file, the exit status, what is said (in order), the files made.
    type Case<'a> = (&'a [&'a str], i32, &'a [&'a str], &'a [&'a str]);
    let cases: [Case; 11] = [
        (&["hl"], 2, &["hl has 1 other link -- file ignored"], &[]),
        (&["-dr", "d"], 2, &["d/f has 1 other link -- file ignored", "d/f2 has 1 other link -- file ignored"], &[]),
        (&["-drf", "d"], 0, &[], &[]),
        (&["-rtf", "d"], 0, &[], &[]),
        (&["-q", "h"], 2, &[], &[]),
        (&["-f", "hl"], 0, &[], &["./hl.gz"]),
        (&["-d", "g2.gz"], 2, &["g2.gz has 1 other link -- file ignored"], &[]),
        (&["-r", "d"], 2, &["d/f has 1 other link -- file ignored", "d/f2 has 1 other link -- file ignored"], &[]),
        (&["-dq", "nosuf"], 0, &[], &[]),
        (&["-d", "nosuf"], 2, &["nosuf: unknown suffix -- ignored"], &[]),
        (&["-m", "-M", "--synchronous", "nosuf"], 0, &[], &["./nosuf.gz"]),
    ];
    for (k, (args, code, said, made)) in cases.into_iter().enumerate() {
        let at = dir.path().join(format!("peerpath{k}"));
        setup(&at);
        let before = listing(&at);
        let o = run(pp(["gzip"]).args(args).current_dir(&at));
        assert_eq!(o.code(), Some(code), "{args:?}: {}", o.describe());
        let lines: Vec<&str> = o.stderr.lines().collect();
        assert_eq!(lines.len(), said.len(), "{args:?}: {}", o.describe());
        assert!(lines.iter().zip(said).all(|(l, s)| l.ends_with(s)), "{args:?}: {}", o.describe());
        let mut want: Vec<String> = before.iter().cloned().chain(made.iter().map(|m| m.to_string())).collect();
        want.sort();
        assert_eq!(listing(&at), want, "{args:?}: the files made");
        // gzip's own, where it is here (-k: it keeps its sources as peerpath always does;
        // gzip has no -m or -M).
        if let (Some(gzip), false) = (tool("gzip"), args[0] == "-m") {
            let theirs = dir.path().join(format!("gzip{k}"));
            setup(&theirs);
            let g = Command::new(&gzip).arg("-k").args(args).current_dir(&theirs).output().unwrap();
            let g_err = String::from_utf8_lossy(&g.stderr);
            assert_eq!(g.status.code(), Some(code), "gzip -k {args:?}: {g_err}");
            assert_eq!(g_err.lines().count(), said.len(), "gzip -k {args:?}: {g_err}");
            assert_eq!(listing(&theirs), want, "gzip -k {args:?} makes the same files");
        }
    }
}

/// Also found against gzip 1.12: `-df` of standard input that is not gzip passes it through, as
/// `-dcf` does (standard input's data goes to standard output: it was "not a gzip file", 1); `-lq`
/// lists without the header and the totals line; standard input's data is listed as "stdout".
#[test]
fn df_of_standard_input_and_quiet_listing_as_gzip() {
    let dir = scratch();
    let d = dir.path();
    let gz = compress_bytes(d, "src", b"hello\n", &[]);
    std::fs::write(d.join("b.gz"), &gz).unwrap();
    std::fs::write(d.join("c.gz"), &gz).unwrap();
    let ours = |args: &[&str], input: &[u8]| run_full(pp(["gzip"]).args(args).current_dir(d), Some(input.to_vec()), DEADLINE);
    let o = ours(&["-df"], b"plain text\n");
    assert_eq!((o.code(), o.stdout.as_slice()), (Some(0), &b"plain text\n"[..]), "{}", o.describe());
    let o = ours(&["-df"], &gz);
    assert_eq!((o.code(), o.stdout.as_slice()), (Some(0), &b"hello\n"[..]), "{}", o.describe());
    let o = ours(&["-lq", "b.gz", "c.gz"], b"");
    let listing = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.code(), Some(0), "{}", o.describe());
    assert_eq!(listing.lines().count(), 2, "no header, no totals: {listing}");
    assert!(listing.lines().all(|l| l.split_whitespace().nth(1) == Some("6")), "{listing}");
    let o = ours(&["-l"], &gz);
    let listing = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(listing.lines().nth(1).is_some_and(|l| l.ends_with("% stdout")), "{listing}");
    // gzip's own, where it is here: the same statuses, data and lines.
    let Some(gzip) = tool("gzip") else {
        eprintln!("SKIPPED (against gzip): gzip is not installed");
        return;
    };
    let theirs = |args: &[&str], input: &[u8]| {
        let mut c = Command::new(&gzip);
        c.args(args).current_dir(d);
        run_full(&mut c, Some(input.to_vec()), DEADLINE)
    };
    for (args, input) in [(&["-df"][..], &b"plain text\n"[..]), (&["-df"], &gz)] {
        let (g, o) = (theirs(args, input), ours(args, input));
        assert_eq!((o.code(), &o.stdout), (g.code(), &g.stdout), "{args:?}");
    }
    let g = theirs(&["-lq", "b.gz", "c.gz"], b"");
    assert_eq!(String::from_utf8_lossy(&g.stdout).lines().count(), 2, "gzip -lq: {}", g.describe());
    let g = theirs(&["-l"], &gz);
    assert!(String::from_utf8_lossy(&g.stdout).lines().nth(1).is_some_and(|l| l.ends_with("% stdout")), "{}", g.describe());
}
