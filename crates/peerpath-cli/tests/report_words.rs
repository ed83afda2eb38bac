//! What the text reports say, read as a user reads them: hints that run as printed, counts that
//! agree between commands, and numbers with their nouns in the right number.

mod common;

use common::*;
use std::path::Path;

/// Runs a hint's command as printed (`peerpath ...` between backticks), in `dir`, with its
/// placeholders filled in: KEY the key file, FILE `out`.
fn run_hint(dir: &Path, hint: &str, out: &str) -> Out {
    let command = hint.replace(" KEY", " key").replace(" FILE", &format!(" {out}"));
    assert!(command.starts_with("peerpath "), "a hint names the command: {hint}");
    let bin_dir = Path::new(bin()).parent().unwrap().to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap();
    run(std::process::Command::new("bash").arg("-c").arg(&command).env("PATH", path).current_dir(dir))
}

/// `compress --ec` (with and without --encrypt) prints how to get the source back and the file
/// the set holds: both commands run as printed and give back what the hint says, with sizes.
#[test]
fn the_chains_hints_run_as_printed() {
    let dir = scratch();
    let d = dir.path();
    run(pp(args!["keygen", "-o", "key"]).current_dir(d)).ok();
    let data = mixed_data(3_000_000, 7);
    std::fs::write(d.join("src"), &data).unwrap();
    // Names a shell reads apart or expands: the hints quote them (they printed them bare).
    for (set, sealed) in [("plain $HOME set", false), ("sealed $1 *", true)] {
        let mut a = args!["compress", "src", "--ec", "4+2", "-o", set, "--block-size", "256K"];
        if sealed {
            a.extend(args!["--encrypt", "--key-file", "key"]);
        }
        let o = run(pp(a).current_dir(d)).ok();
        let text = o.stdout_str();
        let line = text.lines().find(|l| l.starts_with(&format!("{set}: `"))).unwrap_or_else(|| panic!("no hint for {set}:\n{text}"));
        let hints: Vec<&str> = line.split('`').skip(1).step_by(2).collect();
        assert_eq!(hints.len(), 2, "{line}");
        assert!(hints[0].starts_with("peerpath ec decode") && hints[1].starts_with("peerpath decompress --ec"), "{line}");
        let stream = format!("{}.stream", set.split(' ').next().unwrap());
        run_hint(d, hints[0], &stream).ok();
        let held = std::fs::metadata(d.join(&stream)).unwrap().len();
        let name = if sealed { "src.gz.ppenc" } else { "src.gz" };
        assert!(line.contains(&format!("gives back the {held}-byte {name} it holds;")), "{line}");
        let back = format!("{}.back", set.split(' ').next().unwrap());
        run_hint(d, hints[1], &back).ok();
        assert_file_eq(&d.join(&back), &data, "what `decompress --ec` gave back, as its hint says");
        assert!(line.ends_with(&format!("the {}-byte src", data.len())), "{line}");
    }
}

/// The lines of a report that start with `key` (after the indent).
fn field<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    text.lines().filter_map(|l| l.trim_start().strip_prefix(key)).map(str::trim).collect()
}

/// `compress` and `decompress` of the same file count its members alike: compress's count
/// (its JSON's `members`, the end marker left out) plus the end marker it wrote is the count
/// decompress read (it said "4 members", decompress "5 members").
#[test]
fn compress_and_decompress_count_the_members_alike() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, mixed_data(3_000_000, 11)).unwrap();
    let o = run(&mut pp(args!["compress", &src, "-o", d.join("a.gz"), "--block-size", "1M", "--json"])).ok();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let members = v["files"][0]["members"].as_u64().unwrap();
    let o = run(&mut pp(args!["compress", &src, "-o", d.join("b.gz"), "--block-size", "1M"])).ok();
    let text = o.stdout_str();
    let bytes = field(&text, "bytes ");
    assert!(bytes[0].ends_with(&format!(", {members} members + the end marker: {} members written", members + 1)), "{bytes:?}");
    let o = run(&mut pp(args!["decompress", d.join("b.gz"), "-o", d.join("back")])).ok();
    let text = o.stdout_str();
    let bytes = field(&text, "bytes ");
    assert!(bytes[0].ends_with(&format!(", {} members read", members + 1)), "{bytes:?}");
}

/// One of a thing is not "1 threads", "1 ops" or "thread(s)": compress on one worker (the
/// I/O orchestration is one thread too) with a metadata write of one op in its ledger.
#[test]
fn a_report_counts_one_in_the_singular() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("src"), mixed_data(500_000, 5)).unwrap();
    for op in [args!["compress", "src", "-o", "a.gz", "-T", "1"], args!["decompress", "a.gz", "-o", "back", "-T", "1"]] {
        let o = run(pp(op).current_dir(d)).ok();
        let text = &o.stdout_str();
        let roles = field(text, "I/O orchestration");
        assert!(roles.len() == 1 && roles[0].starts_with("1 thread  "), "{text}");
        let workers = field(text, "compute workers");
        assert!(workers.len() == 1 && workers[0].starts_with("1 thread  "), "{text}");
        assert!(text.contains(" in 1 op\n"), "{text}");
        for plural in ["1 threads", "1 ops", "1 members", "1 transfers", "1 cores", "(s)"] {
            assert!(!text.contains(plural), "{plural}: {text}");
        }
    }
}

/// `bench-offload --workdir DIR` as docs/usage.md shows it, with a DIR not there (exit 11):
/// made for the run and removed after it, one that was there kept.
#[test]
fn bench_offload_makes_its_workdir() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("src"), mixed_data(200_000, 3)).unwrap();
    let work = d.join("new/work");
    run(&mut pp(args!["bench-offload", d.join("src"), "--runs", "1", "--max-devices", "1", "--no-fio", "--workdir", &work])).ok();
    assert!(!d.join("new").exists(), "the workdir it made is left behind");
    std::fs::create_dir(d.join("kept")).unwrap();
    run(&mut pp(args!["bench-offload", d.join("src"), "--runs", "1", "--max-devices", "1", "--no-fio", "--workdir", d.join("kept")])).ok();
    assert_dir_holds(&d.join("kept"), &[]);
}
