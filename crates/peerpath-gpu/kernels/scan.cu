// peerpath's own GPU kernels for analytics near the data: counting the
// records of a block (FASTA, FASTQ or lines) that match a motif and a minimum
// length, the `ScanCount` function of the GPU device
// (crates/peerpath-gpu/src/scan.rs). Only the counters and the histogram
// (544 bytes a command) are written back; the records stay in GPU memory.
//
// No library runs a regular expression on a GPU, so the motif is compiled on
// the host into a deterministic automaton by the regex crate's own engine
// (regex-automata's dense DFA, the same syntax as the CPU's `Regex`; scan.rs
// flattens it into a table) and this file only walks the table. The kernels
// are plain C in CUDA's dialect, compiled two ways as coding.cu is (see its
// head): to PTX by NVRTC (scan.ptx, carried by the binary) and by the host's
// C compiler (kernels/shim.c), so the tests check these very lines against
// the CPU oracle (peerpath_func::scan::Filter) on machines without a GPU.
// Threads share only the command's counters, which they add to with atomics
// once each; no kernel waits at a barrier.
//
// A block is cut into segments (the plan's size, 4 KiB by default); a record
// belongs to the segment where it starts and is counted by that segment's
// thread, which reads on past the segment's end to the record's. Four
// launches a batch:
// 1. pp_scan_lines, a thread per segment: a FASTQ block's line breaks in the
//    segment (FASTQ records are every fourth line: where one starts depends
//    on the line count before it).
// 2. pp_scan_whole, a thread per command: turns those counts into the line
//    number each segment starts at, and finds where the block's whole
//    records end (`peerpath_func::scan::whole_records`): the rest of the
//    block waits for the next one.
// 3. pp_scan_records, a thread per segment: finds the first record starting
//    in the segment, and for each record from there its sequence (FASTA:
//    the lines after the header, line breaks removed; FASTQ: the second
//    line; lines: the line), walking the automaton over the sequence's bytes
//    until it matches or cannot match any more, and the sequence's length.
//    Its counts and histogram bins go to the command's counters.
// 4. pp_scan_finish, a thread per command: writes the counters to the
//    command's output (any alignment), as the CPU device lays them out; a
//    command with a malformed FASTQ record gets, as the CPU device's, only
//    the fault record there: the record's offset, then why (u64 LE each).

#ifdef PEERPATH_HOST_SHIM
#include "shim.h"
#define PP_CLZ64(x) __builtin_clzll(x)
// One thread at a time: a plain add is the atomic one.
#define PP_ATOMIC_ADD64(p, v) (*(p) += (v))
#define PP_ATOMIC_MAX64(p, v) (*(p) = *(p) > (v) ? *(p) : (v))
#else
#define PP_KERNEL extern "C" __global__ void
#define PP_RESTRICT __restrict__
#define PP_CLZ64(x) __clzll((long long)(x))
#define PP_ATOMIC_ADD64(p, v) atomicAdd((p), (v))
#define PP_ATOMIC_MAX64(p, v) atomicMax((p), (v))
#endif

typedef unsigned char pp_u8;
typedef unsigned int pp_u32;
typedef unsigned long long pp_u64;

// A command: 16 words (scan.rs `ScanPlan` writes them; pp_scan_whole writes PP_SCAN_WHOLE).
#define PP_SCAN_WORDS 16
#define PP_SCAN_DATA 0     // the records' address
#define PP_SCAN_LEN 1      // their bytes
#define PP_SCAN_FORMAT 2   // 0 FASTA, 1 FASTQ, 2 lines
#define PP_SCAN_AT_END 3   // 1: all of the block is records; 0: a record reaching the end waits
#define PP_SCAN_MIN 4      // the minimum sequence length (0: none)
#define PP_SCAN_CLASSES 5  // the automaton's byte classes (256 bytes); 0: no motif (all match)
#define PP_SCAN_TABLE 6    // its transitions: state x class words, (next state << 2) | its flags
#define PP_SCAN_EOI 7      // a byte per state: 1 if the end of the sequence there is a match
#define PP_SCAN_CLASS_N 8  // classes per state (a row of the table)
#define PP_SCAN_START 9    // the start state, as a table word
#define PP_SCAN_OUT 10     // the output's address (PP_SCAN_SUMS words, little-endian)
#define PP_SCAN_SEG 11     // segment bytes
#define PP_SCAN_WHOLE 12   // bytes of whole records (pp_scan_whole)
#define PP_SCAN_SUMS 68    // counters a command: records, matched, matched bases, whole, 64 bins
#define PP_SCAN_FAULT 68   // then the first malformed FASTQ record: ~((offset << 3) | why), 0 if none
#define PP_SCAN_STRIDE 69  // words a command in `sums`
#define PP_SCAN_MATCH 1u   // flags of a table word: the state has matched
#define PP_SCAN_DEAD 2u    // it can never match

#define PP_FASTA 0
#define PP_FASTQ 1
#define PP_LINES 2

// The command whose segments hold global segment s: the last c with segs[c] <= s.
static pp_u32 pp_scan_command(const pp_u32 *PP_RESTRICT segs, pp_u32 n, pp_u64 s)
{
    pp_u32 lo = 0, hi = n;
    while (hi - lo > 1) {
        pp_u32 mid = lo + (hi - lo) / 2;
        if (segs[mid] <= s) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// The first line break in data[a, b), or b.
static pp_u64 pp_scan_eol(const pp_u8 *PP_RESTRICT data, pp_u64 a, pp_u64 b)
{
    while (a < b && data[a] != '\n') {
        a++;
    }
    return a;
}

// The first FASTA record start q in [a, b): a line break before q and '>' at q (a >= 1).
static pp_u64 pp_scan_header(const pp_u8 *PP_RESTRICT data, pp_u64 a, pp_u64 b)
{
    while (a < b && !(data[a] == '>' && data[a - 1] == '\n')) {
        a++;
    }
    return a;
}

PP_KERNEL pp_scan_lines(const pp_u64 *PP_RESTRICT cmds, pp_u32 n, const pp_u32 *PP_RESTRICT segs, pp_u64 *PP_RESTRICT lines)
{
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 g = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; g < segs[n]; g += step) {
        pp_u32 c = pp_scan_command(segs, n, g);
        const pp_u64 *cmd = cmds + (pp_u64)c * PP_SCAN_WORDS;
        pp_u64 count = 0;
        if (cmd[PP_SCAN_FORMAT] == PP_FASTQ) {
            const pp_u8 *data = (const pp_u8 *)cmd[PP_SCAN_DATA];
            pp_u64 len = cmd[PP_SCAN_LEN], seg = cmd[PP_SCAN_SEG];
            pp_u64 a = (g - segs[c]) * seg;
            pp_u64 b = a + seg < len ? a + seg : len;
            for (pp_u64 i = a; i < b; i++) {
                count += data[i] == '\n';
            }
        }
        lines[g] = count;
    }
}

PP_KERNEL pp_scan_whole(pp_u64 *PP_RESTRICT cmds, pp_u32 n, const pp_u32 *PP_RESTRICT segs, pp_u64 *PP_RESTRICT lines, pp_u64 *PP_RESTRICT sums)
{
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 c = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; c < n; c += step) {
        pp_u64 *cmd = cmds + c * PP_SCAN_WORDS;
        const pp_u8 *data = (const pp_u8 *)cmd[PP_SCAN_DATA];
        pp_u64 len = cmd[PP_SCAN_LEN], seg = cmd[PP_SCAN_SEG], format = cmd[PP_SCAN_FORMAT];
        pp_u64 whole = 0;
        if (format == PP_FASTQ) {
            // The line number each segment starts at (the count of line breaks before it).
            pp_u64 total = 0;
            for (pp_u32 s = segs[c]; s < segs[c + 1]; s++) {
                pp_u64 here = lines[s];
                lines[s] = total;
                total += here;
            }
            // The whole records end after the (total / 4 * 4)-th line break.
            pp_u64 want = total / 4 * 4;
            if (cmd[PP_SCAN_AT_END] != 0) {
                whole = len;
            } else if (want > 0) {
                pp_u32 s = segs[c];
                while (s + 1 < segs[c + 1] && lines[s + 1] < want) {
                    s++;
                }
                pp_u64 seen = lines[s];
                for (pp_u64 i = (pp_u64)(s - segs[c]) * seg; i < len; i++) {
                    if (data[i] == '\n' && ++seen == want) {
                        whole = i + 1;
                        break;
                    }
                }
                // Four blank lines ending the whole records wait for more data (as
                // whole_records: whether they end the data or come before more decides
                // if they are a malformed record).
                while (whole > 0) {
                    pp_u64 i = whole;
                    int breaks = 0, blank = 1;
                    while (i > 0) {
                        pp_u8 b = data[i - 1];
                        if (b == '\n' && ++breaks == 5) {
                            break;
                        }
                        if (b != '\n' && b != '\r') {
                            blank = 0;
                            break;
                        }
                        i--;
                    }
                    if (!blank || (breaks < 5 && i > 0)) {
                        break;
                    }
                    whole = i;
                }
            }
        } else if (cmd[PP_SCAN_AT_END] != 0) {
            whole = len;
        } else if (format == PP_FASTA) {
            // After the last line break followed by '>'.
            for (pp_u64 i = len; i > 1; i--) {
                if (data[i - 1] == '>' && data[i - 2] == '\n') {
                    whole = i - 1;
                    break;
                }
            }
        } else {
            // After the last line break.
            for (pp_u64 i = len; i > 0; i--) {
                if (data[i - 1] == '\n') {
                    whole = i;
                    break;
                }
            }
        }
        cmd[PP_SCAN_WHOLE] = whole;
        sums[c * PP_SCAN_STRIDE + 3] = whole;
    }
}

// Why the FASTQ record at p (ending at `end`) is not one
// (peerpath_func::scan::FastqFault: 1 no '@', 2 cut short, 3 no '+', 4 quality
// not as long as the sequence), 0 if it is, or PP_FASTQ_BLANK_END where only
// blank lines are left of a block that ends the data (they are no record).
#define PP_FASTQ_BLANK_END 8
static pp_u64 pp_scan_fastq_fault(const pp_u8 *PP_RESTRICT data, pp_u64 p, pp_u64 end, pp_u64 whole, pp_u64 at_end)
{
    if (at_end != 0) {
        pp_u64 i = p;
        while (i < whole && (data[i] == '\n' || data[i] == '\r')) {
            i++;
        }
        if (i == whole) {
            return PP_FASTQ_BLANK_END;
        }
    }
    if (data[p] != '@') {
        return 1;
    }
    // Its lines' starts and lengths (without the line break, or a carriage return before it).
    pp_u64 starts[4], lens[4];
    int k = 0;
    for (pp_u64 at = p; k < 4 && at < end; k++) {
        pp_u64 e = pp_scan_eol(data, at, end);
        starts[k] = at;
        lens[k] = e - at - (e > at && data[e - 1] == '\r');
        at = e + (e < end);
    }
    if (k < 4) {
        return 2;
    }
    if (lens[2] == 0 || data[starts[2]] != '+') {
        return 3;
    }
    return lens[1] != lens[3] ? 4 : 0;
}

// Where the record starting at p ends (at most `whole`).
static pp_u64 pp_scan_record_end(const pp_u8 *PP_RESTRICT data, pp_u64 format, pp_u64 p, pp_u64 whole)
{
    if (format == PP_FASTA) {
        return pp_scan_header(data, p + 1, whole);
    }
    for (int k = 0; k < (format == PP_FASTQ ? 4 : 1) && p < whole; k++) {
        p = pp_scan_eol(data, p, whole);
        p += p < whole;
    }
    return p;
}

PP_KERNEL pp_scan_records(const pp_u64 *PP_RESTRICT cmds, pp_u32 n, const pp_u32 *PP_RESTRICT segs, const pp_u64 *PP_RESTRICT lines, pp_u64 *PP_RESTRICT sums)
{
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 g = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; g < segs[n]; g += step) {
        pp_u32 c = pp_scan_command(segs, n, g);
        const pp_u64 *cmd = cmds + (pp_u64)c * PP_SCAN_WORDS;
        const pp_u8 *data = (const pp_u8 *)cmd[PP_SCAN_DATA];
        pp_u64 format = cmd[PP_SCAN_FORMAT], seg = cmd[PP_SCAN_SEG], whole = cmd[PP_SCAN_WHOLE];
        pp_u64 a = (g - segs[c]) * seg;
        pp_u64 lim = a + seg < whole ? a + seg : whole;
        if (a >= lim) {
            continue;
        }
        // The first record starting in [a, lim).
        pp_u64 p = a;
        if (a > 0 && format == PP_FASTA) {
            p = pp_scan_header(data, a, lim);
        } else if (a > 0 && data[a - 1] != '\n') {
            // Inside a line: the next line starts after its break.
            p = pp_scan_eol(data, a, lim) + 1;
        }
        if (format == PP_FASTQ) {
            // Line (lines[g] + whether p passed a break) must be a record's first: a multiple of 4.
            pp_u64 line = lines[g] + (p != a);
            while (line % 4 != 0 && p < lim) {
                p = pp_scan_eol(data, p, lim) + 1;
                line++;
            }
        }
        const pp_u8 *classes = (const pp_u8 *)cmd[PP_SCAN_CLASSES];
        const pp_u32 *table = (const pp_u32 *)cmd[PP_SCAN_TABLE];
        const pp_u8 *eoi = (const pp_u8 *)cmd[PP_SCAN_EOI];
        pp_u64 class_n = cmd[PP_SCAN_CLASS_N], min = cmd[PP_SCAN_MIN];
        pp_u64 records = 0, matched = 0, bases = 0;
        pp_u64 bins[64];
        for (int b = 0; b < 64; b++) {
            bins[b] = 0;
        }
        pp_u64 *sum = sums + (pp_u64)c * PP_SCAN_STRIDE;
        while (p < lim) {
            pp_u64 end = pp_scan_record_end(data, format, p, whole);
            if (format == PP_FASTQ) {
                pp_u64 why = pp_scan_fastq_fault(data, p, end, whole, cmd[PP_SCAN_AT_END]);
                if (why == PP_FASTQ_BLANK_END) {
                    break;
                }
                if (why != 0) {
                    // The smallest offset of all the threads' wins (the first malformed record).
                    PP_ATOMIC_MAX64(&sum[PP_SCAN_FAULT], ~((p << 3) | why));
                    break;
                }
            }
            // The sequence: FASTA's lines after the header, FASTQ's second line, or the line.
            pp_u64 s = p, e = end;
            if (format != PP_LINES) {
                s = pp_scan_eol(data, p, end);
                s += s < end;
            }
            if (format == PP_FASTQ) {
                e = pp_scan_eol(data, s, end);
            }
            pp_u32 word = (pp_u32)cmd[PP_SCAN_START];
            int decided = classes == 0 || (word & (PP_SCAN_MATCH | PP_SCAN_DEAD)) != 0;
            pp_u64 len = 0;
            for (pp_u64 i = s; i < e; i++) {
                pp_u8 b = data[i];
                // Line breaks, and a carriage return ending a line, are not sequence.
                if (b == '\n' || (b == '\r' && (i + 1 == e || data[i + 1] == '\n'))) {
                    continue;
                }
                len++;
                if (!decided) {
                    word = table[(pp_u64)(word >> 2) * class_n + classes[b]];
                    decided = (word & (PP_SCAN_MATCH | PP_SCAN_DEAD)) != 0;
                }
            }
            int match = classes == 0 || (decided ? (word & PP_SCAN_MATCH) != 0 : eoi[word >> 2] != 0);
            records++;
            if (match && len >= min) {
                matched++;
                bases += len;
                bins[63 - PP_CLZ64(len > 0 ? len : 1)]++;
            }
            p = end;
        }
        PP_ATOMIC_ADD64(&sum[0], records);
        PP_ATOMIC_ADD64(&sum[1], matched);
        PP_ATOMIC_ADD64(&sum[2], bases);
        for (int b = 0; b < 64; b++) {
            if (bins[b] != 0) {
                PP_ATOMIC_ADD64(&sum[4 + b], bins[b]);
            }
        }
    }
}

PP_KERNEL pp_scan_finish(const pp_u64 *PP_RESTRICT cmds, pp_u32 n, const pp_u64 *PP_RESTRICT sums)
{
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 c = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; c < n; c += step) {
        pp_u8 *out = (pp_u8 *)cmds[c * PP_SCAN_WORDS + PP_SCAN_OUT];
        pp_u64 fault = sums[c * PP_SCAN_STRIDE + PP_SCAN_FAULT];
        pp_u64 fault_record[2] = {~fault >> 3, ~fault & 7};
        int words = fault ? 2 : PP_SCAN_SUMS;
        for (int w = 0; w < words; w++) {
            pp_u64 v = fault ? fault_record[w] : sums[c * PP_SCAN_STRIDE + w];
            for (int i = 0; i < 8; i++) {
                out[8 * w + i] = (pp_u8)(v >> (8 * i));
            }
        }
    }
}
