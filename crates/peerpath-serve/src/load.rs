//! A load client for the memcached text protocol (`peerpath bench-kv`):
//! N connections, each sending `get KEY` and reading the whole answer
//! before the next, for a fixed time. The same client measures peerpath
//! serve and memcached itself, so the two are compared on equal terms.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What a load run measured (on this host, client and server sharing it).
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadReport {
    pub server: String,
    pub key: String,
    pub connections: usize,
    pub seconds: f64,
    pub requests: u64,
    pub requests_per_s: f64,
    pub value_bytes: u64,
    pub mb_per_s: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
}

/// Why a load run did not measure.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The key cannot be asked for (a usage error).
    #[error("a memcached key is 1-250 bytes without spaces or control characters")]
    BadKey,
    /// The server cannot be reached.
    #[error("{0}")]
    Unreachable(std::io::Error),
    /// The server has no value for the key (its name quoted where it is said: `peerpath bench-kv`).
    #[error("the server has no value for the key")]
    NoValue,
    /// The server stopped answering, or answered something else, mid-run.
    #[error("{0}")]
    Broken(String),
}

/// How long one read or write of an answer may wait, and how long after
/// the run's end an answer still coming is waited for: a server that
/// accepts and never answers (or drips) ends the run with an error, not a hang.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// An answer's first line (`VALUE <key> <flags> <bytes> [<cas>]`, its key
/// at most 250 bytes) is shorter than this, or is not an answer.
const LINE_BYTES_MAX: usize = 1024;

/// No file is longer (off_t): a value declared longer is no answer.
const VALUE_BYTES_MAX: u64 = i64::MAX as u64;

/// The reader's next bytes (at most its buffer's worth), or an error once
/// `give_up` (if any) has passed; each read waits at most [`ANSWER_TIMEOUT`].
/// A read interrupted (EINTR) is tried again: a socket with a receive
/// timeout returns it even for a signal whose handler asked for restarts,
/// and `fill_buf` passes it on (it ended the run as the server's error).
fn fill<'r, R: Read>(r: &'r mut BufReader<R>, give_up: Option<Instant>, what: &str) -> Result<&'r [u8], LoadError> {
    loop {
        if give_up.is_some_and(|g| Instant::now() > g) {
            return Err(LoadError::Broken(format!("{what} was not whole {} s after the run's end", ANSWER_TIMEOUT.as_secs())));
        }
        match r.fill_buf() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let why = match e.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => format!("the server sent nothing for {} s", ANSWER_TIMEOUT.as_secs()),
                    _ => e.to_string(),
                };
                return Err(LoadError::Broken(format!("reading {what}: {why}")));
            }
            Ok(_) => break,
        }
    }
    // Filled (the borrow checker takes the buffer only outside the loop): what is there.
    Ok(r.buffer())
}

/// Reads one `get` answer: exactly one VALUE of some length, then END;
/// gives up once `give_up` has passed. The value is counted, not kept: it
/// passes through the reader's buffer (a length the server declares is
/// never allocated: 100 GB aborted the process, 2^64 - 6 overflowed).
/// Returns the value's length.
fn read_answer<R: Read>(r: &mut BufReader<R>, key: &str, give_up: Option<Instant>) -> Result<u64, LoadError> {
    let mut line = Vec::new();
    while !line.ends_with(b"\n") {
        let buf = fill(r, give_up, "the answer")?;
        if buf.is_empty() {
            return Err(LoadError::Broken("the server closed the connection".into()));
        }
        let n = buf.iter().position(|&b| b == b'\n').map_or(buf.len(), |i| i + 1);
        line.extend_from_slice(&buf[..n]);
        r.consume(n);
        if line.len() > LINE_BYTES_MAX {
            return Err(LoadError::Broken(format!("an answer line longer than {LINE_BYTES_MAX} bytes")));
        }
    }
    let line = String::from_utf8_lossy(&line);
    if line == "END\r\n" {
        return Err(LoadError::NoValue);
    }
    let mut f = line.trim_end().split(' ');
    let (tag, k, _flags, len) = (f.next(), f.next(), f.next(), f.next().and_then(|n| n.parse::<u64>().ok()));
    let (Some("VALUE"), Some(k), Some(len)) = (tag, k, len) else { return Err(LoadError::Broken(format!("unexpected answer {line:?}"))) };
    if k != key {
        return Err(LoadError::Broken(format!("answer for {k}, asked {key}")));
    }
    if len > VALUE_BYTES_MAX {
        return Err(LoadError::Broken(format!("the server says the value of {key} is {len} bytes, more than any file holds")));
    }
    let mut left = len;
    while left > 0 {
        let got = fill(r, give_up, "the value")?.len();
        if got == 0 {
            return Err(LoadError::Broken(format!("the server closed the connection {} bytes into a {len}-byte value", len - left)));
        }
        let n = usize::try_from(left).map_or(got, |l| l.min(got));
        r.consume(n);
        left -= n as u64;
    }
    let mut end = [0u8; 7];
    let mut have = 0;
    while have < end.len() {
        let buf = fill(r, give_up, "the value's end")?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len().min(end.len() - have);
        end[have..have + n].copy_from_slice(&buf[..n]);
        r.consume(n);
        have += n;
    }
    if end != *b"\r\nEND\r\n" {
        return Err(LoadError::Broken("the value is not followed by END".into()));
    }
    Ok(len)
}

/// Runs the load: `connections` clients for `seconds`, or until `stop` is set (a signal):
/// each client ends after its answer in flight, and the report is of the time run.
pub fn run(server: SocketAddr, key: &str, connections: usize, seconds: f64, stop: &AtomicBool) -> Result<LoadReport, LoadError> {
    if key.is_empty() || key.len() > 250 || key.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(LoadError::BadKey);
    }
    let started = Instant::now();
    // A run longer than the clock can count (`--seconds 1e20`, which panicked) runs until stopped.
    let deadline = Duration::try_from_secs_f64(seconds.max(0.0)).ok().and_then(|d| started.checked_add(d));
    let give_up = deadline.and_then(|d| d.checked_add(ANSWER_TIMEOUT));
    let results: Vec<Result<(Vec<u64>, u64), LoadError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..connections.max(1))
            .map(|_| {
                s.spawn(move || -> Result<(Vec<u64>, u64), LoadError> {
                    let stream = TcpStream::connect_timeout(&server, ANSWER_TIMEOUT).map_err(LoadError::Unreachable)?;
                    stream.set_nodelay(true).ok();
                    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).map_err(|e| LoadError::Broken(e.to_string()))?;
                    stream.set_write_timeout(Some(ANSWER_TIMEOUT)).map_err(|e| LoadError::Broken(e.to_string()))?;
                    let mut w = stream.try_clone().map_err(|e| LoadError::Broken(e.to_string()))?;
                    let mut r = BufReader::with_capacity(1 << 20, stream);
                    let request = format!("get {key}\r\n");
                    let (mut lat, mut bytes) = (Vec::new(), 0u64);
                    // At least one request a connection, however late it started.
                    loop {
                        let t = Instant::now();
                        w.write_all(request.as_bytes()).map_err(|e| LoadError::Broken(format!("sending: {e}")))?;
                        bytes = bytes.saturating_add(read_answer(&mut r, key, give_up)?);
                        lat.push(t.elapsed().as_micros() as u64);
                        if deadline.is_some_and(|d| Instant::now() >= d) || stop.load(Ordering::Relaxed) {
                            break;
                        }
                    }
                    Ok((lat, bytes))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(LoadError::Broken("a client thread panicked".into())))).collect()
    });
    let secs = started.elapsed().as_secs_f64();
    let (mut lat, mut bytes) = (Vec::new(), 0u64);
    for r in results {
        let (l, b) = r?;
        lat.extend(l);
        bytes = bytes.saturating_add(b);
    }
    lat.sort_unstable();
    let n = lat.len();
    let pct = |p: f64| if n == 0 { 0 } else { lat[((n as f64 * p).ceil() as usize).clamp(1, n) - 1] };
    Ok(LoadReport {
        server: server.to_string(),
        key: key.to_string(),
        connections,
        seconds: secs,
        requests: n as u64,
        requests_per_s: n as f64 / secs,
        value_bytes: bytes,
        mb_per_s: bytes as f64 / secs / 1e6,
        p50_us: pct(0.5),
        p99_us: pct(0.99),
        p999_us: pct(0.999),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives `data` a few bytes at a time, each piece after an EINTR.
    struct Interrupting {
        data: Vec<u8>,
        at: usize,
        interrupt: bool,
    }

    impl Read for Interrupting {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.interrupt = !self.interrupt;
            if self.interrupt {
                return Err(std::io::ErrorKind::Interrupted.into());
            }
            let n = buf.len().min(3).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    /// An interrupted read (EINTR, which a socket with a receive timeout
    /// gives even for a restarting signal handler) is read again, not the
    /// server's error.
    #[test]
    fn interrupted_reads_are_tried_again() {
        let data = b"VALUE k 0 5\r\nhello\r\nEND\r\n".to_vec();
        let mut r = BufReader::with_capacity(8, Interrupting { data, at: 0, interrupt: false });
        assert_eq!(read_answer(&mut r, "k", None).map_err(|e| e.to_string()), Ok(5));
    }
}
