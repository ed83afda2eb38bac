//! `peerpath demo` (and the benches beside it) as a user runs them: at the
//! same time in one directory.

mod common;

use common::*;

/// Demos started together in one new `--workdir` without `-f`: one of them
/// makes the demo's files and succeeds; each other one finds them there
/// (exit 4) without replacing them, and leaves them (and the directory) to
/// the one that made them.
#[test]
fn demos_at_once_in_one_workdir_replace_nothing_without_force() {
    let dir = scratch();
    let work = dir.path().join("work");
    let outs: Vec<Out> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..4).map(|_| s.spawn(|| run(&mut pp(args!["demo", "--workdir", &work])))).collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let won = outs.iter().filter(|o| o.status.success()).count();
    assert_eq!(won, 1, "exactly one demo makes the files; the others find them:\n{}", outs.iter().map(Out::describe).collect::<Vec<_>>().join("\n"));
    for o in outs.into_iter().filter(|o| !o.status.success()) {
        o.fails(4, &["exists"]);
    }
    assert_eq!(std::fs::read(work.join("protein.fasta")).unwrap(), sample());
    assert_eq!(std::fs::read(work.join("protein.restored.fasta")).unwrap(), sample());
    for f in ["protein.fasta.gz", "protein.fasta.offload.gz"] {
        assert!(work.join(f).is_file(), "{f} stays");
    }
}

/// Where the demo and bench-offload cannot make their scratch directory by default (TMPDIR
/// names nothing; the first source's directory takes none), the error says where that default
/// came from and what to give instead.
#[test]
fn a_default_scratch_directory_that_cannot_be_made_points_at_workdir() {
    let dir = scratch();
    let mut demo = pp(["demo"]);
    demo.env("TMPDIR", dir.path().join("nowhere"));
    run(&mut demo).fails(11, &["nowhere", "TMPDIR", "give --workdir DIR"]);
    // A source in a directory nothing can be made in.
    run(&mut pp(["bench-offload", "/proc/self/exe", "--runs", "1", "--no-fio"])).fails(11, &["/proc/self", "next to the first source: give --workdir DIR"]);
}

/// `bench-offload --max-devices N` with fewer than N sources is a usage error saying why (each
/// device serves its own sources), not a table quietly short of the rows asked for.
#[test]
fn bench_offload_refuses_more_devices_than_sources() {
    let dir = scratch();
    let src = dir.path().join("src");
    std::fs::write(&src, mixed_data(10_000, 1)).unwrap();
    let o = run(&mut pp(args!["bench-offload", &src, &src, "--max-devices", "3", "--runs", "1", "--no-fio", "--json"]));
    o.fails(2, &["--max-devices 3", "2 sources give at most 2", "give --max-devices 2, or more sources"]);
    assert_dir_holds(dir.path(), &["src"]);
}
