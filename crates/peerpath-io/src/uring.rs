use crate::{Completion, EngineKind, IoBuf, IoEngine, IoOp, Waker};
use io_uring::{opcode, types, IoUring};
use std::io;
use std::os::fd::RawFd;

const WAKER_TOKEN: u64 = u64::MAX;

struct Pending<B> {
    token: u64,
    op: IoOp,
    fd: RawFd,
    offset: Option<u64>,
    len: usize,
    done: usize,
    buf: B,
}

/// io_uring engine. Buffers are never registered with the ring (P2P memory
/// cannot be: `IORING_REGISTER_BUFFERS` pins with FOLL_LONGTERM), so the
/// same engine serves host and device memory.
pub struct UringEngine<B> {
    ring: IoUring,
    slots: Vec<Option<Pending<B>>>,
    free_slots: Vec<usize>,
    unsubmitted: usize,
    waker_armed: bool,
    waker_value: Box<u64>,
}

// SAFETY: the ring and the raw pointers it holds into our buffers are only
// used by the thread that owns the engine; moving the whole engine to
// another thread moves them together.
unsafe impl<B: Send> Send for UringEngine<B> {}

impl<B: IoBuf> UringEngine<B> {
    pub fn new(queue_depth: u32) -> io::Result<Self> {
        // One extra entry for the armed waker read.
        let ring = IoUring::new((queue_depth + 1).next_power_of_two())?;
        Ok(UringEngine {
            ring,
            slots: Vec::new(),
            free_slots: Vec::new(),
            unsubmitted: 0,
            waker_armed: false,
            waker_value: Box::new(0),
        })
    }

    fn push(&mut self, entry: io_uring::squeue::Entry) -> io::Result<()> {
        // SAFETY: every entry points into a buffer owned by a Pending slot (or
        // into waker_value), which lives until its completion is reaped.
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            self.ring.submit()?;
            self.unsubmitted = 0;
        }
        self.unsubmitted += 1;
        Ok(())
    }

    fn push_slot(&mut self, slot: usize) -> io::Result<()> {
        let p = self.slots[slot].as_mut().expect("pending slot");
        // SAFETY: done < len <= capacity, so the pointer stays in the buffer.
        let ptr = unsafe { p.buf.io_ptr().add(p.done) };
        let len = (p.len - p.done) as u32;
        let offset = p.offset.map(|o| o + p.done as u64).unwrap_or(u64::MAX); // -1: current position
        let entry = match p.op {
            IoOp::Read => opcode::Read::new(types::Fd(p.fd), ptr, len).offset(offset).build(),
            IoOp::Write => opcode::Write::new(types::Fd(p.fd), ptr, len).offset(offset).build(),
        }
        .user_data(slot as u64);
        self.push(entry)
    }

    fn arm_waker(&mut self, waker: &Waker) -> io::Result<()> {
        if !self.waker_armed {
            let ptr = &mut *self.waker_value as *mut u64 as *mut u8;
            let entry = opcode::Read::new(types::Fd(waker.raw_fd()), ptr, 8).offset(u64::MAX).build().user_data(WAKER_TOKEN);
            self.push(entry)?;
            self.waker_armed = true;
        }
        Ok(())
    }
}

impl<B: IoBuf> IoEngine<B> for UringEngine<B> {
    fn kind(&self) -> EngineKind {
        EngineKind::IoUring
    }

    fn submit(&mut self, op: IoOp, fd: RawFd, offset: Option<u64>, len: usize, buf: B, token: u64)
        -> Result<(), (B, io::Error)> {
        assert!(len <= buf.io_capacity(), "request of {len} bytes into a {}-byte buffer", buf.io_capacity());
        if let Err(e) = crate::engine::check_direct_io(fd, &buf) {
            return Err((buf, e));
        }
        let pending = Pending { token, op, fd, offset, len, done: 0, buf };
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.slots[s] = Some(pending);
                s
            }
            None => {
                self.slots.push(Some(pending));
                self.slots.len() - 1
            }
        };
        if let Err(e) = self.push_slot(slot) {
            let p = self.slots[slot].take().expect("just stored");
            self.free_slots.push(slot);
            return Err((p.buf, e));
        }
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.slots.len() - self.free_slots.len()
    }

    fn wait(&mut self, out: &mut Vec<Completion<B>>, waker: &Waker) -> io::Result<()> {
        self.arm_waker(waker)?;
        let before = out.len();
        let mut woken = false;
        while out.len() == before && !woken {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            self.unsubmitted = 0;
            let cqes: Vec<(u64, i32)> = self.ring.completion().map(|c| (c.user_data(), c.result())).collect();
            for (user_data, res) in cqes {
                if user_data == WAKER_TOKEN {
                    self.waker_armed = false;
                    woken = true;
                    continue;
                }
                let slot = user_data as usize;
                let finished = {
                    let p = self.slots[slot].as_mut().expect("completion for a live slot");
                    if res < 0 {
                        Some(Err(io::Error::from_raw_os_error(-res)))
                    } else if res == 0 && p.op == IoOp::Write {
                        Some(Err(io::Error::new(io::ErrorKind::WriteZero, "write returned 0 bytes")))
                    } else {
                        p.done += res as usize;
                        // Reads complete on their first result: short means end of file.
                        if p.op == IoOp::Read || p.done >= p.len {
                            Some(Ok(p.done))
                        } else {
                            None
                        }
                    }
                };
                match finished {
                    Some(result) => {
                        let p = self.slots[slot].take().expect("live slot");
                        self.free_slots.push(slot);
                        out.push(Completion { token: p.token, op: p.op, buf: p.buf, result });
                    }
                    None => self.push_slot(slot)?, // short write: send the rest
                }
            }
            if woken {
                break;
            }
        }
        Ok(())
    }
}

impl<B> Drop for UringEngine<B> {
    fn drop(&mut self) {
        // Requests still in flight point into buffers we are about to free:
        // wait for the kernel to finish with them first.
        let live = self.slots.iter().filter(|s| s.is_some()).count() + usize::from(self.waker_armed);
        if live > 0 {
            if self.waker_armed {
                // Nothing will write the eventfd; cancel the armed read.
                let entry = opcode::AsyncCancel::new(WAKER_TOKEN).build().user_data(WAKER_TOKEN - 1);
                // SAFETY: a cancel entry references no memory.
                let _ = unsafe { self.ring.submission().push(&entry) };
            }
            let mut remaining = live;
            while remaining > 0 {
                if self.ring.submit_and_wait(1).is_err() {
                    break;
                }
                for c in self.ring.completion() {
                    if c.user_data() != WAKER_TOKEN - 1 {
                        remaining = remaining.saturating_sub(1);
                    }
                }
            }
        }
    }
}
