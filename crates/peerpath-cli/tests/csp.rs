//! `peerpath csp`: the runtime's way of starting a device (`EmulatedCsp::spawn`
//! runs this binary with `csp serve` and `ServeOptions::to_args`) must be
//! what the CLI reads; identify and stats answer by name.

use peerpath_device::emulated::{ServeOptions, SpawnOptions};
use peerpath_device::{run_to_completion, DeviceRange, EmulatedCsp, Request, Status};
use std::process::Command;
use std::time::Duration;

const PEERPATH: &str = env!("CARGO_BIN_EXE_peerpath");

#[test]
fn the_cli_serves_what_spawn_asks_for_and_answers_identify_and_stats() {
    let name = format!("cli{}", std::process::id());
    let mut serve = ServeOptions::new(&name);
    serve.memory_bytes = 16 << 20;
    serve.queues = 2;
    serve.workers = 1;
    let mut o = SpawnOptions::new(serve);
    o.program = Some(PEERPATH.into()); // what current_exe() is inside `peerpath`
    let mut csp = EmulatedCsp::spawn(&o).expect("peerpath csp serve starts from spawn's arguments");
    assert_eq!(csp.identity().memory_bytes, 16 << 20);
    let done = run_to_completion(&mut csp, [Request::fill(1, 7, DeviceRange::new(0, 4096))], Duration::from_secs(30)).unwrap();
    assert_eq!(done[0].status, Status::Success);

    let out = Command::new(PEERPATH).args(["csp", "identify", "--name", &name]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("16 MiB of device memory") && text.contains("gzip compress member"), "{text}");

    let out = Command::new(PEERPATH).args(["csp", "stats", "--name", &name, "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fill = stats["functions"].as_array().unwrap().iter().find(|f| f["function"] == "fill").unwrap().clone();
    assert_eq!((fill["commands"].as_u64(), fill["output_bytes"].as_u64()), (Some(1), Some(4096)));

    // The name is taken while it runs: exit 4, as a target that exists.
    let out = Command::new(PEERPATH).args(["csp", "serve", "--name", &name]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already running"));

    let paths = csp.paths().clone();
    assert!(csp.shutdown().unwrap().unwrap().success());
    assert!(paths.all().iter().all(|p| !p.exists()));
}

#[test]
fn csp_errors_exit_with_their_codes() {
    let out = Command::new(PEERPATH).args(["csp", "identify", "--name", "nobody-here-42"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "no device there: a source missing, not an internal error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is `peerpath csp serve --name nobody-here-42` running?"));
    let out = Command::new(PEERPATH).args(["csp", "serve", "--name", "no/slashes"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // What stands where a device's socket goes is removed only if a device left it (a socket).
    let dir = tempfile::tempdir().unwrap();
    for make in [|p: &std::path::Path| std::fs::write(p, b"mine").unwrap(), |p: &std::path::Path| std::fs::create_dir(p).unwrap()] {
        let socket = dir.path().join("peerpath-csp-x.sock");
        make(&socket);
        let out = Command::new(PEERPATH).args(["csp", "serve", "--name", "x", "--dir"]).arg(dir.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(4), "a name taken, as a target that exists (it was 1, an internal error)");
        assert!(String::from_utf8_lossy(&out.stderr).contains("is not a socket a device left"), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(socket.exists(), "left as it was");
        let _ = std::fs::remove_file(&socket).or_else(|_| std::fs::remove_dir(&socket));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing else made");
    }
}
