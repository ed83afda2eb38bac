//! Decompression of gzip members on the GPU (`peerpath decompress --engine
//! gpu`): nvCOMP's batched gzip decompressor (naive algorithm) and its
//! batched CRC-32, both in GPU memory.
//!
//! The decompression job splits a file into members by their size fields
//! and hands batches of them to its workers; with a GPU each worker calls
//! [`Inflater::decode`] with its batch. The batch's compressed members are
//! gathered into a pinned host buffer (one CPU copy of the compressed
//! bytes: the members lie in the job's read buffers, which CUDA does not
//! know), copied to GPU memory by the copy engine, decoded there into their
//! places back to back, their CRC-32 computed there, and copied back by the
//! copy engine into a pinned buffer the worker copies into the output (one
//! CPU copy of the decompressed bytes). Each worker has its own lane (CUDA
//! stream, pinned and GPU buffers), so batches overlap on the GPU.
//!
//! A batch is waited for with a deadline (the timeout given when opened):
//! a GPU that does not finish it in time (a kernel or copy that never ends)
//! is a failure the caller retires the GPU for, and the lane's buffers,
//! which the GPU may still write, are left to the process's end rather than
//! freed under it; `dst` is written only after the GPU is done with a batch.
//!
//! The GPU's answer is checked, not trusted: a member whose nvCOMP status is
//! not success, whose size differs from its declared size, or whose CRC-32
//! differs from its trailer's comes back as `Some(reason)`, and the caller
//! decodes it on the CPU (the oracle), which either decodes it (the GPU was
//! wrong: a fallback the report shows) or names the member's error as it
//! would without a GPU.

use crate::device::{grow, ptr};
use crate::nvcomp::{Crc32KernelConf, Crc32Opts, DecompressOpts, Nvcomp};
use cudarc::driver::{sys, CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use peerpath_mem::MappedRegion;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One member of a batch: its whole gzip member (header to trailer) and
/// the bytes it declares it decodes to.
pub struct Member<'a> {
    pub bytes: &'a [u8],
    pub out_len: usize,
}

/// The CRC-32 check: on the GPU, or on the CPU where nvCOMP's CRC-32 refused
/// (said in the description).
enum CrcWhere {
    Gpu,
    Cpu(String),
}

/// Where the lanes' time went, added up over the job (nanoseconds; GPU
/// times from CUDA events on each lane's stream).
#[derive(Default)]
struct Profile {
    batches: AtomicU64,
    members: AtomicU64,
    in_bytes: AtomicU64,
    out_bytes: AtomicU64,
    copy_in_ns: AtomicU64,
    kernel_ns: AtomicU64,
    crc_ns: AtomicU64,
    copy_out_ns: AtomicU64,
    /// On the host: gathering members into the pinned buffer, and copying the output out of it.
    host_in_ns: AtomicU64,
    host_out_ns: AtomicU64,
}

/// A GPU that decodes batches of gzip members.
pub struct Inflater {
    ctx: Arc<CudaContext>,
    nv: Arc<Nvcomp>,
    lanes: Mutex<Vec<Lane>>,
    crc: CrcWhere,
    profile: Profile,
    /// A batch not done within this is a hung GPU.
    timeout: Duration,
    /// A batch timed out: nothing more goes to this GPU, and nothing it may
    /// still write into (lanes, the context) is freed.
    hung: AtomicBool,
    /// What it is, for the report.
    pub description: String,
    pub pci_address: String,
}

impl Inflater {
    /// Opens GPU `ordinal` and nvCOMP, checks that nvCOMP's CRC-32 can run
    /// there, and makes `lanes` lanes with buffers for batches of
    /// `batch_bytes` decompressed (pinning and allocating now, not during
    /// the first batches; they grow if a batch needs more); or says why the
    /// GPU cannot be used. A batch the GPU has not finished after `timeout`
    /// is its failure (it hangs).
    pub fn open(ordinal: usize, nvcomp: Option<&std::path::Path>, lanes: usize, batch_bytes: usize, timeout: Duration) -> Result<Inflater, String> {
        let started = Instant::now();
        let (gpu, nv) = crate::gpu_and_nvcomp(crate::Gpu::open(ordinal), Nvcomp::load(nvcomp).map(Some), None)?;
        let nv = Arc::new(nv.expect("nvCOMP was asked"));
        gpu.ctx.bind_to_thread().map_err(|e| format!("CUDA: {e}"))?;
        let temp = nv.decompress_temp_bytes(64, 1 << 20, 64 << 20, DecompressOpts::naive())?;
        if temp != 0 {
            // The lanes keep no scratch for the decompressor: measured 0 for the naive algorithm.
            return Err(format!("nvCOMP's naive gzip decompressor asks for {temp} bytes of scratch (this nvCOMP is newer than the one peerpath was measured with)"));
        }
        let crc = match nv.crc32_conf(64, 1 << 20) {
            Ok(_) => CrcWhere::Gpu,
            Err(why) => CrcWhere::Cpu(why),
        };
        let mut made = Vec::with_capacity(lanes);
        for _ in 0..lanes.max(1) {
            let mut lane = Lane::new(&gpu.ctx)?;
            lane.reserve(&gpu.ctx, batch_bytes, batch_bytes)?;
            made.push(lane);
        }
        let description = format!(
            "{} (GPU {}, CUDA driver {}), nvCOMP {} batched gzip decompression (naive), CRC-32 {}, {} lane(s) (CUDA streams) for batches of {} MiB; opened in {:.3} s (CUDA context, nvCOMP, pinning, allocation)",
            gpu.info.name,
            ordinal,
            gpu.info.driver_version,
            nv.version,
            match &crc {
                CrcWhere::Gpu => "checked on the GPU".to_string(),
                CrcWhere::Cpu(why) => format!("checked on the host CPU ({why})"),
            },
            made.len(),
            batch_bytes >> 20,
            started.elapsed().as_secs_f64()
        );
        Ok(Inflater {
            ctx: gpu.ctx.clone(),
            nv,
            lanes: Mutex::new(made),
            crc,
            profile: Profile::default(),
            timeout: timeout.max(Duration::from_millis(1)),
            hung: AtomicBool::new(false),
            description,
            pci_address: gpu.info.pci_address.clone(),
        })
    }

    /// Decodes `members` into `dst`, back to back (`dst` holds exactly their
    /// declared sizes). Per member: `None` (decoded, size and CRC-32 as its
    /// trailer says) or the reason the GPU did not (the caller decodes that
    /// one on the CPU; its range of `dst` is undefined). An error is the
    /// GPU's failure (a hung one's among them): nothing of `dst` is to be
    /// trusted.
    pub fn decode(&self, members: &[Member], dst: &mut [u8]) -> Result<Vec<Option<String>>, String> {
        if self.hung.load(Ordering::Acquire) {
            return Err("the GPU hung on an earlier batch".into());
        }
        let total_out: usize = members.iter().map(|m| m.out_len).sum();
        if total_out != dst.len() {
            return Err(format!("internal: {} output bytes for members declaring {total_out}", dst.len()));
        }
        if members.is_empty() {
            return Ok(Vec::new());
        }
        let mut lane = match self.lanes.lock().expect("lanes").pop() {
            Some(l) => l,
            None => Lane::new(&self.ctx)?,
        };
        match lane.decode(self, members, dst) {
            Ok(verdicts) => {
                self.lanes.lock().expect("lanes").push(lane);
                Ok(verdicts)
            }
            // The GPU may still copy into the lane's pinned buffers and
            // read its GPU memory: they stay (leaked) rather than be freed under it.
            Err(LaneError::Hung(why)) => {
                self.hung.store(true, Ordering::Release);
                std::mem::forget(lane);
                Err(why)
            }
            // A lane that failed is not reused; its copies end before its
            // pinned buffers are unpinned (best effort on a failing GPU).
            Err(LaneError::Failed(why)) => {
                let _ = lane.stream.synchronize();
                Err(why)
            }
        }
    }

    /// Zeroes the profile: a decoder kept across jobs reports each job's own.
    pub fn reset_profile(&self) {
        let p = &self.profile;
        for a in [&p.batches, &p.members, &p.in_bytes, &p.out_bytes, &p.copy_in_ns, &p.kernel_ns, &p.crc_ns, &p.copy_out_ns, &p.host_in_ns, &p.host_out_ns] {
            a.store(0, Ordering::Relaxed);
        }
    }

    /// Where the lanes' time went.
    pub fn profile(&self) -> String {
        let p = &self.profile;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let s = |a: &AtomicU64| g(a) as f64 / 1e9;
        let kernel = s(&p.kernel_ns);
        format!(
            "{} batches, {} members, {:.1} MiB in, {:.1} MiB out; on the GPU: copies in {:.3} s, nvCOMP {:.3} s ({:.2} GB/s of output while it ran), CRC-32 {:.3} s, copies out {:.3} s; on the host: gathering members {:.3} s, copying output {:.3} s",
            g(&p.batches),
            g(&p.members),
            g(&p.in_bytes) as f64 / (1 << 20) as f64,
            g(&p.out_bytes) as f64 / (1 << 20) as f64,
            s(&p.copy_in_ns),
            kernel,
            if kernel > 0.0 { g(&p.out_bytes) as f64 / kernel / 1e9 } else { 0.0 },
            s(&p.crc_ns),
            s(&p.copy_out_ns),
            s(&p.host_in_ns),
            s(&p.host_out_ns),
        )
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        if self.hung.load(Ordering::Acquire) {
            // Freeing what a hung GPU may still use (the other lanes' buffers,
            // the context, nvCOMP's library and its kernels) could fault the
            // host or block for ever: all are left to the process's end.
            std::mem::forget(std::mem::take(&mut *self.lanes.lock().unwrap_or_else(|p| p.into_inner())));
            std::mem::forget(self.ctx.clone());
            std::mem::forget(self.nv.clone());
        }
    }
}

// The results' layout in pinned memory takes nvCOMP's size_t as 8 bytes.
const _: () = assert!(std::mem::size_of::<usize>() == 8);

/// Why a lane's batch failed: the GPU said so, or it did not finish in time.
enum LaneError {
    Failed(String),
    Hung(String),
}

impl From<String> for LaneError {
    fn from(why: String) -> LaneError {
        LaneError::Failed(why)
    }
}

/// Pinned host memory (a private mapping registered with CUDA), unpinned on drop.
struct Pinned {
    region: MappedRegion,
    ctx: Arc<CudaContext>,
}

impl Pinned {
    fn new(ctx: &Arc<CudaContext>, bytes: usize) -> Result<Pinned, String> {
        let region = MappedRegion::host(bytes.next_multiple_of(2 << 20)).map_err(|e| e.to_string())?;
        // SAFETY: pins the pages of a mapping this struct owns; unpinned in Drop before the mapping goes.
        unsafe { sys::cuMemHostRegister_v2(region.as_ptr() as *mut c_void, region.len(), sys::CU_MEMHOSTREGISTER_PORTABLE) }
            .result()
            .map_err(|e| format!("CUDA cannot pin {} MiB of host memory: {e}", region.len() >> 20))?;
        Ok(Pinned { region, ctx: ctx.clone() })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if crate::make_current(&self.ctx).is_ok() {
            // SAFETY: pinned in `new`; the lane synchronised its stream after its last copy.
            unsafe { sys::cuMemHostUnregister(self.region.as_ptr() as *mut c_void) };
        }
    }
}

fn grow_pinned(slot: &mut Option<Pinned>, ctx: &Arc<CudaContext>, bytes: usize) -> Result<*mut u8, String> {
    if slot.as_ref().is_none_or(|p| p.region.len() < bytes) {
        *slot = None;
        *slot = Some(Pinned::new(ctx, bytes)?);
    }
    Ok(slot.as_ref().expect("just made").region.as_ptr())
}

/// One worker's CUDA stream and buffers.
struct Lane {
    stream: Arc<CudaStream>,
    host_in: Option<Pinned>,
    host_out: Option<Pinned>,
    /// The members' results (sizes, statuses, CRC-32s), copied back here so
    /// that no copy waits on the GPU without a deadline.
    host_results: Option<Pinned>,
    d_in: Option<CudaSlice<u8>>,
    d_out: Option<CudaSlice<u8>>,
    events: [CudaEvent; 6],
}

impl Lane {
    fn new(ctx: &Arc<CudaContext>) -> Result<Lane, String> {
        ctx.bind_to_thread().map_err(|e| format!("CUDA: {e}"))?;
        let stream = ctx.new_stream().map_err(|e| format!("CUDA stream: {e}"))?;
        let ev = || ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(|e| format!("CUDA event: {e}"));
        Ok(Lane { stream, host_in: None, host_out: None, host_results: None, d_in: None, d_out: None, events: [ev()?, ev()?, ev()?, ev()?, ev()?, ev()?] })
    }

    /// Buffers for batches of `in_bytes` compressed and `out_bytes` decompressed.
    fn reserve(&mut self, ctx: &Arc<CudaContext>, in_bytes: usize, out_bytes: usize) -> Result<(), String> {
        grow_pinned(&mut self.host_in, ctx, in_bytes.max(1))?;
        grow_pinned(&mut self.host_out, ctx, out_bytes.max(1))?;
        grow(&mut self.d_in, in_bytes.max(1), &self.stream)?;
        grow(&mut self.d_out, out_bytes.max(1), &self.stream)?;
        Ok(())
    }

    fn decode(&mut self, inf: &Inflater, members: &[Member], dst: &mut [u8]) -> Result<Vec<Option<String>>, LaneError> {
        let cuda = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
        inf.ctx.bind_to_thread().map_err(cuda)?;
        let n = members.len();
        let stream = self.stream.clone();
        let cu = stream.cu_stream();
        // Inputs at multiples of 8 (nvCOMP's strictest alignment for gzip), outputs back to back as in `dst`.
        let mut in_at = Vec::with_capacity(n);
        let mut total_in = 0usize;
        for m in members {
            in_at.push(total_in);
            total_in = (total_in + m.bytes.len()).next_multiple_of(8);
        }
        let total_out = dst.len();
        let t = Instant::now();
        let host_in = grow_pinned(&mut self.host_in, &inf.ctx, total_in.max(1))?;
        for (m, &at) in members.iter().zip(&in_at) {
            // SAFETY: the pinned buffer holds `total_in` bytes (grown above)
            // and each member's range lies within it; no copy from it is in
            // flight (the stream was synchronised at the end of the last batch).
            unsafe { std::ptr::copy_nonoverlapping(m.bytes.as_ptr(), host_in.add(at), m.bytes.len()) };
        }
        inf.profile.host_in_ns.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let host_out = grow_pinned(&mut self.host_out, &inf.ctx, total_out.max(1))?;
        let d_in = ptr(grow(&mut self.d_in, total_in.max(1), &stream)?, &stream);
        let d_out = ptr(grow(&mut self.d_out, total_out.max(1), &stream)?, &stream);
        self.events[0].record(&stream).map_err(cuda)?;
        // SAFETY: pinned host memory of `total_in` bytes to device scratch of at least as many.
        unsafe { sys::cuMemcpyHtoDAsync_v2(d_in, host_in as *const c_void, total_in, cu) }.result().map_err(cuda)?;
        self.events[1].record(&stream).map_err(cuda)?;
        let in_ptrs: Vec<u64> = in_at.iter().map(|&a| d_in + a as u64).collect();
        let in_sizes: Vec<usize> = members.iter().map(|m| m.bytes.len()).collect();
        let out_caps: Vec<usize> = members.iter().map(|m| m.out_len).collect();
        let mut out_ptrs = Vec::with_capacity(n);
        let mut at = 0u64;
        for m in members {
            out_ptrs.push(d_out + at);
            at += m.out_len as u64;
        }
        let d_in_ptrs = stream.clone_htod(&in_ptrs).map_err(cuda)?;
        let d_in_sizes = stream.clone_htod(&in_sizes).map_err(cuda)?;
        let d_out_caps = stream.clone_htod(&out_caps).map_err(cuda)?;
        let d_out_ptrs = stream.clone_htod(&out_ptrs).map_err(cuda)?;
        let mut d_actual = stream.alloc_zeros::<usize>(n).map_err(cuda)?;
        let mut d_status = stream.alloc_zeros::<i32>(n).map_err(cuda)?;
        let mut d_crc = stream.alloc_zeros::<u32>(n).map_err(cuda)?;
        let mut d_crc_status = stream.alloc_zeros::<i32>(n).map_err(cuda)?;
        {
            let (ip, _g1) = d_in_ptrs.device_ptr(&stream);
            let (isz, _g2) = d_in_sizes.device_ptr(&stream);
            let (oc, _g3) = d_out_caps.device_ptr(&stream);
            let (ac, _g4) = d_actual.device_ptr_mut(&stream);
            let (op, _g5) = d_out_ptrs.device_ptr(&stream);
            let (sp, _g6) = d_status.device_ptr_mut(&stream);
            // SAFETY: device arrays of `n` entries; each input pointer names
            // its member's bytes in `d_in`, each output pointer `out_len`
            // bytes of `d_out` (its capacity, in `d_out_caps`); the naive
            // algorithm takes no scratch (checked when opened); everything
            // outlives the synchronisation below.
            let st = unsafe {
                (inf.nv.decompress_async)(
                    ip as usize as *const *const c_void,
                    isz as usize as *const usize,
                    oc as usize as *const usize,
                    ac as usize as *mut usize,
                    n,
                    std::ptr::null_mut(),
                    0,
                    op as usize as *const *mut c_void,
                    DecompressOpts::naive(),
                    sp as usize as *mut i32,
                    cu as *mut c_void,
                )
            };
            if st != 0 {
                return Err(LaneError::Failed(format!("nvcompBatchedGzipDecompressAsync: {}", inf.nv.describe(st))));
            }
        }
        self.events[2].record(&stream).map_err(cuda)?;
        if let CrcWhere::Gpu = inf.crc {
            let conf: Crc32KernelConf = inf.nv.crc32_conf(n, members.iter().map(|m| m.out_len).max().unwrap_or(1))?;
            let (op, _g1) = d_out_ptrs.device_ptr(&stream);
            let (oc, _g2) = d_out_caps.device_ptr(&stream);
            let (cp, _g3) = d_crc.device_ptr_mut(&stream);
            let (sp, _g4) = d_crc_status.device_ptr_mut(&stream);
            // SAFETY: device arrays of `n` entries naming each member's
            // declared output range in `d_out`; all outlive the synchronisation below.
            let st = unsafe { inf.nv.crc32_async(op, oc, n, cp, Crc32Opts::gzip(conf), sp, cu as *mut c_void) };
            if st != 0 {
                return Err(LaneError::Failed(format!("nvcompBatchedCRC32Async: {}", inf.nv.describe(st))));
            }
        }
        self.events[3].record(&stream).map_err(cuda)?;
        // SAFETY: device scratch of `total_out` bytes to pinned host memory of at least as many.
        unsafe { sys::cuMemcpyDtoHAsync_v2(host_out as *mut c_void, d_out, total_out, cu) }.result().map_err(cuda)?;
        self.events[4].record(&stream).map_err(cuda)?;
        // The results into pinned memory too (a copy into pageable memory
        // would wait for the GPU with no deadline): sizes, then statuses,
        // CRC-32s and their statuses, 4 bytes each.
        let results = grow_pinned(&mut self.host_results, &inf.ctx, n * 20)?;
        let (pa, _g1) = d_actual.device_ptr(&stream);
        let (ps, _g2) = d_status.device_ptr(&stream);
        let (pc, _g3) = d_crc.device_ptr(&stream);
        let (pcs, _g4) = d_crc_status.device_ptr(&stream);
        let mut at = 0;
        for (from, bytes) in [(pa, 8 * n), (ps, 4 * n), (pc, 4 * n), (pcs, 4 * n)] {
            // SAFETY: `bytes` of a device array of `n` entries into the
            // pinned buffer of `20 n` bytes at `at` (the four sum to 20 n).
            unsafe { sys::cuMemcpyDtoHAsync_v2(results.add(at) as *mut c_void, from, bytes, cu) }.result().map_err(cuda)?;
            at += bytes;
        }
        self.events[5].record(&stream).map_err(cuda)?;
        let done = &self.events[5];
        crate::wait_until_done(
            || {
                // SAFETY: queries an event of this lane's context (bound above), recorded above.
                match unsafe { sys::cuEventQuery(done.cu_event()) } {
                    sys::cudaError_enum::CUDA_SUCCESS => Ok(true),
                    sys::cudaError_enum::CUDA_ERROR_NOT_READY => Ok(false),
                    e => Err(format!("CUDA: {e:?}")),
                }
            },
            inf.timeout,
        )
        .map_err(|w| match w {
            crate::Waited::Failed(why) => LaneError::Failed(why),
            crate::Waited::Hung(after) => LaneError::Hung(format!(
                "a batch of {n} members ({:.1} MiB) not done after {:.1} s: the GPU hangs (a kernel or copy that does not end)",
                total_out as f64 / (1 << 20) as f64,
                after.as_secs_f64()
            )),
        })?;
        // SAFETY: the copies into the pinned buffer are complete (the event
        // after them is), and it holds the four arrays back to back.
        let (actual, status, crcs, crc_status) = unsafe {
            (
                std::slice::from_raw_parts(results as *const usize, n).to_vec(),
                std::slice::from_raw_parts(results.add(8 * n) as *const i32, n).to_vec(),
                std::slice::from_raw_parts(results.add(12 * n) as *const u32, n).to_vec(),
                std::slice::from_raw_parts(results.add(16 * n) as *const i32, n).to_vec(),
            )
        };
        let t = Instant::now();
        // SAFETY: the copy into the pinned buffer is complete (the event
        // after it is), and it holds at least `total_out` bytes.
        let decoded = unsafe { std::slice::from_raw_parts(host_out as *const u8, total_out) };
        dst.copy_from_slice(decoded);
        inf.profile.host_out_ns.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let mut verdicts = Vec::with_capacity(n);
        let mut at = 0usize;
        for (k, m) in members.iter().enumerate() {
            let out = &dst[at..at + m.out_len];
            at += m.out_len;
            let trailer = m.bytes.len().checked_sub(8).map(|t| &m.bytes[t..]);
            let Some(trailer) = trailer else {
                verdicts.push(Some("member shorter than a gzip trailer".into()));
                continue;
            };
            let expected_crc = u32::from_le_bytes(trailer[..4].try_into().expect("4 bytes"));
            let expected_len = u32::from_le_bytes(trailer[4..].try_into().expect("4 bytes"));
            let crc = match inf.crc {
                CrcWhere::Gpu if crc_status[k] == 0 => Ok(crcs[k]),
                CrcWhere::Gpu => Err(format!("its CRC-32 on the GPU: {}", inf.nv.describe(crc_status[k]))),
                CrcWhere::Cpu(_) => Ok(peerpath_func::crc32(out)),
            };
            let verdict = if status[k] != 0 {
                Some(format!("nvCOMP: {}", inf.nv.describe(status[k])))
            } else if actual[k] != m.out_len || actual[k] as u32 != expected_len {
                Some(format!("nvCOMP decoded {} bytes where the member declares {} (trailer: {expected_len})", actual[k], m.out_len))
            } else {
                match crc {
                    Err(why) => Some(why),
                    Ok(c) if c != expected_crc => Some(format!("CRC-32 {c:#010x} on the GPU where the trailer says {expected_crc:#010x}")),
                    Ok(_) => None,
                }
            };
            verdicts.push(verdict);
        }
        let ms = |a: &CudaEvent, b: &CudaEvent| a.elapsed_ms(b).map(|m| (m as f64 * 1e6) as u64).map_err(cuda);
        let p = &inf.profile;
        p.copy_in_ns.fetch_add(ms(&self.events[0], &self.events[1])?, Ordering::Relaxed);
        p.kernel_ns.fetch_add(ms(&self.events[1], &self.events[2])?, Ordering::Relaxed);
        p.crc_ns.fetch_add(ms(&self.events[2], &self.events[3])?, Ordering::Relaxed);
        p.copy_out_ns.fetch_add(ms(&self.events[3], &self.events[4])?, Ordering::Relaxed);
        p.batches.fetch_add(1, Ordering::Relaxed);
        p.members.fetch_add(n as u64, Ordering::Relaxed);
        p.in_bytes.fetch_add(in_sizes.iter().sum::<usize>() as u64, Ordering::Relaxed);
        p.out_bytes.fetch_add(total_out as u64, Ordering::Relaxed);
        Ok(verdicts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each block as one of peerpath's gzip members (level 1).
    fn members_of(blocks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut enc = peerpath_func::MemberEncoder::new(peerpath_func::Level::new(1).unwrap());
        blocks
            .iter()
            .map(|b| {
                let mut out = vec![0u8; peerpath_func::member_bound_bytes(b.len())];
                let n = peerpath_func::encode_member(&mut enc, peerpath_func::Format::Gzip, b, &mut out);
                out.truncate(n);
                out
            })
            .collect()
    }

    /// On a machine with a GPU: a batch not done within the timeout (1 ms
    /// for 32 members of 1 MiB, which take tens of milliseconds) is the GPU's
    /// failure ("hangs"), `dst` is left as it was, the decoder refuses every
    /// later batch, and dropping it does not wait for the GPU. Elsewhere:
    /// skipped, saying why.
    #[test]
    fn a_batch_past_the_timeout_is_a_hung_gpu_and_the_decoder_refuses_more() {
        let inf = match Inflater::open(0, None, 1, 32 << 20, Duration::from_millis(1)) {
            Ok(i) => i,
            Err(why) => {
                eprintln!("SKIPPED (no GPU here): {why}");
                return;
            }
        };
        let data = peerpath_func::sample::protein_like(32 << 20, 9);
        let blocks: Vec<&[u8]> = data.chunks(1 << 20).collect();
        let members = members_of(&blocks);
        let view: Vec<Member> = members.iter().zip(&blocks).map(|(m, b)| Member { bytes: m, out_len: b.len() }).collect();
        let mut dst = vec![0x5au8; data.len()];
        let why = inf.decode(&view, &mut dst).expect_err("32 MiB of members are not decoded in 1 ms");
        assert!(why.contains("the GPU hangs"), "{why}");
        assert!(dst.iter().all(|&b| b == 0x5a), "dst untouched by a batch that timed out");
        let again = inf.decode(&view[..1], &mut dst[..blocks[0].len()]).expect_err("retired");
        assert!(again.contains("hung on an earlier batch"), "{again}");
        let t = Instant::now();
        drop(inf);
        assert!(t.elapsed() < Duration::from_secs(5), "dropping a hung decoder waited {:?}", t.elapsed());
    }

    /// On a machine with a GPU and nvCOMP (`PEERPATH_NVCOMP` or the loader's
    /// path): peerpath's members decode on the GPU to exactly their blocks,
    /// and a member with a corrupt byte or a wrong CRC-32 comes back with a
    /// reason, not as data. Elsewhere: skipped, saying why.
    #[test]
    fn members_decode_on_the_gpu_and_bad_ones_come_back_with_a_reason() {
        let inf = match Inflater::open(0, None, 1, 4 << 20, crate::DEFAULT_COMMAND_TIMEOUT) {
            Ok(i) => i,
            Err(why) => {
                eprintln!("SKIPPED (no GPU here): {why}");
                return;
            }
        };
        let data = peerpath_func::sample::protein_like(3 << 20, 7);
        let blocks: Vec<&[u8]> = data.chunks(1 << 20).chain(std::iter::once(&b"x"[..])).collect();
        let mut members = members_of(&blocks);
        let total: usize = blocks.iter().map(|b| b.len()).sum();
        let mut dst = vec![0u8; total];
        let view: Vec<Member> = members.iter().zip(&blocks).map(|(m, b)| Member { bytes: m, out_len: b.len() }).collect();
        let verdicts = inf.decode(&view, &mut dst).expect("decodes");
        assert!(verdicts.iter().all(Option::is_none), "{verdicts:?}");
        assert_eq!(dst, blocks.concat());
        // A wrong CRC-32 in member 1's trailer, a corrupt deflate byte in member 2.
        let l = members[1].len();
        members[1][l - 8] ^= 1;
        let mid = members[2].len() / 2;
        members[2][mid] ^= 0x55;
        let view: Vec<Member> = members.iter().zip(&blocks).map(|(m, b)| Member { bytes: m, out_len: b.len() }).collect();
        let verdicts = inf.decode(&view, &mut dst).expect("a bad member is not the device's failure");
        eprintln!("verdicts: {verdicts:?}\n{}", inf.profile());
        assert!(verdicts[0].is_none() && verdicts[3].is_none(), "{verdicts:?}");
        assert!(verdicts[1].as_deref().is_some_and(|v| v.contains("CRC-32")), "{verdicts:?}");
        assert!(verdicts[2].is_some(), "{verdicts:?}");
    }
}
