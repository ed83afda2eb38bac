//! `peerpath dedup store --engine emulated`: chunking and fingerprints
//! near the data. The source is read by the kernel straight into an
//! emulated CSP's memory in 4 MiB blocks (`pread`, O_DIRECT where taken);
//! the device cuts content-defined chunks and digests them
//! (`Function::ChunkFingerprint`), returning only boundaries and digests
//! (48 bytes a chunk); chunks the store lacks are written to the pack from
//! the device's memory (`write`; pack appends are not block-aligned, so
//! the kernel copies them through the page cache), duplicates never move.
//! The last chunk of a block, which more data could change, is carried to
//! the next block by the device (`device_job::Blocks`).
//! With `--compress`, the device also makes each new chunk's gzip member
//! in its memory (`Function::GzipCompressMember`, the CPU's encoder: the
//! same bytes), and the pack gets the member from there.
//!
//! `--engine gpu` runs the same pass on a GPU (peerpath's FastCDC and BLAKE3
//! kernels; BLAKE3 only, no `--compress`), whose memory storage reaches only
//! through a pinned host window: the layout is there twice, each block is
//! read into the window and copied to GPU memory by the device, the results
//! and each new chunk are copied back to the window to be read or written.

use crate::dedup::{PackWriter, GZIP_MEMBER, RAW};
use crate::device_job::{self, Blocks};
use peerpath_device::{Device, DeviceRange, EmulatedCsp, Function, FunctionKind, Request, CHUNK_ENTRY_BYTES};
use peerpath_mem::MemoryDomain;
use peerpath_func::dedup::{ChunkParams, Fingerprint};
use peerpath_func::{member_bound_bytes, Format, Level};
use std::fs::File;
use std::os::fd::AsRawFd;

const BLOCK: usize = 4 << 20;

/// The device's memory: the results, then the blocks (the carry: the
/// largest chunk), then room for one compressed chunk.
fn layout(p: ChunkParams) -> (usize, Blocks, DeviceRange) {
    let result_bytes = (16 + CHUNK_ENTRY_BYTES * ((BLOCK + p.max).div_ceil(p.min) + 1)).next_multiple_of(4096);
    let blocks = Blocks { base: result_bytes as u64, carry: p.max.next_multiple_of(4096), block: BLOCK, window_at: 0 };
    let member = DeviceRange::new((result_bytes + blocks.bytes()) as u64, member_bound_bytes(p.max).next_multiple_of(4096) as u64);
    (result_bytes, blocks, member)
}

/// Bytes of device memory the pass lays out for `p`.
pub(crate) fn memory_bytes(p: ChunkParams) -> usize {
    let (_, _, member) = layout(p);
    (member.offset + member.len) as usize
}

pub(crate) fn start(p: ChunkParams, compress: bool, timeout: Option<std::time::Duration>) -> Result<EmulatedCsp, String> {
    let dev = device_job::spawn("dd", memory_bytes(p), 8, 1, FunctionKind::ChunkFingerprint, timeout)?;
    if compress && !dev.functions().contains(FunctionKind::GzipCompressMember) {
        return Err("the emulated CSP does not offer gzip compression".into());
    }
    Ok(dev)
}

/// What the device pass gave: the file's digests in order, its length, and how it moved.
pub(crate) struct DeviceChunks {
    pub digests: Vec<u8>,
    pub bytes: u64,
    pub pass: DevicePass,
}

/// How a file's chunks were made on a device, for the store's report.
#[derive(serde::Serialize)]
pub(crate) struct DevicePass {
    /// The device's name.
    pub device: String,
    /// A GPU (staged through its pinned host window), else an emulated CSP.
    pub gpu: bool,
    /// The file read by DMA (O_DIRECT), else by the kernel's copies.
    pub read_by_dma: bool,
    pub commands: u64,
    /// Bytes of boundaries and digests the device answered.
    pub result_bytes: u64,
    pub host_copies: device_job::HostCopies,
}

impl DevicePass {
    /// In words: how the chunks were made and moved (`hash`: the store's
    /// fingerprint; `compress`: --compress's level, which the emulated CSP applies).
    pub fn text(&self, hash: &str, compress: Option<u32>) -> String {
        let (moved, commands, metadata, copies) = (device_job::moved(self.read_by_dma), peerpath_runtime::report::count(self.commands, "command"), self.result_bytes, self.host_copies.text());
        if self.gpu {
            format!(
                "chunked and fingerprinted ({hash}) on 1 GPU ({}): read {moved} into its pinned host window and copied to GPU memory by the device, {commands}, {metadata} bytes of boundaries and digests back, new chunks copied back to the window and written from it to the pack (kernel copies); {copies} (storage DMAs into and out of the pinned window; the GPU's copy engines move them to and from its memory)",
                self.device
            )
        } else {
            format!(
                "chunked and fingerprinted ({hash}){} on 1 emulated CSP: read {moved} into its memory, {commands}, {metadata} bytes of boundaries and digests back, new chunks written from its memory to the pack (kernel copies: pack appends are not block-aligned); {copies}",
                compress.map_or(String::new(), |l| format!(", new chunks compressed (level {l})")),
            )
        }
    }
}

/// Opens GPU `ordinal` with peerpath's FastCDC and BLAKE3 kernels (no
/// nvCOMP) for a store cutting with `p`: the layout in its memory and again
/// in its pinned host window. Or why it cannot serve this store.
pub(crate) fn start_gpu(ordinal: usize, p: ChunkParams, fp: Fingerprint, compress: bool, timeout: Option<std::time::Duration>) -> Result<Box<dyn Device>, String> {
    if fp != Fingerprint::Blake3 {
        return Err(format!("the GPU's kernels fingerprint with BLAKE3, and this store uses {}", fp.name()));
    }
    if compress {
        return Err("the GPU device does not compress chunks (--compress)".into());
    }
    let bytes = memory_bytes(p);
    let config = peerpath_gpu::GpuDeviceConfig { dedup: true, ..peerpath_gpu::GpuDeviceConfig::staged(ordinal, bytes, 8) };
    device_job::open_gpu(device_job::timed(config, timeout))
}

pub(crate) fn chunk(dev: &mut dyn Device, src: &File, (p, fp, compress): (ChunkParams, Fingerprint, Option<Level>), pack: &mut PackWriter) -> Result<DeviceChunks, String> {
    let (result_bytes, mut blocks, member) = layout(p);
    // A staged device (a GPU): the layout again in its window, from window_at.
    let window_at = dev.memory().dma_window().map_or(0, |w| w.0);
    if window_at > 0 && window_at < member.offset + member.len {
        return Err("the device's memory is not staged as this pass needs".into());
    }
    blocks.window_at = window_at;
    let io = |r: DeviceRange| DeviceRange::new(window_at + r.offset, r.len);
    let on_gpu = matches!(dev.memory().domain(), MemoryDomain::Gpu { .. });
    let function = |at_end| Function::ChunkFingerprint { min_kib: (p.min / 1024) as u16, avg_kib: (p.avg / 1024) as u16, max_kib: (p.max / 1024) as u16, sha256: fp == Fingerprint::Sha256, at_end };
    let (mut digests, mut commands, mut metadata) = (Vec::new(), 0u64, 0u64);
    let copied_before = dev.memory().host_copied_bytes();
    let bytes = blocks.stream(dev, src, |dev, input, at_end| {
        let c = device_job::run_one(dev, Request::chunk_fingerprint(commands, function(at_end), input, DeviceRange::new(0, result_bytes as u64)))?;
        commands += 1;
        metadata += c.output_bytes;
        if c.output_bytes < 16 || c.output_bytes > result_bytes as u64 {
            return Err(format!("the device answered {} bytes of results", c.output_bytes));
        }
        let results = DeviceRange::new(0, c.output_bytes);
        if window_at > 0 {
            commands += 1;
            device_job::run_one(dev, Request::copy(commands, &[results], io(results)))?;
        }
        let mut result = vec![0u8; c.output_bytes as usize];
        // SAFETY: the command (and the copy) has completed; the range is not in use.
        unsafe { dev.memory().host_read(io(results).offset, &mut result) };
        let word = |b: &[u8]| u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
        let consumed = tiling(&result, input.len, p.max as u64)? as usize;
        for e in result[16..].chunks(CHUNK_ENTRY_BYTES) {
            let (off, len) = (word(&e[..8]), word(&e[8..16]) as usize);
            let digest: [u8; 32] = e[16..48].try_into().expect("32 bytes");
            digests.extend_from_slice(&digest);
            if pack.has(&digest).map_err(|e| e.to_string())? {
                continue;
            }
            let chunk = DeviceRange::new(input.offset + off, len as u64);
            let (from, codec) = match compress {
                Some(level) => {
                    let c = device_job::run_one(dev, Request::compress(commands, level, Format::Gzip, chunk, member))?;
                    commands += 1;
                    if (c.output_bytes as usize) < len {
                        (DeviceRange::new(member.offset, c.output_bytes), GZIP_MEMBER)
                    } else {
                        (chunk, RAW)
                    }
                }
                None => (chunk, RAW),
            };
            let bytes = from.len as usize;
            // Staged: the chunk goes to the window's copy of the member room to be written.
            let from = if window_at > 0 {
                commands += 1;
                let to = io(DeviceRange::new(member.offset, from.len));
                device_job::run_one(dev, Request::copy(commands, &[from], to))?;
                to
            } else {
                from
            };
            let ptr = dev.memory().io_ptr(from).ok_or("a chunk outside the device's memory")?;
            pack.append(digest, (bytes, codec, len), |f, _| {
                let mut done = 0;
                while done < bytes {
                    // SAFETY: reads bytes - done bytes inside the chunk or its member, which lie
                    // in the device's mapped memory; no command writes them until the next
                    // chunk (the member) or block (the chunk).
                    let w = unsafe { libc::write(f.as_raw_fd(), ptr.add(done).cast(), bytes - done) };
                    if w <= 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    done += w as usize;
                }
                Ok(())
            })
            .map_err(|e| e.to_string())?;
        }
        if at_end && consumed != input.len as usize {
            return Err(format!("the device covered {consumed} of the last {} bytes", input.len));
        }
        Ok(consumed)
    })?;
    let host_copies = device_job::HostCopies { bytes: dev.memory().host_copied_bytes() - copied_before, of: "the boundaries and digests".into(), payload_bytes: bytes };
    let pass = DevicePass { device: dev.name().to_string(), gpu: on_gpu, read_by_dma: device_job::is_direct(src), commands, result_bytes: metadata, host_copies };
    Ok(DeviceChunks { digests, bytes, pass })
}

/// Checks a `ChunkFingerprint` answer (`result`: the count and bytes consumed, then the entries)
/// for a block of `block` bytes: the chunks tile what the device says it consumed, in order from
/// 0, each at most `max` bytes, and the answer is exactly that long. The bytes consumed, or why
/// the device's answer cannot be right (it has failed: nothing it said is kept).
fn tiling(result: &[u8], block: u64, max: u64) -> Result<u64, String> {
    let word = |b: &[u8]| u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
    let (count, consumed) = (word(&result[..8]), word(&result[8..16]));
    if count.checked_mul(CHUNK_ENTRY_BYTES as u64).and_then(|n| n.checked_add(16)) != Some(result.len() as u64) {
        return Err(format!("the device answered {} bytes of results for {count} chunks", result.len()));
    }
    let mut tiled = 0u64;
    for e in result[16..].chunks(CHUNK_ENTRY_BYTES) {
        let (off, len) = (word(&e[..8]), word(&e[8..16]));
        // `off == tiled <= block`: the subtraction cannot wrap.
        if off != tiled || len == 0 || len > max || len > block - off {
            return Err(format!("the device's chunk at {off} of {len} bytes does not follow the one before (at {tiled}) inside the {block}-byte block"));
        }
        tiled += len;
    }
    if tiled != consumed {
        return Err(format!("the device's chunks cover {tiled} bytes, but it says it consumed {consumed} of {block}"));
    }
    Ok(consumed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(consumed: u64, chunks: &[(u64, u64)]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&(chunks.len() as u64).to_le_bytes());
        r.extend_from_slice(&consumed.to_le_bytes());
        for &(off, len) in chunks {
            r.extend_from_slice(&off.to_le_bytes());
            r.extend_from_slice(&len.to_le_bytes());
            r.extend_from_slice(&[7u8; 32]);
        }
        r
    }

    /// A device's chunk list is held to tiling its block: a gap, an overlap, an empty or
    /// oversized chunk, one past the block, a count or consumed figure that disagrees.
    #[test]
    fn a_device_s_chunks_must_tile_what_it_consumed() {
        assert_eq!(tiling(&answer(300, &[(0, 100), (100, 200)]), 1000, 256), Ok(300));
        assert_eq!(tiling(&answer(0, &[]), 1000, 256), Ok(0), "nothing cut yet (all carried to the next block)");
        for (what, bad, block) in [
            ("a gap", answer(300, &[(0, 100), (101, 199)]), 1000),
            ("an overlap", answer(300, &[(0, 100), (99, 201)]), 1000),
            ("an empty chunk", answer(100, &[(0, 100), (100, 0)]), 1000),
            ("over the largest", answer(300, &[(0, 300)]), 1000),
            ("past the block", answer(300, &[(0, 200), (200, 100)]), 250),
            ("consumed disagrees", answer(250, &[(0, 100), (100, 200)]), 1000),
            ("not starting at 0", answer(100, &[(4, 100)]), 1000),
        ] {
            assert!(tiling(&bad, block, 256).is_err(), "{what}");
        }
        let mut short = answer(300, &[(0, 100), (100, 200)]);
        short.truncate(short.len() - 1);
        assert!(tiling(&short, 1000, 256).unwrap_err().contains("for 2 chunks"));
        let mut huge = answer(0, &[]);
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(tiling(&huge, 1000, 256).is_err(), "a count that overflows");
    }
}
