//! The server's event loop: one thread (the reactor) waits with epoll on
//! the listeners and on every connection that has no request in progress;
//! a bounded pool of workers answers requests. A connection costs a worker
//! only while a request is being read or answered, so idle keep-alive
//! clients and slow ones (slowloris) hold a few hundred bytes each, not a
//! thread, and the connection limit is the open-file limit's business, not
//! the thread count's (Apache's event MPM has this shape; nginx goes
//! further and never blocks on a send).
//!
//! A worker that has answered waits briefly (up to [`LINGER`]) for the
//! connection's next request before handing it back, unless another
//! connection is waiting for a worker (the `pressure` eventfd): a busy
//! keep-alive client then costs no handover per request, which on two
//! cores is the difference between matching nginx and not. Until every
//! worker the limit allows is started, nobody can wait for a worker (a new
//! one is started), so the wait is the read itself (one system call a
//! request, as a thread per connection has); from then on, a poll of the
//! socket and the pressure eventfd, then the read.
//!
//! A response the client does not take within [`crate::out::PATIENCE`]
//! waits in epoll too, for the socket to be writable ([`crate::out`]): a
//! client that reads slowly or not at all holds no worker. SEND_ZC's sends
//! still wait in their worker (bounded by the write timeout); the NIC's
//! are the NIC's. Host mode's buffer belongs to the worker; a SEND_ZC ring
//! stays with its connection (see `Conn::zc`).

use crate::{Conn, Next, Proto, Shared};
use rustix::event::epoll;
use std::collections::{HashMap, VecDeque};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often the reactor looks at the stop flag, the time budget and the
/// parked connections' deadlines; also the most a lingering worker sleeps
/// between those looks.
pub(crate) const TICK: Duration = Duration::from_millis(100);

/// How long a worker waits for a connection's next request before handing
/// the connection back to the reactor (when nobody else waits for a worker).
pub(crate) const LINGER: Duration = Duration::from_millis(100);

/// epoll tokens of the two listeners; connections' tokens count up from `FIRST_CONN`.
const FIRST_CONN: u64 = 2;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Connections with a request to read, waiting for a worker.
struct Queue<'a> {
    state: Mutex<QueueState<'a>>,
    ready: Condvar,
}

struct QueueState<'a> {
    jobs: VecDeque<Conn<'a>>,
    /// Workers waiting for a job.
    idle: usize,
    /// Workers started, and the most that may be (the configured number,
    /// lowered to those started if the system refuses another thread).
    workers: usize,
    limit: usize,
    /// Whether the pressure eventfd is set (jobs wait and no worker is idle).
    pressure: bool,
    stopping: bool,
}

impl<'a> Queue<'a> {
    fn new(limit: usize) -> Queue<'a> {
        Queue { state: Mutex::new(QueueState { jobs: VecDeque::new(), idle: 0, workers: 0, limit, pressure: false, stopping: false }), ready: Condvar::new() }
    }

    /// Adds a job; true if a new worker should be started for it (the
    /// caller starts it). With every worker busy and none to start, sets
    /// the pressure flag, which lingering workers watch.
    fn push(&self, shared: &Shared, conn: Conn<'a>) -> bool {
        let mut s = lock(&self.state);
        s.jobs.push_back(conn);
        if s.jobs.len() <= s.idle {
            self.ready.notify_one();
            return false;
        }
        if s.workers < s.limit {
            s.workers += 1;
            if s.workers == s.limit {
                shared.pool_full.store(true, Ordering::Relaxed);
            }
            return true;
        }
        Self::press(shared, &mut s);
        false
    }

    /// Jobs wait and no worker is idle: lingering workers are asked to hand
    /// their connections back.
    fn press(shared: &Shared, s: &mut QueueState) {
        if !s.pressure {
            s.pressure = true;
            use std::io::Write;
            let _ = (&shared.pressure).write(&1u64.to_ne_bytes());
        }
    }

    /// The system refused a worker thread (said once): the pool stays at
    /// the workers it has (a later job tries again if it has none).
    fn not_started(&self, shared: &Shared, why: &std::io::Error) {
        let mut s = lock(&self.state);
        s.workers -= 1;
        if s.workers > 0 {
            if s.limit == shared.config.workers {
                say(&format!("cannot start another worker thread ({why}): serving with {}", s.workers));
            }
            s.limit = s.workers;
            shared.pool_full.store(true, Ordering::Relaxed);
            if s.jobs.len() > s.idle {
                Self::press(shared, &mut s);
            }
        } else {
            say(&format!("cannot start a worker thread ({why}); trying again at the next connection"));
        }
    }

    /// The next job; `None` once the server stops.
    fn pop(&self, shared: &Shared) -> Option<Conn<'a>> {
        let mut s = lock(&self.state);
        s.idle += 1;
        while s.jobs.is_empty() && !s.stopping {
            s = self.ready.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.idle -= 1;
        if s.stopping {
            return None;
        }
        let conn = s.jobs.pop_front();
        if s.jobs.is_empty() && s.pressure {
            s.pressure = false;
            use std::io::Read;
            let _ = (&shared.pressure).read(&mut [0u8; 8]);
        }
        conn
    }

    /// Stops the workers; returns the jobs nobody took (to be closed).
    fn stop(&self) -> Vec<Conn<'a>> {
        let mut s = lock(&self.state);
        s.stopping = true;
        self.ready.notify_all();
        s.jobs.drain(..).collect()
    }

    fn workers(&self) -> usize {
        lock(&self.state).workers
    }
}

/// Connections waiting (in epoll) for their next request, or to be writable.
struct Parked<'a> {
    epoll: &'a std::os::fd::OwnedFd,
    conns: Mutex<HashMap<u64, Conn<'a>>>,
    next: AtomicU64,
}

impl<'a> Parked<'a> {
    /// Hands `conn` to the reactor until it has something to read (or, with
    /// output queued, until it can be written: not on a half-close, which
    /// would wake it at once for ever; a closed or reset socket wakes it
    /// anyway). The registration and the insertion happen under one lock,
    /// so the reactor never sees an event for a connection it does not hold.
    fn park(&self, conn: Conn<'a>) {
        let mut conns = lock(&self.conns);
        let token = self.next.fetch_add(1, Ordering::Relaxed);
        let wait_for = if conn.wants_to_write() { epoll::EventFlags::OUT } else { epoll::EventFlags::IN | epoll::EventFlags::RDHUP };
        match epoll::add(self.epoll, &conn.stream, epoll::EventData::new_u64(token), wait_for) {
            Ok(()) => {
                conns.insert(token, conn);
            }
            Err(_) => {
                // Cannot be waited for (out of kernel memory): closed, after the lock.
                drop(conns);
                drop(conn);
            }
        }
    }

    /// Takes `token`'s connection out of epoll and the map.
    fn take(&self, conns: &mut HashMap<u64, Conn<'a>>, token: u64) -> Option<Conn<'a>> {
        let conn = conns.remove(&token)?;
        let _ = epoll::delete(self.epoll, &conn.stream);
        Some(conn)
    }
}

/// Registers the listeners with `epoll` (made by [`crate::Server::bind`]).
pub(crate) fn watch_listeners(epoll: &std::os::fd::OwnedFd, listeners: [Option<&TcpListener>; 2]) -> std::io::Result<()> {
    for (token, l) in listeners.into_iter().enumerate() {
        if let Some(l) = l {
            epoll::add(epoll, l, epoll::EventData::new_u64(token as u64), epoll::EventFlags::IN)?;
        }
    }
    Ok(())
}

/// Serves until the stop flag is set or the time budget is spent; returns
/// how many workers were started. Connections still open then are closed.
pub(crate) fn run(shared: &Shared, epoll: &std::os::fd::OwnedFd, listeners: [(Option<&TcpListener>, Proto); 2], started: Instant) -> usize {
    let queue = Queue::new(shared.config.workers);
    let parked = Parked { epoll, conns: Mutex::new(HashMap::new()), next: AtomicU64::new(FIRST_CONN) };
    let workers = std::thread::scope(|scope| {
        let start_worker = || {
            let spawned = std::thread::Builder::new().name("serve-worker".into()).spawn_scoped(scope, || worker(shared, &queue, &parked));
            if let Err(e) = spawned {
                queue.not_started(shared, &e);
            }
        };
        let mut events: Vec<epoll::Event> = Vec::with_capacity(256);
        let mut last_scan = Instant::now();
        let tick = rustix::event::Timespec { tv_sec: 0, tv_nsec: TICK.as_nanos() as _ };
        while !shared.stop.load(Ordering::Relaxed) && shared.config.duration.is_none_or(|d| started.elapsed() < d) {
            events.clear();
            if let Err(e) = epoll::wait(epoll, rustix::buffer::spare_capacity(&mut events), Some(&tick)) {
                if e != rustix::io::Errno::INTR {
                    // Nothing can be waited for any more: stop serving (the report ends the run).
                    say(&format!("epoll_wait: {e}; stopping"));
                    break;
                }
            }
            for ev in &events {
                let token = ev.data.u64();
                if token < FIRST_CONN {
                    let (listener, proto) = &listeners[token as usize];
                    if let Some(l) = listener {
                        accept_all(shared, l, *proto, |c| {
                            if queue.push(shared, c) {
                                start_worker();
                            }
                        });
                    }
                    continue;
                }
                let conn = parked.take(&mut lock(&parked.conns), token);
                if let Some(c) = conn {
                    if queue.push(shared, c) {
                        start_worker();
                    }
                }
            }
            if last_scan.elapsed() >= TICK {
                last_scan = Instant::now();
                // Deadlines passed, or a response the NIC could not finish:
                // a worker answers (408) or closes them. The NIC's answers
                // first: a connection's idle time counts from its last one.
                let due: Vec<Conn> = {
                    let mut conns = lock(&parked.conns);
                    let now = Instant::now();
                    let tokens: Vec<u64> = conns.iter_mut().filter_map(|(&t, c)| (!c.poll_nic() || now >= c.deadline()).then_some(t)).collect();
                    tokens.into_iter().filter_map(|t| parked.take(&mut conns, t)).collect()
                };
                for c in due {
                    if queue.push(shared, c) {
                        start_worker();
                    }
                }
            }
        }
        shared.stop.store(true, Ordering::Relaxed);
        // Lingering workers see the flag at their next look; waiting ones now.
        drop(queue.stop());
        queue.workers()
    });
    // The workers are done: send what slow clients still have coming
    // (within one write timeout in all), then close what is parked.
    let until = Instant::now() + shared.config.read_timeout;
    for (_, mut c) in lock(&parked.conns).drain() {
        if c.wants_to_write() {
            c.drain(Some(until));
        }
    }
    workers
}

/// Accepts every connection waiting on `l`, handing each to `hand`.
fn accept_all<'a>(shared: &'a Shared, l: &TcpListener, proto: Proto, mut hand: impl FnMut(Conn<'a>)) {
    loop {
        match l.accept() {
            Ok((stream, _)) => hand(Conn::new(shared, stream, proto)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted || e.kind() == std::io::ErrorKind::ConnectionAborted => {}
            Err(e) => {
                // Out of descriptors or memory: the connection waits in the
                // backlog; not a busy loop on the level-triggered listener.
                let mut said = lock(&shared.accept_error);
                if said.is_none() {
                    say(&format!("accept: {e} (connections wait in the backlog)"));
                }
                *said = Some(e.to_string());
                drop(said);
                std::thread::sleep(Duration::from_millis(10));
                return;
            }
        }
    }
}

/// A line on stderr, never a panic when stderr is closed (eprintln! panics).
fn say(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "peerpath serve: {what}");
}

/// A worker: answers the requests of one connection at a time; parks a
/// connection that has nothing more to read, closes one that is done. A
/// panic while serving (a bug) closes that connection, said on stderr, and
/// the worker goes on: one request never takes the server down.
fn worker<'a>(shared: &'a Shared, queue: &Queue<'a>, parked: &Parked<'a>) {
    let _serving = Serving::new(&shared.counters.threads);
    // Host mode's buffer, allocated on first use and lent to each connection served.
    let mut host_buf = None;
    while let Some(mut conn) = queue.pop(shared) {
        std::mem::swap(&mut conn.host_buf, &mut host_buf);
        let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| conn.serve()));
        std::mem::swap(&mut conn.host_buf, &mut host_buf);
        match next {
            Ok(Next::Park | Next::Write) if !shared.stop.load(Ordering::Relaxed) => parked.park(conn),
            Ok(Next::Write) => {
                // Stopping: what the client still has coming is sent first.
                std::mem::swap(&mut conn.host_buf, &mut host_buf);
                conn.drain(Some(Instant::now() + shared.config.read_timeout));
                std::mem::swap(&mut conn.host_buf, &mut host_buf);
            }
            Ok(_) => drop(conn),
            Err(_) => {
                say("a worker panicked serving a connection (a bug): that connection is closed");
                drop(conn);
            }
        }
    }
}

/// A worker thread counted in memcached's `threads` figure while it runs: from its start
/// until it ends, by returning or unwinding (the figure was of those ever started).
struct Serving<'a>(&'a AtomicU64);

impl<'a> Serving<'a> {
    fn new(threads: &'a AtomicU64) -> Serving<'a> {
        threads.fetch_add(1, Ordering::Relaxed);
        Serving(threads)
    }
}

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
