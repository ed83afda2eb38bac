//! The sysfs reader on arbitrary file contents: the four canned machines of
//! `peerpath_topo::fixture` are written once, beside each the files that
//! say whether the kernel has P2PDMA (release, config, symbol list); each
//! input replaces one of their files (the first two bytes pick the machine
//! and the file, the rest is its new contents), is read, and is put back.
//! A model or an error, never a panic; a model read answers, and exports
//! to a topology file that reads back to the same model (which `topo_file`
//! renders).
#![no_main]

#[path = "common/scratch.rs"]
mod scratch;

use libfuzzer_sys::fuzz_target;
use peerpath_topo::{fixture, Topology};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

struct Machine {
    sys: PathBuf,
    /// Every regular file of the tree and beside it, with its contents as written.
    files: Vec<(PathBuf, Vec<u8>)>,
}

fn regular_files(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("a fixture directory").flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let t = std::fs::symlink_metadata(&p).expect("a fixture file").file_type();
        if t.is_dir() {
            regular_files(&p, out);
        } else if t.is_file() {
            let bytes = std::fs::read(&p).expect("a fixture file");
            out.push((p, bytes));
        }
    }
}

fn machines() -> &'static Vec<Machine> {
    static MACHINES: OnceLock<Vec<Machine>> = OnceLock::new();
    MACHINES.get_or_init(|| {
        let dir = scratch::scratch_dir("sysfs_tree");
        fixture::all()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let root = dir.join(i.to_string());
                let sys = root.join("sys");
                f.write(&sys).expect("a fixture writes");
                for (file, text) in [("proc/sys/kernel/osrelease", "6.9.0\n"), ("boot/config-6.9.0", "CONFIG_PCI=y\nCONFIG_PCI_P2PDMA=y\n"), ("proc/kallsyms", "ffffffff81000000 T pci_p2pdma_add_resource\n")] {
                    let p = root.join(file);
                    std::fs::create_dir_all(p.parent().expect("a parent")).expect("a directory");
                    std::fs::write(p, text).expect("a file");
                }
                let mut files = Vec::new();
                regular_files(&root, &mut files);
                Machine { sys, files }
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&[m, f], contents)) = data.split_first_chunk::<2>() else { return };
    let machine = &machines()[usize::from(m) % 4];
    let (path, original) = &machine.files[usize::from(f) % machine.files.len()];
    std::fs::write(path, contents).expect("a scratch file");
    let read = Topology::from_sysfs(&machine.sys);
    std::fs::write(path, original).expect("a scratch file");
    let Ok(t) = read else { return };
    let exported = t.to_toml_string().expect("a model read exports");
    let back = Topology::from_toml_str(&exported).unwrap_or_else(|e| panic!("{} as {:?}: the export does not read back: {e}\n{exported}", path.display(), String::from_utf8_lossy(contents)));
    assert_eq!(back, t, "{} as {:?}: the export reads back to another model", path.display(), String::from_utf8_lossy(contents));
    // Rendering (the matrix, the SVG) is topo_file's: a model read exports to a file that reads back to it.
    let _ = t.render_tree();
    let _ = t.to_json_string();
    let _ = t.verdict("0000:03:00.0", "0000:06:00.0");
});
