//! Whether the running kernel has P2PDMA at all (`CONFIG_PCI_P2PDMA`), and its release.
//!
//! sysfs cannot say it: P2PDMA is built in (a bool option, no `module/` entry), and a kernel
//! without it shows the same tree, only no `p2pmem/` anywhere. So the answer comes from the
//! files beside `/sys`: the kernel's config in `/boot/config-<release>` (Debian, Ubuntu, RHEL
//! ship it), else the symbols in `/proc/kallsyms` (P2PDMA's exported functions are there when it
//! is built in; names are listed even where `kptr_restrict` hides addresses). `/proc/config.gz`
//! is not read: peerpath has no gzip decoder at this layer, and kallsyms answers the same.
//!
//! The files are looked for under the parent of the sysfs root when that root is a directory
//! named `sys` (`/sys` -> `/`, a capture's `host/sys` -> `host/`), so a fixture can carry
//! `proc/sys/kernel/osrelease` and `boot/config-*` beside its `sys/`.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bdf::Bdf;

/// What was learnt about the kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelInfo {
    /// `uname -r`, from `proc/sys/kernel/osrelease`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// `CONFIG_PCI_P2PDMA`: `Some(true)` built in, `Some(false)` not, `None` unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2pdma: Option<bool>,
    /// The file that answered `p2pdma`, or why nothing did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2pdma_source: Option<String>,
}

impl KernelInfo {
    /// `(major, minor)` of the release (`6.1.0-28-amd64` -> `(6, 1)`).
    pub fn version(&self) -> Option<(u32, u32)> {
        let r = self.release.as_deref()?;
        let mut parts = r.split(|c: char| !c.is_ascii_digit());
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some((major, minor))
    }

    /// Trusts a registered P2P provider (`p2pmem/` on `provider`) over a config or kallsyms that
    /// says "not set": `p2pmem/` is P2PDMA's own sysfs group, so a kernel without it has none,
    /// and the file that said otherwise belongs to another build (a stale `boot/config-*`, a
    /// capture's files from another boot). The answer becomes "built in", saying what
    /// contradicted what.
    pub(crate) fn trust_registered_provider(&mut self, provider: Bdf) {
        if self.p2pdma != Some(false) {
            return;
        }
        let said = self.p2pdma_source.take().unwrap_or_else(|| "the kernel's config".to_string());
        self.p2pdma = Some(true);
        self.p2pdma_source = Some(format!(
            "{provider} has registered P2P memory (p2pmem/), which only a kernel with P2PDMA creates; {said} says CONFIG_PCI_P2PDMA is not set, which that contradicts"
        ));
    }

    /// One line: `kernel 6.1.0-28-amd64: CONFIG_PCI_P2PDMA not set (/boot/config-6.1.0-28-amd64)`.
    pub fn describe(&self) -> String {
        let release = self.release.as_deref().unwrap_or("(release unknown)");
        let state = match self.p2pdma {
            Some(true) => "CONFIG_PCI_P2PDMA=y",
            Some(false) => "CONFIG_PCI_P2PDMA not set",
            None => "CONFIG_PCI_P2PDMA unknown",
        };
        let source = self.p2pdma_source.as_ref().map(|s| format!(" ({s})")).unwrap_or_default();
        format!("Kernel: {release}: {state}{source}")
    }
}

/// The system root beside a sysfs root, if the sysfs root is a directory named `sys`.
pub fn system_root(sysfs_root_real: &Path) -> Option<PathBuf> {
    (sysfs_root_real.file_name()? == "sys").then(|| sysfs_root_real.parent().map(Path::to_path_buf)).flatten()
}

/// The kernel config is a few hundred KiB; more than this is not a config.
const MAX_CONFIG_BYTES: u64 = 16 << 20;
/// kallsyms is tens of MiB on a large kernel.
const MAX_KALLSYMS_BYTES: u64 = 256 << 20;
/// Functions P2PDMA builds in (drivers/pci/p2pdma.c exports them).
const P2PDMA_SYMBOLS: [&str; 2] = ["pci_p2pdma_add_resource", "pci_p2pmem_find_many"];

/// Reads what there is under `sysroot`; `None` when none of the files exists (a capture without
/// them), so topologies read from such trees stay as they were.
pub fn read(sysroot: &Path) -> Option<KernelInfo> {
    let mut tried = Vec::new();
    let osrelease = sysroot.join("proc/sys/kernel/osrelease");
    let release = match crate::read_text_file(&osrelease) {
        // A release names a file in boot/: one word, no path in it.
        Ok(s) if !s.trim().is_empty() && !s.trim().contains(|c: char| c == '/' || c.is_whitespace() || c.is_control()) => Some(s.trim().to_string()),
        Ok(s) => {
            tried.push(format!("{} holds no release ({:?})", shown(sysroot, &osrelease), s.chars().take(40).collect::<String>()));
            None
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            tried.push(format!("{}: {e}", shown(sysroot, &osrelease)));
            None
        }
    };
    if let Some(r) = &release {
        let config = sysroot.join("boot").join(format!("config-{r}"));
        match config_p2pdma(&config) {
            Ok(Some(v)) => return Some(KernelInfo { release, p2pdma: Some(v), p2pdma_source: Some(shown(sysroot, &config)) }),
            Ok(None) => tried.push(format!("{} has no CONFIG_ lines", shown(sysroot, &config))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tried.push(format!("{}: {e}", shown(sysroot, &config))),
        }
    }
    let kallsyms = sysroot.join("proc/kallsyms");
    match kallsyms_p2pdma(&kallsyms) {
        Ok(Some(v)) => return Some(KernelInfo { release, p2pdma: Some(v), p2pdma_source: Some(shown(sysroot, &kallsyms)) }),
        Ok(None) => tried.push(format!("{} lists no symbols (read as another user?)", shown(sysroot, &kallsyms))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tried.push(format!("{}: {e}", shown(sysroot, &kallsyms))),
    }
    if release.is_none() && tried.is_empty() {
        return None;
    }
    let why = if tried.is_empty() { "no boot/config-<release> or proc/kallsyms to read".to_string() } else { tried.join("; ") };
    Some(KernelInfo { release, p2pdma: None, p2pdma_source: Some(why) })
}

/// `/boot/...` for the live system, the path under the capture otherwise.
fn shown(sysroot: &Path, path: &Path) -> String {
    if sysroot == Path::new("/") {
        path.display().to_string()
    } else {
        format!("{} (under {})", Path::new("/").join(path.strip_prefix(sysroot).unwrap_or(path)).display(), sysroot.display())
    }
}

/// `Some(true)` for `CONFIG_PCI_P2PDMA=y`, `Some(false)` for a config without it (`is not set`,
/// or a kernel older than the option), `None` for a file with no `CONFIG_` line at all.
fn config_p2pdma(path: &Path) -> std::io::Result<Option<bool>> {
    let f = crate::open_regular(path)?;
    let mut any = false;
    for line in BufReader::new(f.take(MAX_CONFIG_BYTES)).lines() {
        let line = line?;
        let line = line.trim();
        if let Some(v) = line.strip_prefix("CONFIG_PCI_P2PDMA=") {
            return Ok(Some(v == "y"));
        }
        any |= line.starts_with("CONFIG_") || line.starts_with("# CONFIG_");
    }
    Ok(any.then_some(false))
}

/// `Some(true)` when P2PDMA's functions are listed, `Some(false)` when other symbols are and they
/// are not, `None` for an empty list.
fn kallsyms_p2pdma(path: &Path) -> std::io::Result<Option<bool>> {
    let f = crate::open_regular(path)?;
    let mut any = false;
    for line in BufReader::new(f.take(MAX_KALLSYMS_BYTES)).lines() {
        let line = line?;
        // `ffffffff81234560 T pci_p2pdma_add_resource` (modules add `\t[name]`).
        let name = line.split_whitespace().nth(2);
        if name.is_some_and(|n| P2PDMA_SYMBOLS.contains(&n)) {
            return Ok(Some(true));
        }
        any |= name.is_some();
    }
    Ok(any.then_some(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sys")).unwrap();
        for (p, text) in files {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        d
    }

    #[test]
    fn the_config_answers_first_and_says_which_file() {
        let d = tree(&[
            ("proc/sys/kernel/osrelease", "6.18.0-pp\n"),
            ("boot/config-6.18.0-pp", "CONFIG_PCI=y\n# CONFIG_PCI_P2PDMA is not set\nCONFIG_ZONE_DEVICE=y\n"),
            ("proc/kallsyms", "0000000000000000 T pci_p2pdma_add_resource\n"),
        ]);
        let k = read(d.path()).unwrap();
        assert_eq!((k.release.as_deref(), k.p2pdma, k.version()), (Some("6.18.0-pp"), Some(false), Some((6, 18))));
        assert!(k.p2pdma_source.as_deref().unwrap().starts_with("/boot/config-6.18.0-pp (under "), "{k:?}");
        assert!(k.describe().contains("6.18.0-pp: CONFIG_PCI_P2PDMA not set"), "{}", k.describe());
        std::fs::write(d.path().join("boot/config-6.18.0-pp"), "CONFIG_PCI_P2PDMA=y\n").unwrap();
        assert_eq!(read(d.path()).unwrap().p2pdma, Some(true));
    }

    #[test]
    fn without_a_config_kallsyms_answers() {
        let d = tree(&[("proc/sys/kernel/osrelease", "6.1.0-28-amd64\n"), ("proc/kallsyms", "0000000000000000 T _text\n0000000000000000 T pci_p2pmem_find_many\n")]);
        let k = read(d.path()).unwrap();
        assert_eq!((k.p2pdma, k.version()), (Some(true), Some((6, 1))));
        assert!(k.p2pdma_source.as_deref().unwrap().starts_with("/proc/kallsyms"), "{k:?}");
        std::fs::write(d.path().join("proc/kallsyms"), "0000000000000000 T _text\n0000000000000000 t nvme_probe\t[nvme]\n").unwrap();
        assert_eq!(read(d.path()).unwrap().p2pdma, Some(false));
        std::fs::write(d.path().join("proc/kallsyms"), "").unwrap();
        let k = read(d.path()).unwrap();
        assert_eq!(k.p2pdma, None);
        assert!(k.p2pdma_source.unwrap().contains("lists no symbols"));
    }

    #[test]
    fn nothing_beside_sysfs_is_no_kernel_info_and_odd_files_are_unknown_not_errors() {
        assert_eq!(read(tree(&[]).path()), None);
        let d = tree(&[("proc/sys/kernel/osrelease", "6.2.0\n"), ("boot/config-6.2.0", "garbage\n\u{0}\n")]);
        let k = read(d.path()).unwrap();
        assert_eq!((k.release.as_deref(), k.p2pdma), (Some("6.2.0"), None));
        assert!(k.p2pdma_source.unwrap().contains("has no CONFIG_ lines"));
        // A release that is a path is none (it would name a file outside boot/).
        let d = tree(&[("proc/sys/kernel/osrelease", "../../etc/x\n"), ("etc/x", "CONFIG_PCI_P2PDMA=y\n")]);
        let k = read(d.path()).unwrap();
        assert_eq!((k.release, k.p2pdma), (None, None));
        assert!(k.p2pdma_source.unwrap().contains("holds no release"));
        // A directory where the config should be: unknown, with the reason.
        let d = tree(&[("proc/sys/kernel/osrelease", "6.2.0\n"), ("boot/config-6.2.0/x", "")]);
        let k = read(d.path()).unwrap();
        assert_eq!(k.p2pdma, None);
        assert!(k.p2pdma_source.unwrap().contains("is a directory"));
    }

    #[test]
    fn only_a_root_named_sys_has_a_system_root() {
        assert_eq!(system_root(Path::new("/sys")), Some(PathBuf::from("/")));
        assert_eq!(system_root(Path::new("/tmp/cap/sys")), Some(PathBuf::from("/tmp/cap")));
        assert_eq!(system_root(Path::new("/tmp/cap/sysfs")), None);
        assert_eq!(system_root(Path::new("/")), None);
    }
}
