//! `peerpath-csp serve --name N [--memory BYTES] [--queues N] [--queue-depth N]
//! [--workers N] [--dir D]`: an emulated CSP without the rest of the CLI
//! (the crate's tests spawn it; `peerpath csp serve` is the same device).

use peerpath_device::emulated::{serve, ServeOptions, READY_LINE_PREFIX};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("serve") {
        eprintln!("usage: peerpath-csp serve --name NAME [--memory BYTES] [--queues N] [--queue-depth N] [--workers N] [--dir DIR]");
        return ExitCode::from(2);
    }
    let options = match ServeOptions::parse_args(&args[1..]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("peerpath-csp: {e}");
            return ExitCode::from(2);
        }
    };
    let result = serve(&options, |paths, id| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{READY_LINE_PREFIX} {} ({} bytes, {} queue pairs of {}) at {}", id.name, id.memory_bytes, id.queue_count, id.queue_depth, paths.socket.display());
        let _ = out.flush();
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peerpath-csp: {e}");
            ExitCode::FAILURE
        }
    }
}
