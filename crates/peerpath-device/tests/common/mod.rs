//! Helpers shared by the device tests.
#![allow(dead_code)]

use peerpath_device::emulated::{ServeOptions, SpawnOptions};
use peerpath_device::{CpuDevice, CpuDeviceConfig, Device, EmulatedCsp};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

pub const MEMORY_BYTES: usize = 32 << 20;

/// A unique device name per test (tests run in parallel, in several binaries).
pub fn unique_name(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("t{}-{tag}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

pub fn spawn_options(tag: &str, depth: u32) -> SpawnOptions {
    let mut serve = ServeOptions::new(&unique_name(tag));
    serve.memory_bytes = MEMORY_BYTES;
    serve.queues = 2;
    serve.queue_depth = depth;
    serve.workers = 2;
    let mut o = SpawnOptions::new(serve);
    o.program = Some(env!("CARGO_BIN_EXE_peerpath-csp").into());
    o.program_args = vec!["serve".into()];
    o
}

pub fn spawn_csp(tag: &str, depth: u32) -> EmulatedCsp {
    EmulatedCsp::spawn(&spawn_options(tag, depth)).expect("the emulated CSP starts")
}

pub fn cpu(workers: usize, depth: usize) -> CpuDevice {
    let mut c = CpuDeviceConfig::new(MEMORY_BYTES);
    c.workers = workers;
    c.queue_depth = depth;
    CpuDevice::new(c).expect("the CPU device starts")
}

pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Deterministic bytes that do not compress (xorshift64*).
pub fn incompressible(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

/// Real text: the bundled protein sample (repeated if asked for more).
pub fn protein(len: usize) -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/sample/protein.fasta");
    let sample = std::fs::read(path).expect("data/sample/protein.fasta");
    sample.iter().copied().cycle().take(len).collect()
}

pub fn write(device: &dyn Device, offset: u64, data: &[u8]) {
    // SAFETY: the tests write only ranges no command in flight uses.
    unsafe { device.memory().host_write(offset, data) };
}

pub fn read(device: &dyn Device, offset: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    // SAFETY: the tests read only ranges no command in flight writes.
    unsafe { device.memory().host_read(offset, &mut out) };
    out
}
