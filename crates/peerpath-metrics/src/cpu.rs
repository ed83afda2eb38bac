use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a thread does, for splitting host CPU time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuRole {
    /// Submitting and reaping I/O, dispatching blocks, ordering output.
    Orchestration,
    /// Running functions (compression, decompression, checks).
    Compute,
}

impl fmt::Display for CpuRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CpuRole::Orchestration => "I/O orchestration",
            CpuRole::Compute => "compute workers",
        })
    }
}

/// User and system CPU time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CpuTime {
    pub user_s: f64,
    pub system_s: f64,
}

impl CpuTime {
    pub fn total_s(&self) -> f64 {
        self.user_s + self.system_s
    }
    pub fn minus(&self, other: &CpuTime) -> CpuTime {
        CpuTime { user_s: (self.user_s - other.user_s).max(0.0), system_s: (self.system_s - other.system_s).max(0.0) }
    }
    fn plus(&self, other: &CpuTime) -> CpuTime {
        CpuTime { user_s: self.user_s + other.user_s, system_s: self.system_s + other.system_s }
    }
}

fn rusage(who: libc::c_int) -> CpuTime {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the pointed-to struct.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return CpuTime::default();
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    CpuTime { user_s: tv(ru.ru_utime), system_s: tv(ru.ru_stime) }
}

/// CPU time of this process's io_uring worker threads alive now (tasks
/// named `iou-wrk-*` in /proc/self/task), `None` where /proc says nothing.
pub fn io_uring_worker_cpu() -> Option<CpuTime> {
    // SAFETY: sysconf reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks <= 0 {
        return None;
    }
    let mut sum = CpuTime::default();
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("iou-wrk") {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else { continue };
        let Some((user, system)) = stat_ticks(&stat) else { continue };
        sum = sum.plus(&CpuTime { user_s: user as f64 / ticks as f64, system_s: system as f64 / ticks as f64 });
    }
    Some(sum)
}

/// CPU time of the calling thread so far (`RUSAGE_THREAD`).
pub fn thread_cpu_now() -> CpuTime {
    rusage(libc::RUSAGE_THREAD)
}

/// Collects CPU time per role. Each thread calls [`CpuAccount::charge_thread`]
/// once when its work is over; the process total comes from `RUSAGE_SELF`
/// so time spent in threads that did not report (the kernel's io_uring
/// workers, the main thread) shows up as "other" instead of vanishing.
#[derive(Clone)]
pub struct CpuAccount {
    roles: Arc<Mutex<BTreeMap<CpuRole, (CpuTime, usize)>>>,
    process_start: CpuTime,
    /// io_uring's worker threads' CPU, sampled before the job's ring goes.
    io_workers: Arc<Mutex<Option<CpuTime>>>,
}

/// One role's share.
#[derive(Clone, Debug, Serialize)]
pub struct RoleCpu {
    pub role: CpuRole,
    pub threads: usize,
    pub user_s: f64,
    pub system_s: f64,
    /// Share of all cores over the wall time, in percent.
    pub utilisation_pct: f64,
}

/// Host CPU for a job.
#[derive(Clone, Debug, Serialize)]
pub struct CpuSummary {
    pub cores: usize,
    pub wall_s: f64,
    pub roles: Vec<RoleCpu>,
    /// Process CPU not charged to a role (main thread, kernel io workers).
    pub other_s: f64,
    /// Of `other_s`: io_uring's worker threads (sampled at the job's end), where sampled.
    pub io_workers_s: Option<f64>,
    pub total_user_s: f64,
    pub total_system_s: f64,
    pub total_utilisation_pct: f64,
}

impl CpuAccount {
    pub fn start() -> Self {
        CpuAccount { roles: Arc::default(), process_start: rusage(libc::RUSAGE_SELF), io_workers: Arc::default() }
    }

    /// Charges the calling thread's CPU time since `since` to `role`.
    pub fn charge_thread(&self, role: CpuRole, since: CpuTime) {
        let used = thread_cpu_now().minus(&since);
        let mut roles = self.roles.lock().expect("cpu account lock poisoned");
        let e = roles.entry(role).or_default();
        e.0 = e.0.plus(&used);
        e.1 += 1;
    }

    /// Notes the CPU of io_uring's worker threads (the kernel's copies for
    /// buffered I/O, blocking I/O) before the job's ring is dropped (its
    /// workers then exit and their time is only in the process's total).
    pub fn sample_io_workers(&self) {
        *self.io_workers.lock().expect("cpu account lock poisoned") = io_uring_worker_cpu();
    }

    pub fn summary(&self, wall: Duration) -> CpuSummary {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let wall_s = wall.as_secs_f64().max(1e-9);
        let pct = |s: f64| 100.0 * s / (wall_s * cores as f64);
        let total = rusage(libc::RUSAGE_SELF).minus(&self.process_start);
        let roles = self.roles.lock().expect("cpu account lock poisoned");
        let mut charged = 0.0;
        let roles: Vec<RoleCpu> = roles
            .iter()
            .map(|(role, (t, n))| {
                charged += t.total_s();
                RoleCpu { role: *role, threads: *n, user_s: t.user_s, system_s: t.system_s, utilisation_pct: pct(t.total_s()) }
            })
            .collect();
        CpuSummary {
            cores,
            wall_s,
            roles,
            other_s: (total.total_s() - charged).max(0.0),
            io_workers_s: self.io_workers.lock().expect("cpu account lock poisoned").map(|t| t.total_s()),
            total_user_s: total.user_s,
            total_system_s: total.system_s,
            total_utilisation_pct: pct(total.total_s()),
        }
    }
}

/// CPU time (user + system) of process `pid` so far, from /proc (an
/// emulated device's process: its work on host cores).
pub fn process_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // SAFETY: sysconf only reads a constant of the system.
    let ticks_per_s = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok().filter(|&t| t > 0)?;
    cpu_of_stat(&stat, ticks_per_s)
}

/// utime + stime of a /proc/PID/stat line, whose times are in clock ticks (`ticks_per_s` of them
/// a second).
fn cpu_of_stat(stat: &str, ticks_per_s: u64) -> Option<Duration> {
    let (user, system) = stat_ticks(stat)?;
    let ticks = user.checked_add(system)?;
    Some(Duration::from_secs(ticks / ticks_per_s) + Duration::from_nanos((ticks % ticks_per_s) * 1_000_000_000 / ticks_per_s))
}

/// utime and stime (clock ticks) of a /proc/PID/stat or /proc/PID/task/TID/stat line. The
/// command name, field 2, is in parentheses and may hold anything, those included: the fields
/// after its last ')' start with the state (field 3); utime and stime are fields 14 and 15.
fn stat_ticks(stat: &str) -> Option<(u64, u64)> {
    let mut after = stat[stat.rfind(')')? + 1..].split_whitespace().skip(11);
    Some((after.next()?.parse().ok()?, after.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// utime and stime are read after the command name, whatever it holds; a line cut short
    /// (even right after the name's ')') is none.
    #[test]
    fn a_stat_lines_cpu_is_its_utime_and_stime() {
        let line = "4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 123 0 0";
        assert_eq!(stat_ticks(line), Some((250, 75)));
        assert_eq!(cpu_of_stat(line, 100), Some(Duration::from_millis(3250)));
        assert_eq!(cpu_of_stat(line, 1000), Some(Duration::from_millis(325)));
        assert_eq!(cpu_of_stat("4242 (a) S 1", 100), None, "cut short");
        assert_eq!(cpu_of_stat("4242 (a)", 100), None, "cut after the name");
        assert_eq!(cpu_of_stat("no name", 100), None);
    }

    /// This process's own line reads, and its CPU time only grows.
    #[test]
    fn a_live_process_has_cpu_time() {
        let first = process_cpu(std::process::id()).expect("/proc/self/stat reads");
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while process_cpu(std::process::id()).unwrap() == first && start.elapsed() < Duration::from_secs(30) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(process_cpu(std::process::id()).unwrap() > first);
    }

    #[test]
    fn busy_thread_is_charged_to_its_role() {
        let acct = CpuAccount::start();
        let a = acct.clone();
        std::thread::spawn(move || {
            let t0 = thread_cpu_now();
            let start = std::time::Instant::now();
            let mut x = 0u64;
            while start.elapsed() < Duration::from_millis(100) {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            std::hint::black_box(x);
            a.charge_thread(CpuRole::Compute, t0);
        })
        .join()
        .unwrap();
        let s = acct.summary(Duration::from_millis(100));
        let compute = s.roles.iter().find(|r| r.role == CpuRole::Compute).unwrap();
        assert_eq!(compute.threads, 1);
        // The thread spun for 100 ms of wall time; on a loaded machine it may
        // get less CPU, but never none, and never more than it ran.
        assert!(compute.user_s + compute.system_s > 0.005, "{compute:?}");
        assert!(compute.user_s + compute.system_s < 5.0, "{compute:?}");
        assert!(s.total_user_s + s.total_system_s >= compute.user_s);
    }
}
