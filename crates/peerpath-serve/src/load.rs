//! A load client for the memcached text protocol (`peerpath bench-kv`):
//! N connections, each sending `get KEY` and reading the whole answer
//! before the next, for a fixed time. The same client measures peerpath
//! serve and memcached itself, so the two are compared on equal terms.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
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
    /// The server cannot be reached, or has no value for the key.
    #[error("{0}")]
    Unreachable(String),
    /// The server stopped answering, or answered something else, mid-run.
    #[error("{0}")]
    Broken(String),
}

/// Reads one `get` answer: exactly one VALUE of some length, then END.
/// Returns the value's length.
fn read_answer(r: &mut BufReader<TcpStream>, key: &str) -> Result<u64, LoadError> {
    let mut line = String::new();
    r.read_line(&mut line).map_err(|e| LoadError::Broken(format!("reading: {e}")))?;
    if line.is_empty() {
        return Err(LoadError::Broken("the server closed the connection".into()));
    }
    if line == "END\r\n" {
        return Err(LoadError::Unreachable(format!("the server has no value for {key}")));
    }
    let mut f = line.trim_end().split(' ');
    let (tag, k, _flags, len) = (f.next(), f.next(), f.next(), f.next().and_then(|n| n.parse::<u64>().ok()));
    let (Some("VALUE"), Some(k), Some(len)) = (tag, k, len) else { return Err(LoadError::Broken(format!("unexpected answer {line:?}"))) };
    if k != key {
        return Err(LoadError::Broken(format!("answer for {k}, asked {key}")));
    }
    let mut rest = vec![0u8; len as usize + 2 + 5];
    r.read_exact(&mut rest).map_err(|e| LoadError::Broken(format!("reading the value: {e}")))?;
    if &rest[len as usize..] != b"\r\nEND\r\n" {
        return Err(LoadError::Broken("the value is not followed by END".into()));
    }
    Ok(len)
}

/// Runs the load: `connections` clients for `seconds`.
pub fn run(server: SocketAddr, key: &str, connections: usize, seconds: f64) -> Result<LoadReport, LoadError> {
    if key.is_empty() || key.len() > 250 || key.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(LoadError::BadKey);
    }
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let results: Vec<Result<(Vec<u64>, u64), LoadError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..connections.max(1))
            .map(|_| {
                s.spawn(move || -> Result<(Vec<u64>, u64), LoadError> {
                    let stream = TcpStream::connect(server).map_err(|e| LoadError::Unreachable(format!("connecting to {server}: {e}")))?;
                    stream.set_nodelay(true).ok();
                    let mut w = stream.try_clone().map_err(|e| LoadError::Broken(e.to_string()))?;
                    let mut r = BufReader::with_capacity(1 << 20, stream);
                    let request = format!("get {key}\r\n");
                    let (mut lat, mut bytes) = (Vec::new(), 0u64);
                    // At least one request a connection, however late it started.
                    loop {
                        let t = Instant::now();
                        w.write_all(request.as_bytes()).map_err(|e| LoadError::Broken(format!("sending: {e}")))?;
                        bytes += read_answer(&mut r, key)?;
                        lat.push(t.elapsed().as_micros() as u64);
                        if Instant::now() >= deadline {
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
        bytes += b;
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
