//! What the commands that run a function on an emulated CSP share
//! (`ec encode`, `scan`, `dedup store` with `--engine emulated`): starting
//! the device, running commands to completion, and streaming a file
//! through its memory in blocks with a carry.

use peerpath_device::{run_to_completion, Completion, Device, DeviceRange, EmulatedCsp, Function, FunctionKind, Request, ServeOptions, SpawnOptions, Status, Submit};
use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Starts an emulated CSP (`memory_bytes`, one queue) that runs `needs`,
/// declared hung after `command_timeout` with commands in flight and none
/// completing (`--device-timeout`; else its default). Its memory goes where
/// compress's devices put theirs (/dev/shm, or the temporary directory where
/// /dev/shm has too little room: said on stderr) and is made resident as it
/// starts, so a file system without room for it is a device that did not
/// start, saying so, not a SIGBUS (or a read into it failing) mid-job.
/// It is named as compress's devices are, `pp<pid>-<tag><n>`
/// (`tag`: lowercase letters), and as they do it first removes the files
/// of devices of jobs whose process is gone (a job killed with its process
/// group leaves its device's memory files) where its own may go.
pub(crate) fn spawn(tag: &str, memory_bytes: usize, queue_depth: u32, workers: u32, needs: FunctionKind, command_timeout: Option<Duration>) -> Result<EmulatedCsp, String> {
    let name = peerpath_runtime::EmulatedSpec::job_device_name(tag);
    let mut serve = ServeOptions::new(&name);
    serve.memory_bytes = memory_bytes;
    serve.queues = 1;
    serve.queue_depth = queue_depth;
    serve.workers = workers;
    let mut spec = peerpath_runtime::EmulatedSpec::new();
    spec.memory_bytes = memory_bytes;
    let default_dir = serve.dir.clone();
    // Sweeps dead jobs' devices' files there first (compress's and device jobs').
    let memory_at = spec.place_shared_memory(&mut serve.dir);
    // All of it: the job uses its whole memory.
    serve.populate_bytes = memory_bytes;
    let moved = serve.dir != default_dir;
    let mut options = SpawnOptions::new(serve);
    if let Some(t) = command_timeout {
        options.command_timeout = t;
    }
    let dev = EmulatedCsp::spawn(&options).map_err(|e| format!("the emulated CSP did not start ({} MiB of device {memory_at}): {e}", memory_bytes.div_ceil(1 << 20)))?;
    if moved {
        eprintln!("peerpath: emulated CSP {name}: {memory_at}");
    }
    if !dev.functions().contains(needs) {
        return Err(format!("the emulated CSP does not offer {}", needs.name()));
    }
    Ok(dev)
}

/// Runs `requests` to completion, in tag order; any status but success is an error.
pub(crate) fn run_all<D: Device + ?Sized>(dev: &mut D, requests: Vec<Request>) -> Result<Vec<Completion>, String> {
    let names: Vec<(u64, &'static str)> = requests.iter().map(|r| (r.tag, r.function.kind().name())).collect();
    let mut done = answers(dev, requests)?;
    if let Some(c) = done.iter().find(|c| c.status != Status::Success) {
        succeeded(dev, c, names.iter().find(|(t, _)| *t == c.tag()).map_or("a command", |(_, n)| n))?;
    }
    done.sort_by_key(|c| c.tag());
    Ok(done)
}

/// Runs `requests` to completion; their answers whatever their statuses.
fn answers<D: Device + ?Sized>(dev: &mut D, requests: Vec<Request>) -> Result<Vec<Completion>, String> {
    let who = who(dev);
    run_to_completion(dev, requests, TIMEOUT).map_err(|e| format!("{who} failed: {e}"))
}

/// The device in words, for errors: an emulated CSP (a process of its own) or the device by name.
fn who<D: Device + ?Sized>(dev: &D) -> String {
    if dev.process_id().is_some() {
        "the emulated CSP".into()
    } else {
        format!("device {}", dev.name())
    }
}

/// Runs `requests` to completion side by side (the device's workers take
/// them at once); their completions in tag order, whatever their status
/// (the caller says what a failed one means). A device that fails is an error.
pub(crate) fn run_side_by_side<D: Device + ?Sized>(dev: &mut D, requests: Vec<Request>) -> Result<Vec<Completion>, String> {
    let who = who(dev);
    let mut done = run_to_completion(dev, requests, TIMEOUT).map_err(|e| format!("{who} failed: {e}"))?;
    done.sort_by_key(|c| c.tag());
    Ok(done)
}

/// Slots of device memory [`three_slots`] moves data through.
pub(crate) const SLOTS: usize = 3;

/// The device jobs' pipeline: `n` steps, step s's data in slot s % [`SLOTS`] of
/// the device's memory. Step s's `work` (on this thread: the device's
/// commands) runs while `read(s + 1)` fills the next slot and `write(s - 1)`
/// empties the one before, each on a thread of its own: no two share a slot.
/// The results of `work`, in order. The first error wins in that order
/// (the work's, the read's, the write's: a failed device makes the others fail).
pub(crate) fn three_slots<T, E: Send>(n: u64, read: impl Fn(u64) -> Result<(), E> + Sync, mut work: impl FnMut(u64) -> Result<T, E>, write: impl Fn(u64) -> Result<(), E> + Sync) -> Result<Vec<T>, E> {
    let mut out = Vec::with_capacity(n as usize);
    if n == 0 {
        return Ok(out);
    }
    read(0)?;
    for s in 0..n {
        let (read, write) = (&read, &write);
        let done = std::thread::scope(|scope| {
            let ahead = (s + 1 < n).then(|| scope.spawn(move || read(s + 1)));
            let behind = (s > 0).then(|| scope.spawn(move || write(s - 1)));
            let done = work(s);
            let joined = |h: Option<std::thread::ScopedJoinHandle<Result<(), E>>>| h.map_or(Ok(()), |h| h.join().expect("a device job's I/O thread panicked"));
            let (ahead, behind) = (joined(ahead), joined(behind));
            let done = done?;
            ahead?;
            behind?;
            Ok(done)
        })?;
        out.push(done);
    }
    write(n - 1)?;
    Ok(out)
}

/// Runs one request to completion.
pub(crate) fn run_one<D: Device + ?Sized>(dev: &mut D, request: Request) -> Result<Completion, String> {
    run_all(dev, vec![request])?.pop().ok_or_else(|| "the emulated CSP lost a command".to_string())
}

/// A pass's report of what this process's CPU copied in or out of the
/// device's memory (measured: [`peerpath_device::DeviceMemory::host_copied_bytes`]
/// over the pass) beside the payload the kernel and the device moved.
pub(crate) fn host_copies(copied: u64, what: &str, payload: u64) -> String {
    format!("bytes this process copied to or from the device's memory: {copied} ({what}; the {payload} payload bytes moved by the kernel and the device)")
}

/// The same figures for a JSON report: the bytes this process copied to or
/// from the device's memory (measured), what they were, and the payload
/// bytes the kernel and the device moved.
#[derive(serde::Serialize)]
pub(crate) struct HostCopies {
    pub bytes: u64,
    pub of: String,
    pub payload_bytes: u64,
}

impl HostCopies {
    /// As [`host_copies`] words it.
    pub fn text(&self) -> String {
        host_copies(self.bytes, &self.of, self.payload_bytes)
    }
}

/// Runs `request` to completion and gives its answer whatever its status
/// (for a status that is the data's fault, not the device's; see [`succeeded`]).
pub(crate) fn run_one_answer<D: Device + ?Sized>(dev: &mut D, request: Request) -> Result<Completion, String> {
    answers(dev, vec![request])?.pop().ok_or_else(|| format!("{} lost a command", who(dev)))
}

/// `c`'s status, any but success an error as [`run_all`] words it.
pub(crate) fn succeeded<D: Device + ?Sized>(dev: &D, c: &Completion, name: &str) -> Result<(), String> {
    match c.status {
        Status::Success => Ok(()),
        status => Err(format!("{} answered {status:?} to {name}", who(dev))),
    }
}

/// Commands in flight on a device, each awaited by its tag: completions of
/// others that come first are kept until their turn. What lets a job keep
/// several commands running (blocks compressing on every device worker)
/// while it runs the ordered ones one at a time.
#[derive(Default)]
pub(crate) struct Commands {
    /// Tags given so far (the number of commands).
    issued: u64,
    names: HashMap<u64, &'static str>,
    done: HashMap<u64, Completion>,
    polled: Vec<Completion>,
}

impl Commands {
    /// Commands issued so far.
    pub fn count(&self) -> u64 {
        self.issued
    }

    /// Queues a command (waiting for room in the queue); its tag.
    pub fn submit(&mut self, dev: &mut dyn Device, function: Function, inputs: Vec<DeviceRange>, output: DeviceRange) -> Result<u64, String> {
        self.issued += 1;
        let tag = self.issued;
        self.names.insert(tag, function.kind().name());
        let mut request = Request { tag, function, inputs, output };
        loop {
            match dev.submit(request) {
                Submit::Queued => return Ok(tag),
                Submit::Busy(r) => {
                    request = r;
                    self.step(dev)?;
                }
                Submit::Refused(_, e) => return Err(format!("{} failed: {e}", who(dev))),
            }
        }
    }

    /// Waits for command `tag`; any status but success is an error naming its function.
    pub fn wait(&mut self, dev: &mut dyn Device, tag: u64) -> Result<Completion, String> {
        let c = loop {
            if let Some(c) = self.done.remove(&tag) {
                break c;
            }
            self.step(dev)?;
        };
        let name = self.names.remove(&tag).unwrap_or("a command");
        if c.status != Status::Success {
            return Err(format!("{} answered {:?} to {name}", who(dev), c.status));
        }
        Ok(c)
    }

    /// Runs one command to completion (others may be running beside it).
    pub fn run(&mut self, dev: &mut dyn Device, function: Function, inputs: Vec<DeviceRange>, output: DeviceRange) -> Result<Completion, String> {
        let tag = self.submit(dev, function, inputs, output)?;
        self.wait(dev, tag)
    }

    /// Takes the completions there, or waits for one (a device that
    /// completes nothing for the timeout is hung: an error).
    fn step(&mut self, dev: &mut dyn Device) -> Result<(), String> {
        let who = who(dev);
        let failed = |e| format!("{who} failed: {e}");
        let since = std::time::Instant::now();
        while dev.poll(&mut self.polled).map_err(failed)? == 0 {
            if dev.in_flight() == 0 {
                return Err(format!("{who} lost a command"));
            }
            let waited = since.elapsed();
            if waited >= TIMEOUT {
                return Err(format!("{who} completed nothing in {} s", TIMEOUT.as_secs()));
            }
            dev.wait(TIMEOUT - waited).map_err(failed)?;
        }
        self.done.extend(self.polled.drain(..).map(|c| (c.tag(), c)));
        Ok(())
    }
}

/// The device a device job drives: `dev`, with seeded faults injected
/// where asked (a testing aid: a crash is SIGKILL of its process).
pub(crate) fn with_faults(dev: EmulatedCsp, faults: Option<peerpath_device::FaultConfig>) -> Box<dyn Device> {
    match faults {
        Some(f) => Box::new(peerpath_device::FaultyDevice::new(dev, f)),
        None => Box::new(dev),
    }
}

/// Whether `f` was opened with O_DIRECT (its transfers are DMA, not copies).
pub(crate) fn is_direct(f: &File) -> bool {
    // SAFETY: F_GETFL on a descriptor we hold reads its status flags only.
    let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
    flags >= 0 && flags & libc::O_DIRECT != 0
}

/// Reads `want` bytes of `src` at `at` into device memory at `dst` (the
/// kernel writes straight into it; with O_DIRECT whole 4 KiB pages, so the
/// range at `dst` must hold `want` rounded up to 4 KiB). An error if the
/// file ends first.
///
/// # Safety
/// `dst` points into the device's mapped memory with room as above, and no
/// command uses that range until this returns.
pub(crate) unsafe fn read_into(src: &File, at: u64, want: usize, dst: *mut u8) -> Result<(), String> {
    let direct = is_direct(src);
    let mut got = 0usize;
    while got < want {
        let len = if direct { (want - got).next_multiple_of(4096) } else { want - got };
        // SAFETY: the caller's contract: at most `len` bytes from dst + got lie in the range.
        let n = unsafe { libc::pread(src.as_raw_fd(), dst.add(got).cast(), len, (at + got as u64) as libc::off_t) };
        match n {
            n if n > 0 => got += n as usize,
            0 => return Err("the source shrank while it was read".into()),
            _ => return Err(format!("reading the source into device memory: {}", std::io::Error::last_os_error())),
        }
    }
    Ok(())
}

/// Writes `len` bytes of device memory at `from` to `dst` at `at`.
///
/// # Safety
/// `from` points at `len` bytes in the device's mapped memory that no
/// command writes until this returns.
pub(crate) unsafe fn write_from(from: *const u8, len: usize, dst: &File, at: u64) -> std::io::Result<()> {
    let mut done = 0usize;
    while done < len {
        // SAFETY: the caller's contract: len - done bytes from from + done are readable.
        let n = unsafe { libc::pwrite(dst.as_raw_fd(), from.add(done).cast(), len - done, (at + done as u64) as libc::off_t) };
        match n {
            n if n > 0 => done += n as usize,
            0 => return Err(std::io::Error::new(std::io::ErrorKind::WriteZero, "the target took no bytes")),
            _ => return Err(std::io::Error::last_os_error()),
        }
    }
    Ok(())
}

/// What one function did on a device, from the device's own statistics.
#[derive(serde::Serialize)]
pub(crate) struct DeviceStage {
    pub function: &'static str,
    pub commands: u64,
    pub input_bytes: u64,
    pub output_bytes: u64,
    /// Time running its commands, summed over the device's workers.
    pub busy_seconds: f64,
    /// Input bytes per busy second of one worker (GB/s), where it took input.
    pub gb_per_s_in: Option<f64>,
}

/// Per function with commands: its commands, bytes in and out, and busy
/// time summed over the device's workers, with the rate that gives; `None`
/// if the device keeps no statistics.
pub(crate) fn stage_figures(dev: &mut dyn Device) -> Option<Vec<DeviceStage>> {
    let s = dev.stats()?;
    Some(
        s.functions
            .iter()
            .filter(|f| f.commands > 0)
            .map(|f| {
                let busy = f.busy_ns as f64 / 1e9;
                DeviceStage {
                    function: f.function.map_or("?", |k| k.name()),
                    commands: f.commands,
                    input_bytes: f.input_bytes,
                    output_bytes: f.output_bytes,
                    busy_seconds: busy,
                    gb_per_s_in: (f.input_bytes > 0).then(|| f.input_bytes as f64 / busy.max(1e-9) / 1e9),
                }
            })
            .collect(),
    )
}

/// [`stage_figures`] in words, for a report.
pub(crate) fn render_stages(stages: &[DeviceStage]) -> String {
    let parts: Vec<String> = stages
        .iter()
        .map(|f| {
            let rate = f.gb_per_s_in.map_or(String::new(), |r| format!(" ({r:.2} GB/s in, a worker)"));
            format!("{} {}x, {} in -> {} out, {:.3} s busy{rate}", f.function, f.commands, peerpath_metrics::human_bytes(f.input_bytes), peerpath_metrics::human_bytes(f.output_bytes), f.busy_seconds)
        })
        .collect();
    parts.join("; ")
}

/// What each function did on the device, for a report: [`stage_figures`]
/// in words; `None` if it keeps no statistics.
pub(crate) fn stages(dev: &mut dyn Device) -> Option<String> {
    stage_figures(dev).map(|s| render_stages(&s))
}

/// Time the device's workers spent running `kind`, summed over them, from
/// its own statistics; `None` if it keeps none.
pub(crate) fn busy(dev: &mut dyn Device, kind: FunctionKind) -> Option<Duration> {
    let s = dev.stats()?;
    Some(Duration::from_nanos(s.functions.iter().filter(|f| f.function == Some(kind)).map(|f| f.busy_ns).sum()))
}

/// How a transfer moved, in words.
pub(crate) fn moved(direct: bool) -> &'static str {
    if direct {
        "by DMA (O_DIRECT)"
    } else {
        "by kernel copies (no O_DIRECT here)"
    }
}

/// `config` with its hang timeout set where one was given (`--device-timeout`).
pub(crate) fn timed(config: peerpath_gpu::GpuDeviceConfig, command_timeout: Option<Duration>) -> peerpath_gpu::GpuDeviceConfig {
    peerpath_gpu::GpuDeviceConfig { command_timeout: command_timeout.unwrap_or(config.command_timeout), ..config }
}

/// Opens the GPU `config` names, or says why not ("GPU N unavailable: ...").
pub(crate) fn open_gpu(config: peerpath_gpu::GpuDeviceConfig) -> Result<Box<dyn Device>, String> {
    let ordinal = config.ordinal;
    let dev = peerpath_gpu::GpuDevice::open(&config).map_err(|why| format!("GPU {ordinal} unavailable: {why}"))?;
    Ok(Box::new(dev))
}

/// Two buffers in device memory from `base`, each room for a carried tail
/// of up to `carry` bytes and then a block of `block` bytes (both
/// multiples of 4 KiB, so blocks are aligned for O_DIRECT). On a staged
/// device (a GPU), blocks are read into the same ranges from `window_at`
/// on (its host window) and copied to its own memory by the device.
pub(crate) struct Blocks {
    pub base: u64,
    pub carry: usize,
    pub block: usize,
    /// 0: the device's memory is all mapped.
    pub window_at: u64,
}

impl Blocks {
    pub const fn bytes(&self) -> usize {
        2 * (self.carry + self.block)
    }

    fn block_at(&self, b: usize) -> u64 {
        self.base + (b * (self.carry + self.block) + self.carry) as u64
    }

    /// Reads `file` into the device's memory a block at a time (the kernel
    /// writes straight into it) and calls `each(device, range, at_end)`
    /// with the range holding the carried tail and the new block; it
    /// returns how many bytes of the range it used, and the rest is carried
    /// (by the device: a Copy into the other buffer, so the two never
    /// overlap) to the front of the next block. The next block is read into
    /// the other buffer while `each` runs (the device works on one buffer,
    /// the kernel fills the other's block area; the carry goes in front of
    /// it afterwards). Returns the bytes read.
    pub fn stream<D: Device + ?Sized>(&self, dev: &mut D, file: &File, mut each: impl FnMut(&mut D, DeviceRange, bool) -> Result<usize, String>) -> Result<u64, String> {
        let area = |dev: &D, b: usize| dev.memory().io_ptr(DeviceRange::new(self.window_at + self.block_at(b), self.block as u64)).map(|p| p as usize).ok_or("the device's memory is not mapped for I/O");
        let areas = [area(dev, 0)?, area(dev, 1)?];
        let (mut at, mut tail, mut buf, mut n_cmd) = (0u64, 0usize, 0usize, 0u64);
        // SAFETY: buffer 0's block area, inside the device's mapped memory; no command uses it yet.
        let mut n = unsafe { read_block(file, areas[0], self.block, 0)? };
        loop {
            at += n as u64;
            let at_end = n < self.block;
            if self.window_at > 0 && n > 0 {
                // Staged: the block read into the window goes to the device's own memory.
                n_cmd += 1;
                let own = DeviceRange::new(self.block_at(buf), n as u64);
                run_one(dev, Request::copy(n_cmd, &[DeviceRange::new(self.window_at + own.offset, own.len)], own))?;
            }
            let range = DeviceRange::new(self.block_at(buf) - tail as u64, (tail + n) as u64);
            let other = 1 - buf;
            let (used, ahead) = std::thread::scope(|scope| {
                // SAFETY: the other buffer's block area: no command uses it (the
                // device works on `range`, in this buffer) until the read is joined.
                let ahead = (!at_end).then(|| scope.spawn(|| unsafe { read_block(file, areas[other], self.block, at) }));
                let used = each(dev, range, at_end);
                (used, ahead.map(|h| h.join().expect("the read-ahead thread panicked")))
            });
            let used = used?;
            let Some(ahead) = ahead else { return Ok(at) };
            let rest = tail + n - used.min(tail + n);
            if rest > self.carry {
                return Err(format!("{rest} bytes to carry after a block, more than the {} this path holds", self.carry));
            }
            if rest > 0 {
                n_cmd += 1;
                let from = DeviceRange::new(range.offset + used as u64, rest as u64);
                run_one(dev, Request::copy(n_cmd, &[from], DeviceRange::new(self.block_at(other) - rest as u64, rest as u64)))?;
            }
            (tail, buf, n) = (rest, other, ahead?);
        }
    }
}

/// Reads up to `len` bytes of `file` at `at` into device memory at address
/// `to` (one `pread`: fewer bytes only at the end of the file); the bytes read.
///
/// # Safety
/// `to` is the start of `len` bytes of the device's mapped memory that
/// nothing else reads or writes until this returns.
unsafe fn read_block(file: &File, to: usize, len: usize, at: u64) -> Result<usize, String> {
    // SAFETY: the caller's contract: `len` writable bytes at `to`.
    let n = unsafe { libc::pread(file.as_raw_fd(), to as *mut libc::c_void, len, at as libc::off_t) };
    if n < 0 {
        return Err(format!("reading into device memory: {}", std::io::Error::last_os_error()));
    }
    Ok(n as usize)
}

#[cfg(test)]
pub(crate) mod testing {
    use peerpath_device::{Completion, CpuDevice, CpuDeviceConfig, Device, DeviceMemory, FunctionKind, Request, Status, Submit};
    use peerpath_mem::{MappedRegion, MemoryDomain};
    use std::sync::Arc;

    /// A CPU device whose memory is `staged` (its own part the engine cannot
    /// reach and a host window, as a GPU's) or mapped whole (as an emulated CSP's).
    pub(crate) fn cpu_device(staged: bool, bytes: usize) -> CpuDevice {
        let window = Arc::new(MappedRegion::host(bytes).expect("host memory"));
        let memory = if staged { DeviceMemory::staged(bytes, MemoryDomain::Emulated { device: "cpu0".into() }, window) } else { DeviceMemory::region(window) };
        CpuDevice::with_memory(CpuDeviceConfig { name: "cpu0".into(), memory_bytes: 0, workers: 2, queue_depth: 16, whole_chunk_commands: false, storage_io: false, memory_files: false }, memory).expect("CPU device")
    }

    /// A device that calls its `nth` completion of `kind` (counting from 0) `CorruptInput`
    /// though the command went well: a device wrong about the data, which the host must not
    /// take at its word.
    pub(crate) struct Accuses<D: Device> {
        pub inner: D,
        pub kind: FunctionKind,
        pub nth: usize,
        pub seen: usize,
    }

    impl<D: Device> Device for Accuses<D> {
        fn name(&self) -> &str {
            self.inner.name()
        }
        fn functions(&self) -> peerpath_device::FunctionSet {
            self.inner.functions()
        }
        fn memory(&self) -> &DeviceMemory {
            self.inner.memory()
        }
        fn queue_depth(&self) -> usize {
            self.inner.queue_depth()
        }
        fn in_flight(&self) -> usize {
            self.inner.in_flight()
        }
        fn parallelism(&self) -> Option<usize> {
            self.inner.parallelism()
        }
        fn submit(&mut self, r: Request) -> Submit {
            self.inner.submit(r)
        }
        fn poll(&mut self, completions: &mut Vec<Completion>) -> Result<usize, peerpath_device::DeviceError> {
            let from = completions.len();
            let n = self.inner.poll(completions)?;
            for c in &mut completions[from..] {
                if c.request.function.kind() == self.kind {
                    if self.seen == self.nth && c.status == Status::Success {
                        c.status = Status::CorruptInput;
                        c.output_bytes = 0;
                    }
                    self.seen += 1;
                }
            }
            Ok(n)
        }
        fn wait(&mut self, t: std::time::Duration) -> Result<(), peerpath_device::DeviceError> {
            self.inner.wait(t)
        }
    }

    /// `n` pseudo-random bytes (xorshift) from `seed`.
    pub(crate) fn xorshift(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }
}
