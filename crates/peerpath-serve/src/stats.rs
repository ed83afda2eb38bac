//! Per-request figures and the report.

use peerpath_metrics::count;
use crate::Config;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Duration;

/// What the figures of a run are, when this host did all the work (every
/// mode but devmem with its NIC started).
pub const MEASURED_HERE: &str = "measured on this host";

/// What the figures of a devmem run are whose emulated NIC started: that
/// NIC is a process of its own on this host, and its CPU is not in
/// `host_cpu_us_per_request` (given apart, `nic_process_cpu_*`).
pub const MEASURED_WITH_EMULATED_NIC: &str = "measured on this host with an emulated NIC, a process of its own whose CPU is not in the host CPU figure";

/// A latency taken back: its request was found not delivered after all
/// ([`Stats::not_delivered`]); no latency recorded is this long.
const WITHDRAWN: u64 = u64::MAX;

/// Running counts that memcached's `stats` command reads while the server runs (the report
/// is made at the end, from [`Stats`]).
#[derive(Default)]
pub(crate) struct Counters {
    /// Connections accepted (refused ones too), and those refused at the limit.
    pub total_connections: AtomicU64,
    pub rejected_connections: AtomicU64,
    /// Bytes received from clients, and sent to them by this process (the emulated NIC's own
    /// sends, in devmem mode, are not seen here).
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    /// memcached `get`/`gets` keys looked up (memcached's `cmd_get` is their sum, one per key, as
    /// memcached counts): those whose VALUE was answered (sent, or queued behind the answers before
    /// it), those that named no file, and those that named one whose VALUE was not answered (it
    /// could not be read or sent: the connection is closed).
    pub get_hits: AtomicU64,
    pub get_misses: AtomicU64,
    pub get_failed: AtomicU64,
    /// Worker threads serving now (each counts itself while it runs).
    pub threads: AtomicU64,
}

/// Counts requests as they finish.
pub struct Stats {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Requests answered, aborted ones included.
    requests: u64,
    /// Requests whose response was not sent whole (the client went away,
    /// a send failed): in `requests`, not in `by_status` nor the latencies.
    aborted: u64,
    /// The latencies of requests sent whole, in the order they were recorded
    /// (a request's place in it is what [`Stats::record`] returned); one found
    /// not delivered after all is [`WITHDRAWN`].
    latencies_us: Vec<u64>,
    /// Whether any latency was withdrawn.
    withdrawn: bool,
    payload_bytes: u64,
    copied_bytes: u64,
    from_host_bytes: u64,
    by_status: std::collections::BTreeMap<u16, u64>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

impl Stats {
    pub fn new() -> Stats {
        Stats { inner: Mutex::new(Inner::default()) }
    }

    /// Records one request whose response was sent whole; returns where its
    /// latency is (for [`Stats::not_delivered`]).
    pub fn record(&self, latency: Duration, payload: u64, copied: u64, from_host: u64, status: u16) -> usize {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.latencies_us.push(latency.as_micros() as u64);
        s.payload_bytes += payload;
        s.copied_bytes += copied;
        s.from_host_bytes += from_host;
        *s.by_status.entry(status).or_insert(0) += 1;
        s.requests += 1;
        s.latencies_us.len() - 1
    }

    /// Records one request whose response was not sent whole (the client
    /// went away, a send failed): counted as aborted, not under its status.
    pub fn record_aborted(&self) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.aborted += 1;
        s.requests += 1;
    }

    /// Responses counted as sent (each its status and, once counted, where
    /// its latency is: what [`Stats::record`] returned) and `bytes` of
    /// payload, handed to the NIC, that it then could not send (the client
    /// went away): counted as aborted instead, the payload taken back and
    /// their latencies withdrawn from the percentiles (they stayed among the
    /// others', as if sent). Called before [`Stats::report`], which sorts them.
    pub fn not_delivered(&self, bytes: u64, responses: &[(u16, Option<usize>)]) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.payload_bytes = s.payload_bytes.saturating_sub(bytes);
        for &(status, latency_at) in responses {
            if let Some(n) = s.by_status.get_mut(&status).filter(|n| **n > 0) {
                *n -= 1;
                if *n == 0 {
                    s.by_status.remove(&status);
                }
                s.aborted += 1;
                if let Some(l) = latency_at.and_then(|at| s.latencies_us.get_mut(at)) {
                    *l = WITHDRAWN;
                    s.withdrawn = true;
                }
            }
        }
    }

    /// Requests answered so far, those of them aborted, and their payload bytes.
    pub(crate) fn so_far(&self) -> (u64, u64, u64) {
        let s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (s.requests, s.aborted, s.payload_bytes)
    }

    pub(crate) fn report(&self, config: &Config, wall: Duration, cpu: Duration) -> Report {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if std::mem::take(&mut s.withdrawn) {
            s.latencies_us.retain(|&l| l != WITHDRAWN);
        }
        s.latencies_us.sort_unstable();
        let done = s.latencies_us.len();
        let pct = |p: f64| if done == 0 { 0 } else { s.latencies_us[((done as f64 * p).ceil() as usize).clamp(1, done) - 1] };
        let n = s.requests as usize;
        let secs = wall.as_secs_f64().max(1e-9);
        Report {
            mode: config.mode.name(),
            provenance: MEASURED_HERE,
            requests: n as u64,
            seconds: secs,
            requests_per_s: n as f64 / secs,
            payload_bytes: s.payload_bytes,
            payload_bytes_per_s: s.payload_bytes as f64 / secs,
            p50_us: pct(0.50),
            p99_us: pct(0.99),
            p999_us: pct(0.999),
            host_cpu_us_per_request: if n == 0 { 0.0 } else { cpu.as_secs_f64() * 1e6 / n as f64 },
            host_memory_payload_bytes_per_request: if n == 0 { 0.0 } else { s.copied_bytes as f64 / n as f64 },
            payload_bytes_from_host_memory_per_request: if n == 0 { 0.0 } else { s.from_host_bytes as f64 / n as f64 },
            by_status: s.by_status.clone(),
            aborted: s.aborted,
            nic_process_cpu_seconds: None,
            nic_process_cpu_us_per_request: None,
            host_cache: None,
            nic: None,
            nic_fallback: None,
            send_zc: None,
            connections: Connections::default(),
        }
    }
}

/// What a run served, measured on this host (devmem: with an emulated NIC,
/// see `provenance`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub mode: &'static str,
    /// What the figures are: [`MEASURED_HERE`], or, devmem with its NIC
    /// started, [`MEASURED_WITH_EMULATED_NIC`].
    pub provenance: &'static str,
    pub requests: u64,
    pub seconds: f64,
    pub requests_per_s: f64,
    pub payload_bytes: u64,
    pub payload_bytes_per_s: f64,
    /// Latency percentiles of the requests sent whole (`by_status`'s; the
    /// aborted ones are not among them), 0 when there are none.
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    /// The server process's CPU time (user + system) per request; in devmem
    /// mode not the emulated NIC's process, which sends the payloads (its
    /// own figures below).
    pub host_cpu_us_per_request: f64,
    /// Devmem: the emulated NIC process's CPU time (user + system, all its
    /// threads, from /proc/PID/stat in clock ticks) while serving, and per
    /// request; `None` in the other modes, when the NIC did not start, or
    /// when its figures could not be read.
    pub nic_process_cpu_seconds: Option<f64>,
    pub nic_process_cpu_us_per_request: Option<f64>,
    /// Payload bytes this process copied through its own memory, per request
    /// (host mode: every byte; zerocopy: none; the kernel's own copies not counted).
    pub host_memory_payload_bytes_per_request: f64,
    /// Payload bytes sent from host memory (the page cache or this
    /// process's buffers), per request: every payload byte in host and
    /// zerocopy modes; in devmem mode only what the NIC did not send.
    pub payload_bytes_from_host_memory_per_request: f64,
    /// Requests answered whole, by status.
    pub by_status: std::collections::BTreeMap<u16, u64>,
    /// Requests whose response was not sent whole (the client went away or
    /// a send failed midway; in devmem mode, the NIC's send): in `requests`,
    /// not in `by_status` nor the latencies (they were counted as sent, 200s,
    /// and devmem's among the latencies).
    pub aborted: u64,
    /// Host: the host memory's object cache (`None`: off, every payload read per request).
    pub host_cache: Option<HostCacheCounts>,
    /// DevMem: the NIC memory's cache.
    pub nic: Option<NicCounts>,
    /// DevMem: why the NIC stopped being used (the host path served the rest).
    pub nic_fallback: Option<String>,
    /// SendZc: what the kernel's notifications said.
    pub send_zc: Option<SendZcCounts>,
    pub connections: Connections,
}

/// How many connections were open at most, and the threads that served them.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Connections {
    /// The most served at once (refused ones, answered and closed, not counted).
    pub peak: u64,
    /// More than this many are refused (503 / SERVER_ERROR).
    pub limit: u64,
    /// Worker threads started, and at most.
    pub workers: u64,
    pub worker_limit: u64,
    /// The last error accept(2) gave (out of descriptors), if any.
    pub accept_error: Option<String>,
}

/// Payload bytes sent with `SEND_ZC`, and those the kernel reported copying
/// after all (all of them on loopback: the receiver is on this host).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SendZcCounts {
    pub bytes: u64,
    pub kernel_copied_bytes: u64,
}

/// Host mode's object cache: objects found in it, read in and kept,
/// evicted, too large for it (over half its memory: read per request), or
/// changed while they were read (sent as read, not kept); and its memory.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct HostCacheCounts {
    pub bytes: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub too_large: u64,
    pub changed: u64,
}

/// Objects found in the NIC's memory, placed there, evicted, too large for
/// it, or not placed (sent from the host; with the last reason).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct NicCounts {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub too_large: u64,
    pub not_placed: u64,
    pub last_error: Option<String>,
}

impl Report {
    /// Devmem with its NIC started: the figures are measured with an
    /// emulated NIC, whose process's CPU over the run (`cpu`, if it could be
    /// read) is given apart from the server's.
    pub(crate) fn with_emulated_nic(&mut self, cpu: Option<Duration>) {
        self.provenance = MEASURED_WITH_EMULATED_NIC;
        self.nic_process_cpu_seconds = cpu.map(|c| c.as_secs_f64());
        self.nic_process_cpu_us_per_request = cpu.map(|c| if self.requests == 0 { 0.0 } else { c.as_secs_f64() * 1e6 / self.requests as f64 });
    }

    pub fn render(&self) -> String {
        let mut statuses: Vec<String> = self.by_status.iter().map(|(s, n)| format!("{s}: {n}")).collect();
        if statuses.is_empty() {
            statuses.push("none sent whole".into());
        }
        let nic_cpu = match (self.provenance == MEASURED_WITH_EMULATED_NIC, self.nic_process_cpu_seconds, self.nic_process_cpu_us_per_request) {
            (false, ..) => String::new(),
            (true, Some(s), Some(us)) => format!(" (the server process only; the emulated NIC's process, which sends the payloads: {us:.1} us per request, {s:.2} s CPU)"),
            (true, ..) => " (the server process only; the emulated NIC's process, which sends the payloads, not counted: its CPU could not be read)".to_string(),
        };
        format!(
            "serve ({} mode; {}): {} in {:.2} s, {} requests/s, {} MB/s of payload\n\
             latency p50 {} us, p99 {} us, p99.9 {} us; host CPU {:.1} us per request{}; payload bytes through this process's memory per request: {:.0}\n\
             payload bytes sent from host memory per request: {:.0}\n\
             status codes: {}{}\n\
             connections: at most {} open at once (limit {}), served by {} (limit {}); idle ones wait in the event loop{}{}{}{}{}",
            self.mode,
            self.provenance,
            count(self.requests, "request"),
            self.seconds,
            Report::rate(self.requests_per_s),
            Report::rate(self.payload_bytes_per_s / 1e6),
            self.p50_us,
            self.p99_us,
            self.p999_us,
            self.host_cpu_us_per_request,
            nic_cpu,
            self.host_memory_payload_bytes_per_request,
            self.payload_bytes_from_host_memory_per_request,
            statuses.join(", "),
            if self.aborted > 0 { format!("; {} aborted (the client went away or a send failed before the response was whole; not in the latencies)", self.aborted) } else { String::new() },
            self.connections.peak,
            self.connections.limit,
            count(self.connections.workers, "worker thread"),
            self.connections.worker_limit,
            self.connections.accept_error.as_ref().map_or(String::new(), |e| format!("; accept failed: {e}")),
            self.host_cache.as_ref().map_or(String::new(), |c| format!(
                "\nhost memory cache ({:.1} MiB): {}, {} read in and kept, {} evicted, {} too large and {} changed while read (read per request)",
                c.bytes as f64 / (1u64 << 20) as f64,
                count(c.hits, "hit"),
                c.misses,
                c.evictions,
                c.too_large,
                c.changed
            )),
            self.nic.as_ref().map_or(String::new(), |n| format!(
                "\nemulated NIC memory: {}, {} placed, {} evicted, {} too large and {} not placed (sent from the host){}",
                count(n.hits, "hit"),
                n.misses,
                n.evictions,
                n.too_large,
                n.not_placed,
                n.last_error.as_ref().map_or(String::new(), |e| format!("; last placement error: {e}"))
            )),
            self.nic_fallback.as_ref().map_or(String::new(), |w| format!("\nFALLBACK: {w}: the host path served the requests after it")),
            self.send_zc.as_ref().map_or(String::new(), |z| format!(
                "\nSEND_ZC: {} sent from mapped pages; the kernel reported copying {} of them after all ({:.0}%{})",
                count(z.bytes, "payload byte"),
                z.kernel_copied_bytes,
                if z.bytes == 0 { 0.0 } else { 100.0 * z.kernel_copied_bytes as f64 / z.bytes as f64 },
                if z.kernel_copied_bytes > 0 { "; over loopback it always copies: the receiver is on this host" } else { "" }
            ))
        )
    }

    /// A rate as the report prints it: whole from 10 up, else 3 significant digits, so that one
    /// request in 2 s reads 0.485, not 0 (`bench-kv` prints its rates so too).
    pub fn rate(x: f64) -> String {
        if x >= 10.0 || x <= 0.0 || !x.is_finite() {
            return format!("{x:.0}");
        }
        // Three significant digits of the value rounded so (9.996 is 10, not "10.00").
        let decimals = |v: f64| (2.0 - v.log10().floor()) as i32;
        let scale = 10f64.powi(decimals(x));
        let rounded = (x * scale).round() / scale;
        if rounded >= 10.0 {
            format!("{rounded:.0}")
        } else {
            format!("{rounded:.*}", decimals(rounded) as usize)
        }
    }
}

/// This process's CPU time so far (user + system).
pub(crate) fn process_cpu() -> Duration {
    // SAFETY: getrusage fills the struct we pass; RUSAGE_SELF is always valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| Duration::new(tv.tv_sec as u64, tv.tv_usec as u32 * 1000);
    t(ru.ru_utime) + t(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::Stats;
    use std::time::Duration;

    /// Responses the NIC could not send after all are aborted: their status,
    /// payload and latency are taken back (the latency stayed among the others').
    #[test]
    fn a_response_not_delivered_leaves_the_latencies() {
        let stats = Stats::new();
        let ms = Duration::from_millis;
        let first = stats.record(ms(1), 10, 0, 0, 200);
        let slow = stats.record(ms(900), 1000, 0, 0, 200);
        stats.record(ms(2), 10, 0, 0, 404);
        assert_eq!(first, 0);
        stats.not_delivered(1000, &[(200, Some(slow))]);
        let r = stats.report(&crate::Config::new("/".into()), Duration::from_secs(1), Duration::ZERO);
        assert_eq!((r.requests, r.aborted, r.payload_bytes), (3, 1, 20));
        assert_eq!(r.by_status, [(200, 1), (404, 1)].into());
        assert_eq!((r.p50_us, r.p99_us, r.p999_us), (1000, 2000, 2000), "the 900 ms one is not among them");
    }

    /// A rate under 1 a second prints with its digits, not as 0.
    #[test]
    fn a_slow_run_prints_its_rate() {
        let stats = Stats::new();
        stats.record(Duration::from_millis(1), 1000, 0, 0, 200);
        let text = stats.report(&crate::Config::new("/".into()), Duration::from_millis(2060), Duration::ZERO).render();
        assert!(text.contains(": 1 request in 2.06 s, 0.485 requests/s, 0.000485 MB/s of payload"), "{text}");
        assert_eq!((super::Report::rate(0.0), super::Report::rate(2.5), super::Report::rate(12.4), super::Report::rate(1234.6)), ("0".into(), "2.50".into(), "12".into(), "1235".into()));
        // Rounded first, then given its digits.
        assert_eq!((super::Report::rate(9.996), super::Report::rate(0.0009996), super::Report::rate(0.999)), ("10".into(), "0.00100".into(), "0.999".into()));
    }

    /// A run whose every response was aborted says so, not "status codes: ; 1 aborted".
    #[test]
    fn a_run_of_aborted_responses_says_none_was_sent_whole() {
        let stats = Stats::new();
        let at = stats.record(Duration::from_millis(1), 10, 0, 0, 200);
        stats.not_delivered(10, &[(200, Some(at))]);
        let text = stats.report(&crate::Config::new("/".into()), Duration::from_secs(1), Duration::ZERO).render();
        assert!(text.contains("status codes: none sent whole; 1 aborted"), "{text}");
    }
}
