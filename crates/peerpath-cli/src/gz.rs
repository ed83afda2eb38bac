//! `peerpath gzip` (also the program when named `ppgz`): gzip's and pigz's
//! command line over peerpath's jobs, so pipelines and scripts that call
//! gzip or pigz work unchanged (`tar -I 'peerpath gzip'`, `... | ppgz > x.gz`).
//!
//! Differences from gzip, on purpose: sources are kept (`-k` is accepted
//! and is the default: peerpath never removes a source); outputs are
//! written atomically and made durable; the default level is peerpath's
//! (1, ISA-L), `-1`..`-9` as gzip's; data after the last member is an error
//! (gzip warns and keeps the output); `-dcf` passes input that is not gzip
//! through unchanged, a named file or standard input, as gzip and `zcat -f` do.
//! Exit status as gzip's: 0, 1 (error), 2 (warning: a file skipped for its
//! name, kind or other hard links, an output that exists); an error outranks a
//! warning. No name or time is stored or restored (`-n`, `-N` and pigz's `-T`,
//! `-m`, `-M` change nothing); the GZIP variable is not read;
//! `--rsyncable` is refused (members are cut every 1 MiB of input, not by content).
//!
//! The options are parsed by hand: gzip's grammar (`-9`, `-cd`, `-p8`,
//! `-S .z`) is not what an argument-parsing library offers.

use peerpath_runtime::report::Quoted;
use peerpath_runtime::{CommonOptions, CompressOptions, DecompressOptions, JobError, JobReport};
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, PartialEq)]
struct Options {
    stdout: bool,
    decompress: bool,
    force: bool,
    test: bool,
    list: bool,
    level: Option<u32>,
    threads: Option<usize>,
    suffix: OsString,
    verbose: bool,
    quiet: bool,
    report: bool,
    json: bool,
    recursive: bool,
    allow_no_end_member: bool,
    files: Vec<OsString>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            stdout: false,
            decompress: false,
            force: false,
            test: false,
            list: false,
            level: None,
            threads: None,
            suffix: ".gz".into(),
            verbose: false,
            quiet: false,
            report: false,
            json: false,
            recursive: false,
            allow_no_end_member: false,
            files: Vec::new(),
        }
    }
}

pub const USAGE: &str = "usage: peerpath gzip [-cdfklmMnNqrtTvV1-9] [-p N] [-S SUFFIX] [--report|--json] [FILE]...
  -c, --stdout      write to standard output, keep the files
  -d, --decompress  decompress
  -f, --force       replace existing outputs; follow a symbolic link named as a file
  -k, --keep        keep the source files (always: peerpath never removes a source);
                    as gzip (-k too), a file with other hard links is left (exit 2) unless -c or -f
  -l, --list        list compressed and uncompressed sizes
  -n, -N, -T, -m, -M, --no-name, --name, --no-time, --time
                    accepted; no name or time is stored or restored
  --synchronous     accepted; outputs are always made durable
  -r, --recursive   the files under each directory named
  -t, --test        check every member (CRC-32 and length)
  -1 .. -9          compression level (--fast = -1, --best = -9; default: peerpath's 1)
  -p, --processes N threads
  -S, --suffix SUF  suffix of compressed files (default .gz)
  -v, --verbose     one line per file, as gzip -v
  -q, --quiet       no warnings
  -V, --version     the version
  --allow-no-end-member
                    read a file of peerpath's members without its end member (written before
                    2026-12-03); else such a file is an error: it was cut at a member's end
  --report, --json  peerpath's full report (to standard error when data goes to standard output;
                    --json: one job report a line, one line a file)
With no FILE, or FILE '-', standard input goes to standard output.";

fn parse(args: &[OsString]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut it = args.iter();
    let mut only_files = false;
    let value = |it: &mut std::slice::Iter<OsString>, rest: &[u8], name: &str| -> Result<OsString, String> {
        if !rest.is_empty() {
            return Ok(OsStr::from_bytes(rest).to_owned());
        }
        it.next().cloned().ok_or_else(|| format!("option {name} needs a value"))
    };
    let threads = |v: &OsStr| -> Result<usize, String> {
        v.to_str().and_then(|s| s.parse().ok()).filter(|n| (1..=1024).contains(n)).ok_or_else(|| format!("invalid thread count '{}'", v.to_string_lossy()))
    };
    while let Some(arg) = it.next() {
        let b = arg.as_bytes();
        if only_files || b == b"-" || !b.starts_with(b"-") {
            o.files.push(arg.clone());
            continue;
        }
        if b == b"--" {
            only_files = true;
            continue;
        }
        if let Some(long) = b.strip_prefix(b"--") {
            let (name, inline) = match long.iter().position(|&c| c == b'=') {
                Some(i) => (&long[..i], Some(OsStr::from_bytes(&long[i + 1..]).to_owned())),
                None => (long, None),
            };
            let mut val = |n: &str| inline.clone().map(Ok).unwrap_or_else(|| it.next().cloned().ok_or_else(|| format!("option --{n} needs a value")));
            match name {
                b"stdout" | b"to-stdout" => o.stdout = true,
                b"decompress" | b"uncompress" => o.decompress = true,
                b"force" => o.force = true,
                b"keep" => {}
                b"list" => o.list = true,
                b"test" => o.test = true,
                b"fast" => o.level = Some(1),
                b"best" => o.level = Some(9),
                b"processes" => o.threads = Some(threads(&val("processes")?)?),
                b"suffix" => o.suffix = val("suffix")?,
                b"verbose" => o.verbose = true,
                b"quiet" => o.quiet = true,
                b"report" => o.report = true,
                b"json" => o.json = true,
                b"help" => return Err(String::new()),
                b"version" => return Err(VERSION.into()),
                b"recursive" => o.recursive = true,
                b"allow-no-end-member" => o.allow_no_end_member = true,
                // Nothing of a name or time is stored or restored (pigz's --time too); outputs
                // are made durable always (gzip's --synchronous).
                b"no-name" | b"name" | b"no-time" | b"time" | b"synchronous" => {}
                b"rsyncable" => return Err("--rsyncable is not supported: peerpath cuts a member every 1 MiB of input, not at boundaries found in the content".into()),
                _ => return Err(format!("unknown option --{}", String::from_utf8_lossy(name))),
            }
            continue;
        }
        let mut i = 1;
        while i < b.len() {
            let c = b[i];
            let rest = &b[i + 1..];
            match c {
                b'c' => o.stdout = true,
                b'd' => o.decompress = true,
                b'f' => o.force = true,
                b'k' => {}
                b'l' => o.list = true,
                b't' => o.test = true,
                b'v' => o.verbose = true,
                b'q' => o.quiet = true,
                b'h' => return Err(String::new()),
                b'V' => return Err(VERSION.into()),
                b'r' => o.recursive = true,
                // gzip's -n/-N, pigz's -T and -m (--no-time), -M (--time): no name or time is
                // stored or restored.
                b'n' | b'N' | b'T' | b'm' | b'M' => {}
                b'1'..=b'9' => o.level = Some(u32::from(c - b'0')),
                b'p' => {
                    o.threads = Some(threads(&value(&mut it, rest, "-p")?)?);
                    break;
                }
                b'S' => {
                    o.suffix = value(&mut it, rest, "-S")?;
                    break;
                }
                _ => return Err(format!("invalid option -- '{}'", c as char)),
            }
            i += 1;
        }
    }
    if o.suffix.is_empty() {
        return Err("the suffix must not be empty".into());
    }
    // peerpath's own options where they would do nothing: an error, not ignored (gzip's own,
    // a level with -d for one, stay accepted as gzip accepts them).
    if o.allow_no_end_member && !(o.decompress || o.test || o.list) {
        return Err("--allow-no-end-member reads files of peerpath's members: give it with -d, -t or -l, or drop it".into());
    }
    if o.report && o.list && !o.json {
        return Err("--report with -l: -l prints gzip's list, not the report; give --json for each file's report instead, or drop --report".into());
    }
    if o.files.is_empty() {
        o.files.push("-".into());
    }
    Ok(o)
}

/// What `-V` prints (as an `Err` of `parse`, printed on standard output).
const VERSION: &str = concat!("peerpath gzip ", env!("CARGO_PKG_VERSION"), " (gzip's and pigz's command line over peerpath's jobs)");

/// How one file went.
enum Outcome {
    Done,
    Warning,
    Error,
}

pub fn main(args: &[OsString]) -> ExitCode {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) if e == VERSION => {
            println!("{VERSION}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("peerpath gzip: {e}\n{USAGE}");
            return ExitCode::from(1);
        }
    };
    let table = o.list && !o.json;
    let mut totals = (0u64, 0u64, 0usize);
    let mut found = Walk::default();
    for f in &o.files {
        if o.recursive {
            walk(&o, f, &mut found);
        } else {
            found.files.push(f.clone());
        }
    }
    let Walk { files, mut warned, mut failed, .. } = found;
    for f in &files {
        // What is read compressed is found as gzip finds it (x for x.gz).
        let found = if o.list || o.test || o.decompress { compressed_file(&o, f) } else { Ok(f.clone()) };
        let r = match found {
            Err(outcome) => outcome,
            Ok(f) if o.list => list(&o, &f, &mut totals),
            Ok(f) if o.test => test(&o, &f),
            Ok(f) if o.decompress => decompress(&o, &f),
            Ok(f) => compress(&o, &f),
        };
        match r {
            Outcome::Done => {}
            Outcome::Warning => warned = true,
            Outcome::Error => failed = true,
        }
    }
    if table && totals.2 > 1 && !o.quiet {
        println!("{}", list_line(totals.0, totals.1, "(totals)"));
    }
    // As gzip: an error outranks a warning (a script that takes 2 for "warnings only"
    // must not pass a corrupt archive).
    ExitCode::from(if failed { 1 } else if warned { 2 } else { 0 })
}

/// Whether a symbolic link named or met is followed to what it names, as gzip does: with -c
/// and -f, and with -t and -l (which gzip runs as if to standard output); elsewhere gzip
/// refuses it ("Too many levels of symbolic links").
fn follows_links(o: &Options) -> bool {
    o.stdout || o.force || o.test || o.list
}

/// What `-r` found: the files to take, in order; the directories walked, each with the name it
/// was walked under; whether one was not walked again (a warning) or could not be read (an error).
#[derive(Default)]
struct Walk {
    files: Vec<OsString>,
    walked: std::collections::HashMap<(u64, u64), OsString>,
    warned: bool,
    failed: bool,
}

/// `-r`: a directory named gives the files under it, in name order; anything else is itself.
/// As gzip's, a symbolic link is followed where gzip follows one ([`follows_links`]), a link
/// to a directory walked then too, and elsewhere refused ([`skipped`]) as any link is. Unlike
/// gzip, a directory is walked once: a link back into the tree (`d/up -> ..`) is said and not
/// followed, where gzip walks round the loop until the name is too long.
fn walk(o: &Options, f: &OsStr, found: &mut Walk) {
    use std::os::unix::fs::MetadataExt;
    let meta = |p: &OsStr| if follows_links(o) { std::fs::metadata(p) } else { std::fs::symlink_metadata(p) };
    let dir = match meta(f) {
        Ok(m) if f != "-" && m.is_dir() => m,
        _ => return found.files.push(f.to_owned()),
    };
    if let Some(first) = found.walked.get(&(dir.dev(), dir.ino())) {
        warn(o, format!("{}: the directory {} is walked already (a symbolic link back into the tree?) -- not again", name(f), name(first)));
        found.warned = true;
        return;
    }
    found.walked.insert((dir.dev(), dir.ino()), f.to_owned());
    let mut names: Vec<OsString> = match std::fs::read_dir(f) {
        Ok(entries) => entries.flatten().map(|e| e.file_name()).collect(),
        Err(e) => {
            eprintln!("peerpath gzip: {}: {e}", name(f));
            found.failed = true;
            return;
        }
    };
    names.sort();
    for n in names {
        let path = std::path::Path::new(f).join(&n).into_os_string();
        let m = meta(&path);
        if m.as_ref().is_ok_and(|m| m.is_dir()) {
            walk(o, &path, found);
            continue;
        }
        // As gzip in a tree: a name of the wrong kind is skipped silently: compressed already
        // (unless -c or -f), or, for -d, -t and -l, not compressed (unless -dc; -f does not
        // matter). Links (where not followed), FIFOs and devices go on, to be refused or skipped
        // with gzip's words; a followed link to a file of the wrong kind is skipped as that file
        // is. A file with other hard links goes on too: gzip looks at its links before its name
        // ([`hard_linked`]).
        let linked = !(o.test || o.list || o.stdout || o.force) && m.as_ref().is_ok_and(|m| m.nlink() > 1);
        let regular = m.is_ok_and(|m| m.is_file());
        let wrong_kind = match o.decompress || o.test || o.list {
            true => !(o.stdout && !o.test && !o.list) && plain_name(o, &path).is_none(),
            false => !(o.stdout || o.force) && has_gzip_suffix(o, &path).is_some(),
        };
        if !(regular && wrong_kind && !linked) {
            found.files.push(path);
        }
    }
}

fn common(o: &Options) -> CommonOptions {
    let mut c = CommonOptions::default();
    if let Some(t) = o.threads {
        c.threads = t;
    }
    c.queue_depth = c.queue_depth.max(c.threads as u32);
    c.force = o.force || o.stdout;
    c
}

/// A file's name as gzip's messages give it ("stdin" for "-"), quoted as peerpath's reports
/// quote names ([`Quoted`]): a newline in it would split the message's line.
fn name(f: &OsStr) -> String {
    if f == "-" { "stdin".into() } else { Quoted(Path::new(f)).to_string() }
}

fn warn(o: &Options, msg: String) -> Outcome {
    if !o.quiet {
        eprintln!("peerpath gzip: {msg}");
    }
    Outcome::Warning
}

fn fail(f: &OsStr, e: &JobError) -> Outcome {
    if crate::reader_gone(e) {
        // As gzip, which SIGPIPE kills: no word, no further file.
        std::process::exit(141);
    }
    // Most errors name the file already ("x.gz: truncated: ..."): not twice ("-" is stdin).
    let (msg, f_) = (crate::job_error_text(e), Quoted(Path::new(f)).to_string());
    if let Some(rest) = msg.strip_prefix("-: ").filter(|_| f == "-") {
        eprintln!("peerpath gzip: stdin: {rest}");
        return Outcome::Error;
    }
    if f != "-" && (msg.starts_with(&format!("{f_}:")) || msg.contains(&format!(" {f_}:")) || msg.contains(&format!(" {f_} "))) {
        eprintln!("peerpath gzip: {msg}");
    } else {
        eprintln!("peerpath gzip: {}: {msg}", name(f));
    }
    Outcome::Error
}

/// Prints peerpath's report where asked: to standard error when data went to standard output.
fn emit(o: &Options, report: &JobReport, data_on_stdout: bool) {
    if !(o.report || o.json) {
        return;
    }
    let text = if o.json { crate::jsonout::stamped_line("job-report", report) + "\n" } else { report.render() };
    if data_on_stdout {
        eprint!("{text}");
    } else {
        print!("{text}");
        let _ = std::io::stdout().flush();
    }
}

/// What gzip says of a named file before it reads it: a directory is skipped (warning), a
/// symbolic link refused (error) unless -c or -f, or -t and -l (which gzip runs as if to
/// standard output); `None` to go on.
fn skipped(o: &Options, f: &OsStr) -> Option<Outcome> {
    let meta = std::fs::symlink_metadata(f).ok()?;
    if meta.file_type().is_symlink() && !follows_links(o) {
        eprintln!("peerpath gzip: {}: Too many levels of symbolic links", name(f));
        return Some(Outcome::Error);
    }
    std::fs::metadata(f).is_ok_and(|m| m.is_dir()).then(|| warn(o, format!("{} is a directory -- ignored", name(f))))
}

/// gzip's refusal of a file with other hard links without -c or -f (a warning, the file left
/// as it is), though peerpath, like `gzip -k`, would keep it: `None` to go on.
fn hard_linked(o: &Options, f: &OsStr) -> Option<Outcome> {
    use std::os::unix::fs::MetadataExt;
    let others = std::fs::metadata(f).ok().filter(|m| m.is_file())?.nlink().checked_sub(1).filter(|&n| n > 0 && !o.stdout && !o.force)?;
    Some(warn(o, format!("{} has {} -- file ignored", name(f), peerpath_runtime::report::count(others, "other link"))))
}

/// An output that exists without -f: gzip's warning (exit 2), nothing replaced.
fn exists(o: &Options, target: &Path) -> Option<Outcome> {
    (!o.force && target.as_os_str() != "-" && std::fs::symlink_metadata(target).is_ok()).then(|| warn(o, format!("{} already exists; not overwritten", Quoted(target))))
}

fn compress(o: &Options, f: &OsStr) -> Outcome {
    let from_stdin = f == "-";
    // As gzip, a file's kind and links are looked at before its name.
    if let Some(outcome) = (!from_stdin).then(|| skipped(o, f).or_else(|| hard_linked(o, f))).flatten() {
        return outcome;
    }
    // gzip's known suffixes and -S, in any case: said, and no warning (gzip's exit status is
    // 0); -c and -f compress it.
    if let (Some(s), false, false) = (has_gzip_suffix(o, f), from_stdin, o.force || o.stdout) {
        if !o.quiet {
            eprintln!("peerpath gzip: {} already has {s} suffix -- unchanged", name(f));
        }
        return Outcome::Done;
    }
    if !o.stdout && !from_stdin && std::fs::metadata(f).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        // A device, FIFO or socket: its .gz would be made beside it (in /dev, say).
        return warn(o, format!("{} is not a directory or a regular file - ignored", name(f)));
    }
    let target: PathBuf = if o.stdout || from_stdin { "-".into() } else { bytes_path([f.as_bytes(), o.suffix.as_bytes()].concat()) };
    if let Some(outcome) = exists(o, &target) {
        return outcome;
    }
    if target.as_os_str() == "-" && !o.force && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        eprintln!("peerpath gzip: compressed data not written to a terminal. Use -f to force compression.");
        return Outcome::Error;
    }
    let level = match peerpath_func::Level::new(o.level.unwrap_or(1)) {
        Ok(l) => l,
        Err(e) => return fail(f, &JobError::Usage(e)),
    };
    let opts = CompressOptions {
        common: common(o),
        level,
        format: peerpath_func::Format::Gzip,
        block_size: peerpath_runtime::DEFAULT_BLOCK_BYTES,
        compute: peerpath_runtime::Compute::Cpu,
        no_fallback: false,
        verify: false,
        encrypt: None,
    };
    match peerpath_runtime::compress(&[(PathBuf::from(f), target.clone())], &opts) {
        Ok(r) => {
            if o.verbose {
                let saved = if r.bytes_in == 0 { 0.0 } else { 100.0 * (1.0 - r.bytes_out as f64 / r.bytes_in as f64) };
                let to = if target.as_os_str() == "-" { String::new() } else { format!(" -- created {}", Quoted(&target)) };
                eprintln!("{}:\t{saved:5.1}%{to}", name(f));
            }
            emit(o, &r, target.as_os_str() == "-");
            Outcome::Done
        }
        Err(e) => fail(f, &e),
    }
}

/// The suffix gzip would call `f`'s "already has" one when compressing: -S or one of gzip's
/// own (`known_suffixes`: not peerpath's .bgz and .gzip, which gzip compresses), in any case.
fn has_gzip_suffix(o: &Options, f: &OsStr) -> Option<String> {
    let b = f.as_bytes();
    std::iter::once(o.suffix.as_bytes())
        .chain(SUFFIXES[..GZIP_KNOWN].iter().map(|(s, _)| *s))
        .find(|s| b.len() > s.len() && b[b.len() - s.len()..].eq_ignore_ascii_case(s))
        .map(|s| String::from_utf8_lossy(&b[b.len() - s.len()..]).into_owned())
}

/// gzip's suffixes of compressed names, and what each becomes (gzip.c's `known_suffixes`, with
/// peerpath's `.bgz`; `.Z` matches `.z`, and an LZW file of compress(1) is refused as not gzip).
/// How many of [`SUFFIXES`] are gzip's own (the rest are peerpath's).
const GZIP_KNOWN: usize = 7;
const SUFFIXES: [(&[u8], &[u8]); 9] = [(b".gz", b""), (b".z", b""), (b"-gz", b""), (b"-z", b""), (b"_z", b""), (b".tgz", b".tar"), (b".taz", b".tar"), (b".bgz", b""), (b".gzip", b"")];

/// The name of `f` decompressed: without the suffix (`-S`, .gz, .tgz, ...), which is matched
/// regardless of case, as gzip does. As gzip's `get_suffix`, a `-S` that is the tail of one of
/// gzip's own (`-S gz`, `-S z`) is tried after them: `-d -S gz x.gz` makes `x`, not `x.`.
fn plain_name(o: &Options, f: &OsStr) -> Option<PathBuf> {
    let b = f.as_bytes();
    let user = o.suffix.as_bytes();
    let tail_of_builtin = SUFFIXES[..GZIP_KNOWN].iter().any(|(s, _)| user.len() < s.len() && s.ends_with(user));
    let (first, last) = if tail_of_builtin { (None, Some((user, &b""[..]))) } else { (Some((user, &b""[..])), None) };
    first.into_iter().chain(SUFFIXES).chain(last).find_map(|(s, r)| {
        let stem = b.len().checked_sub(s.len()).filter(|&n| n > 0 && b[n..].eq_ignore_ascii_case(s)).map(|n| &b[..n])?;
        (!stem.ends_with(b"/")).then(|| bytes_path([stem, r].concat()))
    })
}

/// The file `f` names: itself, or, where it does not exist and has no compressed suffix,
/// the first of `f` with a suffix that does (`gzip -d x` reads x.gz).
fn compressed_file(o: &Options, f: &OsStr) -> Result<OsString, Outcome> {
    if f == "-" || std::fs::symlink_metadata(f).is_ok() || plain_name(o, f).is_some() {
        return Ok(f.to_owned());
    }
    let with = |s: &[u8]| OsString::from_vec([f.as_bytes(), s].concat());
    match std::iter::once(o.suffix.as_bytes()).chain(SUFFIXES.iter().map(|(s, _)| *s)).map(with).find(|p| std::fs::symlink_metadata(p).is_ok()) {
        Some(p) => Ok(p),
        None => {
            eprintln!("peerpath gzip: {}: No such file or directory", name(f));
            Err(Outcome::Error)
        }
    }
}

/// `-dcf` (or `-df` of standard input) on input that is not gzip (a named file, or standard input as `... | zcat -f`): its
/// bytes to standard output unchanged, as gzip does; `None` where it is gzip (or cannot be
/// read: the decoder says why). The first two bytes tell. Standard input that is gzip is then
/// read by the decoder from its start: a file is put back where it was; a pipe cannot be read
/// again, so the process's standard input becomes a pipe that a thread fills with those two
/// bytes and then the rest.
fn pass_through(f: &OsStr) -> Option<Outcome> {
    use std::io::{Read, Seek};
    let mut input = match f == "-" {
        true => std::fs::File::from(std::os::fd::AsFd::as_fd(&std::io::stdin()).try_clone_to_owned().ok()?),
        false => std::fs::File::open(f).ok()?,
    };
    let mut magic = Vec::with_capacity(2);
    (&mut input).take(2).read_to_end(&mut magic).ok()?;
    // Gzip only where both magic bytes are there (a lone 0x1f is passed through, as gzip does).
    if magic != [0x1f, 0x8b] {
        let mut out = std::io::stdout().lock();
        let copied = out.write_all(&magic).and_then(|()| std::io::copy(&mut input, &mut out)).and_then(|_| out.flush());
        return Some(match copied {
            Ok(()) => Outcome::Done,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
            Err(e) => fail(f, &JobError::TargetIo { path: "-".into(), source: e }),
        });
    }
    if f != "-" || input.seek(std::io::SeekFrom::Current(-2)).is_ok() {
        return None;
    }
    let (reader, mut writer) = std::io::pipe().ok()?;
    rustix::stdio::dup2_stdin(&reader).ok()?;
    // Ends with the input (or a failed write: the decoder has stopped reading); a read error
    // ends the stream early, which the decoder reports as truncation.
    std::thread::spawn(move || writer.write_all(&magic).and_then(|()| std::io::copy(&mut input, &mut writer)));
    None
}

fn decompress(o: &Options, f: &OsStr) -> Outcome {
    let to_stdout = o.stdout || f == "-";
    if let Some(outcome) = (f != "-").then(|| skipped(o, f).or_else(|| hard_linked(o, f))).flatten() {
        return outcome;
    }
    let target = if to_stdout {
        PathBuf::from("-")
    } else {
        match plain_name(o, f) {
            Some(t) => t,
            // gzip -q skips it without a word or a warning's status.
            None if o.quiet => return Outcome::Done,
            None => return warn(o, format!("{}: unknown suffix -- ignored", name(f))),
        }
    };

    if let Some(outcome) = exists(o, &target) {
        return outcome;
    }
    // As gzip: -f passes what is not gzip through where it goes to standard output (-c, or
    // standard input's data).
    if to_stdout && o.force {
        if let Some(outcome) = pass_through(f) {
            return outcome;
        }
    }
    if let Some(outcome) = from_terminal(o, f) {
        return outcome;
    }
    let opts = DecompressOptions { common: common(o), allow_missing_end_member: o.allow_no_end_member, ..Default::default() };
    match peerpath_runtime::decompress(&[(PathBuf::from(f), target.clone())], &opts) {
        Ok(r) => {
            if o.verbose {
                let saved = if r.bytes_out == 0 { 0.0 } else { 100.0 * (1.0 - r.bytes_in as f64 / r.bytes_out as f64) };
                let to = if to_stdout { String::new() } else { format!(" -- created {}", Quoted(&target)) };
                eprintln!("{}:\t{saved:5.1}%{to}", name(f));
            }
            emit(o, &r, to_stdout);
            Outcome::Done
        }
        Err(e) => fail(f, &e),
    }
}

/// What -t and -l refuse before they read: a terminal, a directory, a link (as gzip).
fn not_read(o: &Options, f: &OsStr) -> Option<Outcome> {
    from_terminal(o, f).or_else(|| (f != "-").then(|| skipped(o, f)).flatten())
}

/// gzip's refusal to read compressed data from a terminal (-d, -t, -l on standard input).
fn from_terminal(o: &Options, f: &OsStr) -> Option<Outcome> {
    (f == "-" && !o.force && std::io::IsTerminal::is_terminal(&std::io::stdin())).then(|| {
        eprintln!("peerpath gzip: compressed data not read from a terminal. Use -f to force decompression.");
        Outcome::Error
    })
}

fn test(o: &Options, f: &OsStr) -> Outcome {
    if let Some(outcome) = not_read(o, f) {
        return outcome;
    }
    let opts = DecompressOptions { common: common(o), allow_missing_end_member: o.allow_no_end_member, ..Default::default() };
    match peerpath_runtime::verify(&[PathBuf::from(f)], &opts) {
        Ok(r) => {
            if o.verbose {
                eprintln!("{}:\t OK", name(f));
            }
            emit(o, &r, false);
            Outcome::Done
        }
        Err(e) => fail(f, &e),
    }
}

/// gzip -l's line: compressed and uncompressed bytes, the space saved, the name (found by
/// checking every member: peerpath has no shortcut through the last trailer); with --json,
/// the check's job report instead. `totals`: bytes in, out and files listed so far.
fn list(o: &Options, f: &OsStr, totals: &mut (u64, u64, usize)) -> Outcome {
    if let Some(outcome) = not_read(o, f) {
        return outcome;
    }
    let opts = DecompressOptions { common: common(o), allow_missing_end_member: o.allow_no_end_member, ..Default::default() };
    match peerpath_runtime::verify(&[PathBuf::from(f)], &opts) {
        Ok(r) if o.json => {
            emit(o, &r, false);
            Outcome::Done
        }
        Ok(r) => {
            // The header comes with the first file listed (as gzip's): none where none is, nor with -q.
            if totals.2 == 0 && !o.quiet {
                println!("         compressed        uncompressed  ratio uncompressed_name");
            }
            // Standard input's data is listed as gzip lists it: "stdout".
            let plain = if f == "-" { "stdout".into() } else { plain_name(o, f).map_or_else(|| name(f), |p| Quoted(&p).to_string()) };
            println!("{}", list_line(r.bytes_in, r.bytes_out, &plain));
            *totals = (totals.0 + r.bytes_in, totals.1 + r.bytes_out, totals.2 + 1);
            Outcome::Done
        }
        Err(e) => fail(f, &e),
    }
}

fn list_line(compressed: u64, uncompressed: u64, name: &str) -> String {
    let saved = if uncompressed == 0 { 0.0 } else { 100.0 * (1.0 - compressed as f64 / uncompressed as f64) };
    format!("{compressed:>19} {uncompressed:>19} {saved:5.1}% {name}")
}

/// A path from name bytes (names need not be UTF-8).
fn bytes_path(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(OsString::from_vec(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Options, String> {
        parse(&args.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn gzip_s_grammar_parses() {
        let o = p(&["-cd9", "-p8", "a", "--", "-b"]).unwrap();
        assert!(o.stdout && o.decompress);
        assert_eq!((o.level, o.threads), (Some(9), Some(8)));
        assert_eq!(o.files, [OsString::from("a"), OsString::from("-b")]);
        let o = p(&["-S", ".z", "-T", "--fast", "--processes=2", "-9n", "-N", "--no-name", "-mM", "--time", "--synchronous"]).unwrap();
        assert_eq!((o.suffix.as_os_str(), o.level, o.threads), (OsStr::new(".z"), Some(9), Some(2)));
        assert_eq!(o.files, [OsString::from("-")], "no file: standard input (pigz's -T is --no-time, no value)");
        assert!(p(&["-r", "d"]).unwrap().recursive);
        assert_eq!(p(&["-V"]).unwrap_err(), VERSION);
        assert!(p(&["--rsyncable"]).unwrap_err().contains("not supported"));
        assert!(p(&["-x"]).unwrap_err().contains("invalid option"));
        assert!(p(&["-p"]).unwrap_err().contains("needs a value"));
        assert!(p(&["-p0"]).unwrap_err().contains("invalid thread count"));
        assert_eq!(p(&["--help"]).unwrap_err(), "");
    }

    #[test]
    fn decompressed_names_follow_the_suffix() {
        let o = p(&["-S", ".pp"]).unwrap();
        assert_eq!(plain_name(&o, OsStr::new("a.pp")), Some(PathBuf::from("a")));
        assert_eq!(plain_name(&o, OsStr::new("a.tgz")), Some(PathBuf::from("a.tar")));
        assert_eq!(plain_name(&o, OsStr::new("a.txt")), None);
        assert_eq!(plain_name(&o, OsStr::new(".gz")), None);
        assert_eq!(plain_name(&o, OsStr::new("d/.gz")), None);
        // gzip's other suffixes, in any case.
        for (from, to) in [("a.GZ", "a"), ("a-gz", "a"), ("a-z", "a"), ("a_z", "a"), ("a.Z", "a"), ("b.taz", "b.tar"), ("b.TGZ", "b.tar"), ("c.bgz", "c")] {
            assert_eq!(plain_name(&o, OsStr::new(from)), Some(PathBuf::from(to)), "{from}");
        }
        // A -S that is the tail of one of gzip's own is tried after them (gzip's get_suffix).
        for (suffix, from, to) in [("gz", "p.gz", "p"), ("z", "p.gz", "p"), ("z", "p.z", "p"), ("z", "pz", "p"), ("gz", "pgz", "p")] {
            let o = p(&["-S", suffix]).unwrap();
            assert_eq!(plain_name(&o, OsStr::new(from)), Some(PathBuf::from(to)), "-S {suffix} {from}");
        }
    }
}
