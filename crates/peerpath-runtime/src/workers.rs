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
/// task: once the work has run out, waiting is not starving).
pub struct WorkerPool<T: Send + 'static> {
    tasks: Option<Sender<Task<T>>>,
    results: Receiver<T>,
    handles: Vec<JoinHandle<()>>,
    in_flight: usize,
    pub times: WorkerTimes,
}

impl<T: Send + 'static> WorkerPool<T> {
    pub fn new(threads: usize, waker: Waker, cpu: CpuAccount) -> Self {
        let (task_tx, task_rx) = crossbeam_channel::unbounded::<Task<T>>();
        let (result_tx, result_rx) = crossbeam_channel::unbounded::<T>();
        let times = WorkerTimes::default();
        let handles = (0..threads.max(1))
            .map(|i| {
                let rx = task_rx.clone();
                let tx = result_tx.clone();
                let waker = waker.clone();
                let cpu = cpu.clone();
                let times = times.clone();
                std::thread::Builder::new()
                    .name(format!("peerpath-worker-{i}"))
                    .spawn(move || {
                        let start = thread_cpu_now();
                        let mut local = WorkerLocal::default();
                        let mut waiting = Instant::now();
                        while let Ok(task) = rx.recv() {
                            let began = Instant::now();
                            times.add_idle(began - waiting);
                            let result = task(&mut local);
                            waiting = Instant::now();
                            times.add_busy(waiting - began);
                            if tx.send(result).is_err() {
                                break;
                            }
                            waker.wake();
                        }
                        cpu.charge_thread(CpuRole::Compute, start);
                    })
                    .expect("spawning a worker thread")
            })
            .collect();
        WorkerPool { tasks: Some(task_tx), results: result_rx, handles, in_flight: 0, times }
    }

    pub fn submit(&mut self, task: impl FnOnce(&mut WorkerLocal) -> T + Send + 'static) {
        self.tasks.as_ref().expect("pool open").send(Box::new(task)).expect("workers alive");
        self.in_flight += 1;
    }

    /// Results ready now, without waiting.
    pub fn try_results(&mut self) -> Vec<T> {
        let v: Vec<T> = self.results.try_iter().collect();
        self.in_flight -= v.len();
        v
    }

    /// Blocks for one result (for draining).
    pub fn recv(&mut self) -> Option<T> {
        if self.in_flight == 0 {
            return None;
        }
        let r = self.results.recv().ok();
        if r.is_some() {
            self.in_flight -= 1;
        }
        r
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    pub fn threads(&self) -> usize {
        self.handles.len()
    }
}

impl<T: Send + 'static> Drop for WorkerPool<T> {
    fn drop(&mut self) {
        self.tasks.take();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}
