//! Zero-copy socket sends from memory this process maps: io_uring's
//! `SEND_ZC` (Linux 6.0), asking the kernel to report whether it copied the
//! bytes after all (`IORING_SEND_ZC_REPORT_USAGE`, Linux 6.2). Each send
//! gives two completions: its result, then a notification once the kernel
//! no longer reads the pages; the notification's result carries
//! `IORING_NOTIF_USAGE_ZC_COPIED` when the data was copied (on loopback it
//! always is: the receiving socket is on this host; a NIC that gathers from
//! user pages sends them as they are).

use io_uring::{cqueue, opcode, types, IoUring};
use std::io;
use std::os::fd::RawFd;

/// `IORING_SEND_ZC_REPORT_USAGE` (include/uapi/linux/io_uring.h): the
/// notification says whether the kernel copied.
const SEND_ZC_REPORT_USAGE: u16 = 1 << 3;
/// `IORING_NOTIF_USAGE_ZC_COPIED`: set in a notification's result when the
/// kernel copied the data.
const NOTIF_USAGE_ZC_COPIED: u32 = 1 << 31;
/// The largest part sent by one request.
const MAX_PART_BYTES: usize = 1 << 30;

/// What a zero-copy send did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZcSent {
    pub bytes: u64,
    /// Bytes the kernel's notifications said it copied after all.
    pub copied_bytes: u64,
}

/// A small io_uring that sends from memory with `SEND_ZC`, one send at a
/// time (it waits for each part's notification: the caller's buffer is
/// free again when `send_all` returns).
pub struct ZcSender {
    ring: IoUring,
}

impl ZcSender {
    /// A ring for zero-copy sends, or why this kernel cannot do them.
    pub fn new() -> io::Result<ZcSender> {
        let ring = IoUring::new(4)?;
        let mut probe = io_uring::Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        if !probe.is_supported(opcode::SendZc::CODE) {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "this kernel's io_uring has no SEND_ZC (Linux 6.0 or later)"));
        }
        Ok(ZcSender { ring })
    }

    /// Sends all of `buf` on the connected socket `fd` (`flags`: send(2)'s,
    /// MSG_NOSIGNAL added), part by part, waiting for each part's result and
    /// notification.
    pub fn send_all(&mut self, fd: RawFd, mut buf: &[u8], flags: i32) -> io::Result<ZcSent> {
        let mut out = ZcSent::default();
        while !buf.is_empty() {
            let part = buf.len().min(MAX_PART_BYTES);
            let sqe = opcode::SendZc::new(types::Fd(fd), buf.as_ptr(), part as u32).flags(flags | libc::MSG_NOSIGNAL).zc_flags(SEND_ZC_REPORT_USAGE).build().user_data(1);
            // SAFETY: `buf` lives until this function returns, and it returns
            // only after the request's result and (where the result promised
            // one) its notification, after which the kernel no longer reads it.
            unsafe { self.ring.submission().push(&sqe) }.map_err(|_| io::Error::other("the SEND_ZC ring is full"))?;
            let (mut result, mut notification_due, mut copied) = (None, false, false);
            while result.is_none() || notification_due {
                match self.ring.submit_and_wait(1) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
                for cqe in self.ring.completion() {
                    if cqueue::notif(cqe.flags()) {
                        copied |= cqe.result() as u32 & NOTIF_USAGE_ZC_COPIED != 0;
                        notification_due = false;
                    } else {
                        result = Some(cqe.result());
                        notification_due = cqueue::more(cqe.flags());
                    }
                }
            }
            let n = match result.expect("the loop ends with a result") {
                n if n > 0 => n as usize,
                0 => return Err(io::Error::new(io::ErrorKind::WriteZero, "SEND_ZC sent nothing")),
                e if -e == libc::EINTR => continue,
                e if -e == libc::EINVAL => {
                    return Err(io::Error::new(io::ErrorKind::Unsupported, "SEND_ZC refused its usage report (Linux 6.2 or later)"));
                }
                e => return Err(io::Error::from_raw_os_error(-e)),
            };
            out.bytes += n as u64;
            if copied {
                out.copied_bytes += n as u64;
            }
            buf = &buf[n..];
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsRawFd;

    /// Over loopback every byte arrives, and the kernel reports copying
    /// them (the receiver is on this host).
    #[test]
    fn loopback_sends_arrive_and_are_reported_copied() {
        let mut z = match ZcSender::new() {
            Ok(z) => z,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 + i / 977) as u8).collect();
        let reader = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            got
        });
        let s = std::net::TcpStream::connect(addr).unwrap();
        let sent = match z.send_all(s.as_raw_fd(), &data, 0) {
            Ok(sent) => sent,
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                eprintln!("skipped: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        drop(s);
        assert_eq!(sent.bytes, data.len() as u64);
        assert_eq!(sent.copied_bytes, data.len() as u64, "loopback copies");
        assert!(reader.join().unwrap() == data);
        // A closed peer: an error, not a signal.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        drop(l.accept().unwrap());
        drop(l);
        let mut failed = false;
        for _ in 0..50 {
            if z.send_all(s.as_raw_fd(), &data, 0).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed, "sending to a closed peer kept succeeding");
    }
}
