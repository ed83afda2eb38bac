use crate::error::{JobError, Result};
use crossbeam_channel::{Receiver, Sender};
use peerpath_func::{Level, MemberEncoder};
use peerpath_io::Waker;
use peerpath_metrics::{thread_cpu_now, CpuAccount, CpuRole, WorkerTimes};
use std::time::Instant;
use std::thread::JoinHandle;

/// Per-thread state a task may use (encoders are reused across blocks).
#[derive(Default)]
pub struct WorkerLocal {
    encoder: Option<MemberEncoder>,
}

impl WorkerLocal {
    pub fn encoder(&mut self, level: Level) -> &mut MemberEncoder {
        if self.encoder.as_ref().map(|e| e.level()) != Some(level) {
            self.encoder = Some(MemberEncoder::new(level));
        }
        self.encoder.as_mut().expect("just set")
    }
}

type Task<T> = Box<dyn FnOnce(&mut WorkerLocal) -> T + Send>;

/// Compute worker threads. Tasks go in through a channel; each result comes
/// back through another and wakes the orchestrator's I/O wait. Each thread
/// charges its CPU time to the `Compute` role when it exits, and its time
/// running tasks and waiting for one to `times` (from its start to its last
/// task: once the work has run out, waiting is not starving). A task that
/// panics comes back as the job's internal error (its thread goes on): the
/// orchestrator counting on its result never waits for it forever.
pub struct WorkerPool<T: Send + 'static> {
    tasks: Option<Sender<Task<T>>>,
    results: Receiver<std::result::Result<T, String>>,
    handles: Vec<JoinHandle<()>>,
    in_flight: usize,
    pub times: WorkerTimes,
}

impl<T: Send + 'static> WorkerPool<T> {
    /// Starts `threads` workers (at least one). A thread that cannot start
    /// (the process's or user's thread limit, no memory for its stack) is the
    /// job's error, said as such, after those already started have ended.
    pub fn new(threads: usize, waker: Waker, cpu: CpuAccount) -> Result<Self> {
        let (task_tx, task_rx) = crossbeam_channel::unbounded::<Task<T>>();
        let (result_tx, result_rx) = crossbeam_channel::unbounded::<std::result::Result<T, String>>();
        let times = WorkerTimes::default();
        let mut handles = Vec::with_capacity(threads.max(1));
        for i in 0..threads.max(1) {
            let rx = task_rx.clone();
            let tx = result_tx.clone();
            let waker = waker.clone();
            let cpu = cpu.clone();
            let times = times.clone();
            let spawned = std::thread::Builder::new().name(format!("peerpath-worker-{i}")).spawn(move || {
                let start = thread_cpu_now();
                let mut local = WorkerLocal::default();
                let mut waiting = Instant::now();
                while let Ok(task) = rx.recv() {
                    let began = Instant::now();
                    times.add_idle(began - waiting);
                    // A panic is a bug, not a reason to hang the job: its message goes
                    // back in the task's place, and the worker's state starts afresh.
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task(&mut local))).map_err(|p| {
                        local = WorkerLocal::default();
                        panic_message(p.as_ref())
                    });
                    waiting = Instant::now();
                    times.add_busy(waiting - began);
                    if tx.send(result).is_err() {
                        break;
                    }
                    waker.wake();
                }
                cpu.charge_thread(CpuRole::Compute, start);
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The workers started so far see the task channel close and end.
                    drop(task_tx);
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(cannot_start_thread(&e));
                }
            }
        }
        Ok(WorkerPool { tasks: Some(task_tx), results: result_rx, handles, in_flight: 0, times })
    }

    pub fn submit(&mut self, task: impl FnOnce(&mut WorkerLocal) -> T + Send + 'static) {
        self.tasks.as_ref().expect("pool open").send(Box::new(task)).expect("workers alive");
        self.in_flight += 1;
    }

    /// Results ready now, without waiting; a task that panicked is an error.
    pub fn try_results(&mut self) -> Result<Vec<T>> {
        let v: Vec<_> = self.results.try_iter().collect();
        self.in_flight -= v.len();
        v.into_iter().map(|r| r.map_err(panicked)).collect()
    }

    /// Blocks for one result (for draining); `None` when none is in flight.
    pub fn recv(&mut self) -> Result<Option<T>> {
        if self.in_flight == 0 {
            return Ok(None);
        }
        let r = self.results.recv().map_err(|_| JobError::Internal("every compute worker thread has gone".into()))?;
        self.in_flight -= 1;
        r.map(Some).map_err(panicked)
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    pub fn threads(&self) -> usize {
        self.handles.len()
    }
}

/// A thread the job needs that could not start, as the job's error: EAGAIN is
/// the process's or the user's thread limit (`ulimit -u`, a cgroup's `pids.max`),
/// or no memory for the thread's stack (`ulimit -v`).
pub(crate) fn cannot_start_thread(e: &std::io::Error) -> JobError {
    let hint = if e.raw_os_error() == Some(libc::EAGAIN) { " (the process or user thread limit, or no memory for its stack?): give fewer threads (-T)" } else { "" };
    JobError::Internal(format!("cannot start a thread: {e}{hint}"))
}

fn panicked(why: String) -> JobError {
    JobError::Internal(format!("a compute worker's task panicked ({why}); nothing of this job is kept"))
}

/// What a panic said, where it said it in words.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "no message".into())
}

impl<T: Send + 'static> Drop for WorkerPool<T> {
    fn drop(&mut self) {
        self.tasks.take();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(threads: usize) -> WorkerPool<u32> {
        WorkerPool::new(threads, Waker::new().expect("an eventfd"), CpuAccount::start()).expect("the workers start")
    }

    #[test]
    fn a_task_that_panics_is_an_error_and_the_pool_goes_on() {
        let mut p = pool(1);
        p.submit(|_| panic!("a defect in a task"));
        p.submit(|_| 7);
        let e = p.recv().expect_err("the panic comes back");
        assert!(matches!(&e, JobError::Internal(m) if m.contains("a defect in a task")), "{e}");
        // The same thread runs the next task; nothing is left in flight.
        assert_eq!(p.recv().expect("the next task's result"), Some(7));
        assert_eq!(p.recv().expect("nothing in flight"), None);
        assert_eq!(p.in_flight(), 0);
    }

    #[test]
    fn try_results_reports_a_panic_among_results() {
        let mut p = pool(2);
        p.submit(|_| 1);
        p.submit(|_| panic!("{}", String::from("formatted")));
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        let mut got = Ok(Vec::new());
        while p.in_flight() > 0 && Instant::now() < deadline {
            got = p.try_results();
            if got.is_err() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let e = got.expect_err("the panic is reported");
        assert!(e.to_string().contains("formatted"), "{e}");
    }
}
