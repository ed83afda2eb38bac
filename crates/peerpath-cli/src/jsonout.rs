//! Every `--json` output names its schema: a `"schema"` key first,
//! `peerpath/<kind>/<version>`, described by `docs/schemas/<kind>.schema.json`
//! (the tests check real outputs against those files).

use serde::Serialize;
use serde_json::{Map, Value};

/// The kinds of JSON peerpath prints, with their current versions.
pub const KINDS: [(&str, u32); 28] = [
    ("job-report", 1),
    ("topology", 1),
    ("p2p-verdict", 1),
    ("plan", 1),
    ("probe", 1),
    ("bench-io", 1),
    ("bench-offload", 1),
    ("sim-report", 1),
    ("sim-sweep", 1),
    ("sim-plan", 1),
    ("sim-reproduce", 1),
    ("gpu-probe", 1),
    ("gpu-unavailable", 1),
    ("csp-identify", 1),
    ("csp-stats", 1),
    ("crypt-report", 1),
    ("ec-report", 1),
    ("ec-verify", 1),
    ("serve-report", 1),
    ("scan-report", 1),
    ("dedup-store", 1),
    ("dedup-restore", 1),
    ("dedup-stats", 1),
    ("dedup-list", 1),
    ("dedup-remove", 1),
    ("dedup-gc", 1),
    ("chain-report", 1),
    ("reverse-chain-report", 1),
];

/// `value` as pretty JSON with `"schema": "peerpath/<kind>/<version>"` first.
pub fn stamped(kind: &str, value: &impl Serialize) -> String {
    serde_json::to_string_pretty(&stamped_value(kind, serde_json::to_value(value).expect("outputs serialise"))).expect("JSON prints")
}

/// As [`stamped`], on one line: for commands that print a report per file or job (JSON
/// Lines), so that their output stays one document a line.
pub fn stamped_line(kind: &str, value: &impl Serialize) -> String {
    serde_json::to_string(&stamped_value(kind, serde_json::to_value(value).expect("outputs serialise"))).expect("JSON prints")
}

/// The same for JSON already made as text (types that print themselves).
pub fn stamped_text(kind: &str, json: &str) -> String {
    serde_json::to_string_pretty(&stamped_value(kind, serde_json::from_str(json).expect("peerpath's own JSON parses"))).expect("JSON prints")
}

/// `value` with the schema's key first.
fn stamped_value(kind: &str, value: Value) -> Value {
    let version = KINDS.iter().find(|(k, _)| *k == kind).map(|(_, v)| *v).expect("a known kind");
    let mut m = Map::new();
    m.insert("schema".into(), Value::String(format!("peerpath/{kind}/{version}")));
    match value {
        Value::Object(fields) => m.extend(fields),
        other => {
            m.insert("value".into(), other);
        }
    }
    Value::Object(m)
}
