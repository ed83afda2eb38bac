//! Host mode's object cache: whole objects read once into this process's
//! memory and sent from there, as a key-value store (memcached, seed 002's
//! data mover) keeps its values, least recently used evicted first. Every
//! payload byte still crosses host memory (the send copies it out of this
//! process's memory); a hit saves the read from the page cache, a copy.
//! It is the host-memory twin of the NIC memory's cache ([`crate::nic`]):
//! the same policy and version checks, so that the two modes differ in
//! where payloads live and nothing else.

use crate::lru::Lru;
use crate::resolve::Version;
use crate::stats::HostCacheCounts;
use crate::Resolved;
use peerpath_mem::AlignedBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// An object in this process's memory: its bytes at [`crate::PAYLOAD_SKEW`]
/// in a page-aligned buffer (see there why).
pub(crate) struct Object(AlignedBuf);

impl std::ops::Deref for Object {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0[crate::PAYLOAD_SKEW..]
    }
}

pub(crate) struct HostCache {
    /// Memory the kept objects may hold (each in whole pages).
    bytes: u64,
    /// Objects larger than this are read per request, never kept (half of `bytes`).
    max_object: u64,
    inner: Mutex<Inner>,
}

struct Inner {
    objects: Lru<Arc<Object>>,
    /// Memory the kept objects hold. Objects evicted while a response still
    /// sends from them live until it ends: at most a worker's each more.
    held: u64,
    counts: HostCacheCounts,
}

/// The memory an object of `len` bytes holds: whole pages.
fn extent(len: usize) -> u64 {
    ((crate::PAYLOAD_SKEW + len) as u64).next_multiple_of(4096)
}

impl HostCache {
    pub fn new(bytes: u64) -> HostCache {
        let counts = HostCacheCounts { bytes, ..Default::default() };
        HostCache { bytes, max_object: bytes / 2, inner: Mutex::new(Inner { objects: Lru::default(), held: 0, counts }) }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The whole of `found` in this process's memory: kept from an earlier
    /// request for the same version of the file, or read now and kept. `None` for an
    /// object larger than the cache keeps, or empty (the caller reads it per
    /// request). A file that changed while it was read is sent as read (as
    /// an uncached read would) but not kept.
    pub fn object(&self, found: &Resolved) -> std::io::Result<Option<Arc<Object>>> {
        use std::os::unix::fs::FileExt;
        if found.len == 0 {
            return Ok(None);
        }
        if found.len > self.max_object {
            self.lock().counts.too_large += 1;
            return Ok(None);
        }
        {
            let mut inner = self.lock();
            if let Some(o) = inner.objects.get(found).cloned() {
                inner.counts.hits += 1;
                return Ok(Some(o));
            }
        }
        // Read without the lock: other workers go on meanwhile.
        let len = found.len as usize;
        let mut buf = AlignedBuf::new(crate::PAYLOAD_SKEW + len);
        buf.set_len(crate::PAYLOAD_SKEW + len);
        found.file.read_exact_at(&mut buf[crate::PAYLOAD_SKEW..], 0).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the file shrank while it was read")
            } else {
                e
            }
        })?;
        let unchanged = found.file.metadata().is_ok_and(|m| Version::of(&m) == found.version);
        let object = Arc::new(Object(buf));
        let mut inner = self.lock();
        if !unchanged {
            inner.counts.changed += 1;
            return Ok(Some(object));
        }
        let size = extent(len);
        while inner.held + size > self.bytes {
            let Some(old) = inner.objects.pop_oldest() else { break };
            inner.held -= extent(old.len());
            inner.counts.evictions += 1;
        }
        if let Some(old) = inner.objects.insert(found, object.clone()) {
            // Another worker read the same file meanwhile, or an older version.
            inner.held -= extent(old.len());
        }
        inner.held += size;
        inner.counts.misses += 1;
        Ok(Some(object))
    }

    pub fn counts(&self) -> HostCacheCounts {
        self.lock().counts.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_kept_per_version_within_the_memory_given() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::Root::open(&dir.path().canonicalize().unwrap()).unwrap();
        let open = |n: &str| crate::resolve(&root, n.as_bytes()).unwrap();
        for (n, b) in [("a", 1u8), ("b", 2), ("c", 3)] {
            std::fs::write(dir.path().join(n), vec![b; 5000]).unwrap();
        }
        std::fs::write(dir.path().join("big"), vec![9u8; 8193]).unwrap();
        std::fs::write(dir.path().join("empty"), b"").unwrap();
        // 16 KiB: two 5000-byte objects (8 KiB each in pages), objects up to 8 KiB.
        let cache = HostCache::new(16 << 10);
        let a = cache.object(&open("a")).unwrap().unwrap();
        assert_eq!(&a[..], &[1u8; 5000][..]);
        assert!(Arc::ptr_eq(&a, &cache.object(&open("a")).unwrap().unwrap()), "a hit is the same memory");
        assert!(cache.object(&open("big")).unwrap().is_none(), "over half the cache: read per request");
        assert!(cache.object(&open("empty")).unwrap().is_none());
        cache.object(&open("b")).unwrap().unwrap();
        // c evicts a (b was used after it).
        assert_eq!(&cache.object(&open("c")).unwrap().unwrap()[..], &[3u8; 5000][..]);
        let c = cache.counts();
        assert_eq!((c.hits, c.misses, c.evictions, c.too_large, c.changed), (1, 3, 1, 1, 0));
        assert!(!Arc::ptr_eq(&a, &cache.object(&open("a")).unwrap().unwrap()), "a was evicted and read again");
        // A rewritten file is another version: read again, never the old bytes.
        std::fs::write(dir.path().join("a"), vec![7u8; 4000]).unwrap();
        assert_eq!(&cache.object(&open("a")).unwrap().unwrap()[..], &[7u8; 4000][..]);
        assert!(cache.lock().held <= 16 << 10);
        // A file that shrinks after it was opened is an error, not short bytes.
        let b = open("b");
        std::fs::write(dir.path().join("b"), vec![2u8; 10]).unwrap();
        let cache = HostCache::new(16 << 10);
        assert_eq!(cache.object(&b).err().map(|e| e.kind()), Some(std::io::ErrorKind::UnexpectedEof));
        // One that changes but keeps its length is sent as read, not kept.
        let c = open("c");
        std::fs::write(dir.path().join("c"), vec![4u8; 5000]).unwrap();
        // (Its modification time set apart: on a kernel without multigrain
        // timestamps a write within the same clock tick would not show.)
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        std::fs::File::options().write(true).open(dir.path().join("c")).unwrap().set_modified(t).unwrap();
        assert_eq!(&cache.object(&c).unwrap().unwrap()[..], &[4u8; 5000][..]);
        assert_eq!(cache.counts().changed, 1);
        assert_eq!(cache.counts().misses, 0);
    }
}
