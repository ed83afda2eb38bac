//! Topology files (`topo --file`, what `topo --export` writes) on arbitrary
//! text: a model or an error, never a panic; a model read exports to a file
//! that reads back to the same model and exports to the same text; and
//! whatever a file says, the model renders and answers (tree, matrix, SVG,
//! JSON, verdicts, the explanation, a plan) without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_topo::{PlanRequest, Topology};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(t) = Topology::from_toml_str(text) else { return };
    let exported = t.to_toml_string().expect("a model read exports");
    let back = Topology::from_toml_str(&exported).unwrap_or_else(|e| panic!("the export does not read back: {e}\n{exported}"));
    assert_eq!(back, t, "the export reads back to another model:\n{exported}");
    assert_eq!(back.to_toml_string().expect("exports"), exported, "exporting again gives other text");
    let _ = t.render_tree();
    let _ = t.render_matrix();
    let _ = t.render_svg();
    let _ = t.to_json_string();
    let _ = t.gpu_memory_paths();
    let names: Vec<String> = t.devices.iter().map(|d| d.bdf.to_string()).chain(t.block_devices.iter().map(|b| b.name.clone())).take(6).collect();
    for (i, a) in names.iter().enumerate() {
        for b in &names[i..] {
            let _ = t.verdict(a, b);
            let _ = t.explain(a, b);
        }
    }
    if names.len() >= 2 {
        let refs: Vec<&str> = names[1..].iter().map(String::as_str).collect();
        let _ = t.verdict_many(&names[0], &refs);
        let _ = t.find_providers(&refs);
        let _ = t.plan(&PlanRequest::new([names[0].as_str()], [names[1].as_str()]));
    }
});
