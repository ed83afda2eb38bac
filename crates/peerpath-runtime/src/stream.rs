//! One source and its target in the compress job: the files, where the
//! stream is placed, and the CPU pass's progress through it.

use crate::offload::{DeviceStream, Handover};
use crate::report::Quoted;
use crate::writer::TargetWriter;
use peerpath_io::{IoPath, OpenedFile};
use peerpath_mem::AlignedBuf;
use peerpath_metrics::Ledger;
use std::collections::BTreeMap;

pub(crate) struct Stream {
    pub source: OpenedFile,
    /// How the source's bytes arrive (for the ledger).
    pub source_via: crate::Via,
    /// The source's name for the job report (U+FFFD for bytes that are not UTF-8, as the
    /// report's strings have it); messages name `source.path`, exactly ([`Quoted`]).
    pub source_name: String,
    pub size: Option<u64>,
    /// The source's stamp when opened (a regular file): a change while it is read is refused.
    pub stamp: Option<peerpath_io::Stamp>,
    pub sequential_read: bool,
    pub read_path: IoPath,
    pub writer: Option<TargetWriter>,
    pub write_path: IoPath,
    pub bytes_in: u64,
    pub members: u64,
    /// Placed on the host CPU (at the start, or handed over by its device).
    pub on_cpu: bool,
    /// Which device served it (index into the job's devices).
    pub device: Option<usize>,
    pub members_on_device: u64,
    /// The CPU pass's progress.
    pub cpu: CpuState,
}

/// Where the CPU pass stands in a stream.
#[derive(Default)]
pub(crate) struct CpuState {
    pub next_read_offset: u64,
    pub next_seq: u64,
    pub reads_in_flight: usize,
    /// No more reads to issue.
    pub read_done: bool,
    /// Number of chunks, once reading is done.
    pub chunks: Option<u64>,
    pub next_write_seq: u64,
    /// Compressed chunks waiting for their turn: output and member count.
    pub ready: BTreeMap<u64, (AlignedBuf, u64)>,
    pub writer_finished: bool,
    /// Source offset of chunk 0 of this pass (the CPU going on after a device).
    pub first_offset: u64,
    /// The compute workers read this stream's chunks themselves (`pread`),
    /// not the I/O engine: see `cpu_pass::worker_reads`.
    pub worker_reads: bool,
}

impl Stream {
    pub fn can_read(&self, qd_per_stream: usize) -> bool {
        !self.cpu.read_done && self.cpu.reads_in_flight < if self.sequential_read { 1 } else { qd_per_stream }
    }

    /// Every output byte is written (or on its way, for a device's stream).
    pub fn finished(&self) -> bool {
        self.cpu.writer_finished && self.writer.as_ref().is_none_or(|w| w.writes_in_flight == 0)
    }

    /// Its device wrote every output byte.
    pub fn finished_on_device(&mut self, members: u64) {
        self.cpu.writer_finished = true;
        self.members = members;
        self.members_on_device = members;
        self.bytes_in = self.size.unwrap_or(0);
    }

    /// Its device failed: the CPU reads and compresses it again from the
    /// block `h` names (blocks of `chunk_bytes`) and writes its output where
    /// the device's output of that block started.
    pub fn resume_on_cpu(&mut self, h: &Handover, chunk_bytes: usize, ledger: &Ledger) -> crate::error::Result<()> {
        let size = self.size.expect("streams on devices have a size");
        let first_offset = h.chunk * chunk_bytes as u64;
        let read_done = first_offset >= size && size > 0;
        self.cpu = CpuState {
            next_read_offset: first_offset,
            read_done,
            chunks: read_done.then_some(0),
            first_offset,
            worker_reads: self.cpu.worker_reads,
            ..CpuState::default()
        };
        self.on_cpu = true;
        self.bytes_in = first_offset;
        self.members = h.members_before;
        self.members_on_device = h.members_before;
        self.writer.as_mut().expect("writer open").resume_after_device(h.written, ledger)
    }

    /// Where the stream stands, for an error that must say it.
    pub fn state(&self) -> String {
        let c = &self.cpu;
        format!(
            "{}: read to byte {} of {}, {} reads in flight, chunks {}, next to write {}, {} waiting, writer {}",
            Quoted(&self.source.path),
            c.next_read_offset,
            self.size.map_or("unknown".into(), |n| n.to_string()),
            c.reads_in_flight,
            c.chunks.map_or("unknown".into(), |n| n.to_string()),
            c.next_write_seq,
            c.ready.len(),
            match &self.writer {
                Some(w) if c.writer_finished => format!("finished, {} writes in flight", w.writes_in_flight),
                Some(w) => format!("open, {} writes in flight", w.writes_in_flight),
                None => "closed".into(),
            }
        )
    }
}

impl DeviceStream for Stream {
    fn source(&self) -> &OpenedFile {
        &self.source
    }
    fn source_via(&self) -> crate::Via {
        self.source_via
    }
    fn name(&self) -> &str {
        &self.source_name
    }
    fn size(&self) -> u64 {
        self.size.expect("streams on devices have a size")
    }
    fn writer(&mut self) -> &mut TargetWriter {
        self.writer.as_mut().expect("writer open")
    }
    fn target(&self) -> &TargetWriter {
        self.writer.as_ref().expect("writer open")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    /// A stalled job's error names each source by its exact bytes, quoted as messages quote
    /// (it gave the report's lossy name: U+FFFD for a byte that is not UTF-8, a newline as is).
    #[test]
    fn a_streams_state_names_its_source_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(std::ffi::OsStr::from_bytes(b"a\xff\nb"));
        std::fs::write(&path, b"data").unwrap();
        let source = OpenedFile { file: std::fs::File::open(&path).unwrap(), path: path.clone(), kind: peerpath_io::SourceKind::Regular { size_bytes: 4 }, direct: false, direct_refused: None };
        let io = IoPath { engine: peerpath_io::EngineKind::IoUring, direct: false, fallback_reason: None };
        let s = Stream {
            source,
            source_via: crate::Via::PageCache,
            source_name: path.display().to_string(),
            size: Some(4),
            stamp: None,
            sequential_read: false,
            read_path: io.clone(),
            writer: None,
            write_path: io,
            bytes_in: 0,
            members: 0,
            on_cpu: true,
            device: None,
            members_on_device: 0,
            cpu: CpuState::default(),
        };
        let state = s.state();
        let at = dir.path().display();
        assert!(state.starts_with(&format!(r"'{at}/a'$'\377\n''b': read to byte 0 of 4, ")), "{state}");
    }
}
