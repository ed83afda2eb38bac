//! Device memory regions: P2P memory mapped from `p2pmem/allocate`, and
//! shared-memory files standing in for an emulated device's memory.
//!
//! A [`MappedRegion`] is one `mmap(MAP_SHARED)`; a [`RegionAllocator`] hands
//! out page-aligned ranges of it as [`RegionBuf`]s, blocking when full
//! (back-pressure, like [`crate::BufferPool`]). A `RegionBuf` gives the host
//! no access to its bytes: the host never reads or writes payload in device
//! memory (P2P BARs are uncached MMIO; CPU loads and stores there are slow
//! and, on some platforms, unsafe). Only the I/O engine takes its raw
//! pointer, and hands it to the kernel for O_DIRECT DMA.
//!
//! ```text
//!   MappedRegion (one mmap, MAP_SHARED)
//!   +---------+-----------+-------------------+---------+
//!   | buf A   | free      | buf B             | free    |   RegionAllocator: first fit,
//!   +---------+-----------+-------------------+---------+   page-aligned, coalescing
//!   0         offset(A)+cap                                  free ranges
//! ```
//!
//! The kernel side (`drivers/pci/p2pdma.c`, `p2pmem_alloc_mmap`; see
//! `shared/docs/p2pdma-reference.md` §1): each `mmap` of `allocate` is a
//! new allocation of one bus-contiguous chunk, MAP_SHARED and offset 0 only,
//! ENOMEM when no contiguous free range is large enough, ENODEV when the
//! provider is gone. Pages go back to the pool at `munmap` (or when the last
//! O_DIRECT pin drops); `close` alone frees nothing.

use crate::{align_down, align_up, MemoryDomain, DIRECT_IO_ALIGN_BYTES};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, Condvar, Mutex};

/// The granule of every mapping and every range handed out: P2P memory
/// comes in 4 KiB ZONE_DEVICE pages, and O_DIRECT wants page-aligned buffers.
pub const REGION_PAGE_BYTES: usize = DIRECT_IO_ALIGN_BYTES;

/// `statfs` magic of sysfs (`include/uapi/linux/magic.h`).
const SYSFS_MAGIC: i64 = 0x6265_6572;

/// Why a region could not be mapped. Every variant names the path and
/// says what to do.
#[derive(Debug, thiserror::Error)]
pub enum RegionError {
    #[error("cannot {operation} {path}: {source}{hint}")]
    Io { operation: &'static str, path: PathBuf, source: io::Error, hint: &'static str },
    #[error("{path}: expected {expected}, found {found:?}")]
    Malformed { path: PathBuf, expected: &'static str, found: String },
    #[error("{path} does not exist: this PCI function is not a P2P memory provider (no driver registered P2P memory for it; nvme does so only for a CMB, on a kernel with CONFIG_PCI_P2PDMA)")]
    NotAProvider { path: PathBuf },
    #[error("{path} does not exist: the kernel is older than 6.2 (user-space P2P mappings arrived in 6.2) or the provider is going away; use a newer kernel, or the out-of-tree p2pmem-pci driver's /dev/p2pmemX")]
    NoAllocate { path: PathBuf },
    #[error("cannot map {requested_bytes} bytes of P2P memory: {path} says only {available_bytes} of {size_bytes} bytes are available; unmap other P2P buffers (nvme also keeps its submission queues in the CMB unless booted with nvme.use_cmb_sqes=0) or ask for less")]
    NotEnoughAvailable { path: PathBuf, requested_bytes: usize, available_bytes: u64, size_bytes: u64 },
    #[error("cannot map {requested_bytes} bytes of P2P memory from {path}: ENOMEM. p2pmem/available said {available_bytes} bytes are free, but that is a sum: each mmap of allocate needs one contiguous free range, and none of {requested_bytes} bytes exists (fragmentation), or the request exceeds the provider's memory. Map smaller regions, or unmap others first")]
    P2pNoMemory { path: PathBuf, requested_bytes: usize, available_bytes: u64 },
    #[error("cannot map P2P memory from {path}: ENODEV, the provider is gone (its driver was unbound or the device was removed); probe the machine again")]
    P2pProviderGone { path: PathBuf },
    #[error("cannot map {requested_bytes} bytes of {path}: {source}{hint}")]
    Map { path: PathBuf, requested_bytes: usize, source: io::Error, hint: &'static str },
    #[error("{path}: a region of zero bytes cannot be mapped")]
    Empty { path: PathBuf },
}

fn io_error(operation: &'static str, path: &Path, source: io::Error) -> RegionError {
    let hint = match source.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => " (p2pmem/allocate is mode 0660 and /dev/shm files 0600: run as their owner or group)",
        _ => "",
    };
    RegionError::Io { operation, path: path.to_path_buf(), source, hint }
}

/// What `p2pmem/` said when a P2P region was mapped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct P2pMemInfo {
    /// `p2pmem/size`: all registered ranges of the provider.
    pub size_bytes: u64,
    /// `p2pmem/available` before the mapping (a sum of free ranges).
    pub available_bytes: u64,
    /// `p2pmem/published`: only published memory is found by in-kernel
    /// users (nvmet); user space can map unpublished memory all the same.
    pub published: bool,
    /// `allocate` lives on sysfs (the kernel's attribute). False for a
    /// fixture's plain file, where a mapping says nothing about P2P.
    pub allocate_on_sysfs: bool,
}

/// One shared mapping of device memory (P2P or emulated).
///
/// The mapping is unmapped on drop; for P2P memory that returns the pages
/// to the provider (once no O_DIRECT request pins them any more).
pub struct MappedRegion {
    ptr: NonNull<u8>,
    len: usize,
    domain: MemoryDomain,
    path: PathBuf,
    p2p: Option<P2pMemInfo>,
}

// SAFETY: MappedRegion owns a MAP_SHARED mapping that it never dereferences;
// it only hands out its address. Which thread holds it does not matter.
unsafe impl Send for MappedRegion {}
// SAFETY: no method reads or writes through the pointer; sharing the region
// shares only its address, length and domain.
unsafe impl Sync for MappedRegion {}

fn read_trimmed(path: &Path) -> Result<String, RegionError> {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).map_err(|source| io_error("read", path, source))
}

fn read_u64(path: &Path) -> Result<u64, RegionError> {
    let text = read_trimmed(path)?;
    text.parse().map_err(|_| RegionError::Malformed { path: path.to_path_buf(), expected: "a decimal number of bytes", found: text })
}

fn read_bool(path: &Path) -> Result<bool, RegionError> {
    let text = read_trimmed(path)?;
    match text.as_str() {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(RegionError::Malformed { path: path.to_path_buf(), expected: "0 or 1", found: text }),
    }
}

/// `statfs.f_type` of the file system holding `fd`, if the kernel says.
pub fn file_system_type(fd: std::os::fd::RawFd) -> Option<i64> {
    // SAFETY: statfs is plain data; all-zero is a valid value to overwrite.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs writes one statfs struct into `st`, which we own; the
    // caller keeps the descriptor open for the duration of the call.
    let rc = unsafe { libc::fstatfs(fd, &mut st) };
    (rc == 0).then_some(st.f_type as i64)
}

/// Free bytes (for an unprivileged writer) of the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: c is a valid C string and st a buffer statvfs fills.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    // SAFETY: statvfs returned 0, so it filled the struct.
    (rc == 0).then(|| unsafe { st.assume_init() }).map(|st| st.f_bavail * st.f_frsize)
}

/// `statfs.f_type` of file systems whose pages are host memory: tmpfs
/// (TMPFS_MAGIC) and ramfs (RAMFS_MAGIC), from `include/uapi/linux/magic.h`.
pub const MEMORY_FILE_SYSTEMS: [i64; 2] = [0x0102_1994, 0x8584_58f6];

/// Whether `fd` is a file or directory of a memory file system (tmpfs, ramfs): its pages are
/// host memory, and its reads and writes CPU copies however it is opened. A device node,
/// FIFO or socket is not, though /dev is a devtmpfs: its bytes are the device's.
pub fn on_memory_file_system(fd: std::os::fd::RawFd) -> bool {
    // SAFETY: stat is plain data; all-zero is a valid value to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes one stat struct into `st`, which we own; the caller keeps the
    // descriptor open for the duration of the call.
    let rc = unsafe { libc::fstat(fd, &mut st) };
    let kind = st.st_mode & libc::S_IFMT;
    rc == 0 && (kind == libc::S_IFREG || kind == libc::S_IFDIR) && file_system_type(fd).is_some_and(|t| MEMORY_FILE_SYSTEMS.contains(&t))
}

fn is_on_sysfs(file: &File) -> bool {
    file_system_type(file.as_raw_fd()) == Some(SYSFS_MAGIC)
}

/// `mmap(NULL, len, RW, MAP_SHARED, fd, 0)`; where not `file_backed`,
/// shared anonymous memory in its place (`file` is not mapped: what is
/// written never reaches it, and a forked process still shares the memory).
fn map_file(file: &File, len: usize, file_backed: bool) -> io::Result<NonNull<u8>> {
    let (flags, fd) = if file_backed { (libc::MAP_SHARED, file.as_raw_fd()) } else { (libc::MAP_SHARED | libc::MAP_ANONYMOUS, -1) };
    // SAFETY: a new mapping at an address of the kernel's choosing touches
    // no existing memory; `file`, where mapped, is open for reading and writing.
    let raw = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, fd, 0) };
    if raw == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(NonNull::new(raw as *mut u8).expect("mmap never returns null on success"))
}

/// Asks for 2 MiB pages on a shared-memory mapping. tmpfs honours it where
/// its mount says `huge=advise` (or gives huge pages anyway with
/// `huge=always`/`within_size`); with the default (`huge=never`) it is a
/// no-op. Compressing out of 4 KiB pages of emulated device memory took
/// ~25 % more CPU than out of 2 MiB pages on the 2-core VM (more page
/// faults and TLB misses in the device process).
fn advise_huge_pages(ptr: NonNull<u8>, len: usize) {
    // SAFETY: advice on a mapping we just made; it changes how the kernel
    // may back it, never its contents. A refusal leaves 4 KiB pages.
    unsafe { libc::madvise(ptr.as_ptr() as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
}

/// Of a mapping of this process starting at `start`: (resident bytes,
/// bytes mapped with 2 MiB pages), from `/proc/self/smaps`. `None` where
/// the kernel does not say.
fn smaps_huge(start: usize) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/smaps").ok()?;
    parse_smaps_huge(&text, start)
}

fn parse_smaps_huge(text: &str, start: usize) -> Option<(u64, u64)> {
    let head = format!("{start:x}-");
    let mut lines = text.lines().skip_while(|l| !l.starts_with(&head));
    lines.next()?;
    let (mut rss, mut huge) = (None, 0u64);
    for l in lines {
        // The next mapping's header ("addr-addr perms ..."): this one ended.
        if l.split_whitespace().next().is_some_and(|w| w.contains('-') && w.chars().all(|c| c.is_ascii_hexdigit() || c == '-')) {
            break;
        }
        let mut words = l.split_whitespace();
        let (key, kb) = (words.next().unwrap_or(""), words.next().and_then(|v| v.parse::<u64>().ok()));
        match (key, kb) {
            ("Rss:", Some(kb)) => rss = Some(kb * 1024),
            ("ShmemPmdMapped:" | "FilePmdMapped:", Some(kb)) => huge += kb * 1024,
            _ => {}
        }
    }
    rss.map(|r| (r, huge))
}


impl MappedRegion {
    /// Maps `len` bytes (rounded up to 4 KiB pages) of the P2P memory of the
    /// PCI function at `device_dir` (`/sys/bus/pci/devices/<BDF>`):
    /// `mmap(MAP_SHARED, offset 0)` of `p2pmem/allocate`, after checking
    /// `p2pmem/size`, `available` (the request must fit) and `published`.
    /// The domain is `MemoryDomain::P2p { device: <BDF> }`, the BDF being the
    /// directory's name. Each call is a new allocation on the provider.
    ///
    /// Unpublished memory is mapped all the same (the kernel allows it); the
    /// caller finds `published` in [`MappedRegion::p2p_info`].
    pub fn map_p2pmem(device_dir: &Path, len: usize) -> Result<MappedRegion, RegionError> {
        let dir = device_dir.join("p2pmem");
        let allocate = dir.join("allocate");
        if !dir.is_dir() {
            return Err(RegionError::NotAProvider { path: dir });
        }
        if len == 0 {
            return Err(RegionError::Empty { path: allocate });
        }
        let len = align_up(len, REGION_PAGE_BYTES);
        let size_bytes = read_u64(&dir.join("size"))?;
        let available_bytes = read_u64(&dir.join("available"))?;
        let published = read_bool(&dir.join("published"))?;
        if len as u64 > available_bytes {
            return Err(RegionError::NotEnoughAvailable {
                path: dir.join("available"),
                requested_bytes: len,
                available_bytes,
                size_bytes,
            });
        }
        // O_NONBLOCK: a FIFO in a tree's place of `allocate` must not hold the open for ever; what
        // is not a regular file (sysfs's attributes are) is refused, as a malformed tree.
        let open = |write: bool| match OpenOptions::new().read(true).write(write).custom_flags(libc::O_NONBLOCK).open(&allocate) {
            Ok(f) if f.metadata().is_ok_and(|m| m.is_file()) => Ok(f),
            Ok(_) => Err(io_error("open", &allocate, io::Error::new(io::ErrorKind::InvalidInput, "not a regular file (the kernel's allocate is one)"))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(RegionError::NoAllocate { path: allocate.clone() }),
            Err(e) if e.raw_os_error() == Some(libc::ENODEV) => Err(RegionError::P2pProviderGone { path: allocate.clone() }),
            Err(e) => Err(io_error("open", &allocate, e)),
        };
        // The kernel's allocate is opened read-write and mapped shared. Anything else (a
        // fixture's plain file, or what a link in a tree points to) is opened read-only and
        // host memory stands in for it (shared anonymous memory, which a forked device shares):
        // what is put in the memory never reaches that file.
        let file = open(false)?;
        let allocate_on_sysfs = is_on_sysfs(&file);
        let file = if allocate_on_sysfs { open(true)? } else { file };
        let ptr = map_file(&file, len, allocate_on_sysfs).map_err(|source| match source.raw_os_error() {
            Some(libc::ENOMEM) => RegionError::P2pNoMemory { path: allocate.clone(), requested_bytes: len, available_bytes },
            Some(libc::ENODEV) => RegionError::P2pProviderGone { path: allocate.clone() },
            Some(libc::EINVAL) => RegionError::Map {
                path: allocate.clone(),
                requested_bytes: len,
                source,
                hint: " (the kernel maps allocate only MAP_SHARED at offset 0; this is a bug in peerpath)",
            },
            _ => RegionError::Map { path: allocate.clone(), requested_bytes: len, source, hint: "" },
        })?;
        // The mapping holds the allocation; closing the file frees nothing.
        drop(file);
        let mut device = device_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| device_dir.display().to_string());
        if !allocate_on_sysfs {
            // Every ledger line and report naming this memory says what it is.
            device.push_str(crate::domain::FIXTURE_STAND_IN);
        }
        Ok(MappedRegion {
            ptr,
            len,
            domain: MemoryDomain::P2p { device },
            path: allocate,
            p2p: Some(P2pMemInfo { size_bytes, available_bytes, published, allocate_on_sysfs }),
        })
    }

    /// Creates a shared-memory file (`O_CREAT | O_EXCL`, mode 0600) of `len`
    /// bytes (rounded up to 4 KiB pages) and maps it MAP_SHARED: the memory
    /// of an emulated device. The domain is `MemoryDomain::Emulated { device }`.
    /// Removing the file is the creator's business (the mapping outlives it).
    pub fn create_shared(path: &Path, len: usize, device: &str) -> Result<MappedRegion, RegionError> {
        if len == 0 {
            return Err(RegionError::Empty { path: path.to_path_buf() });
        }
        let len = align_up(len, REGION_PAGE_BYTES);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| io_error("create", path, e))?;
        let mapped = file
            .set_len(len as u64)
            .map_err(|e| io_error("size", path, e))
            .and_then(|()| map_file(&file, len, true).map_err(|source| RegionError::Map { path: path.to_path_buf(), requested_bytes: len, source, hint: "" }));
        match mapped {
            Ok(ptr) => {
                advise_huge_pages(ptr, len);
                Ok(MappedRegion { ptr, len, domain: MemoryDomain::Emulated { device: device.to_string() }, path: path.to_path_buf(), p2p: None })
            }
            Err(e) => {
                // We created it; leave nothing half-made behind.
                let _ = std::fs::remove_file(path);
                Err(e)
            }
        }
    }

    /// `len` bytes (rounded up to pages) of anonymous host memory, mapped
    /// whole: the host-side window of a device whose own memory the I/O
    /// engine cannot reach (storage DMAs into the window, the device copies
    /// between it and its memory). The domain is host memory.
    pub fn host(len: usize) -> Result<MappedRegion, RegionError> {
        let path = PathBuf::from("(anonymous host memory)");
        if len == 0 {
            return Err(RegionError::Empty { path });
        }
        let len = align_up(len, REGION_PAGE_BYTES);
        // SAFETY: a new private anonymous mapping at an address of the
        // kernel's choosing touches no existing memory.
        let raw = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        if raw == libc::MAP_FAILED {
            return Err(RegionError::Map { path, requested_bytes: len, source: io::Error::last_os_error(), hint: "" });
        }
        let ptr = NonNull::new(raw as *mut u8).expect("mmap never returns null on success");
        advise_huge_pages(ptr, len);
        Ok(MappedRegion { ptr, len, domain: MemoryDomain::host_unplaced(), path, p2p: None })
    }

    /// Maps an existing shared-memory file, all of it, MAP_SHARED: the host's
    /// view of an emulated device's memory.
    pub fn open_shared(path: &Path, device: &str) -> Result<MappedRegion, RegionError> {
        let file = OpenOptions::new().read(true).write(true).open(path).map_err(|e| io_error("open", path, e))?;
        let len = file.metadata().map_err(|e| io_error("stat", path, e))?.len();
        let len = usize::try_from(len).map_err(|_| RegionError::Malformed { path: path.to_path_buf(), expected: "a size that fits in memory", found: len.to_string() })?;
        if len == 0 {
            return Err(RegionError::Empty { path: path.to_path_buf() });
        }
        let ptr = map_file(&file, len, true).map_err(|source| RegionError::Map { path: path.to_path_buf(), requested_bytes: len, source, hint: "" })?;
        advise_huge_pages(ptr, len);
        Ok(MappedRegion { ptr, len, domain: MemoryDomain::Emulated { device: device.to_string() }, path: path.to_path_buf(), p2p: None })
    }

    /// Makes `offset..offset + len` (clamped to the region) resident and
    /// writable in this mapping: `madvise(MADV_POPULATE_WRITE)` (Linux 5.14),
    /// which allocates (and zeroes) the pages a first touch would, without
    /// changing a byte. For shared memory this is where the pages' cost lands:
    /// on the process that populates, not on whoever touches them first.
    /// Returns the bytes populated: 0 for P2P memory (device memory, already
    /// there) and for a file that is not on tmpfs or ramfs (its zeroed pages
    /// would be written back to disk, and the kernel never long-term pins
    /// file pages for io_uring, so there is no first touch to pay ahead).
    pub fn populate(&self, offset: usize, len: usize) -> io::Result<usize> {
        if self.p2p.is_some() || offset >= self.len {
            return Ok(0);
        }
        let start = align_down(offset, REGION_PAGE_BYTES);
        let end = align_up(offset.saturating_add(len).min(self.len), REGION_PAGE_BYTES).min(self.len);
        let in_memory = File::open(&self.path).is_ok_and(|f| on_memory_file_system(f.as_raw_fd()));
        if end <= start || !in_memory {
            return Ok(0);
        }
        // SAFETY: start..end lies in our mapping (page aligned, clamped to
        // its length), which stays mapped while `self` lives; populating
        // faults pages in without writing to them.
        let rc = unsafe { libc::madvise(self.ptr.as_ptr().add(start) as *mut libc::c_void, end - start, libc::MADV_POPULATE_WRITE) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(end - start)
    }

    /// Bytes of the file behind this region that hold pages (its allocated
    /// blocks): what is resident of shared memory on tmpfs. `None` for P2P
    /// memory or where the file cannot be asked.
    pub fn allocated_bytes(&self) -> Option<u64> {
        use std::os::unix::fs::MetadataExt;
        if self.p2p.is_some() {
            return None;
        }
        std::fs::metadata(&self.path).ok().map(|m| m.blocks() * 512)
    }

    /// Of this mapping: (resident bytes, bytes in 2 MiB pages), as the
    /// kernel says in `/proc/self/smaps`; `None` where it does not.
    pub fn huge_page_use(&self) -> Option<(u64, u64)> {
        smaps_huge(self.ptr.as_ptr() as usize)
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Never true (empty regions are refused); for clippy's sake.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn domain(&self) -> &MemoryDomain {
        &self.domain
    }
    /// Start of the mapping. The host must not read or write payload through
    /// it (that is the device's memory); it is for the device side of an
    /// emulated device and for I/O engines.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    /// The file that was mapped (`.../p2pmem/allocate` or the shm file).
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// What `p2pmem/` said, for P2P regions.
    pub fn p2p_info(&self) -> Option<&P2pMemInfo> {
        self.p2p.as_ref()
    }
}

impl Drop for MappedRegion {
    fn drop(&mut self) {
        // SAFETY: ptr and len are exactly the mapping made by the constructor,
        // and every RegionBuf into it holds an Arc to this region, so none
        // outlives it. (In-flight O_DIRECT pins keep P2P pages alive in the
        // kernel; the engine waits for its requests before buffers drop.)
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len) };
    }
}

impl std::fmt::Debug for MappedRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedRegion")
            .field("len", &self.len)
            .field("domain", &self.domain)
            .field("path", &self.path)
            .field("p2p", &self.p2p)
            .finish()
    }
}

/// Free ranges of a region, sorted by offset, never adjacent (coalesced).
struct FreeList {
    ranges: Vec<(usize, usize)>,
    available_bytes: usize,
    /// Threads blocked in `alloc`: a freed range wakes them only if there
    /// are any (a condvar's notify is a futex system call even when no one
    /// waits, and the offload path frees hundreds of ranges a second).
    waiters: usize,
}

impl FreeList {
    /// First fit: the lowest free range that holds `bytes`.
    fn take(&mut self, bytes: usize) -> Option<usize> {
        let i = self.ranges.iter().position(|&(_, len)| len >= bytes)?;
        let (offset, len) = self.ranges[i];
        if len == bytes {
            self.ranges.remove(i);
        } else {
            self.ranges[i] = (offset + bytes, len - bytes);
        }
        self.available_bytes -= bytes;
        Some(offset)
    }

    fn give_back(&mut self, offset: usize, bytes: usize) {
        let i = self.ranges.partition_point(|&(o, _)| o < offset);
        debug_assert!(i == 0 || self.ranges[i - 1].0 + self.ranges[i - 1].1 <= offset, "double free or overlap at {offset}");
        debug_assert!(i == self.ranges.len() || offset + bytes <= self.ranges[i].0, "double free or overlap at {offset}");
        self.ranges.insert(i, (offset, bytes));
        // Merge with the next range, then with the previous one.
        if i + 1 < self.ranges.len() && offset + bytes == self.ranges[i + 1].0 {
            self.ranges[i].1 += self.ranges[i + 1].1;
            self.ranges.remove(i + 1);
        }
        if i > 0 && self.ranges[i - 1].0 + self.ranges[i - 1].1 == offset {
            self.ranges[i - 1].1 += self.ranges[i].1;
            self.ranges.remove(i);
        }
        self.available_bytes += bytes;
    }
}

/// A first-fit allocator of page-aligned ranges of an offset space the
/// host does not map (a device's own memory): it hands out places, never
/// bytes. Dropping a [`RangeBuf`] frees its range.
#[derive(Clone)]
pub struct RangeAllocator {
    free: Arc<Mutex<FreeList>>,
    usable_bytes: usize,
}

impl RangeAllocator {
    /// Ranges of `[0, len)` (whole pages).
    pub fn new(len: usize) -> Self {
        let usable_bytes = crate::align_down(len, REGION_PAGE_BYTES);
        let ranges = if usable_bytes > 0 { vec![(0, usable_bytes)] } else { Vec::new() };
        RangeAllocator { free: Arc::new(Mutex::new(FreeList { ranges, available_bytes: usable_bytes, waiters: 0 })), usable_bytes }
    }

    /// A range of `len` bytes if a free one fits now.
    pub fn try_alloc(&self, len: usize) -> Option<RangeBuf> {
        let capacity = align_up(len.max(1), REGION_PAGE_BYTES);
        if capacity > self.usable_bytes {
            return None;
        }
        let offset = self.free.lock().expect("range allocator lock poisoned").take(capacity)?;
        Some(RangeBuf { free: self.free.clone(), offset, capacity, len })
    }

    /// Free bytes (a sum; the largest free range may be smaller).
    pub fn available(&self) -> usize {
        self.free.lock().expect("range allocator lock poisoned").available_bytes
    }
}

/// A range on loan from a [`RangeAllocator`], returned on drop.
pub struct RangeBuf {
    free: Arc<Mutex<FreeList>>,
    offset: usize,
    capacity: usize,
    len: usize,
}

impl RangeBuf {
    pub fn offset(&self) -> usize {
        self.offset
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Sets the number of valid bytes. Panics if beyond capacity (a bug).
    pub fn set_len(&mut self, n: usize) {
        assert!(n <= self.capacity, "set_len {n} beyond capacity {}", self.capacity);
        self.len = n;
    }
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

impl Drop for RangeBuf {
    fn drop(&mut self) {
        self.free.lock().expect("range allocator lock poisoned").give_back(self.offset, self.capacity);
    }
}

struct AllocatorInner {
    region: Arc<MappedRegion>,
    free: Mutex<FreeList>,
    freed: Condvar,
    usable_bytes: usize,
}

/// A bounded first-fit allocator of page-aligned ranges of one region.
/// `alloc` blocks while no free range fits (back-pressure); `try_alloc`
/// does not; dropping a [`RegionBuf`] frees its range and wakes waiters.
#[derive(Clone)]
pub struct RegionAllocator {
    inner: Arc<AllocatorInner>,
}

impl RegionAllocator {
    pub fn new(region: Arc<MappedRegion>) -> Self {
        // Ranges are whole pages; a tail shorter than a page is never handed out.
        let usable_bytes = crate::align_down(region.len(), REGION_PAGE_BYTES);
        let ranges = if usable_bytes > 0 { vec![(0, usable_bytes)] } else { Vec::new() };
        RegionAllocator {
            inner: Arc::new(AllocatorInner {
                region,
                free: Mutex::new(FreeList { ranges, available_bytes: usable_bytes, waiters: 0 }),
                freed: Condvar::new(),
                usable_bytes,
            }),
        }
    }

    fn capacity_for(&self, len: usize) -> usize {
        let capacity = align_up(len.max(1), REGION_PAGE_BYTES);
        assert!(
            capacity <= self.inner.usable_bytes,
            "a {len}-byte buffer can never fit in a region of {} usable bytes",
            self.inner.usable_bytes
        );
        capacity
    }

    fn buf(&self, offset: usize, capacity: usize, len: usize) -> RegionBuf {
        RegionBuf { allocator: self.inner.clone(), offset, capacity, len }
    }

    /// A buffer of `len` bytes (capacity rounded up to whole pages), waiting
    /// for others to be dropped while none fits. Panics if `len` exceeds the
    /// region (it would wait forever: a bug).
    pub fn alloc(&self, len: usize) -> RegionBuf {
        let capacity = self.capacity_for(len);
        let mut free = self.inner.free.lock().expect("region allocator lock poisoned");
        loop {
            if let Some(offset) = free.take(capacity) {
                return self.buf(offset, capacity, len);
            }
            free.waiters += 1;
            free = self.inner.freed.wait(free).expect("region allocator lock poisoned");
            free.waiters -= 1;
        }
    }

    /// A buffer of `len` bytes if a free range fits now.
    pub fn try_alloc(&self, len: usize) -> Option<RegionBuf> {
        let capacity = align_up(len.max(1), REGION_PAGE_BYTES);
        if capacity > self.inner.usable_bytes {
            return None;
        }
        let offset = self.inner.free.lock().expect("region allocator lock poisoned").take(capacity)?;
        Some(self.buf(offset, capacity, len))
    }

    /// Free bytes (a sum; the largest free range may be smaller).
    pub fn available(&self) -> usize {
        self.inner.free.lock().expect("region allocator lock poisoned").available_bytes
    }

    /// The region ranges are taken from.
    pub fn region(&self) -> &Arc<MappedRegion> {
        &self.inner.region
    }
}

/// A page-aligned range of a region, on loan from a [`RegionAllocator`] and
/// returned to it on drop.
///
/// It gives the host no access to the bytes: the host never reads or writes
/// payload in device memory. What it offers is where the range is
/// (`offset`, `len`, `capacity`, `domain`) and, for the I/O engine, the raw
/// pointer to hand to the kernel.
pub struct RegionBuf {
    allocator: Arc<AllocatorInner>,
    offset: usize,
    capacity: usize,
    len: usize,
}

impl RegionBuf {
    /// Offset of the range in its region.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// Valid bytes: what was asked for at allocation, or set since.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Sets the number of valid bytes. Panics if beyond capacity (a bug).
    pub fn set_len(&mut self, n: usize) {
        assert!(n <= self.capacity, "set_len {n} beyond capacity {}", self.capacity);
        self.len = n;
    }
    /// Bytes of the range (whole pages).
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    pub fn domain(&self) -> &MemoryDomain {
        self.allocator.region.domain()
    }
    /// The region this range belongs to.
    pub fn region(&self) -> &Arc<MappedRegion> {
        &self.allocator.region
    }
    /// Start of the range, for the I/O engine only (DMA by the kernel).
    pub fn io_ptr(&mut self) -> *mut u8 {
        // SAFETY: offset + capacity <= the region's length (the allocator
        // hands out ranges inside it), so the result stays in the mapping.
        unsafe { self.allocator.region.as_ptr().add(self.offset) }
    }
}

impl Drop for RegionBuf {
    fn drop(&mut self) {
        let mut free = self.allocator.free.lock().expect("region allocator lock poisoned");
        free.give_back(self.offset, self.capacity);
        if free.waiters > 0 {
            // Ranges differ in size: every waiter re-checks whether it fits now.
            self.allocator.freed.notify_all();
        }
    }
}

impl std::fmt::Debug for RegionBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionBuf")
            .field("offset", &self.offset)
            .field("len", &self.len)
            .field("capacity", &self.capacity)
            .field("domain", self.domain())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
7f0000000000-7f0020000000 rw-s 00000000 00:1a 12 /dev/shm/peerpath-csp-x.mem
Size:             524288 kB
Rss:               57344 kB
ShmemPmdMapped:    49152 kB
FilePmdMapped:         0 kB
VmFlags: rd wr sh mr mw me ms sd hg
7f0020000000-7f0020001000 rw-p 00000000 00:00 0
Rss:                   4 kB
ShmemPmdMapped:     2048 kB
";

    /// Files and directories of a tmpfs are memory; a device node on /dev's devtmpfs is not
    /// (a block device was read as "a file in memory": by CPU copies, booked as such).
    #[test]
    fn only_files_and_directories_of_a_memory_file_system_are_memory() {
        let on = |p: &str| File::open(p).is_ok_and(|f| on_memory_file_system(f.as_raw_fd()));
        let devtmpfs = File::open("/dev").ok().and_then(|f| file_system_type(f.as_raw_fd())) == Some(MEMORY_FILE_SYSTEMS[0]);
        if !devtmpfs {
            eprintln!("SKIPPED: /dev is not a devtmpfs here");
            return;
        }
        assert!(!on("/dev/null"), "a character device node");
        assert!(on("/dev"), "the directory itself");
        let shm = Path::new("/dev/shm");
        if File::open(shm).is_ok_and(|f| on_memory_file_system(f.as_raw_fd())) {
            let f = tempfile::NamedTempFile::new_in(shm).unwrap();
            assert!(on_memory_file_system(f.as_file().as_raw_fd()), "a regular file in /dev/shm");
        }
    }

    #[test]
    fn smaps_gives_resident_and_huge_bytes_of_one_mapping() {
        assert_eq!(parse_smaps_huge(SMAPS, 0x7f00_0000_0000), Some((57344 * 1024, 49152 * 1024)));
        assert_eq!(parse_smaps_huge(SMAPS, 0x7f00_2000_0000), Some((4096, 2048 * 1024)));
        assert_eq!(parse_smaps_huge(SMAPS, 0x1000), None, "no such mapping");
        assert_eq!(parse_smaps_huge("7f0000000000-7f0000001000 rw-s\nSize: 4 kB\n", 0x7f00_0000_0000), None, "no Rss line");
    }

    #[test]
    fn a_shared_region_reports_its_resident_pages() {
        let dir = tempfile::tempdir().unwrap();
        let r = MappedRegion::create_shared(&dir.path().join("m"), 4 << 20, "t").unwrap();
        // SAFETY: the region is ours and 4 MiB long.
        unsafe { std::ptr::write_bytes(r.as_ptr(), 1, 1 << 20) };
        let (rss, huge) = r.huge_page_use().expect("smaps names the mapping");
        assert!(rss >= 1 << 20, "the touched MiB is resident: {rss}");
        assert!(huge <= rss);
    }
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn populating_makes_a_range_resident_without_changing_it() {
        // A file on a disk is left alone (where the temporary directory is
        // on a disk; on a tmpfs it is populated like the one below).
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let r = MappedRegion::create_shared(&dir.path().join("m"), 8 << 20, "t").unwrap();
        let fs = File::open(dir.path()).ok().and_then(|f| file_system_type(f.as_raw_fd()));
        let on_disk = fs.is_some_and(|t| !MEMORY_FILE_SYSTEMS.contains(&t));
        assert_eq!(r.populate(0, 4 << 20).unwrap(), if on_disk { 0 } else { 4 << 20 }, "file system {fs:x?}");
        let shm = shm_path("populate");
        let _unlink = Unlink(shm.clone());
        let r = MappedRegion::create_shared(&shm, 8 << 20, "t").unwrap();
        // SAFETY: the region is ours and 8 MiB long.
        unsafe { r.as_ptr().add(4096).write(7) };
        assert!(r.allocated_bytes().unwrap() < 4 << 20);
        let (before, _) = r.huge_page_use().expect("smaps names the mapping");
        assert!(before < 4 << 20, "only what was touched is resident: {before}");
        assert_eq!(r.populate(0, 4 << 20).expect("MADV_POPULATE_WRITE (Linux 5.14+)"), 4 << 20);
        assert!(r.allocated_bytes().unwrap() >= 4 << 20);
        let (after, _) = r.huge_page_use().unwrap();
        assert!(after >= 4 << 20, "the first 4 MiB are resident: {after}");
        // SAFETY: as above.
        let (kept, untouched) = unsafe { (r.as_ptr().add(4096).read(), r.as_ptr().add(3 << 20).read()) };
        assert_eq!((kept, untouched), (7, 0), "populating writes nothing");
        assert_eq!(r.populate(6 << 20, 100 << 20).unwrap(), 2 << 20, "clamped to the region");
        assert_eq!(r.populate(64 << 20, 1).unwrap(), 0, "past the end: nothing to do");
    }

    const PAGE: usize = REGION_PAGE_BYTES;

    /// A fake provider directory `<tmp>/0000:03:00.0/p2pmem/` with `size`,
    /// `available`, `published` and an `allocate` that is a plain file of
    /// `allocate_bytes`.
    ///
    /// The real `allocate` is a sysfs binary attribute with other semantics:
    /// it reports 1 TiB, takes only MAP_SHARED at offset 0, and every mmap is
    /// a new allocation from the provider's pool (so ENOMEM and ENODEV come
    /// from the kernel). A plain file is not mapped (host memory stands in); these tests
    /// cover the checks around the mmap and the error wording, not the kernel.
    fn fake_provider(size: &str, available: &str, published: &str, allocate_bytes: Option<u64>) -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dev = tmp.path().join("0000:03:00.0");
        let p2p = dev.join("p2pmem");
        std::fs::create_dir_all(&p2p).unwrap();
        std::fs::write(p2p.join("size"), format!("{size}\n")).unwrap();
        std::fs::write(p2p.join("available"), format!("{available}\n")).unwrap();
        std::fs::write(p2p.join("published"), format!("{published}\n")).unwrap();
        if let Some(n) = allocate_bytes {
            File::create(p2p.join("allocate")).unwrap().set_len(n).unwrap();
        }
        (tmp, dev)
    }

    /// An `allocate` that is not a regular file: a FIFO held the open for ever (probe hung); a
    /// directory or a character device passed as mapped memory. Each is refused, naming it.
    #[test]
    fn an_allocate_that_is_not_a_regular_file_is_refused_at_once() {
        for kind in ["fifo", "dir", "chardev"] {
            let (_t, dev) = fake_provider("1048576", "1048576", "1", None);
            let allocate = dev.join("p2pmem/allocate");
            match kind {
                "fifo" => {
                    let c = std::ffi::CString::new(allocate.as_os_str().as_encoded_bytes()).unwrap();
                    // SAFETY: mkfifo(3) with a NUL-terminated path that lives across the call.
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
                }
                "dir" => std::fs::create_dir(&allocate).unwrap(),
                _ => std::os::unix::fs::symlink("/dev/zero", &allocate).unwrap(),
            }
            let e = MappedRegion::map_p2pmem(&dev, 4096).unwrap_err().to_string();
            assert!(e.contains("not a regular file") && e.contains("allocate"), "{kind}: {e}");
        }
    }

    fn shm_path(tag: &str) -> PathBuf {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
        dir.join(format!("peerpath-test-{}-{tag}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)))
    }

    /// Removes the shm file when the test ends, also on failure.
    struct Unlink(PathBuf);
    impl Drop for Unlink {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn shm_region(pages: usize) -> (Unlink, Arc<MappedRegion>) {
        let path = shm_path("alloc");
        let r = MappedRegion::create_shared(&path, pages * PAGE, "emu0").unwrap();
        (Unlink(path), Arc::new(r))
    }

    #[test]
    fn p2pmem_maps_whole_pages_with_the_provider_domain() {
        let (_tmp, dev) = fake_provider("268435456", "268435456", "1", Some(1 << 20));
        let r = MappedRegion::map_p2pmem(&dev, 5000).unwrap();
        assert_eq!(r.len(), 2 * PAGE);
        // A temp dir is no sysfs: the domain says its bytes are host memory standing in.
        assert_eq!(r.domain(), &MemoryDomain::P2p { device: format!("0000:03:00.0{}", crate::domain::FIXTURE_STAND_IN) });
        assert!(r.domain().is_fixture_stand_in());
        assert_eq!(r.as_ptr() as usize % PAGE, 0);
        let info = r.p2p_info().unwrap();
        assert_eq!((info.size_bytes, info.available_bytes, info.published), (268435456, 268435456, true));
        assert!(!info.allocate_on_sysfs, "a temp dir is not sysfs");
        assert!(r.path().ends_with("p2pmem/allocate"));
    }

    /// An allocate that is not the kernel's (a plain file, even one the
    /// process could write) is not mapped: host memory stands in for it, so
    /// what is put in the memory never reaches the file.
    #[test]
    fn a_plain_allocate_file_is_never_written() {
        let (_tmp, dev) = fake_provider("65536", "65536", "1", Some(8192));
        let allocate = dev.join("p2pmem/allocate");
        std::fs::write(&allocate, [7u8; 8192]).unwrap();
        let r = MappedRegion::map_p2pmem(&dev, 8192).unwrap();
        // SAFETY: the region maps 8192 bytes, read-write, for as long as `r` lives.
        unsafe { std::ptr::write_bytes(r.as_ptr(), 0xab, 8192) };
        // SAFETY: as above; the bytes were just written.
        assert_eq!(unsafe { *r.as_ptr().add(100) }, 0xab, "the memory holds what was put in it");
        drop(r);
        assert_eq!(std::fs::read(&allocate).unwrap(), vec![7u8; 8192], "the file is as it was");
    }

    #[test]
    fn unpublished_memory_still_maps_and_says_so() {
        let (_tmp, dev) = fake_provider("65536", "65536", "0", Some(65536));
        let r = MappedRegion::map_p2pmem(&dev, PAGE).unwrap();
        assert!(!r.p2p_info().unwrap().published);
    }

    #[test]
    fn more_than_available_is_refused_before_mapping() {
        let (_tmp, dev) = fake_provider("1048576", "8192", "1", Some(1 << 20));
        let e = MappedRegion::map_p2pmem(&dev, 3 * PAGE).unwrap_err();
        assert!(matches!(e, RegionError::NotEnoughAvailable { requested_bytes: 12288, available_bytes: 8192, .. }), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("p2pmem/available") && msg.contains("only 8192 of 1048576 bytes are available"), "{msg}");
    }

    #[test]
    fn non_numeric_size_is_an_error_naming_the_path() {
        let (_tmp, dev) = fake_provider("lots", "4096", "1", Some(4096));
        let e = MappedRegion::map_p2pmem(&dev, PAGE).unwrap_err();
        assert!(matches!(e, RegionError::Malformed { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("p2pmem/size") && msg.contains("\"lots\""), "{msg}");
    }

    #[test]
    fn bad_published_flag_is_an_error_naming_the_path() {
        let (_tmp, dev) = fake_provider("4096", "4096", "yes", Some(4096));
        let msg = MappedRegion::map_p2pmem(&dev, PAGE).unwrap_err().to_string();
        assert!(msg.contains("p2pmem/published") && msg.contains("0 or 1"), "{msg}");
    }

    #[test]
    fn missing_files_are_errors_naming_the_path() {
        let (_tmp, dev) = fake_provider("4096", "4096", "1", Some(4096));
        std::fs::remove_file(dev.join("p2pmem/available")).unwrap();
        let msg = MappedRegion::map_p2pmem(&dev, PAGE).unwrap_err().to_string();
        assert!(msg.contains("cannot read") && msg.contains("p2pmem/available"), "{msg}");

        let (_tmp, dev) = fake_provider("4096", "4096", "1", None);
        let e = MappedRegion::map_p2pmem(&dev, PAGE).unwrap_err();
        assert!(matches!(e, RegionError::NoAllocate { .. }), "{e:?}");
        assert!(e.to_string().contains("p2pmem/allocate") && e.to_string().contains("6.2"));

        let tmp = tempfile::tempdir().unwrap();
        let e = MappedRegion::map_p2pmem(tmp.path(), PAGE).unwrap_err();
        assert!(matches!(e, RegionError::NotAProvider { .. }), "{e:?}");
        assert!(e.to_string().contains("not a P2P memory provider"));
    }

    #[test]
    fn zero_bytes_is_refused() {
        let (_tmp, dev) = fake_provider("4096", "4096", "1", Some(4096));
        assert!(matches!(MappedRegion::map_p2pmem(&dev, 0), Err(RegionError::Empty { .. })));
        assert!(matches!(MappedRegion::create_shared(&shm_path("zero"), 0, "emu0"), Err(RegionError::Empty { .. })));
    }

    #[test]
    fn shared_files_are_created_once_and_seen_by_both_sides() {
        let path = shm_path("shared");
        let _cleanup = Unlink(path.clone());
        let device_side = MappedRegion::create_shared(&path, 10_000, "emu0").unwrap();
        assert_eq!(device_side.len(), 3 * PAGE);
        assert_eq!(device_side.domain(), &MemoryDomain::Emulated { device: "emu0".into() });
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(meta.len(), 3 * PAGE as u64);

        // O_EXCL: a second device cannot take the same file.
        let e = MappedRegion::create_shared(&path, PAGE, "emu1").unwrap_err();
        assert!(matches!(&e, RegionError::Io { operation: "create", source, .. } if source.kind() == io::ErrorKind::AlreadyExists), "{e:?}");
        assert!(path.exists(), "a refused create must not remove the other's file");

        let host_side = MappedRegion::open_shared(&path, "emu0").unwrap();
        assert_eq!(host_side.len(), device_side.len());
        // The device (not the host) writes its own memory; the host's mapping sees it.
        // SAFETY: both mappings are 3 pages of the same file; offset 5000 is inside.
        unsafe {
            device_side.as_ptr().add(5000).write_volatile(0xA5);
            assert_eq!(host_side.as_ptr().add(5000).read_volatile(), 0xA5);
        }
    }

    #[test]
    fn open_shared_errors_name_the_path() {
        let path = shm_path("missing");
        let msg = MappedRegion::open_shared(&path, "emu0").unwrap_err().to_string();
        assert!(msg.contains("cannot open") && msg.contains(&*path.to_string_lossy()), "{msg}");
        let _cleanup = Unlink(path.clone());
        File::create(&path).unwrap();
        assert!(matches!(MappedRegion::open_shared(&path, "emu0"), Err(RegionError::Empty { .. })));
    }

    #[test]
    fn allocator_is_first_fit_page_aligned_and_coalesces() {
        let (_f, region) = shm_region(4);
        let a = RegionAllocator::new(region.clone());
        assert_eq!(a.available(), 4 * PAGE);
        let b0 = a.alloc(100);
        assert_eq!((b0.offset(), b0.len(), b0.capacity()), (0, 100, PAGE));
        let b1 = a.alloc(PAGE + 1);
        assert_eq!((b1.offset(), b1.capacity()), (PAGE, 2 * PAGE));
        let b2 = a.alloc(PAGE);
        assert_eq!(b2.offset(), 3 * PAGE);
        assert_eq!(a.available(), 0);
        assert!(a.try_alloc(1).is_none());
        assert_eq!(b2.domain(), &MemoryDomain::Emulated { device: "emu0".into() });

        // Free the first and last pages: 2 pages free, but not contiguous.
        drop(b0);
        drop(b2);
        assert_eq!(a.available(), 2 * PAGE);
        assert!(a.try_alloc(2 * PAGE).is_none(), "fragmented: no contiguous 2 pages");
        // Freeing the middle merges all into one range.
        drop(b1);
        let mut all = a.try_alloc(4 * PAGE).expect("coalesced");
        assert_eq!(all.offset(), 0);
        assert_eq!(all.io_ptr(), region.as_ptr());
        all.set_len(4 * PAGE);
        assert_eq!(all.len(), 4 * PAGE);
    }

    #[test]
    fn alloc_blocks_until_a_buffer_is_dropped() {
        let (_f, region) = shm_region(2);
        let a = RegionAllocator::new(region);
        let first = a.alloc(PAGE);
        let second = a.alloc(PAGE);
        let a2 = a.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let b = a2.alloc(2 * PAGE);
            tx.send(b.offset()).unwrap();
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(rx.try_recv().is_err(), "must wait while the region is full");
        drop(first);
        std::thread::sleep(Duration::from_millis(30));
        assert!(rx.try_recv().is_err(), "one free page is not enough for two");
        drop(second);
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 0);
        waiter.join().unwrap();
        assert_eq!(a.available(), 2 * PAGE);
    }

    #[test]
    fn concurrent_buffers_never_overlap() {
        let (_f, region) = shm_region(16);
        let a = RegionAllocator::new(region);
        let owners: Arc<Mutex<Vec<u8>>> = Arc::new(Mutex::new(vec![0; 16]));
        let threads: Vec<_> = (1..=4u8)
            .map(|t| {
                let (a, owners) = (a.clone(), owners.clone());
                std::thread::spawn(move || {
                    for i in 0..300usize {
                        let pages = 1 + (i * t as usize) % 5;
                        let b = a.alloc(pages * PAGE);
                        let first = b.offset() / PAGE;
                        {
                            let mut o = owners.lock().unwrap();
                            for p in first..first + pages {
                                assert_eq!(o[p], 0, "page {p} handed out twice");
                                o[p] = t;
                            }
                        }
                        std::thread::yield_now();
                        let mut o = owners.lock().unwrap();
                        for slot in o.iter_mut().skip(first).take(pages) {
                            *slot = 0;
                        }
                        drop(o);
                        drop(b);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(a.available(), 16 * PAGE);
    }

    #[test]
    #[should_panic(expected = "can never fit")]
    fn a_buffer_larger_than_the_region_is_a_bug() {
        let (_f, region) = shm_region(1);
        RegionAllocator::new(region).alloc(PAGE + 1);
    }

    #[test]
    fn try_alloc_larger_than_the_region_is_none() {
        let (_f, region) = shm_region(1);
        assert!(RegionAllocator::new(region).try_alloc(2 * PAGE).is_none());
    }
}
