//! io_uring fixed buffers: pool buffers and emulated device memory are
//! registered with the ring on first use (a large region by prefixes, or
//! ahead of time), transfers through them move the right bytes to the right
//! place, and memory the kernel will not pin still moves, plainly, with the
//! reason kept.

use peerpath_io::{open_source, region_fixed_span, IoBuf, IoEngine, IoOp, UringEngine, Waker};
use peerpath_mem::{AlignedBuf, BufferPool, MappedRegion, RegionAllocator};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

const MIB: usize = 1 << 20;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()
}

/// Reads `len` bytes at `offset` of `fd` into `buf` and returns it.
fn read_into<B: IoBuf>(engine: &mut UringEngine<B>, fd: i32, offset: u64, len: usize, buf: B) -> B {
    let waker = Waker::new().unwrap();
    engine.submit(IoOp::Read, fd, Some(offset), len, buf, 7).map_err(|e| e.1).unwrap();
    let mut out = Vec::new();
    while out.is_empty() {
        engine.wait(&mut out, &waker).unwrap();
    }
    let c = out.pop().unwrap();
    assert_eq!(*c.result.as_ref().unwrap(), len);
    c.buf
}

fn source(dir: &Path, len: usize) -> (std::path::PathBuf, Vec<u8>) {
    let data = pattern(len);
    let path = dir.join("src");
    std::fs::write(&path, &data).unwrap();
    (path, data)
}

#[test]
fn pool_buffers_are_registered_once_and_receive_the_right_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (path, data) = source(dir.path(), 4 * 65536);
    let src = open_source(&path, true).unwrap();
    let pool = BufferPool::new(2, 65536);
    let mut engine = UringEngine::new(4).unwrap();
    for round in 0..4u64 {
        let (a, b) = (pool.get(), pool.get());
        let mut a = read_into(&mut engine, src.file.as_raw_fd(), round * 65536, 65536, a);
        a.set_len(65536);
        assert_eq!(&a[..], &data[round as usize * 65536..][..65536], "round {round}");
        let mut b = read_into(&mut engine, src.file.as_raw_fd(), (3 - round) * 65536, 65536, b);
        b.set_len(65536);
        assert_eq!(&b[..], &data[(3 - round) as usize * 65536..][..65536], "round {round}");
    }
    let f = engine.fixed_buffers().unwrap();
    assert_eq!(f.refused, None);
    assert_eq!(f.fixed_transfers, 8);
    assert_eq!(f.other_transfers, 0);
    // Each of the two buffers registered once, whole.
    assert_eq!(f.registered_bytes, 2 * 65536);
}

#[test]
fn buffers_without_a_span_move_plainly_and_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (path, data) = source(dir.path(), 8192);
    let src = open_source(&path, true).unwrap();
    let mut engine = UringEngine::new(4).unwrap();
    let mut buf = read_into(&mut engine, src.file.as_raw_fd(), 0, 8192, AlignedBuf::new(8192));
    buf.set_len(8192);
    assert_eq!(&buf[..], &data[..]);
    let f = engine.fixed_buffers().unwrap();
    assert_eq!((f.fixed_transfers, f.other_transfers, f.registered_bytes), (0, 1, 0));
}

/// Device memory in shared memory, the emulated device's.
fn shm_region(name: &str, len: usize) -> Option<Arc<MappedRegion>> {
    let dir = Path::new("/dev/shm");
    if !dir.is_dir() {
        eprintln!("skipping: no /dev/shm");
        return None;
    }
    let path = dir.join(format!("peerpath-fixed-test-{}-{name}", std::process::id()));
    let region = MappedRegion::create_shared(&path, len, "test").unwrap();
    std::fs::remove_file(&path).unwrap();
    Some(Arc::new(region))
}

/// The bytes of `len` at `offset` of a region (the test plays the device).
fn region_bytes(region: &MappedRegion, offset: usize, len: usize) -> Vec<u8> {
    assert!(offset + len <= region.len());
    // SAFETY: the range lies inside the mapping, which `region` keeps alive,
    // and no transfer into it is in flight.
    unsafe { std::slice::from_raw_parts(region.as_ptr().add(offset), len) }.to_vec()
}

#[test]
fn device_memory_is_registered_by_growing_prefixes() {
    let Some(region) = shm_region("prefix", 64 * MIB) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (path, data) = source(dir.path(), 2 * MIB);
    let src = open_source(&path, true).unwrap();
    let alloc = RegionAllocator::new(region.clone());
    let mut engine = UringEngine::new(4).unwrap();

    let first = alloc.alloc(MIB);
    assert_eq!(first.offset(), 0);
    let first = read_into(&mut engine, src.file.as_raw_fd(), 0, MIB, first);
    assert_eq!(region_bytes(&region, 0, MIB), data[..MIB]);
    let f = engine.fixed_buffers().unwrap();
    assert_eq!(f.refused, None);
    assert_eq!(f.registered_bytes, 8 * MIB as u64, "the first prefix is 8 MiB");

    // A range past the first prefix gets the next one (16 MiB).
    let _filler = alloc.alloc(9 * MIB);
    let far = alloc.alloc(MIB);
    assert_eq!(far.offset(), 10 * MIB);
    let far = read_into(&mut engine, src.file.as_raw_fd(), MIB as u64, MIB, far);
    assert_eq!(region_bytes(&region, 10 * MIB, MIB), data[MIB..]);
    // The first range again: its 8 MiB prefix still serves it.
    read_into(&mut engine, src.file.as_raw_fd(), MIB as u64, MIB, first);
    assert_eq!(region_bytes(&region, 0, MIB), data[MIB..]);
    let f = engine.fixed_buffers().unwrap();
    assert_eq!((f.fixed_transfers, f.other_transfers), (3, 0));
    assert_eq!(f.registered_bytes, 16 * MIB as u64, "the 16 MiB prefix holds the 8 MiB one: its pages count once");
    drop(far);
}

#[test]
fn registering_ahead_covers_later_transfers() {
    let Some(region) = shm_region("ahead", 32 * MIB) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (path, data) = source(dir.path(), MIB);
    let src = open_source(&path, true).unwrap();
    let alloc = RegionAllocator::new(region.clone());
    let mut engine = UringEngine::new(4).unwrap();
    engine.register_ahead(region_fixed_span(&region).unwrap(), 20 * MIB);
    let f = engine.fixed_buffers().unwrap();
    assert_eq!((f.registered_bytes, f.fixed_transfers), (20 * MIB as u64, 0));
    let _filler = alloc.alloc(18 * MIB);
    let buf = alloc.alloc(MIB);
    read_into(&mut engine, src.file.as_raw_fd(), 0, MIB, buf);
    assert_eq!(region_bytes(&region, 18 * MIB, MIB), data);
    let f = engine.fixed_buffers().unwrap();
    assert_eq!((f.registered_bytes, f.fixed_transfers, f.other_transfers), (20 * MIB as u64, 1, 0));
}

#[test]
fn memory_the_kernel_will_not_pin_still_moves_with_the_reason_kept() {
    // A shared mapping of a file on a disk file system: since Linux 6.5 the
    // kernel refuses long-term writable pins of such pages (writeback could
    // not clean them), so registration fails and transfers pin per request.
    let dir = tempfile::tempdir().unwrap();
    let (path, data) = source(dir.path(), MIB);
    let src = open_source(&path, true).unwrap();
    let region = Arc::new(MappedRegion::create_shared(&dir.path().join("mem"), 16 * MIB, "disk").unwrap());
    let alloc = RegionAllocator::new(region.clone());
    let mut engine = UringEngine::new(4).unwrap();
    for round in 0..2 {
        let buf = alloc.alloc(MIB);
        read_into(&mut engine, src.file.as_raw_fd(), 0, MIB, buf);
        assert_eq!(region_bytes(&region, 0, MIB), data, "round {round}");
    }
    let f = engine.fixed_buffers().unwrap();
    eprintln!("file-backed memory: {f:?}");
    assert_eq!(f.fixed_transfers + f.other_transfers, 2);
    match &f.refused {
        // Refused once, not retried for the second transfer.
        Some(why) => {
            assert_eq!((f.fixed_transfers, f.registered_bytes), (0, 0));
            assert!(why.contains("pin"), "{why}");
        }
        None => assert_eq!(f.fixed_transfers, 2),
    }
}
