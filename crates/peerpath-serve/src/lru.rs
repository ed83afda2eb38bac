//! The least-recently-used index the object caches share (the NIC's memory,
//! host mode's memory): whole objects by path, each valid for the version
//! of the file it was made from.

use crate::resolve::{Resolved, Version};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// Objects by path, with the version each was made from and the order of use.
pub(crate) struct Lru<V> {
    entries: HashMap<PathBuf, Entry<V>>,
    /// The paths by last use (a counter), least recent first.
    by_use: BTreeMap<u64, PathBuf>,
    uses: u64,
}

struct Entry<V> {
    value: V,
    version: Version,
    last_use: u64,
}

impl<V> Default for Lru<V> {
    fn default() -> Self {
        Lru { entries: HashMap::new(), by_use: BTreeMap::new(), uses: 0 }
    }
}

impl<V> Lru<V> {
    /// The object made from this version of `found`'s file, now the most
    /// recently used; `None` if there is none (or only an older version's).
    pub fn get(&mut self, found: &Resolved) -> Option<&V> {
        let e = self.entries.get_mut(&found.path).filter(|e| e.version == found.version)?;
        self.uses += 1;
        self.by_use.remove(&e.last_use);
        e.last_use = self.uses;
        self.by_use.insert(self.uses, found.path.clone());
        Some(&e.value)
    }

    /// Keeps `value`, made from `found`'s version, as the most recently
    /// used; returns the value it replaces (an older version), if any.
    pub fn insert(&mut self, found: &Resolved, value: V) -> Option<V> {
        self.uses += 1;
        let old = self.entries.insert(found.path.clone(), Entry { value, version: found.version, last_use: self.uses });
        if let Some(old) = &old {
            self.by_use.remove(&old.last_use);
        }
        self.by_use.insert(self.uses, found.path.clone());
        old.map(|e| e.value)
    }

    /// Takes out the least recently used object.
    pub fn pop_oldest(&mut self) -> Option<V> {
        let (_, path) = self.by_use.pop_first()?;
        Some(self.entries.remove(&path).expect("every path in the use order has its entry").value)
    }

    /// The object kept for `path` (any version), without using it.
    #[cfg(test)]
    pub fn peek(&self, path: &std::path::Path) -> Option<&V> {
        self.entries.get(path).map(|e| &e.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_order_and_versions() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::Root::open(&dir.path().canonicalize().unwrap()).unwrap();
        for n in ["a", "b", "c"] {
            std::fs::write(dir.path().join(n), n).unwrap();
        }
        let open = |n: &str| crate::resolve(&root, n.as_bytes()).unwrap();
        let mut lru = Lru::default();
        for n in ["a", "b", "c"] {
            assert!(lru.insert(&open(n), n.to_string()).is_none());
        }
        assert_eq!(lru.get(&open("a")).map(String::as_str), Some("a"));
        // b is now the least recently used, then c, then a.
        assert_eq!(lru.pop_oldest().as_deref(), Some("b"));
        assert!(lru.get(&open("b")).is_none());
        // A rewritten file (another length) is another version: c's entry is not it.
        std::fs::write(dir.path().join("c"), "cc").unwrap();
        let c2 = open("c");
        assert!(lru.get(&c2).is_none());
        assert_eq!(lru.peek(&c2.path).map(String::as_str), Some("c"));
        assert_eq!(lru.insert(&c2, "cc".into()).as_deref(), Some("c"), "the old version is handed back");
        // So is a replaced one of the same length (a new inode).
        std::fs::remove_file(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a"), "A").unwrap();
        assert!(lru.get(&open("a")).is_none());
        assert_eq!(lru.pop_oldest().as_deref(), Some("a"));
        assert_eq!(lru.pop_oldest().as_deref(), Some("cc"));
        assert!(lru.pop_oldest().is_none());
    }
}
