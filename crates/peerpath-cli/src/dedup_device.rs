//! `peerpath dedup store --engine emulated`: chunking and fingerprints
//! near the data. The source is read by the kernel straight into an
//! emulated CSP's memory in 4 MiB blocks (`pread`, O_DIRECT where taken);
//! the device cuts content-defined chunks and digests them
//! (`Function::ChunkFingerprint`), returning only boundaries and digests
//! (48 bytes a chunk); chunks the store lacks are written to the pack from
//! the device's memory (`pwrite`; pack appends are not block-aligned, so
//! the kernel copies them through the page cache), duplicates never move.
//! The last chunk of a block, which more data could change, is carried to
//! the front of the next block by the device (`Function::Copy`, into the
//! other of two buffers).

use crate::dedup::PackWriter;
use peerpath_device::{run_to_completion, Completion, Device, DeviceRange, EmulatedCsp, Function, FunctionKind, Request, ServeOptions, SpawnOptions, Status, CHUNK_ENTRY_BYTES};
use peerpath_func::dedup::{ChunkParams, Fingerprint};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::time::Duration;

const BLOCK: usize = 4 << 20;
const TIMEOUT: Duration = Duration::from_secs(60);

/// The device's memory: results first, then two buffers of a carry area
/// (the largest chunk) and a block.
struct Layout {
    result_bytes: usize,
    carry: usize,
}

impl Layout {
    fn new(p: ChunkParams) -> Layout {
        let result_bytes = (16 + CHUNK_ENTRY_BYTES * (BLOCK + p.max).div_ceil(p.min) + CHUNK_ENTRY_BYTES).next_multiple_of(4096);
        Layout { result_bytes, carry: p.max.next_multiple_of(4096) }
    }
    fn block_at(&self, b: usize) -> u64 {
        (self.result_bytes + b * (self.carry + BLOCK) + self.carry) as u64
    }
    fn bytes(&self) -> usize {
        self.result_bytes + 2 * (self.carry + BLOCK)
    }
}

pub(crate) fn start(p: ChunkParams) -> Result<EmulatedCsp, String> {
    let mut serve = ServeOptions::new(&format!("dd{}", std::process::id()));
    serve.memory_bytes = Layout::new(p).bytes();
    serve.queues = 1;
    serve.queue_depth = 8;
    serve.workers = 1;
    let dev = EmulatedCsp::spawn(&SpawnOptions::new(serve)).map_err(|e| format!("the emulated CSP did not start: {e}"))?;
    if !dev.functions().contains(FunctionKind::ChunkFingerprint) {
        return Err("the emulated CSP does not offer chunk and fingerprint".into());
    }
    Ok(dev)
}

fn run(dev: &mut EmulatedCsp, r: Request) -> Result<Completion, String> {
    let mut done = run_to_completion(dev, [r], TIMEOUT).map_err(|e| format!("the emulated CSP failed: {e}"))?;
    let c = done.pop().ok_or("the emulated CSP lost a command")?;
    if c.status != Status::Success {
        return Err(format!("the emulated CSP answered {:?}", c.status));
    }
    Ok(c)
}

/// What the device pass gave: the file's digests in order, its length, and how it moved.
pub(crate) struct DeviceChunks {
    pub digests: Vec<u8>,
    pub bytes: u64,
    pub how: String,
}

fn is_direct(f: &File) -> bool {
    // SAFETY: F_GETFL on a descriptor we hold reads its status flags only.
    let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
    flags >= 0 && flags & libc::O_DIRECT != 0
}

pub(crate) fn chunk(dev: &mut EmulatedCsp, src: &File, p: ChunkParams, fp: Fingerprint, pack: &mut PackWriter) -> Result<DeviceChunks, String> {
    let layout = Layout::new(p);
    let function = |at_end| Function::ChunkFingerprint { min_kib: (p.min / 1024) as u16, avg_kib: (p.avg / 1024) as u16, max_kib: (p.max / 1024) as u16, sha256: fp == Fingerprint::Sha256, at_end };
    let (mut digests, mut at, mut tail, mut buf, mut blocks, mut metadata) = (Vec::new(), 0u64, 0usize, 0usize, 0u64, 0u64);
    loop {
        let dst = dev.memory().io_ptr(DeviceRange::new(layout.block_at(buf), BLOCK as u64)).ok_or("the device's memory is not mapped for I/O")?;
        // SAFETY: the kernel writes at most BLOCK bytes at dst, buffer `buf`'s block area in
        // the device's mapped memory; no command uses it now.
        let n = unsafe { libc::pread(src.as_raw_fd(), dst.cast(), BLOCK, at as libc::off_t) };
        if n < 0 {
            return Err(format!("reading into device memory: {}", std::io::Error::last_os_error()));
        }
        let n = n as usize;
        at += n as u64;
        let at_end = n < BLOCK;
        let input = DeviceRange::new(layout.block_at(buf) - tail as u64, (tail + n) as u64);
        let c = run(dev, Request::chunk_fingerprint(blocks, function(at_end), input, DeviceRange::new(0, layout.result_bytes as u64)))?;
        blocks += 1;
        metadata += c.output_bytes;
        let mut result = vec![0u8; c.output_bytes as usize];
        // SAFETY: the command has completed; its output range is not in use.
        unsafe { dev.memory().host_read(0, &mut result) };
        let word = |b: &[u8]| u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
        let (count, consumed) = (word(&result[..8]) as usize, word(&result[8..16]) as usize);
        for e in result[16..].chunks(CHUNK_ENTRY_BYTES).take(count) {
            let (off, len) = (word(&e[..8]), word(&e[8..16]) as usize);
            let digest: [u8; 32] = e[16..48].try_into().expect("32 bytes");
            digests.extend_from_slice(&digest);
            if pack.has(&digest).map_err(|e| e.to_string())? {
                continue;
            }
            let ptr = dev.memory().io_ptr(DeviceRange::new(input.offset + off, len as u64)).ok_or("a chunk outside the device's memory")?;
            pack.append(digest, len, |f, _| {
                let mut done = 0;
                while done < len {
                    // SAFETY: reads len - done bytes inside the chunk, which lies in the
                    // device's mapped memory; no command writes it until the next block.
                    let w = unsafe { libc::write(f.as_raw_fd(), ptr.add(done).cast(), len - done) };
                    if w <= 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    done += w as usize;
                }
                Ok(())
            })
            .map_err(|e| e.to_string())?;
        }
        if at_end {
            if consumed != tail + n {
                return Err(format!("the device covered {consumed} of the last {} bytes", tail + n));
            }
            let how = format!(
                "chunked and fingerprinted ({}) on 1 emulated CSP: read {} into its memory in {blocks} block(s), {metadata} bytes of boundaries and digests back, new chunks written from its memory to the pack (kernel copies: pack appends are not block-aligned); payload bytes into this process: 0",
                fp.name(),
                if is_direct(src) { "by DMA (O_DIRECT)" } else { "by kernel copies (no O_DIRECT here)" }
            );
            return Ok(DeviceChunks { digests, bytes: at, how });
        }
        let rest = tail + n - consumed;
        if rest > layout.carry {
            return Err(format!("{rest} bytes left after a block, more than the largest chunk"));
        }
        let other = 1 - buf;
        if rest > 0 {
            let from = DeviceRange::new(input.offset + consumed as u64, rest as u64);
            run(dev, Request::copy(blocks, &[from], DeviceRange::new(layout.block_at(other) - rest as u64, rest as u64)))?;
        }
        tail = rest;
        buf = other;
    }
}
