//! Devices that die, hang or lie; the emulated device's files; the seeded
//! faulty-device wrapper.

mod common;

use common::*;
use peerpath_device::emulated::layout::{decode_cqe, header, CqeFields, Geometry};
use peerpath_device::emulated::{ConnectOptions, ServeOptions, CQE_BYTES};
use peerpath_device::{
    run_to_completion, Completion, Crash, Device, DeviceError, DeviceRange, EmulatedCsp, FailureKind, FaultConfig, FaultEvent, FaultKind,
    FaultyDevice, Request, Status, Submit,
};
use peerpath_func::{Format, Level};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

const OUTPUT_AT: u64 = 8 << 20;

/// Slow compress requests (level 12 on 1 MiB each), on separate ranges.
fn slow_requests(n: u64) -> Vec<Request> {
    (0..n)
        .map(|i| {
            Request::compress(
                i,
                Level::new(12).unwrap(),
                Format::Gzip,
                DeviceRange::new(i * (1 << 20), 1 << 20),
                DeviceRange::new(OUTPUT_AT + i * (2 << 20), 2 << 20),
            )
        })
        .collect()
}

/// Polls and waits until the device reports a failure (or `limit` passes
/// from `start`); the time it took is also measured from `start`.
fn until_failure(device: &mut dyn Device, start: Instant, limit: Duration) -> (Vec<Completion>, DeviceError, Duration) {
    let mut done = Vec::new();
    loop {
        assert!(start.elapsed() < limit, "no failure reported within {limit:?}: the host side hangs");
        let failure = match device.poll(&mut done) {
            Err(e) => Some(e),
            Ok(0) => device.wait(Duration::from_millis(200)).err(),
            Ok(_) => None,
        };
        if let Some(e) = failure {
            let took = start.elapsed();
            // Completions the device posted before it failed still come out.
            while device.poll(&mut done).is_ok() {}
            return (done, e, took);
        }
    }
}

/// The completions the device has posted on `emu`'s queue pair, read from
/// the queue file without reaping them (the host has not seen them).
/// Valid while the completion queue has not wrapped around (fewer
/// completions posted since the host connected than the queue's depth).
fn posted_completions(emu: &EmulatedCsp) -> Vec<CqeFields> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(&emu.paths().queues).expect("the queue file");
    let u32_at = |at: usize| {
        let mut b = [0u8; 4];
        file.read_exact_at(&mut b, at as u64).unwrap();
        u32::from_le_bytes(b)
    };
    let g = Geometry { queue_count: u32_at(header::QUEUE_COUNT), queue_depth: u32_at(header::QUEUE_DEPTH) };
    let mut cq = vec![0u8; g.queue_depth as usize * CQE_BYTES];
    file.read_exact_at(&mut cq, (g.queue_base(emu.queue_index()) + g.cq_offset()) as u64).unwrap();
    cq.chunks_exact(CQE_BYTES)
        .map(|e| decode_cqe(&std::array::from_fn(|i| u64::from_le_bytes(e[i * 8..i * 8 + 8].try_into().unwrap()))))
        // A fresh queue pair is zeroed; the device posts its first pass with phase 1.
        .filter(|f| f.phase)
        .collect()
}

#[test]
fn a_device_killed_mid_job_is_detected_and_its_requests_come_back() {
    let mut emu = spawn_csp("kill", 16);
    let paths = emu.paths().clone();
    write(&emu, 0, &protein(8 << 20));
    // Two quick commands that finish (posted, not yet reaped) before the kill.
    for tag in [100, 101] {
        assert!(matches!(emu.submit(Request::fill(tag, 1, DeviceRange::new(OUTPUT_AT - 8192 + (tag - 100) * 4096, 4096))), Submit::Queued));
    }
    let requests = slow_requests(6);
    for r in requests.clone() {
        assert!(matches!(emu.submit(r), Submit::Queued));
    }
    // Wait until the device has posted both fills' completions (4096 bytes
    // each; identify's has 80, a compressed MiB far more), still unreaped.
    let start = Instant::now();
    let fill_done = |f: &CqeFields| f.status_code == Status::Success.code() && f.output_bytes == 4096;
    while posted_completions(&emu).iter().filter(|f| fill_done(f)).count() < 2 {
        assert!(start.elapsed() < Duration::from_secs(30), "the two fills did not complete: {:?}", posted_completions(&emu));
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(emu.in_flight(), 8, "nothing reaped yet");
    // SIGKILL, as the OOM killer would.
    let killed_at = Instant::now();
    // SAFETY: kill takes plain integers; the pid is our child's.
    assert_eq!(unsafe { libc::kill(emu.pid() as libc::pid_t, libc::SIGKILL) }, 0);
    let (done, e, took) = until_failure(&mut emu, killed_at, Duration::from_secs(10));
    assert_eq!(e.kind, FailureKind::Lost, "{e}");
    assert!(e.detail.contains("SIGKILL") || e.detail.contains("closed its connection"), "{e}");
    assert!(took < Duration::from_secs(2), "found out in {took:?}");
    // Every request comes back exactly once: completed, or inside the error.
    let mut tags: Vec<u64> = done.iter().map(|c| c.tag()).chain(e.in_flight.iter().map(|r| r.tag)).collect();
    tags.sort();
    assert_eq!(tags, vec![0, 1, 2, 3, 4, 5, 100, 101]);
    // The device's workers run concurrently, so the two may complete in either order.
    let mut quick: Vec<(u64, Status)> = done.iter().filter(|c| c.tag() >= 100).map(|c| (c.tag(), c.status)).collect();
    quick.sort_by_key(|&(tag, _)| tag);
    assert_eq!(quick, vec![(100, Status::Success), (101, Status::Success)], "completed before the kill, delivered after it");
    // Afterwards: refused, and the same failure without requests.
    match emu.submit(requests[0].clone()) {
        Submit::Refused(r, e2) => {
            assert_eq!(r, requests[0]);
            assert_eq!((e2.kind, e2.in_flight.len()), (FailureKind::Lost, 0));
        }
        other => panic!("expected Refused, got {other:?}"),
    }
    assert!(emu.poll(&mut Vec::new()).is_err());
    drop(emu);
    for p in paths.all() {
        assert!(!p.exists(), "{} left behind after a killed device", p.display());
    }
}

#[test]
fn a_device_that_stops_answering_times_out() {
    let mut options = spawn_options("hang", 8);
    options.command_timeout = Duration::from_millis(500);
    let mut emu = EmulatedCsp::spawn(&options).unwrap();
    write(&emu, 0, &protein(4 << 20));
    let pid = emu.pid() as libc::pid_t;
    // SAFETY: kill takes plain integers; the pid is our child's.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    // The device's clock starts at the first submit: time from before it,
    // so that `took` is at least the command timeout.
    let start = Instant::now();
    for r in slow_requests(2) {
        assert!(matches!(emu.submit(r), Submit::Queued));
    }
    let (_, e, took) = until_failure(&mut emu, start, Duration::from_secs(30));
    assert_eq!(e.kind, FailureKind::Timeout, "{e}");
    assert_eq!(e.in_flight.len(), 2);
    assert!(e.detail.starts_with("no command completed for ") && e.detail.ends_with(" ms (commands in flight: 2)"), "{e}");
    // Below the default timeout (10 s), which the option replaces.
    assert!(took >= Duration::from_millis(500) && took < Duration::from_secs(9), "timed out after {took:?}");
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
}

/// A host that was itself stopped (Ctrl-Z stops the device in its process
/// group too) does not blame the device for that time: after both resume,
/// the commands complete instead of timing out. The host's stop is played
/// by not looking at the device (a sleep) while the device is stopped.
#[test]
fn time_the_host_was_not_looking_is_not_the_devices_silence() {
    let mut options = spawn_options("stopped", 8);
    options.command_timeout = Duration::from_millis(2000);
    let mut emu = EmulatedCsp::spawn(&options).unwrap();
    let data = protein(64 << 10);
    write(&emu, 0, &data);
    let pid = emu.pid() as libc::pid_t;
    // SAFETY: kill takes plain integers; the pid is our child's.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let request = Request::compress(0, Level::new(1).unwrap(), Format::Gzip, DeviceRange::new(0, data.len() as u64), DeviceRange::new(OUTPUT_AT, 1 << 20));
    assert!(matches!(emu.submit(request), Submit::Queued));
    // Twice the command timeout without a look, the device stopped all along.
    std::thread::sleep(Duration::from_millis(4000));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let done = run_to_completion(&mut emu, Vec::new(), Duration::from_secs(30)).unwrap_or_else(|e| panic!("the device was blamed for the host's stop: {e}"));
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, Status::Success);
}

/// Whether process `pid` (our child) has exited: gone, or a zombie not yet reaped.
fn exited(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command name's closing parenthesis.
    stat.rsplit_once(')').is_none_or(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
}

/// A signal mask of /proc/PID/status (`SigIgn:`, `SigBlk:`), as bits.
fn signal_mask(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix(field)).map_or(0, |v| u64::from_str_radix(v.trim(), 16).unwrap())
}

fn signal_bit(signal: libc::c_int) -> u64 {
    1 << (signal - 1)
}

/// Spawn options for a device started as `nohup`, `trap '' INT` or a
/// script's background job start it: with `signals` ignored (SIG_IGN
/// survives exec).
fn spawn_ignoring(tag: &str, signals: &str) -> peerpath_device::emulated::SpawnOptions {
    let mut o = spawn_options(tag, 8);
    o.program = Some("sh".into());
    o.program_args = vec![
        "-c".into(),
        format!("trap '' {signals}; exec \"$0\" \"$@\""),
        env!("CARGO_BIN_EXE_peerpath-csp").into(),
        "serve".into(),
    ];
    o
}

/// SIGHUP and SIGINT ignored when the device started (`nohup`, a script's
/// background job) stay ignored: sent to the device, they neither stop it
/// nor wait in its signalfd; it goes on answering. SIGTERM (not ignored)
/// still stops it cleanly.
#[test]
fn signals_ignored_when_the_device_started_stay_ignored() {
    let mut emu = EmulatedCsp::spawn(&spawn_ignoring("nohup", "HUP INT")).unwrap();
    let pid = emu.pid();
    let (hup, int, term) = (signal_bit(libc::SIGHUP), signal_bit(libc::SIGINT), signal_bit(libc::SIGTERM));
    assert_eq!(signal_mask(pid, "SigIgn:") & (hup | int), hup | int, "the device inherits them ignored");
    for signal in [libc::SIGHUP, libc::SIGINT, libc::SIGHUP, libc::SIGINT] {
        // SAFETY: kill takes plain integers; the pid is our child's.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, signal) }, 0);
    }
    // Time for a device that took them to act on them (it stops at once).
    std::thread::sleep(Duration::from_millis(300));
    assert!(!exited(pid), "the device stopped on an ignored signal");
    write(&emu, 0, b"still here");
    let done = run_to_completion(&mut emu, [Request::copy(1, &[DeviceRange::new(0, 10)], DeviceRange::new(4096, 10))], TIMEOUT)
        .unwrap_or_else(|e| panic!("the device stopped on an ignored signal: {e}"));
    assert_eq!((done[0].status, done[0].output_bytes), (Status::Success, 10));
    assert_eq!(read(&emu, 4096, 10), b"still here");
    // Not blocked, so not kept for a signalfd either: the kernel drops them.
    assert_eq!(signal_mask(pid, "SigBlk:") & (hup | int | term), term, "only SIGTERM is taken into the signalfd");
    let paths = emu.paths().clone();
    let status = emu.shutdown().unwrap().expect("a spawned device has an exit status");
    assert!(status.success(), "SIGTERM stops it cleanly: {status}");
    for p in paths.all() {
        assert!(!p.exists(), "{} left behind", p.display());
    }
}

/// SIGTERM ignored when the device started stays ignored too, except from
/// the host that started it, which stops it with SIGTERM: at once and
/// cleanly, not after the 5 s the host waits before SIGKILL.
#[test]
fn sigterm_ignored_at_start_is_taken_from_the_host_alone() {
    let mut emu = EmulatedCsp::spawn(&spawn_ignoring("noterm", "TERM HUP INT")).unwrap();
    let pid = emu.pid();
    // From another process (a shell's kill): ignored.
    let sent = std::process::Command::new("sh").args(["-c", &format!("kill -TERM {pid} && kill -HUP {pid} && kill -INT {pid}")]).status().unwrap();
    assert!(sent.success());
    std::thread::sleep(Duration::from_millis(300));
    assert!(!exited(pid), "the device stopped on an ignored SIGTERM from another process");
    let done = run_to_completion(&mut emu, [Request::fill(1, 7, DeviceRange::new(0, 4096))], TIMEOUT)
        .unwrap_or_else(|e| panic!("the device stopped on an ignored signal: {e}"));
    assert_eq!(done[0].status, Status::Success);
    // From its host: it stops.
    let start = Instant::now();
    let status = emu.shutdown().unwrap().expect("a spawned device has an exit status");
    assert!(status.success(), "it stops cleanly on its host's SIGTERM: {status}");
    assert!(start.elapsed() < Duration::from_secs(4), "stopped in {:?}", start.elapsed());
}

/// A device stopped by SIGTERM while a host still polls its queue pair
/// never makes that queue pair show completions it did not post: rounds
/// stop it with the host's completion queue wrapped an odd number of times
/// (the host then takes entries of phase 0 as new: a zeroed queue would
/// read as command 0 succeeding with 0 bytes) and an even number, with
/// one to three commands in flight (command id 0 among them or not). The
/// host reports the device stopped on SIGTERM, with the commands it did not
/// complete; what it did complete is real.
#[test]
fn a_device_stopped_by_sigterm_never_shows_completions_it_did_not_post() {
    const DEPTH: u32 = 4;
    let data = protein(8 << 20);
    for round in 0..8u64 {
        let mut emu = spawn_csp("term", DEPTH);
        write(&emu, 0, &data);
        // Identify was one completion; the fills make 4 + round in all, so
        // the host expects phase 0 in rounds 0-3 and phase 1 in rounds 4-7.
        for i in 0..3 + round {
            let done = run_to_completion(&mut emu, [Request::fill(1000 + i, 1, DeviceRange::new(OUTPUT_AT - 4096, 4096))], TIMEOUT).unwrap();
            assert_eq!(done[0].status, Status::Success);
        }
        let slow = slow_requests(1 + round % 3);
        for r in slow.clone() {
            assert!(matches!(emu.submit(r), Submit::Queued));
        }
        let pid = emu.pid();
        // SAFETY: kill takes plain integers; the pid is our child's.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) }, 0);
        let start = Instant::now();
        let mut done = Vec::new();
        let failure = loop {
            assert!(start.elapsed() < Duration::from_secs(20), "round {round}: the host never saw the device stop");
            match emu.poll(&mut done) {
                Err(e) => break Some(e),
                Ok(0) if emu.in_flight() == 0 && exited(pid) => {
                    // Everything completed before it stopped: nothing more may come.
                    match emu.poll(&mut done) {
                        Ok(0) => break None,
                        Ok(n) => panic!("round {round}: {n} completion(s) after the device exited: {:?}", &done[done.len() - n..]),
                        Err(e) => break Some(e),
                    }
                }
                Ok(0) => {
                    if let Err(e) = emu.wait(Duration::from_millis(20)) {
                        break Some(e);
                    }
                }
                Ok(_) => {}
            }
        };
        for c in &done {
            // A member of 1 MiB at level 12 is never 0 bytes: a zeroed entry would be.
            assert!(c.status == Status::Success && c.output_bytes > 0, "round {round}: a completion the device did not post: {c:?}");
        }
        let mut tags: Vec<u64> = done.iter().map(|c| c.tag()).collect();
        if let Some(e) = &failure {
            assert_eq!(e.kind, FailureKind::Lost, "round {round}: {e}");
            assert!(e.detail.contains("stopped on SIGTERM"), "round {round}: the host says the device stopped: {e}");
            tags.extend(e.in_flight.iter().map(|r| r.tag));
        }
        tags.sort();
        assert_eq!(tags, slow.iter().map(|r| r.tag).collect::<Vec<_>>(), "round {round}: every request comes back once");
        drop(emu);
    }
}

#[test]
fn shared_memory_files_are_owner_only_and_removed_on_shutdown() {
    let emu = spawn_csp("files", 8);
    let paths = emu.paths().clone();
    for p in paths.all() {
        let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} has mode {mode:o}", p.display());
    }
    assert!(paths.memory.starts_with("/dev/shm") || !std::path::Path::new("/dev/shm").is_dir());
    let status = emu.shutdown().unwrap().expect("a spawned device has an exit status");
    assert!(status.success(), "{status}");
    for p in paths.all() {
        assert!(!p.exists(), "{} left behind", p.display());
    }
}

#[test]
fn hosts_connect_by_name_each_on_its_own_queue_pair() {
    let mut owner = spawn_csp("connect", 8);
    let name = owner.identity().name.clone();
    let mut second = EmulatedCsp::connect(&ConnectOptions::new(&name)).unwrap();
    assert_ne!(owner.queue_index(), second.queue_index());
    // Two queue pairs only: a third host is refused, and says why.
    let e = EmulatedCsp::connect(&ConnectOptions::new(&name)).err().expect("no free queue pair");
    assert!(e.to_string().contains("every queue pair is taken"), "{e}");
    // Both see one memory: what one writes through the device, the other reads through it.
    write(&owner, 0, b"shared bytes");
    let c = run_to_completion(&mut owner, [Request::copy(1, &[DeviceRange::new(0, 12)], DeviceRange::new(4096, 12))], TIMEOUT).unwrap();
    assert_eq!(c[0].status, Status::Success);
    let c = run_to_completion(&mut second, [Request::crc32(2, &[DeviceRange::new(4096, 12)])], TIMEOUT).unwrap();
    assert_eq!(c[0].input_crc32, libdeflater::crc32(b"shared bytes"));
    // A host that leaves frees its queue pair for the next.
    drop(second);
    let start = Instant::now();
    let mut third = loop {
        match EmulatedCsp::connect(&ConnectOptions::new(&name)) {
            Ok(d) => break d,
            Err(e) => {
                assert!(start.elapsed() < Duration::from_secs(30), "the queue pair is not free again: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    };
    let c = run_to_completion(&mut third, [Request::crc32(3, &[DeviceRange::new(4096, 12)])], TIMEOUT).unwrap();
    assert_eq!(c[0].status, Status::Success);
    drop(third);
    owner.shutdown().unwrap();
    // A second device cannot take a running device's name.
    let running = spawn_csp("dup", 4);
    let mut dup = spawn_options("unused", 4);
    dup.serve.name = running.identity().name.clone();
    let e = EmulatedCsp::spawn(&dup).err().expect("the name is taken");
    assert!(e.to_string().contains("exited before it was ready"), "{e}");
    assert!(e.to_string().contains("already running"), "the host is told why, not only the device's stderr: {e}");
    assert!(running.paths().socket.exists(), "the running device's files stay");
}

#[test]
fn bad_names_and_options_are_refused_before_starting() {
    assert!(ServeOptions::parse_args(&["--queues".into(), "3".into()]).is_err(), "--name is required");
    assert!(ServeOptions::parse_args(&["--name".into(), "a".into(), "--bogus".into(), "1".into()]).is_err());
    let o = ServeOptions::parse_args(&["--name".into(), "csp0".into(), "--memory".into(), "4096".into()]).unwrap();
    assert_eq!(ServeOptions::parse_args(&o.to_args()).unwrap(), o);
    let mut bad = spawn_options("x", 4);
    bad.serve.name = "../etc".into();
    assert!(EmulatedCsp::spawn(&bad).err().unwrap().to_string().contains("invalid device name"));
}

/// Per tag: status and output bytes.
type Outcomes = Vec<(u64, Status, Vec<u8>)>;

/// One run of a seeded workload through a faulty CPU device: per tag,
/// status and output bytes; and the faults injected.
fn faulty_run(seed: u64) -> (Outcomes, Vec<FaultEvent>) {
    let mut config = FaultConfig::seeded(seed);
    config.error_probability = 0.2;
    config.corrupt_probability = 0.2;
    config.latency = Some((Duration::ZERO, Duration::from_millis(3)));
    let mut device = FaultyDevice::new(cpu(2, 4), config);
    let data = protein(1 << 20);
    write(&device, 0, &data);
    let requests: Vec<Request> = (0..40u64)
        .map(|i| {
            let input = DeviceRange::new(i * 16384, 16384);
            let output = DeviceRange::new(OUTPUT_AT + i * 32768, 32768);
            match i % 3 {
                0 => Request::compress(i, Level::new(1).unwrap(), Format::Gzip, input, output),
                1 => Request::copy(i, &[input], output),
                _ => Request::fill(i, i as u8, DeviceRange::new(output.offset, 1000)),
            }
        })
        .collect();
    let done = run_to_completion(&mut device, requests, TIMEOUT).unwrap();
    assert_eq!(done.len(), 40);
    let mut results: Outcomes =
        done.iter().map(|c| (c.tag(), c.status, read(&device, c.request.output.offset, c.output_bytes as usize))).collect();
    results.sort_by_key(|r| r.0);
    (results, device.events())
}

#[test]
fn faulty_wrapper_faults_are_seeded_and_reproducible() {
    let (results_a, events_a) = faulty_run(42);
    let (results_b, events_b) = faulty_run(42);
    assert_eq!(events_a, events_b, "same seed, same faults");
    assert_eq!(results_a, results_b, "same seed, same outcomes");
    let (_, events_c) = faulty_run(43);
    assert_ne!(events_a, events_c, "another seed, other faults");
    let errors: Vec<u64> = events_a.iter().filter(|e| e.fault == FaultKind::Error).map(|e| e.tag).collect();
    let corrupted: Vec<u64> = events_a.iter().filter(|e| matches!(e.fault, FaultKind::Corrupt { .. })).map(|e| e.tag).collect();
    assert!(!errors.is_empty() && !corrupted.is_empty(), "with p = 0.2 over 40 requests both happen: {events_a:?}");
    assert!(events_a.iter().any(|e| matches!(e.fault, FaultKind::Latency { .. })));
    for (tag, status, _) in &results_a {
        assert_eq!(*status == Status::InjectedFault, errors.contains(tag), "tag {tag}");
    }
    // A corrupted output differs from what the device computed.
    let clean = faulty_run_clean();
    for tag in corrupted.iter().filter(|t| !errors.contains(t)) {
        let (_, _, got) = &results_a[*tag as usize];
        let (_, _, want) = &clean[*tag as usize];
        assert_eq!(got.len(), want.len());
        assert_eq!(got.iter().zip(want).filter(|(a, b)| a != b).count(), 1, "tag {tag}: exactly one byte flipped");
    }
}

/// The same workload without faults.
fn faulty_run_clean() -> Outcomes {
    let mut device = FaultyDevice::new(cpu(0, 4), FaultConfig::seeded(0));
    let data = protein(1 << 20);
    write(&device, 0, &data);
    let requests: Vec<Request> = (0..40u64)
        .map(|i| {
            let input = DeviceRange::new(i * 16384, 16384);
            let output = DeviceRange::new(OUTPUT_AT + i * 32768, 32768);
            match i % 3 {
                0 => Request::compress(i, Level::new(1).unwrap(), Format::Gzip, input, output),
                1 => Request::copy(i, &[input], output),
                _ => Request::fill(i, i as u8, DeviceRange::new(output.offset, 1000)),
            }
        })
        .collect();
    let mut done = run_to_completion(&mut device, requests, TIMEOUT).unwrap();
    assert!(device.events().is_empty());
    done.sort_by_key(|c| c.tag());
    done.iter().map(|c| (c.tag(), c.status, read(&device, c.request.output.offset, c.output_bytes as usize))).collect()
}

#[test]
fn faulty_wrapper_crash_kills_the_emulated_device() {
    let mut config = FaultConfig::seeded(7);
    config.crash_after_submissions = Some(3);
    let mut device = FaultyDevice::new(spawn_csp("crash", 8), config);
    write(&device, 0, &protein(4 << 20));
    let requests = slow_requests(3);
    for r in requests {
        assert!(matches!(device.submit(r), Submit::Queued));
    }
    let (done, e, _) = until_failure(&mut device, Instant::now(), Duration::from_secs(10));
    assert_eq!(e.kind, FailureKind::Lost, "{e}");
    let mut tags: Vec<u64> = done.iter().map(|c| c.tag()).chain(e.in_flight.iter().map(|r| r.tag)).collect();
    tags.sort();
    assert_eq!(tags, vec![0, 1, 2], "the caller's tags come back");
    assert_eq!(device.events(), vec![FaultEvent { submission: 3, tag: 2, fault: FaultKind::Crash }]);
}

#[test]
fn faulty_wrapper_crash_on_the_cpu_device_hands_back_everything() {
    let mut config = FaultConfig::seeded(1);
    config.crash_after_submissions = Some(2);
    let mut device = FaultyDevice::new(cpu(0, 4), config);
    assert!(matches!(device.submit(Request::fill(10, 1, DeviceRange::new(0, 10))), Submit::Queued));
    assert!(matches!(device.submit(Request::fill(11, 1, DeviceRange::new(10, 10))), Submit::Queued));
    let e = device.poll(&mut Vec::new()).unwrap_err();
    assert_eq!(e.kind, FailureKind::Lost);
    let mut tags: Vec<u64> = e.in_flight.iter().map(|r| r.tag).collect();
    tags.sort();
    assert_eq!(tags, vec![10, 11]);
    assert!(matches!(device.submit(Request::fill(12, 1, DeviceRange::new(0, 10))), Submit::Refused(..)));
    device.crash(); // crashing twice is harmless
}

fn thread_cpu() -> Duration {
    // SAFETY: timespec is plain data; clock_gettime writes one into it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// utime + stime of a process, in clock ticks (/proc/PID/stat fields 14, 15).
fn process_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn waiting_costs_the_host_no_cpu_and_an_idle_device_sleeps() {
    let mut emu = spawn_csp("nospin", 8);
    write(&emu, 0, &protein(8 << 20));
    // An idle device: no polling loops anywhere. Measured over 500 ms after
    // 200 ms to settle (the end of its start-up); a loaded machine may
    // charge a sleeping process a stray tick, so a window over the limit is
    // measured again, up to three in all (a polling device exceeds it in each).
    std::thread::sleep(Duration::from_millis(200));
    let mut idle_ticks = Vec::new();
    while idle_ticks.len() < 3 && idle_ticks.iter().all(|&t| t > 2) {
        let before = process_ticks(emu.pid());
        std::thread::sleep(Duration::from_millis(500));
        idle_ticks.push(process_ticks(emu.pid()) - before);
    }
    assert!(idle_ticks.iter().any(|&t| t <= 2), "an idle device must sleep: {idle_ticks:?} clock ticks per 500 ms");
    // Slow commands (~0.5-1 s of level-12 compression): the host waits without spinning.
    let requests = slow_requests(4);
    for r in requests {
        assert!(matches!(emu.submit(r), Submit::Queued));
    }
    let (cpu_start, wall_start) = (thread_cpu(), Instant::now());
    let mut done = Vec::new();
    while emu.in_flight() > 0 {
        if emu.poll(&mut done).unwrap() == 0 {
            emu.wait(TIMEOUT).unwrap();
        }
    }
    let (cpu, wall) = (thread_cpu() - cpu_start, wall_start.elapsed());
    assert_eq!(done.len(), 4);
    assert!(wall > Duration::from_millis(100), "the commands were meant to be slow ({wall:?})");
    assert!(cpu < wall / 20, "the host thread used {cpu:?} of CPU over {wall:?} of waiting");
}
