//! The compress executor: one loop on one I/O engine drives every stream of
//! a job, each where it is placed. Streams on the host CPU go through the
//! CPU pass (`cpu_pass.rs`: read pool, worker threads, ordered writer);
//! streams on devices through the device side (`offload.rs`); a stream whose
//! device fails is handed over and goes on on the CPU at once, while the
//! other streams keep going.

use crate::buf::JobBuf;
use crate::cpu_pass::{CpuParams, CpuPass};
use crate::error::{JobError, Result};
use crate::offload::{DeviceSide, OnDevices, Outcome};
use crate::report::MemoryReport;
use crate::stream::Stream;
use crate::token::Token;
use peerpath_io::{IoEngine, Waker};
use peerpath_metrics::{CpuAccount, Ledger};

/// What the loop ran, for the report.
pub(crate) struct Executed {
    /// The CPU pass's memory and where its time went (`None`: no stream ran on the CPU).
    pub cpu_memory: Option<MemoryReport>,
    pub pipeline: Option<peerpath_metrics::PipelineReport>,
    pub devices: Option<OnDevices>,
}

/// Everything the loop drives and reports to.
pub(crate) struct Executor<'j> {
    pub streams: &'j mut [Stream],
    pub engine: &'j mut dyn IoEngine<JobBuf>,
    pub ledger: &'j Ledger,
    pub cpu: &'j CpuAccount,
    pub cpu_params: CpuParams,
    pub no_fallback: bool,
    pub progress: &'j mut dyn FnMut(u64),
}

impl Executor<'_> {
    /// Runs every stream to its end. `devices`, if any, hold the streams
    /// placed on them (started with `DeviceSide::new` on this engine and waker).
    pub fn run(mut self, waker: &Waker, devices: Option<DeviceSide>, fallbacks: &mut Vec<crate::report::Fallback>) -> Result<Executed> {
        let mut dev = devices;
        let mut cpu: Option<CpuPass> = None;
        for s in self.streams.iter() {
            crate::job::copy_memory_files_on_kernel_workers(self.engine, &s.source, s.writer.as_ref());
        }
        // The CPU pass may fail to start (its memory, its threads): the devices are then abandoned too.
        let mut started = Ok(());
        for i in 0..self.streams.len() {
            if self.streams[i].on_cpu {
                started = self.cpu_pass(&mut cpu, waker).and_then(|c| c.start_stream(self.streams, i));
                if started.is_err() {
                    break;
                }
            }
        }
        let mut clock = peerpath_metrics::PipelineClock::default();
        let result = started.and_then(|()| self.drive(waker, &mut cpu, &mut dev, &mut clock));
        let (cpu_memory, pipeline) = cpu.map(|c| c.finish(&mut clock)).unzip(); // joins the workers
        let devices = match (dev, &result) {
            (Some(d), Ok(())) => Some(d.finish(self.streams, self.engine, self.ledger, self.no_fallback, fallbacks)?),
            (Some(d), Err(_)) => {
                d.abandon(self.engine);
                None
            }
            (None, _) => None,
        };
        result.map(|()| Executed { cpu_memory, pipeline, devices })
    }

    /// The CPU pass, started when the first stream needs it (or the error that kept it from starting).
    fn cpu_pass<'c>(&self, cpu: &'c mut Option<CpuPass>, waker: &Waker) -> Result<&'c mut CpuPass> {
        if cpu.is_none() {
            let blocking = self.engine.kind() == peerpath_io::EngineKind::Syscalls;
            *cpu = Some(CpuPass::new(&self.cpu_params, self.streams.len(), blocking, waker.clone(), self.cpu.clone())?);
        }
        Ok(cpu.as_mut().expect("started above"))
    }

    fn drive(&mut self, waker: &Waker, cpu: &mut Option<CpuPass>, dev: &mut Option<DeviceSide>, clock: &mut peerpath_metrics::PipelineClock) -> Result<()> {
        let mut completions = Vec::new();
        let _woken = crate::cancel::wake_on_cancel(waker);
        loop {
            // Results are taken before reads are issued, so every buffer they
            // free is read into before the wait.
            let t = std::time::Instant::now();
            if let Some(c) = cpu.as_mut() {
                c.take_results(self.streams, self.engine, self.ledger)?;
                clock.spent("taking results and writing them", t.elapsed());
            }
            if let Some(d) = dev.as_mut() {
                let t = std::time::Instant::now();
                for (i, outcome) in d.step(self.streams, self.engine, self.ledger)? {
                    self.apply(i, outcome, d, cpu, waker)?;
                }
                clock.spent("driving devices", t.elapsed());
            }
            if let Some(c) = cpu.as_mut() {
                let t = std::time::Instant::now();
                c.issue_reads(self.streams, self.engine)?;
                clock.spent("submitting reads", t.elapsed());
            }
            let done = cpu.as_ref().map_or(0, |c| c.done_bytes) + dev.as_ref().map_or(0, |d| d.done_bytes);
            (self.progress)(done);
            crate::cancel::check()?;
            if self.streams.iter().all(Stream::finished) && dev.as_ref().is_none_or(|d| !d.active()) {
                return Ok(());
            }
            // With nothing in flight a wait could never end.
            let workers = cpu.as_ref().map_or(0, CpuPass::in_flight);
            let commands = dev.as_ref().map_or(0, DeviceSide::commands_pending);
            if self.engine.in_flight() == 0 && workers == 0 && commands == 0 && dev.as_ref().is_none_or(|d| !d.active()) {
                let state = cpu.as_ref().map_or("no CPU pass".into(), CpuPass::state);
                return Err(JobError::Internal(format!(
                    "compress stalled with no I/O and no work in flight ({state}): {}",
                    self.streams.iter().map(Stream::state).collect::<Vec<_>>().join("; ")
                )));
            }
            if dev.as_mut().is_some_and(|d| !d.flush_before_sleep()) {
                continue; // device completions (or a failure) are waiting
            }
            completions.clear();
            let held_by = match cpu.as_ref() {
                Some(c) => {
                    let now = c.in_flight_now(self.streams);
                    clock.observe(now);
                    c.held_by(self.streams, now)
                }
                None => "devices",
            };
            let waiting = std::time::Instant::now();
            self.engine.wait(&mut completions, waker).map_err(|e| JobError::Internal(format!("I/O wait failed: {e}")))?;
            clock.waited(held_by, waiting.elapsed());
            let t = std::time::Instant::now();
            for c in completions.drain(..) {
                self.complete(c, cpu, dev)?;
            }
            clock.spent("handling completions", t.elapsed());
        }
    }

    /// A stream left its device: finished, or handed over to the CPU.
    fn apply(&mut self, i: usize, outcome: Outcome, dev: &DeviceSide, cpu: &mut Option<CpuPass>, waker: &Waker) -> Result<()> {
        match outcome {
            Outcome::Finished { members } => self.streams[i].finished_on_device(members),
            Outcome::HandOver(_) if self.no_fallback => return Err(dev.failure_error(i).expect("a handover follows a failure")),
            Outcome::HandOver(h) => {
                self.streams[i].resume_on_cpu(&h, self.cpu_params.device_chunk_bytes, self.ledger)?;
                self.cpu_pass(cpu, waker)?.start_stream(self.streams, i)?;
            }
        }
        Ok(())
    }

    /// An I/O completion goes to the side that issued it (device memory or the CPU's buffers).
    fn complete(&mut self, c: peerpath_io::Completion<JobBuf>, cpu: &mut Option<CpuPass>, dev: &mut Option<DeviceSide>) -> Result<()> {
        let side = "a completion for a side that issued nothing";
        match (Token::of(c.op, c.token), c.buf) {
            (Token::Read { stream, seq }, JobBuf::Region(b)) => dev.as_mut().expect(side).on_read(self.streams, stream, seq, c.result, b, self.ledger),
            (Token::Write { stream, id }, JobBuf::Region(b)) => dev.as_mut().expect(side).on_write(self.streams, stream, id, c.result, b),
            (Token::Read { stream, seq }, buf) => cpu.as_mut().expect(side).on_read(&mut self.streams[stream], stream, seq, c.result, buf, self.ledger),
            (Token::Write { stream, .. }, buf) => cpu.as_mut().expect(side).on_write(&mut self.streams[stream], c.result, buf),
        }
    }
}
