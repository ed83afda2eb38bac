use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a buffer's bytes physically live.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MemoryDomain {
    /// Host DRAM on a NUMA node (`None` when the kernel would not say).
    Host { numa_node: Option<u32> },
    /// P2P memory exposed by a PCIe device (`p2pmem/allocate`), named by BDF.
    P2p { device: String },
    /// Memory owned by an emulated device process, mapped by the host.
    Emulated { device: String },
    /// A GPU's own memory (the host does not map it).
    Gpu { device: String },
}

/// What a P2P domain's device name ends with where a fixture's plain file stood in for the
/// kernel's `p2pmem/allocate`: its bytes are host memory, whatever the path exercised.
pub const FIXTURE_STAND_IN: &str = " (a fixture's stand-in: host memory)";

impl MemoryDomain {
    pub fn is_host(&self) -> bool {
        matches!(self, MemoryDomain::Host { .. })
    }

    /// P2P memory that a fixture's plain file stood in for ([`FIXTURE_STAND_IN`]): host memory.
    pub fn is_fixture_stand_in(&self) -> bool {
        matches!(self, MemoryDomain::P2p { device } if device.ends_with(FIXTURE_STAND_IN))
    }

    /// Host memory the job does not place itself (the page cache, a pipe's
    /// buffers, a constant in the program): on a machine with one NUMA
    /// node that node, else unknown.
    pub fn host_unplaced() -> Self {
        MemoryDomain::Host { numa_node: single_numa_node() }
    }
}

impl fmt::Display for MemoryDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryDomain::Host { numa_node: Some(n) } => write!(f, "host memory (node {n})"),
            MemoryDomain::Host { numa_node: None } => write!(f, "host memory (node unknown)"),
            MemoryDomain::P2p { device } => write!(f, "p2p memory of {device}"),
            MemoryDomain::Emulated { device } => write!(f, "emulated device memory of {device}"),
            MemoryDomain::Gpu { device } => write!(f, "GPU memory of {device}"),
        }
    }
}

/// Asks the kernel which NUMA node backs the page holding `byte` (the page
/// must have been touched). Returns `None` where the kernel has no NUMA support.
pub fn host_numa_node_of(byte: &u8) -> Option<u32> {
    let addr = byte as *const u8;
    const MPOL_F_NODE: libc::c_ulong = 1;
    const MPOL_F_ADDR: libc::c_ulong = 2;
    let mut node: libc::c_int = -1;
    // SAFETY: get_mempolicy with MPOL_F_NODE|MPOL_F_ADDR only reads the
    // policy of the page at `addr` and writes one int into `node`; a null
    // nodemask with maxnode 0 is allowed. An unmapped address yields EFAULT.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut libc::c_int,
            std::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            addr,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    if rc == 0 && node >= 0 {
        Some(node as u32)
    } else {
        None
    }
}

/// The node of a machine with exactly one online NUMA node (read once from
/// `/sys/devices/system/node/online`); `None` with several, or where the
/// kernel has no NUMA support.
pub(crate) fn single_numa_node() -> Option<u32> {
    static NODE: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *NODE.get_or_init(|| parse_single_node(&std::fs::read_to_string("/sys/devices/system/node/online").ok()?))
}

/// `Some(n)` when a node list (the kernel's `0`, `0-3`, `0,2-3` form) names
/// exactly one node.
fn parse_single_node(list: &str) -> Option<u32> {
    list.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::parse_single_node;

    #[test]
    fn node_lists() {
        assert_eq!(parse_single_node("0\n"), Some(0));
        assert_eq!(parse_single_node("1"), Some(1));
        assert_eq!(parse_single_node("0-1\n"), None);
        assert_eq!(parse_single_node("0,2"), None);
        assert_eq!(parse_single_node(""), None);
    }
}
