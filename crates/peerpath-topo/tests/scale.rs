//! A machine of many PCI functions is drawn, tree and whole P2P matrix, in time that grows with
//! the output. Looking a function up by address scanned every function, and each cell of the
//! matrix walked both chains and scanned the root bus again: `topo` on 1,800 functions took
//! half a minute, and on this one it would take hours. Nothing is timed here: the work runs
//! under a ten-minute watchdog, far beyond what it needs on any machine (about two seconds).

use std::sync::mpsc;
use std::time::Duration;

use peerpath_topo::{Bdf, Cpu, CpuVendor, PciDevice, Topology};

/// `domains` PCI domains, each: host bridge, root port, a switch of 32 downstream ports; below
/// each of the first 16 ports an NVMe SSD and 127 other functions (system peripherals, class
/// 0x0880, that no matrix shows), below the other 16 ports 128 of those.
fn wide_machine(domains: u32) -> Topology {
    let mut t = Topology::empty();
    t.cpu = Cpu { arch: "x86".into(), vendor: CpuVendor::Amd, family: Some(0x19), model: Some(0x11), sockets: Some(1) };
    let mut add = |bdf: Bdf, up: Option<Bdf>, vendor: u16, class: u32| {
        let mut d = PciDevice::new(bdf, vendor, 0x1000, class);
        d.upstream = up;
        t.devices.push(d);
    };
    for domain in 0..domains {
        let at = |bus: u8, device: u8, function: u8| Bdf { domain, bus, device, function };
        add(at(0, 0, 0), None, 0x1022, 0x060000);
        add(at(0, 1, 0), None, 0x1022, 0x060400);
        add(at(1, 0, 0), Some(at(0, 1, 0)), 0x1000, 0x060400);
        for port in 0..32u8 {
            add(at(2, port, 0), Some(at(1, 0, 0)), 0x1000, 0x060400);
            for devfn in 0..128u8 {
                let class = if port < 16 && devfn == 0 { 0x010802 } else { 0x088000 };
                add(at(3 + port, devfn >> 3, devfn & 7), Some(at(2, port, 0)), 0x144d, class);
            }
        }
    }
    t.normalize().expect("a consistent topology");
    t
}

#[test]
fn a_machine_of_132_thousand_functions_is_drawn_whole() {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let t = wide_machine(32);
        let drawn = (t.devices.len(), t.render_tree(), t.render_matrix());
        let _ = tx.send(drawn);
    });
    let (functions, tree, matrix) = rx
        .recv_timeout(Duration::from_secs(600))
        .expect("drawn within ten minutes (it takes seconds; the old lookups took hours)");
    let matrix = matrix.expect("the matrix");
    assert_eq!(functions, 32 * (3 + 32 * 129));
    // Every function is a line of the tree, below its own host bridge.
    assert_eq!(tree.lines().filter(|l| l.contains("── ")).count(), functions);
    assert!(tree.contains("pci001f:00"), "the last domain's host bridge");
    // 512 SSDs: siblings on one switch at bus distance 4, others through the root complex
    // (AMD Zen) at distance 8.
    let header = matrix.lines().find(|l| l.trim_start().starts_with("[1]")).expect("the column header");
    assert_eq!(header.split_whitespace().count(), 512, "{header}");
    let row = matrix.lines().find(|l| l.starts_with("   [1]")).expect("the first row");
    let cells: Vec<&str> = row.split_whitespace().skip(1).collect();
    assert_eq!(cells.len(), 512);
    assert!(cells[1..16].iter().all(|c| *c == "B4") && cells[16..].iter().all(|c| *c == "H8"), "{row}");
}
