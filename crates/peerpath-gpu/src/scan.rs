//! peerpath's own analytics kernels (`kernels/scan.cu`): the GPU device's
//! `Function::ScanCount`, counting the records of a block that match a motif
//! and a minimum length, in GPU memory; only the counters and the histogram
//! (`SCAN_RESULT_BYTES`) are written to the command's output. No library
//! runs a regular expression on a GPU. The binary carries the kernels as PTX
//! (`kernels/scan.ptx`, `scripts/gpu-kernels.sh`); the same source is built
//! for the host (`build.rs`), and the tests below check it against the CPU
//! oracle (`peerpath_func::scan::Filter`, the regex crate).
//!
//! The motif becomes a table here, on the host: the regex crate's own engine
//! (regex-automata) compiles it, with the syntax the CPU's `Regex` has, into
//! a dense DFA, which [`Dfa`] flattens into a byte-class map and a
//! transition table the kernels walk, a byte a step. A DFA cannot look at
//! Unicode word boundaries (`\b` in Unicode mode: regex-automata refuses
//! them), and some motifs make tables too large for the device
//! ([`DFA_LIMIT`]); those are refused with the reason, and the CPU counts.

use crate::kernels::{launch, Module};
use cudarc::driver::CudaStream;
use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::{start, syntax};
use regex_automata::Anchored;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

/// The kernels' PTX (`scripts/gpu-kernels.sh`; its first line names the source's SHA-256).
pub(crate) const PTX: &str = include_str!("../kernels/scan.ptx");

/// Words of a command (`PP_SCAN_WORDS` in scan.cu).
const SCAN_WORDS: usize = 16;

/// Counters a command (`PP_SCAN_SUMS`): records, matched, matched bases,
/// whole bytes, 64 histogram bins.
pub(crate) const SCAN_SUMS: usize = 68;

/// Words a command has in `sums` (`PP_SCAN_STRIDE`): the counters, then
/// the first malformed FASTQ record (see [`fastq_fault`]).
pub(crate) const SCAN_STRIDE: usize = SCAN_SUMS + 1;

/// The first malformed FASTQ record a command's fault word (its last word
/// in `sums`) names: its offset in the records and why, or `None`.
pub(crate) fn fastq_fault(word: u64) -> Option<(u64, peerpath_func::scan::FastqFault)> {
    (word != 0).then(|| (!word >> 3, peerpath_func::scan::FastqFault::from_code(!word & 7))).and_then(|(at, f)| Some((at, f?)))
}

/// Bytes a thread starts records in. A record is its first segment's
/// thread's work however long it is, so segments about as long as the
/// records (protein and read records: hundreds of bytes) give a thread
/// per record or two: 8192 threads for a 4 MiB block, where 4 KiB segments
/// would keep most of a GPU's multiprocessors idle (the CLI sends a block
/// at a time). Not yet measured on a GPU.
pub const SEGMENT_BYTES: u64 = 512;

/// The largest transition table the device takes (bytes). regex-automata
/// stops determinizing past it and the motif is refused; most motifs take
/// kilobytes (a state per distinct prefix, a column per byte class).
pub const DFA_LIMIT: usize = 16 << 20;

/// Table word flags (`PP_SCAN_MATCH`, `PP_SCAN_DEAD`).
const MATCH: u32 = 1;
const DEAD: u32 = 2;

/// Why a motif cannot be walked on the GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MotifError {
    /// Not a pattern the CPU takes either (the CPU device's `InvalidField`).
    Invalid(String),
    /// A pattern the CPU takes but no table here can walk (the CPU counts it).
    NotForGpu(String),
}

impl std::fmt::Display for MotifError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MotifError::Invalid(why) => write!(f, "the motif is not a regular expression: {why}"),
            MotifError::NotForGpu(why) => write!(f, "the motif cannot run on the GPU: {why}"),
        }
    }
}

/// A motif as the kernels walk it: the DFA of an unanchored search, every
/// state reachable from its start numbered from 0 in the order found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dfa {
    /// Each byte's class (a column of the table).
    classes: [u8; 256],
    /// Columns a state (byte classes; the end of input is not one).
    class_n: usize,
    /// State x class: the next state's number << 2 | its flags.
    table: Vec<u32>,
    /// Per state: whether the end of the sequence there is a match (`$`
    /// and matches the DFA reports a byte late).
    eoi: Vec<u8>,
    /// The start state, as a table word.
    start: u32,
}

impl Dfa {
    /// Compiles `motif` as the CPU device does (`regex::bytes::RegexBuilder`,
    /// `case_insensitive(ignore_case)`), then as a dense DFA with the same
    /// syntax, and flattens it.
    pub fn new(motif: &str, ignore_case: bool) -> Result<Dfa, MotifError> {
        regex::bytes::RegexBuilder::new(motif).case_insensitive(ignore_case).build().map_err(|e| MotifError::Invalid(e.to_string()))?;
        // regex::bytes::Regex's syntax: the defaults, Unicode on, and a match may
        // be any bytes (utf8 off).
        let dfa = dense::Builder::new()
            .configure(dense::Config::new().start_kind(StartKind::Unanchored).dfa_size_limit(Some(DFA_LIMIT)).determinize_size_limit(Some(DFA_LIMIT)))
            .syntax(syntax::Config::new().case_insensitive(ignore_case).utf8(false))
            .thompson(thompson::Config::new().utf8(false))
            .build(motif)
            .map_err(|e| MotifError::NotForGpu(format!("its automaton: {e}")))?;
        let not_for_gpu = |why: &str| MotifError::NotForGpu(why.to_string());
        let start = dfa.start_state(&start::Config::new().anchored(Anchored::No)).map_err(|e| MotifError::NotForGpu(format!("its start: {e}")))?;
        let bc = dfa.byte_classes();
        let class_n = bc.alphabet_len() - 1;
        let mut classes = [0u8; 256];
        let mut representative = vec![None; class_n];
        for b in 0..=255u8 {
            classes[usize::from(b)] = bc.get(b);
            representative[usize::from(bc.get(b))].get_or_insert(b);
        }
        let representative: Vec<u8> = representative.into_iter().map(|r| r.expect("every class has a byte")).collect();
        let mut number = HashMap::new();
        let mut order = Vec::new();
        let word = |sid, number: &mut HashMap<_, u32>, order: &mut Vec<_>| -> Result<u32, MotifError> {
            if dfa.is_quit_state(sid) {
                return Err(not_for_gpu("its automaton gives up on some bytes"));
            }
            let n = match number.get(&sid) {
                Some(&n) => n,
                None => {
                    let n = u32::try_from(order.len()).ok().filter(|&n| n < 1 << 30).ok_or_else(|| not_for_gpu("too many states"))?;
                    number.insert(sid, n);
                    order.push(sid);
                    n
                }
            };
            Ok(n << 2 | if dfa.is_match_state(sid) { MATCH } else { 0 } | if dfa.is_dead_state(sid) { DEAD } else { 0 })
        };
        let start = word(start, &mut number, &mut order)?;
        let (mut table, mut eoi) = (Vec::new(), Vec::new());
        let mut at = 0;
        while at < order.len() {
            let sid = order[at];
            for &b in &representative {
                table.push(word(dfa.next_state(sid, b), &mut number, &mut order)?);
            }
            eoi.push(u8::from(dfa.is_match_state(dfa.next_eoi_state(sid))));
            if table.len() * 4 > DFA_LIMIT {
                return Err(MotifError::NotForGpu(format!("its table passes {} MiB", DFA_LIMIT >> 20)));
            }
            at += 1;
        }
        Ok(Dfa { classes, class_n, table, eoi, start })
    }

    /// States in the table.
    pub fn states(&self) -> usize {
        self.eoi.len()
    }

    /// The table as one buffer for GPU memory: the classes, the end-of-input
    /// bytes (padded to 4), the transitions; and where each is in it.
    pub(crate) fn image(&self) -> (Vec<u8>, DfaAt) {
        let eoi_at = 256;
        let table_at = (eoi_at + self.eoi.len()).next_multiple_of(4);
        let mut image = Vec::with_capacity(table_at + 4 * self.table.len());
        image.extend_from_slice(&self.classes);
        image.extend_from_slice(&self.eoi);
        image.resize(table_at, 0);
        image.extend(self.table.iter().flat_map(|w| w.to_le_bytes()));
        (image, DfaAt { classes: 0, eoi: eoi_at as u64, table: table_at as u64, class_n: self.class_n as u64, start: u64::from(self.start) })
    }
}

/// Where a command's table is (offsets from [`Dfa::image`], or addresses
/// once [`DfaAt::at`] has added the image's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DfaAt {
    classes: u64,
    eoi: u64,
    table: u64,
    class_n: u64,
    start: u64,
}

impl DfaAt {
    /// The same, with the image at `base`.
    pub fn at(self, base: u64) -> DfaAt {
        DfaAt { classes: base + self.classes, eoi: base + self.eoi, table: base + self.table, ..self }
    }
}

/// A batch's scan commands, as the kernels read them.
#[derive(Default)]
pub(crate) struct ScanPlan {
    /// [`SCAN_WORDS`] per command.
    pub cmds: Vec<u64>,
    /// Command c's segments are `segs[c] .. segs[c + 1]`.
    pub segs: Vec<u32>,
}

impl ScanPlan {
    /// Adds a command counting the `len` bytes of records at `data` in
    /// `format` (0 FASTA, 1 FASTQ, 2 lines) in segments of `seg` bytes,
    /// matching `dfa` (none: every record) and `min_length`, its counters
    /// written at `out`; `None` (the plan unchanged) if the batch's segments
    /// would pass 32 bits.
    pub fn add(&mut self, (data, len): (u64, u64), (format, at_end, min_length): (u8, bool, u32), dfa: Option<DfaAt>, out: u64, seg: u64) -> Option<()> {
        if self.segs.is_empty() {
            self.segs.push(0);
        }
        let last = *self.segs.last().expect("pushed above");
        let segs = u32::try_from(len.div_ceil(seg.max(1))).ok().and_then(|n| last.checked_add(n))?;
        let d = dfa.unwrap_or(DfaAt { classes: 0, eoi: 0, table: 0, class_n: 0, start: 0 });
        let mut c = [0u64; SCAN_WORDS];
        c[..12].copy_from_slice(&[data, len, u64::from(format), u64::from(at_end), u64::from(min_length), d.classes, d.table, d.eoi, d.class_n, d.start, out, seg.max(1)]);
        self.cmds.extend_from_slice(&c);
        self.segs.push(segs);
        Some(())
    }

    pub fn len(&self) -> usize {
        self.cmds.len() / SCAN_WORDS
    }

    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// Segments over all commands.
    pub fn segments(&self) -> u32 {
        self.segs.last().copied().unwrap_or(0)
    }
}

/// The scan kernels in one context.
pub(crate) struct Scan {
    module: Module,
}

impl Scan {
    /// Loads the kernels into `stream`'s context (current on this thread).
    pub fn open(stream: &Arc<CudaStream>) -> Result<Scan, String> {
        Ok(Scan { module: Module::load(stream, PTX, &["pp_scan_lines", "pp_scan_whole", "pp_scan_records", "pp_scan_finish"])? })
    }

    /// Queues a plan's four launches.
    ///
    /// # Safety
    /// `cmds` and `segs` hold the plan's in GPU memory of this context
    /// (`cmds` writable: the kernels note each command's whole bytes there),
    /// `lines` a word per segment, `sums` [`SCAN_STRIDE`] zeroed words per
    /// command; every command's records, table and output name GPU memory as
    /// the plan says (the output with room for the counters, not
    /// overlapping the records); none freed or reused before the stream has
    /// run the kernels.
    pub unsafe fn run(&self, stream: &CudaStream, plan: &ScanPlan, (cmds, segs): (u64, u64), lines: u64, sums: u64) -> Result<(), String> {
        let n = u32::try_from(plan.len()).map_err(|_| "more than 2^32 commands in a batch".to_string())?;
        if n == 0 {
            return Ok(());
        }
        let (mut c, mut n, mut s, mut l, mut u) = (cmds, n, segs, lines, sums);
        let p = |x: &mut u64| x as *mut u64 as *mut c_void;
        let segments = u64::from(plan.segments());
        if segments > 0 {
            let mut params = [p(&mut c), &mut n as *mut u32 as *mut c_void, p(&mut s), p(&mut l)];
            // SAFETY: the kernel's four parameters, in order and of its types; the memory as promised.
            unsafe { launch(self.module.function(0), segments, stream, &mut params) }?;
        }
        let mut params = [p(&mut c), &mut n as *mut u32 as *mut c_void, p(&mut s), p(&mut l), p(&mut u)];
        // SAFETY: as above, five parameters.
        unsafe { launch(self.module.function(1), u64::from(n), stream, &mut params) }?;
        if segments > 0 {
            // SAFETY: as above, five parameters.
            unsafe { launch(self.module.function(2), segments, stream, &mut params) }?;
        }
        let mut params = [p(&mut c), &mut n as *mut u32 as *mut c_void, p(&mut u)];
        // SAFETY: as above, three parameters.
        unsafe { launch(self.module.function(3), u64::from(n), stream, &mut params) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use peerpath_func::scan::{whole_records, Filter, RecordFormat};

    extern "C" {
        fn pp_shim_scan_lines(grid: u32, block: u32, cmds: *const u64, n: u32, segs: *const u32, lines: *mut u64);
        fn pp_shim_scan_whole(grid: u32, block: u32, cmds: *mut u64, n: u32, segs: *const u32, lines: *mut u64, sums: *mut u64);
        fn pp_shim_scan_records(grid: u32, block: u32, cmds: *const u64, n: u32, segs: *const u32, lines: *const u64, sums: *mut u64);
        fn pp_shim_scan_finish(grid: u32, block: u32, cmds: *const u64, n: u32, sums: *const u64);
    }

    const FORMATS: [RecordFormat; 3] = [RecordFormat::Fasta, RecordFormat::Fastq, RecordFormat::Lines];

    /// A scan command: the records, their format, at_end, the minimum length, the motif.
    #[derive(Clone, Copy)]
    struct Case<'a> {
        data: &'a [u8],
        format: RecordFormat,
        at_end: bool,
        min: u32,
        motif: Option<(&'a str, bool)>,
    }

    /// What a command gives: its counters, or the first malformed FASTQ record (offset, fault).
    type Answer = Result<[u64; SCAN_SUMS], (u64, peerpath_func::scan::FastqFault)>;

    /// The CPU device's answer (peerpath-device's exec: the whole records, then the filter).
    fn oracle(c: &Case) -> Answer {
        let motif = c.motif.map(|(m, ic)| regex::bytes::RegexBuilder::new(m).case_insensitive(ic).build().unwrap());
        let filter = Filter { motif, min_length: (c.min > 0).then_some(c.min as usize), id_prefix: None };
        let whole = whole_records(c.data, c.format, c.at_end).unwrap_or(0);
        let found = filter.block(&c.data[..whole], c.format, c.at_end, None).map_err(|m| (m.offset as u64, m.fault))?;
        let mut words = [0u64; SCAN_SUMS];
        words[..4].copy_from_slice(&[found.records, found.matched, found.matched_bases, whole as u64]);
        words[4..4 + found.histogram.len()].copy_from_slice(&found.histogram);
        Ok(words)
    }

    /// The kernels on the host over `cases` in one batch, segments of `seg` bytes.
    fn run(cases: &[Case], seg: u64, grid: u32) -> Vec<Answer> {
        let images: Vec<Option<(Vec<u8>, DfaAt)>> = cases.iter().map(|c| c.motif.map(|(m, ic)| Dfa::new(m, ic).unwrap().image())).collect();
        let mut outs = vec![vec![0xEEu8; 8 * SCAN_SUMS + 3]; cases.len()];
        let mut plan = ScanPlan::default();
        for ((c, image), out) in cases.iter().zip(&images).zip(&mut outs) {
            let dfa = image.as_ref().map(|(bytes, at)| at.at(bytes.as_ptr() as u64));
            let format = FORMATS.iter().position(|f| *f == c.format).unwrap() as u8;
            // An odd output address: the finishing kernel writes bytes.
            plan.add((c.data.as_ptr() as u64, c.data.len() as u64), (format, c.at_end, c.min), dfa, out.as_mut_ptr() as u64 + 3, seg).unwrap();
        }
        let n = plan.len() as u32;
        let mut lines = vec![0u64; plan.segments().max(1) as usize];
        let mut sums = vec![0u64; SCAN_STRIDE * cases.len().max(1)];
        // SAFETY: the plan's arrays, a line word per segment, zeroed counters per command; every
        // address in the plan names a live buffer of this test (the records, the images, the
        // outputs with room for the counters from their fourth byte).
        unsafe {
            pp_shim_scan_lines(grid, 8, plan.cmds.as_ptr(), n, plan.segs.as_ptr(), lines.as_mut_ptr());
            pp_shim_scan_whole(grid, 8, plan.cmds.as_mut_ptr(), n, plan.segs.as_ptr(), lines.as_mut_ptr(), sums.as_mut_ptr());
            pp_shim_scan_records(grid, 8, plan.cmds.as_ptr(), n, plan.segs.as_ptr(), lines.as_ptr(), sums.as_mut_ptr());
            pp_shim_scan_finish(grid, 8, plan.cmds.as_ptr(), n, sums.as_ptr());
        }
        outs.iter()
            .enumerate()
            .map(|(i, o)| {
                assert_eq!((&o[..3], o[8 * SCAN_SUMS + 3..].len()), (&[0xEE; 3][..], 0), "nothing written before the output");
                match fastq_fault(sums[i * SCAN_STRIDE + SCAN_SUMS]) {
                    Some(fault) => {
                        // The output holds the fault record, as the CPU device's, and no counters.
                        let record: [u8; 16] = o[3..19].try_into().unwrap();
                        assert_eq!(peerpath_device::parse_scan_fault_record(&record), (fault.0, fault.1 as u64), "the fault record in the output");
                        assert!(o[19..].iter().all(|&b| b == 0xEE), "no counters beside the fault record");
                        Err(fault)
                    }
                    None => Ok(std::array::from_fn(|w| u64::from_le_bytes(o[3 + 8 * w..11 + 8 * w].try_into().unwrap()))),
                }
            })
            .collect()
    }

    fn check(cases: &[Case], seg: u64, grid: u32) {
        for (i, (got, c)) in run(cases, seg, grid).iter().zip(cases).enumerate() {
            let want = oracle(c);
            match (got, &want) {
                (Ok(got), Ok(want)) => assert!(got == want, "case {i} ({:?}, at_end {}, min {}, motif {:?}), segments of {seg}, grid {grid}: records, matched, bases, whole {:?} against the oracle's {:?}; histogram {:?} against {:?}", c.format, c.at_end, c.min, c.motif, &got[..4], &want[..4], &got[4..], &want[4..]),
                _ => assert_eq!(got.as_ref().err(), want.as_ref().err(), "case {i} ({:?}, at_end {}), segments of {seg}, grid {grid}: the first malformed FASTQ record", c.format, c.at_end),
            }
        }
    }

    fn fasta(text: &[u8], crlf: bool) -> Vec<u8> {
        let mut data = Vec::new();
        for (i, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
            if i % 7 == 0 || i % 11 == 0 {
                data.extend_from_slice(format!(">sp|P{i} protein {i}\n").as_bytes());
            }
            data.extend_from_slice(line);
        }
        if crlf {
            data = data.iter().flat_map(|&b| if b == b'\n' { vec![b'\r', b'\n'] } else { vec![b] }).collect();
        }
        data
    }

    fn fastq(records: usize, seed: u64) -> Vec<u8> {
        let bases = crate::kernels::tests::bytes(records * 200, seed);
        let mut data = Vec::new();
        for i in 0..records {
            let n = 20 + bases[i * 200] as usize % 150;
            let seq: Vec<u8> = bases[i * 200..i * 200 + n].iter().map(|b| b"ACGTN"[*b as usize % 5]).collect();
            data.extend_from_slice(format!("@read{i} x\n").as_bytes());
            data.extend_from_slice(&seq);
            data.extend_from_slice(b"\n+\n");
            data.extend(std::iter::repeat_n(b'I', n));
            data.push(b'\n');
        }
        data
    }

    #[test]
    fn the_scan_kernels_count_as_the_cpu_oracle_does() {
        let protein = peerpath_func::sample::protein_like(200_000, 4);
        let (fa, fa_crlf) = (fasta(&protein, false), fasta(&protein[..50_000], true));
        let fq = fastq(700, 9);
        let log: Vec<u8> = (0..3000).flat_map(|i| format!("{} request {i} took {} ms\r\n", if i % 13 == 0 { "ERROR" } else { "info" }, i * 7 % 1000).into_bytes()).collect();
        // A motif for each of the automaton's corners: none, classes and repeats, anchors at
        // both ends (the end is the end-of-input transition), case folding both ways,
        // alternation, Unicode classes, an ASCII word boundary, one that cannot match.
        let motifs: [Option<(&str, bool)>; 12] = [None, Some(("K[LV]{2}", false)), Some(("^MK", false)), Some(("DEF$", false)), Some(("acgt", true)), Some(("(?i)gta", false)), Some(("ERROR|took 9\\d\\d", false)), Some(("[^A-Z]", false)), Some(("\\w{20,}", false)), Some(("(?-u:\\b)request 1\\d(?-u:\\b)", false)), Some(("\\x00", false)), Some(("", false))];
        let mut cases = Vec::new();
        for &motif in &motifs {
            for at_end in [true, false] {
                for (data, format) in [(&fa[..], RecordFormat::Fasta), (&fa_crlf[..], RecordFormat::Fasta), (&fq[..], RecordFormat::Fastq), (&fq[..fq.len() - 7], RecordFormat::Fastq), (&log[..], RecordFormat::Lines), (&log[..log.len() - 5], RecordFormat::Lines)] {
                    cases.push(Case { data, format, at_end, min: 0, motif });
                }
            }
        }
        // Minimum lengths, edge sizes, and records that are not what their format says.
        for min in [1, 30, 100, 10_000] {
            cases.push(Case { data: &fa, format: RecordFormat::Fasta, at_end: false, min, motif: Some(("K", false)) });
            cases.push(Case { data: &fq, format: RecordFormat::Fastq, at_end: true, min, motif: None });
        }
        for data in [&b""[..], b"\n", b">", b"\n>x\nACGT", b">x\r", b"@", b"@a\nAC\r\n+\nII\n@b\nGT\r", b"no line break", b"\r\n\r\n\n"] {
            for format in FORMATS {
                for at_end in [true, false] {
                    cases.push(Case { data, format, at_end, min: 0, motif: Some(("A?", false)) });
                    cases.push(Case { data, format, at_end, min: 1, motif: Some(("C$", false)) });
                }
            }
        }
        // FASTQ that is not: two broken records far apart (the first is named), blank lines
        // between records and after the last, a cut-short record, CRLF and an empty read.
        let mut broken = fq.clone();
        let pluses: Vec<usize> = fq.windows(3).enumerate().filter(|(_, w)| w == b"\n+\n").map(|(i, _)| i).collect();
        broken[pluses[300] + 1] = b'-';
        broken[pluses[600] + 1] = b'-';
        let odd: [&[u8]; 8] = [&broken, b"@r1\nACGT\n+\nIIII\n\n\n\r\n\n\n", b"\n\n\n\n\n\n\n\n\n", b"@r1\nACGT\n+\nIIII\n\n\n@r2\nAC\n+\nII\n", b"@r1\nACGT\n+\nIIII\n\n\r\n\n\n\n", b"@r1\nACGT\n+\nIIII\n@r2\nAC\n", b"@r1\r\nACGT\r\n+\r\nIIII\r\n@r2\n\n+\n\n@r3\nA\n+r3\nI", b"@r1\nACGT\n+\nIII\n"];
        for data in odd {
            for at_end in [true, false] {
                cases.push(Case { data, format: RecordFormat::Fastq, at_end, min: 0, motif: Some(("A", false)) });
            }
        }
        assert!(matches!(oracle(&cases[cases.len() - 16]), Err((_, peerpath_func::scan::FastqFault::NoPlus))), "a weak case");
        for (seg, grid) in [(4096, 300), (64, 7), (7, 1), (1, 13)] {
            check(&cases, seg, grid);
        }
    }

    proptest::proptest! {
        /// Fuzzing: any bytes of the formats' alphabet, any segment size, any format and motif:
        /// the kernels count what the oracle counts.
        #[test]
        fn any_records_count_as_the_oracle_counts(data in proptest::collection::vec(proptest::sample::select(b">@+\n\rACGT xK".to_vec()), 0..600), seg in 1u64..40, m in 0usize..6, at_end: bool, min in 0u32..4) {
            let motif = [None, Some(("A[CG]T", false)), Some(("^a", true)), Some(("T\\r?$", false)), Some(("(?-u:\\b)x", false)), Some(("[^ ]+ ", false))][m];
            let cases: Vec<Case> = FORMATS.iter().map(|&format| Case { data: &data, format, at_end, min, motif }).collect();
            for (got, c) in run(&cases, seg, 3).iter().zip(&cases) {
                proptest::prop_assert_eq!(got, &oracle(c), "{:?}", c.format);
            }
        }
    }

    #[test]
    fn motifs_the_gpu_cannot_walk_are_refused_with_the_reason() {
        assert!(matches!(Dfa::new("K(", false), Err(MotifError::Invalid(_))), "not a pattern: the CPU's InvalidField");
        let e = Dfa::new("\\bK", false).unwrap_err();
        assert!(matches!(&e, MotifError::NotForGpu(w) if w.contains("Unicode word boundar")), "{e}");
        let e = Dfa::new("[ab]*a[ab]{22}", false).unwrap_err();
        assert!(matches!(&e, MotifError::NotForGpu(_)), "{e}");
        let d = Dfa::new("K[LV]{2}", false).unwrap();
        assert!(d.states() > 3 && d.states() < 10, "{} states", d.states());
        // Case folding changes the table; the same motif twice gives the same table.
        assert_ne!(Dfa::new("k", true).unwrap(), Dfa::new("k", false).unwrap());
        assert_eq!(Dfa::new("k", true).unwrap(), Dfa::new("(?i)k", false).unwrap());
    }

    #[test]
    fn a_plan_refuses_a_batch_past_32_bits() {
        let mut plan = ScanPlan::default();
        plan.add((0, 1 << 43), (0, true, 0), None, 0, 4096).unwrap();
        assert_eq!(plan.add((0, 1 << 43), (0, true, 0), None, 0, 4096), None);
        assert_eq!((plan.len(), plan.segments()), (1, 1 << 31));
    }

    #[test]
    fn the_ptx_is_compiled_from_this_source() {
        crate::kernels::tests::ptx_is_compiled_from(PTX, include_bytes!("../kernels/scan.cu"), "scan", &["pp_scan_lines", "pp_scan_whole", "pp_scan_records", "pp_scan_finish"]);
    }
}
