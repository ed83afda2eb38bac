//! Both engines against the same files: round trips, short reads at end of
//! file, errors handed back with the buffer, and the waker.

use peerpath_io::{open_source, create_temporary, IoEngine, IoOp, SyncEngine, UringEngine, Waker};
use peerpath_mem::AlignedBuf;
use std::os::fd::AsRawFd;

fn engines() -> Vec<(&'static str, Box<dyn IoEngine<AlignedBuf>>)> {
    let mut v: Vec<(&'static str, Box<dyn IoEngine<AlignedBuf>>)> = vec![("sync", Box::new(SyncEngine::new()))];
    match UringEngine::new(8) {
        Ok(e) => v.push(("uring", Box::new(e))),
        Err(e) => eprintln!("skipping io_uring engine: kernel refused io_uring ({e})"),
    }
    v
}

fn wait_one(engine: &mut dyn IoEngine<AlignedBuf>, waker: &Waker) -> peerpath_io::Completion<AlignedBuf> {
    let mut out = Vec::new();
    while out.is_empty() {
        engine.wait(&mut out, waker).unwrap();
    }
    assert_eq!(out.len(), 1);
    out.pop().unwrap()
}

#[test]
fn read_whole_blocks_and_a_short_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("src");
    let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let waker = Waker::new().unwrap();
    for (name, mut engine) in engines() {
        let src = open_source(&path, true).unwrap();
        let fd = src.file.as_raw_fd();
        engine.submit(IoOp::Read, fd, Some(0), 8192, AlignedBuf::new(8192), 1).map_err(|e| e.1).unwrap();
        let c = wait_one(engine.as_mut(), &waker);
        assert_eq!(c.token, 1);
        assert_eq!(*c.result.as_ref().unwrap(), 8192, "{name}");
        let mut buf = c.buf;
        buf.set_len(8192);
        assert_eq!(&buf[..], &data[..8192], "{name}");
        engine.submit(IoOp::Read, fd, Some(8192), 8192, buf, 2).map_err(|e| e.1).unwrap();
        let c = wait_one(engine.as_mut(), &waker);
        assert_eq!(*c.result.as_ref().unwrap(), 10_000 - 8192, "{name}: short read at end of file");
    }
}

#[test]
fn write_then_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let waker = Waker::new().unwrap();
    for (name, mut engine) in engines() {
        let (target, _temporary) = create_temporary(&dir.path().join(format!("t-{name}")), true).unwrap();
        let mut buf = AlignedBuf::new(4096 * 3);
        buf.set_len(buf.capacity());
        buf.iter_mut().enumerate().for_each(|(i, b)| *b = (i % 13) as u8);
        engine.submit(IoOp::Write, target.file.as_raw_fd(), Some(4096), buf.len(), buf, 9).map_err(|e| e.1).unwrap();
        let c = wait_one(engine.as_mut(), &waker);
        assert_eq!(*c.result.as_ref().unwrap(), 4096 * 3);
        let back = std::fs::read(&target.path).unwrap();
        assert_eq!(back.len(), 4096 * 4);
        assert!(back[..4096].iter().all(|&b| b == 0));
        assert_eq!(&back[4096..], &c.buf[..]);
    }
}

#[test]
fn errors_come_back_with_the_buffer() {
    let waker = Waker::new().unwrap();
    for (name, mut engine) in engines() {
        // A read from a bad descriptor fails either at submit or at completion;
        // either way the buffer comes back.
        let buf = AlignedBuf::new(4096);
        let cap = buf.capacity();
        match engine.submit(IoOp::Read, 987_654, Some(0), 4096, buf, 3) {
            Err((buf, _)) => assert_eq!(buf.capacity(), cap),
            Ok(()) => {
                let c = wait_one(engine.as_mut(), &waker);
                assert!(c.result.is_err(), "{name}");
                assert_eq!(c.buf.capacity(), cap);
            }
        }
    }
}

#[test]
fn waker_interrupts_a_wait_with_nothing_in_flight() {
    for (_, mut engine) in engines() {
        let waker = Waker::new().unwrap();
        let w = waker.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            w.wake();
        });
        let mut out = Vec::new();
        engine.wait(&mut out, &waker).unwrap();
        assert!(out.is_empty());
        t.join().unwrap();
    }
}

/// A non-blocking eventfd, like a device's completion signal.
fn device_signal() -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    // SAFETY: eventfd takes plain integers and returns a new descriptor or -1.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    assert!(fd >= 0);
    // SAFETY: a fresh descriptor nothing else owns.
    unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }
}

fn signal(fd: i32) {
    let one = 1u64;
    // SAFETY: writes 8 bytes from a valid u64 to an eventfd.
    assert_eq!(unsafe { libc::write(fd, &one as *const u64 as *const libc::c_void, 8) }, 8);
}

fn is_signalled(fd: i32) -> bool {
    let mut v = 0u64;
    // SAFETY: reads at most 8 bytes into a valid u64.
    unsafe { libc::read(fd, &mut v as *mut u64 as *mut libc::c_void, 8) == 8 }
}

#[test]
fn a_watched_eventfd_ends_a_wait_and_is_consumed() {
    let Ok(mut engine) = UringEngine::<AlignedBuf>::new(4) else { return };
    let waker = Waker::new().unwrap();
    let dev = device_signal();
    let fd = dev.as_raw_fd();
    assert!(engine.watch_eventfd(fd));
    // Signalled while the engine sleeps: the wait ends, with nothing completed.
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(20));
        signal(fd);
    });
    let mut out = Vec::new();
    engine.wait(&mut out, &waker).unwrap();
    t.join().unwrap();
    assert!(out.is_empty());
    assert!(!is_signalled(fd), "the engine consumed the signal");
    // Signalled before the wait: it still ends (the poll is re-armed).
    signal(fd);
    engine.wait(&mut out, &waker).unwrap();
    assert!(!is_signalled(fd));
    // Unwatched: a signal stays for its owner, and the waker still works.
    engine.unwatch_eventfd(fd);
    signal(fd);
    waker.wake();
    engine.wait(&mut out, &waker).unwrap();
    assert!(is_signalled(fd), "an unwatched eventfd is left alone");
    // Armed polls do not hold up the engine's drop.
    let other = device_signal();
    assert!(engine.watch_eventfd(other.as_raw_fd()));
    waker.wake();
    engine.wait(&mut out, &waker).unwrap();
    drop(engine);
}

#[test]
fn the_syscall_engine_leaves_eventfds_to_the_caller() {
    let mut engine = SyncEngine::new();
    let dev = device_signal();
    assert!(!IoEngine::<AlignedBuf>::watch_eventfd(&mut engine, dev.as_raw_fd()));
}

/// A fake P2P provider (the sysfs files `MappedRegion::map_p2pmem` reads,
/// `allocate` a regular file) and one 4 KiB range of its memory.
fn p2p_buffer(dir: &std::path::Path) -> peerpath_mem::RegionBuf {
    let dev = dir.join("0000:03:00.0");
    let p2pmem = dev.join("p2pmem");
    std::fs::create_dir_all(&p2pmem).unwrap();
    for (name, value) in [("size", "1048576"), ("available", "1048576"), ("published", "1")] {
        std::fs::write(p2pmem.join(name), format!("{value}\n")).unwrap();
    }
    std::fs::File::create(p2pmem.join("allocate")).unwrap().set_len(1 << 20).unwrap();
    let region = peerpath_mem::MappedRegion::map_p2pmem(&dev, 1 << 20).unwrap();
    peerpath_mem::RegionAllocator::new(std::sync::Arc::new(region)).alloc(4096)
}

#[test]
fn buffered_io_into_p2p_memory_is_refused_by_both_engines() {
    // Not /tmp: it may be a tmpfs, which is refused for P2P memory even with O_DIRECT.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("src");
    std::fs::write(&path, vec![7u8; 8192]).unwrap();
    let waker = Waker::new().unwrap();
    let mut engines: Vec<(&str, Box<dyn IoEngine<peerpath_mem::RegionBuf>>)> = vec![("sync", Box::new(SyncEngine::new()))];
    if let Ok(e) = UringEngine::new(4) {
        engines.push(("uring", Box::new(e)));
    }
    for (name, mut engine) in engines {
        let buf = p2p_buffer(&dir.path().join(name));
        // Buffered: refused before anything reaches the kernel, buffer handed back.
        let buffered = std::fs::File::open(&path).unwrap();
        let (buf, e) = engine.submit(IoOp::Read, buffered.as_raw_fd(), Some(0), 4096, buf, 1).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{name}: {e}");
        assert!(e.to_string().contains("refusing buffered I/O into or out of P2P memory"), "{name}: {e}");
        assert_eq!(engine.in_flight(), 0, "{name}");
        let target = std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(dir.path().join(format!("out-{name}"))).unwrap();
        let (buf, e) = engine.submit(IoOp::Write, target.as_raw_fd(), Some(0), 4096, buf, 2).unwrap_err();
        assert!(e.to_string().contains("refusing buffered I/O"), "{name}: write: {e}");
        // With O_DIRECT (where the file system takes it) the same buffer goes through.
        let src = open_source(&path, true).unwrap();
        if !src.direct {
            eprintln!("{name}: {} refuses O_DIRECT here; the accepted case is not checked", dir.path().display());
            continue;
        }
        engine.submit(IoOp::Read, src.file.as_raw_fd(), Some(0), 4096, buf, 3).map_err(|e| e.1).unwrap();
        let mut out = Vec::new();
        while out.is_empty() {
            engine.wait(&mut out, &waker).unwrap();
        }
        assert_eq!(*out[0].result.as_ref().unwrap(), 4096, "{name}: O_DIRECT read into P2P memory");
        // tmpfs takes O_DIRECT since Linux 6.6 but copies with the CPU: refused too.
        let buf = out.pop().unwrap().buf;
        let Ok(shm) = tempfile::tempdir_in("/dev/shm") else { continue };
        let shm_file = shm.path().join("f");
        std::fs::write(&shm_file, vec![1u8; 4096]).unwrap();
        use std::os::unix::fs::OpenOptionsExt;
        match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&shm_file) {
            Ok(f) => {
                let (_, e) = engine.submit(IoOp::Read, f.as_raw_fd(), Some(0), 4096, buf, 4).unwrap_err();
                assert!(e.to_string().contains("memory file system (tmpfs or ramfs)"), "{name}: tmpfs: {e}");
            }
            Err(e) => eprintln!("{name}: this kernel's tmpfs refuses O_DIRECT ({e}); nothing more to check"),
        }
    }
}

/// Dropped with a read of a socket pending that nothing will ever answer (found by a
/// review): the engine cancels it and returns, where it waited forever; and the buffer it
/// gives back is the engine's no more: what the peer sends afterwards does not land in it.
#[test]
fn an_engine_dropped_with_a_read_pending_cancels_it_and_returns() {
    let Ok(mut engine) = UringEngine::<peerpath_mem::PooledBuf>::new(4) else {
        eprintln!("SKIPPED: the kernel refused io_uring");
        return;
    };
    let (r, mut w) = std::os::unix::net::UnixStream::pair().unwrap();
    let pool = peerpath_mem::BufferPool::new(1, 4096);
    let mut buf = pool.get();
    buf.set_len(16);
    buf[..16].fill(0x11);
    let at = buf.as_mut_ptr() as usize;
    engine.submit(IoOp::Read, r.as_raw_fd(), None, 4096, buf, 1).map_err(|(_, e)| e).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(engine);
        tx.send(()).unwrap();
    });
    rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the engine's drop returns with a read pending");
    let mut again = pool.try_get().expect("the buffer is back in the pool");
    assert_eq!(again.as_mut_ptr() as usize, at);
    std::io::Write::write_all(&mut w, &[0xab; 16]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    again.set_len(16);
    assert_eq!(&again[..16], &[0x11; 16], "nothing written into it after the drop");
}
