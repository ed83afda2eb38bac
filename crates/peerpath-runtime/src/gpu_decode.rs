//! Decompression and verification on the GPU (`--engine gpu`): the job's
//! workers hand their batches of members to [`peerpath_gpu::Inflater`]
//! (one CUDA stream each) instead of ISA-L. The GPU's answer is checked
//! member by member (size and CRC-32 against the trailer); a member the GPU
//! did not decode is decoded on the CPU, which either gives the member's
//! error as it would without a GPU, or decodes it: then the GPU was wrong,
//! and the report's fallbacks say so. A GPU that fails outright (CUDA or
//! nvCOMP refuses a batch, or a batch is not done within the spec's timeout)
//! is retired; the CPU decodes from that batch on.
//! With `no_fallback` either is the job's error (exit 15) instead.

use crate::report::{DeviceReport, Fallback};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// How to decode on a GPU.
#[derive(Clone, Debug)]
pub struct GpuDecodeSpec {
    pub ordinal: usize,
    /// nvCOMP's library (`None`: $PEERPATH_NVCOMP, the loader's path, Python's wheel).
    pub nvcomp: Option<PathBuf>,
    /// Decompressed bytes per batch (one nvCOMP launch): members are
    /// decoded in parallel within a launch, so batches must hold many.
    pub batch_bytes: usize,
    /// Fail (exit 15) instead of letting the CPU decode what the GPU did not.
    pub no_fallback: bool,
    /// A batch the GPU has not finished after this long is a hung GPU: retired, the CPU goes on.
    pub timeout: std::time::Duration,
    /// Worker threads to use instead where the GPU does not start (the
    /// job's thread count was the GPU's default, not the user's).
    pub cpu_threads: Option<usize>,
}

impl Default for GpuDecodeSpec {
    fn default() -> Self {
        GpuDecodeSpec { ordinal: 0, nvcomp: None, batch_bytes: 96 << 20, no_fallback: false, timeout: peerpath_gpu::DEFAULT_COMMAND_TIMEOUT, cpu_threads: None }
    }
}

/// What one batch decoded on the GPU (for the ledger).
#[derive(Clone, Copy, Default)]
pub(crate) struct OnGpu {
    pub members: u64,
    pub in_bytes: u64,
    pub out_bytes: u64,
}

#[derive(Default)]
struct State {
    /// Why the GPU was retired, and the members the CPU decoded after.
    failed: Option<String>,
    after_failure: u64,
    /// Members the GPU did not decode that the CPU did, and the first reason.
    redone: u64,
    first_redo: Option<String>,
}

/// What decodes a batch of members on a device: the GPU's
/// [`peerpath_gpu::Inflater`], or a test's stand-in (the fault tests run
/// where there is no GPU).
pub(crate) trait BatchInflater: Send + Sync {
    /// As [`peerpath_gpu::Inflater::decode`]: per member `None` (decoded
    /// and checked) or why not; an error is the device's failure.
    fn decode(&self, members: &[peerpath_gpu::Member], dst: &mut [u8]) -> Result<Vec<Option<String>>, String>;
    fn description(&self) -> String;
    fn profile(&self) -> String;
    /// Starts the profile afresh (kept across jobs).
    fn reset_profile(&self) {}
}

impl BatchInflater for peerpath_gpu::Inflater {
    fn decode(&self, members: &[peerpath_gpu::Member], dst: &mut [u8]) -> Result<Vec<Option<String>>, String> {
        peerpath_gpu::Inflater::decode(self, members, dst)
    }
    fn description(&self) -> String {
        self.description.clone()
    }
    fn profile(&self) -> String {
        peerpath_gpu::Inflater::profile(self)
    }
    fn reset_profile(&self) {
        peerpath_gpu::Inflater::reset_profile(self)
    }
}

/// The inflater a job server keeps for its next decompression on the same
/// GPU with the same lanes and batches (`devices::keeping`): what it was
/// opened as, itself, and the jobs it served.
type Kept = (String, Box<dyn BatchInflater>, u64);
static KEPT: Mutex<Option<Kept>> = Mutex::new(None);

pub(crate) struct GpuDecoder {
    pub inflater: Box<dyn BatchInflater>,
    pub name: String,
    no_fallback: bool,
    state: Mutex<State>,
    members: AtomicU64,
    /// What it is kept as after the job, and the jobs it served before it (a job server's).
    keep: Option<(String, u64)>,
}

impl GpuDecoder {
    /// Opens the GPU with a lane per worker thread (in a job server: the
    /// one an earlier job opened the same way, if kept).
    pub fn open(spec: &GpuDecodeSpec, lanes: usize) -> Result<GpuDecoder, String> {
        let name = format!("gpu{}", spec.ordinal);
        let key = format!("GPU {} {:?}, {} lanes, batches of {} bytes, hung after {:?}", spec.ordinal, spec.nvcomp, lanes, spec.batch_bytes, spec.timeout);
        let kept = KEPT.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some((k, inflater, jobs)) = kept.filter(|(k, ..)| crate::devices::keeping() && *k == key) {
            inflater.reset_profile();
            let mut d = GpuDecoder::with(inflater, name, spec.no_fallback);
            d.keep = Some((k, jobs));
            return Ok(d);
        }
        let inflater = peerpath_gpu::Inflater::open(spec.ordinal, spec.nvcomp.as_deref(), lanes, spec.batch_bytes, spec.timeout)?;
        let mut d = GpuDecoder::with(Box::new(inflater), name, spec.no_fallback);
        d.keep = crate::devices::keeping().then_some((key, 0));
        Ok(d)
    }

    pub fn with(inflater: Box<dyn BatchInflater>, name: String, no_fallback: bool) -> GpuDecoder {
        GpuDecoder { inflater, name, no_fallback, state: Mutex::default(), members: AtomicU64::new(0), keep: None }
    }

    /// A decoder to be kept after its job as `key` (what `open` does in a job server).
    #[cfg(test)]
    pub fn kept_as(mut self, key: &str) -> GpuDecoder {
        self.keep = Some((key.to_string(), 0));
        self
    }

    /// The kept inflater's key and the jobs it served, taken (for tests).
    #[cfg(test)]
    pub fn take_kept() -> Option<(String, u64)> {
        KEPT.lock().unwrap_or_else(|p| p.into_inner()).take().map(|(k, _, jobs)| (k, jobs))
    }

    /// What it is, for the report: kept from an earlier job, it says so.
    pub fn description(&self) -> String {
        match &self.keep {
            Some((_, jobs)) if *jobs > 0 => format!("kept open across jobs (this is its job {}); {}", jobs + 1, self.inflater.description()),
            _ => self.inflater.description(),
        }
    }

    /// The job is over: a decoder that may be kept and was not retired
    /// waits for the next job; any other closes here.
    pub fn give_back(self) {
        if let (Some((key, jobs)), true) = (self.keep, self.state.into_inner().unwrap_or_else(|p| p.into_inner()).failed.is_none()) {
            *KEPT.lock().unwrap_or_else(|p| p.into_inner()) = Some((key, self.inflater, jobs + 1));
        }
    }

    /// Whether batches still go to the GPU.
    pub fn usable(&self) -> bool {
        self.state.lock().expect("state").failed.is_none()
    }

    pub fn decoded(&self, on: &OnGpu) {
        self.members.fetch_add(on.members, Ordering::Relaxed);
    }

    /// The GPU failed on a batch: retired (or, with `no_fallback`, the job's error).
    pub fn failed(&self, why: String, members: u64) -> Result<(), String> {
        if self.no_fallback {
            return Err(format!("GPU {} failed: {why} (--no-fallback)", self.name));
        }
        let mut s = self.state.lock().expect("state");
        s.failed.get_or_insert(why);
        s.after_failure += members;
        Ok(())
    }

    /// A batch decoded on the CPU because the GPU was retired before it.
    pub fn after_failure(&self, members: u64) {
        self.state.lock().expect("state").after_failure += members;
    }

    /// The CPU decoded member `index`, which the GPU did not (`why`).
    pub fn redone(&self, index: u64, why: String) -> Result<(), String> {
        if self.no_fallback {
            return Err(format!("GPU {} did not decode member {index}, which the CPU decodes: {why} (--no-fallback)", self.name));
        }
        let mut s = self.state.lock().expect("state");
        s.redone += 1;
        s.first_redo.get_or_insert_with(|| format!("member {index}: {why}"));
        Ok(())
    }

    pub fn fallbacks(&self) -> Vec<Fallback> {
        let s = self.state.lock().expect("state");
        let mut out = Vec::new();
        if s.redone > 0 {
            out.push(Fallback::DecodedOnCpu {
                device: self.name.clone(),
                why: format!("the GPU's output did not check (first: {})", s.first_redo.as_deref().unwrap_or("?")),
                members: s.redone,
            });
        }
        if let Some(why) = &s.failed {
            out.push(Fallback::DecodedOnCpu { device: self.name.clone(), why: format!("failed and was retired: {why}"), members: s.after_failure });
        }
        out
    }

    pub fn report(&self) -> DeviceReport {
        let s = self.state.lock().expect("state");
        let members = self.members.load(Ordering::Relaxed);
        DeviceReport {
            name: self.name.clone(),
            kind: self.description(),
            memory_bytes: 0,
            sources: Vec::new(),
            sources_bytes: None,
            members,
            commands: BTreeMap::from([("gzip_decompress_member".to_string(), members)]),
            memory_traffic_bytes: 0,
            process_cpu_s: None,
            start_cpu_s: None,
            populated_bytes: 0,
            busy_s: None,
            utilisation_pct: None,
            memory_resident_bytes: None,
            memory_huge_page_bytes: None,
            failure: s.failed.clone(),
            profile: Some(self.inflater.profile()),
            storage_io: None,
            blocks_in_flight: None,
        }
    }
}
