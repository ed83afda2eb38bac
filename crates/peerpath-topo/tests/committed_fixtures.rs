//! The fixture trees committed under `fixtures/<name>/` are what the builder makes, and each
//! has its README and its exported topology file.
//!
//! To regenerate them after changing the builder:
//! `PEERPATH_REGEN_FIXTURES=1 cargo test --test committed_fixtures`

mod common;

use std::fs;

use peerpath_topo::fixture;
use peerpath_topo::Topology;

#[test]
fn committed_fixture_trees_match_the_builder() {
    let regen = std::env::var_os("PEERPATH_REGEN_FIXTURES").is_some();
    for spec in fixture::all() {
        let dir = fixture::committed_fixtures_dir().join(&spec.name);
        let (_tmp, mut fresh) = common::load(&spec);
        fresh.source = Some(format!("fixture:{}", spec.name));
        fresh.description = Some(spec.description.clone());
        if regen {
            let _ = fs::remove_dir_all(dir.join("sys"));
            spec.write(&dir.join("sys")).unwrap();
            fs::write(dir.join("topology.toml"), fresh.to_toml_string().unwrap()).unwrap();
            fs::write(dir.join("topology.svg"), fresh.render_svg().unwrap()).unwrap();
        }
        assert!(
            dir.join("README.md").is_file(),
            "{}: fixtures/{}/README.md must state what it represents and the expected verdicts",
            spec.name,
            spec.name
        );
        let mut committed = Topology::from_sysfs(dir.join("sys"))
            .unwrap_or_else(|e| panic!("reading the committed tree of {}: {e}", spec.name));
        committed.source = fresh.source.clone();
        committed.description = fresh.description.clone();
        assert_eq!(
            committed, fresh,
            "fixtures/{}/sys differs from the builder; regenerate with PEERPATH_REGEN_FIXTURES=1",
            spec.name
        );
        let file = Topology::from_toml_file(dir.join("topology.toml")).unwrap();
        assert_eq!(file, fresh, "fixtures/{}/topology.toml is stale", spec.name);
    }
}
