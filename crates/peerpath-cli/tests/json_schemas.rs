//! Every `--json` output names its schema (`"schema": "peerpath/<kind>/<version>"`) and matches
//! the JSON Schema file `docs/schemas/<kind>.schema.json`: the tests run the real commands and
//! check their outputs against the files.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The subset of JSON Schema the files use (type, const, enum, properties, required, items,
/// additionalProperties), checked by hand with a standard validator's semantics (draft 2020-12):
/// enough for these files, without the `jsonschema` crate's large dependency tree (HTTP clients,
/// regex engines) in every test build. A type admits null only where it lists "null"
/// (`["string", "null"]`), as python's `jsonschema` and every other validator read it; a schema
/// that uses a keyword this check does not know is refused (`known_keywords`), not half-checked.
fn check(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    if let Some(c) = schema.get("const") {
        if !same(c, v) {
            return Err(format!("{at}: {v} is not {c}"));
        }
    }
    if let Some(e) = schema.get("enum") {
        let options = e.as_array().ok_or_else(|| format!("{at}: enum {e} is not a list"))?;
        if !options.iter().any(|o| same(o, v)) {
            return Err(format!("{at}: {v:.80} is none of {e}"));
        }
    }
    let is = |t: &Value| -> Result<bool, String> {
        Ok(match t.as_str().ok_or_else(|| format!("{at}: a type names {t}"))? {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "number" => v.is_number(),
            "boolean" => v.is_boolean(),
            "null" => v.is_null(),
            other => return Err(format!("{at}: the schema uses type {other}, which this check does not know")),
        })
    };
    match schema.get("type") {
        // One type: exactly that one (null is not a string, a number or an object).
        Some(t @ Value::String(_)) if !is(t)? => return Err(format!("{at}: expected {t}, found {v:.80}")),
        Some(Value::String(_)) => {}
        // A list (`["string", "null"]`): one of them, null only where listed.
        Some(Value::Array(ts)) => {
            let mut ok = false;
            for t in ts {
                ok |= is(t)?;
            }
            if !ok {
                return Err(format!("{at}: expected one of {ts:?}, found {v:.80}"));
            }
        }
        Some(other) => return Err(format!("{at}: type {other} is neither a name nor a list")),
        None => {}
    }
    // required, properties and additionalProperties hold objects only, items arrays only (a
    // null where `["object", "null"]` admits it has no keys to require).
    if let Some(obj) = v.as_object() {
        for key in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            let k = key.as_str().ok_or_else(|| format!("{at}: a required name is {key}"))?;
            if !obj.contains_key(k) {
                return Err(format!("{at}: required key {k} is missing"));
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, x) in obj {
            match (props.and_then(|p| p.get(k)), schema.get("additionalProperties")) {
                (Some(s), _) => check(s, x, &format!("{at}.{k}"))?,
                (None, Some(Value::Bool(false))) => return Err(format!("{at}: key {k} is not in the schema's properties")),
                (None, Some(extra)) => check(extra, x, &format!("{at}.{k}"))?,
                (None, None) => {}
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            check(items, x, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

/// JSON equality as JSON Schema has it: numbers by value (1 is 1.0), objects and arrays member
/// by member.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, x)| y.get(k).is_some_and(|y| same(x, y))),
        _ => a == b,
    }
}

/// Every keyword of `schema` and its subschemas is one `check` applies or an annotation: a
/// keyword it would skip (anyOf, pattern, minimum, ...) fails here instead of passing unchecked.
fn known_keywords(schema: &Value, at: &str) -> Result<(), String> {
    const APPLIED: [&str; 7] = ["type", "const", "enum", "properties", "required", "items", "additionalProperties"];
    const ANNOTATIONS: [&str; 4] = ["$schema", "$id", "title", "description"];
    let Some(obj) = schema.as_object() else {
        return match schema {
            Value::Bool(_) => Ok(()),
            other => Err(format!("{at}: a schema is {other:.80}")),
        };
    };
    for (k, sub) in obj {
        match k.as_str() {
            "properties" => {
                for (name, s) in sub.as_object().ok_or_else(|| format!("{at}: properties is not an object"))? {
                    known_keywords(s, &format!("{at}.{name}"))?;
                }
            }
            "items" => known_keywords(sub, &format!("{at}[]"))?,
            "additionalProperties" => known_keywords(sub, &format!("{at}.*"))?,
            k if APPLIED.contains(&k) || ANNOTATIONS.contains(&k) => {}
            other => return Err(format!("{at}: the schema uses keyword {other}, which this check does not know")),
        }
    }
    Ok(())
}

fn schema_file(kind: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas").join(format!("{kind}.schema.json"))
}

fn matches(kind: &str, output: &[u8]) {
    let v: Value = serde_json::from_slice(output).unwrap_or_else(|e| panic!("{kind}: not JSON ({e}): {}", String::from_utf8_lossy(output)));
    assert_eq!(v["schema"], format!("peerpath/{kind}/1"), "{kind}: the output names its schema first");
    let text = std::fs::read_to_string(schema_file(kind)).unwrap_or_else(|e| panic!("{kind}: {e}"));
    let schema: Value = serde_json::from_str(&text).expect("schema files are JSON");
    known_keywords(&schema, kind).unwrap_or_else(|e| panic!("{kind}: {e}"));
    check(&schema, &v, kind).unwrap_or_else(|e| panic!("{kind}: {e}"));
}

fn out(cmd: &mut Command) -> Vec<u8> {
    let o = run(cmd);
    assert!(o.code() == Some(0) || o.code() == Some(14), "{}", o.stderr);
    o.stdout
}

fn topo_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures").join(name).join("topology.toml")
}

#[test]
fn every_json_output_matches_its_documented_schema() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s.fa");
    std::fs::write(&src, sample()).unwrap();
    let gz = d.join("s.fa.gz");
    matches("job-report", &out(&mut pp(args!["compress", &src, "-o", &gz, "--json"])));
    matches("job-report", &out(&mut pp(args!["decompress", &gz, "-o", d.join("back"), "--json"])));
    matches("job-report", &out(&mut pp(args!["verify", &gz, "--json"])));
    // A name that is not UTF-8: its exact bytes beside its string.
    let odd = d.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"s\xff.fa.gz"));
    std::fs::copy(&gz, &odd).unwrap();
    let v = out(&mut pp(args!["decompress", &odd, "--json"]));
    assert!(serde_json::from_slice::<Value>(&v).unwrap()["files"][0]["target_bytes"].is_array());
    matches("job-report", &v);
    std::fs::write(d.join("cut.gz"), &std::fs::read(&gz).unwrap()[..100]).unwrap();
    let cut = run(&mut pp(args!["verify", &gz, d.join("cut.gz"), "--json"]));
    assert_eq!(cut.code(), Some(7), "{}", cut.stderr);
    matches("job-report", &cut.stdout);
    // A file failing part way: what it checked before (and how it was decoding) as documented.
    let mut bad = std::fs::read(&gz).unwrap();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x20;
    let failed = run_full(&mut pp(args!["verify", "-", "--json"]), Some(bad), DEADLINE);
    assert!(serde_json::from_slice::<Value>(&failed.stdout).unwrap()["failed"][0]["checked"]["members"].is_u64(), "{}", failed.stdout_str());
    matches("job-report", &failed.stdout);
    matches("job-report", &out(&mut pp(args!["compress", &src, "-o", d.join("e.gz"), "--engine", "emulated", "--device-memory", "64M", "--device-workers", "2", "--json"])));
    let g = run_full(&mut pp(["gzip", "--json"]), Some(sample().to_vec()), DEADLINE);
    assert_eq!(g.code(), Some(0), "{}", g.stderr);
    matches("job-report", g.stderr.as_bytes());
    let acs = topo_fixture("intel-switch-acs");
    matches("topology", &out(&mut pp(args!["topo", "--file", &acs, "--json"])));
    matches("p2p-verdict", &out(&mut pp(args!["topo", "--file", &acs, "--explain", "csp0", "ssd2", "--json"])));
    matches("plan", &out(&mut pp(args!["plan", "--file", &acs, "--source", "ssd0", "--target", "ssd1", "--json"])));
    matches("probe", &out(&mut pp(["probe", "--json"])));
    // An error before the probe is a probe document too: `error` said, no providers counted.
    let bad = run(&mut pp(args!["probe", "--sysfs", d.join("nonexist"), "--json"]));
    assert_eq!(bad.code(), Some(13), "{}", bad.stderr);
    matches("probe", &bad.stdout);
    let v = bad.json();
    assert!(v["error"].as_str().is_some_and(|e| e.contains("--sysfs")) && v["providers_found"].is_null(), "{v}");
    matches("bench-io", &out(&mut pp(args!["bench-io", "--file", d.join("bio"), "--size", "4M", "--sweep-bs", "1M", "--sweep-qd", "1", "--rw", "read", "--random", "skip", "--runtime-s", "1", "--json"])));
    let epyc = topo_fixture("epyc-case-study");
    matches("sim-report", &out(&mut pp(args!["sim", "--file", &epyc, "--json"])));
    matches("sim-sweep", &out(&mut pp(args!["sim", "--file", &epyc, "--vary", "csp=1..2", "--json"])));
    matches("sim-plan", &out(&mut pp(args!["sim", "plan", "--target", "5", "--file", &epyc, "--json"])));
    matches("sim-reproduce", &out(&mut pp(["sim", "reproduce", "--json"])));
    let small = d.join("small.fa");
    std::fs::write(&small, &sample()[..1 << 20]).unwrap();
    matches("bench-offload", &out(&mut pp(args!["bench-offload", &small, "--max-devices", "1", "--runs", "1", "--json"])));
    let key = d.join("key");
    assert_eq!(pp(args!["keygen", "-o", &key]).status().unwrap().code(), Some(0));
    matches("crypt-report", &out(&mut pp(args!["encrypt", &small, "--key-file", &key, "--json"])));
    matches("crypt-report", &out(&mut pp(args!["decrypt", d.join("small.fa.ppenc"), "-o", d.join("small.back"), "--key-file", &key, "--json"])));
    let set = d.join("set");
    matches("ec-report", &out(&mut pp(args!["ec", "encode", &small, "-k", "3", "-m", "2", "--unit", "64K", "-o", &set, "--json"])));
    std::fs::remove_file(set.join("shard-001")).unwrap();
    let damaged = pp(args!["ec", "verify", &set, "--json"]).output().unwrap();
    assert_eq!(damaged.status.code(), Some(6), "a damaged set: exit 6, with its verdict as JSON");
    let verdict: Value = serde_json::from_slice(&damaged.stdout).unwrap();
    assert_eq!(verdict["damaged_shards"][0]["shard"], "shard-001", "{verdict}");
    matches("ec-verify", &damaged.stdout);
    matches("ec-report", &out(&mut pp(args!["ec", "repair", &set, "--json"])));
    matches("ec-verify", &out(&mut pp(args!["ec", "verify", &set, "--json"])));
    // serve: one request, then its report.
    use std::io::{BufRead, Read, Write};
    let mut child = pp(args!["serve", d, "--listen", "127.0.0.1:0", "--max-requests", "1", "--json"]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.split("http://").nth(1).unwrap().split('/').next().unwrap().to_string();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /s.fa HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let _ = s.read_to_end(&mut Vec::new());
    matches("serve-report", &child.wait_with_output().unwrap().stdout);
}

/// `scan`, `dedup store|restore|stats|list|remove|gc` and the chain both ways, on the host CPU and an emulated CSP.
#[test]
fn scan_dedup_and_chain_outputs_match_their_schemas() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s.fa");
    std::fs::write(&src, sample()).unwrap();
    let gz = d.join("s.fa.gz");
    run(&mut pp(args!["compress", &src, "-o", &gz, "-q"])).ok();
    matches("scan-report", &out(&mut pp(args!["scan", &src, "--motif", "KL[VI]", "-c", "--json"])));
    matches("scan-report", &out(&mut pp(args!["scan", &src, "--motif", "kl", "-i", "--id-prefix", "B", "-o", d.join("recs"), "--json"])));
    // A file on the device and one (gzip) handed to the CPU, said in the fallbacks.
    matches("scan-report", &out(&mut pp(args!["scan", &src, &gz, "--min-length", "300", "--histogram", "--engine", "emulated", "--json"])));
    let store = d.join("store");
    matches("dedup-store", &out(&mut pp(args!["dedup", "store", &src, "-s", &store, "--json"])));
    let edited = d.join("t.fa");
    std::fs::write(&edited, [&sample()[..1 << 20], b"edited", &sample()[1 << 20..]].concat()).unwrap();
    matches("dedup-store", &out(&mut pp(args!["dedup", "store", &edited, "-s", &store, "--engine", "emulated", "--compress", "1", "--json"])));
    matches("dedup-restore", &out(&mut pp(args!["dedup", "restore", &edited, "-s", &store, "-o", d.join("t.back"), "--json"])));
    matches("dedup-stats", &out(&mut pp(args!["dedup", "stats", "-s", &store, "--json"])));
    let listed = out(&mut pp(args!["dedup", "list", "-s", &store, "--json"]));
    matches("dedup-list", &listed);
    let v: Value = serde_json::from_slice(&listed).unwrap();
    assert!(v["files"].as_array().is_some_and(|f| f.len() >= 2 && f.iter().all(|f| f["bytes"].as_u64() > Some(0) && f["chunks"].as_u64() > Some(0))), "{v}");
    matches("dedup-remove", &out(&mut pp(args!["dedup", "remove", &src, "-s", &store, "--json"])));
    matches("dedup-gc", &out(&mut pp(args!["dedup", "gc", "-s", &store, "-n", "--min-unused", "0", "--json"])));
    matches("dedup-gc", &out(&mut pp(args!["dedup", "gc", "-s", &store, "--min-unused", "0", "--json"])));
    let key = d.join("key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    let (cpu, emu) = (d.join("cpu"), d.join("emu"));
    matches("chain-report", &out(&mut pp(args!["compress", &src, "--ec", "3+2", "--ec-unit", "64K", "--encrypt", "--key-file", &key, "-o", &cpu, "--json"])));
    matches("chain-report", &out(&mut pp(args!["compress", &src, "--ec", "3+2", "--ec-unit", "64K", "--block-size", "64K", "--engine", "emulated", "-o", &emu, "--json"])));
    matches("reverse-chain-report", &out(&mut pp(args!["decompress", "--ec", &cpu, "--key-file", &key, "-o", d.join("back1"), "--json"])));
    matches("reverse-chain-report", &out(&mut pp(args!["decompress", "--ec", &emu, "--engine", "emulated", "-o", d.join("back2"), "--json"])));
}

#[test]
fn csp_outputs_match_their_schemas() {
    let name = format!("js{}", std::process::id());
    let mut serve = Command::new(bin());
    serve.args(["csp", "serve", "--name", &name, "--memory", "16M"]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
    let mut child = serve.spawn().expect("csp serve starts");
    // It says it is ready on its standard output before it serves.
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    let id = out(&mut pp(["csp", "identify", "--name", &name, "--json"]));
    let stats = out(&mut pp(["csp", "stats", "--name", &name, "--json"]));
    // Its files (in /dev/shm, else the temporary directory) are gone once SIGTERM stops it.
    let shm = Path::new("/dev/shm");
    let files = ["mem", "queues", "sock"].map(|ext| if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() }.join(format!("peerpath-csp-{name}.{ext}")));
    assert!(files.iter().all(|f| f.exists()), "the device's files are where this test looks: {files:?}");
    // SAFETY: kill(2) with our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success(), "csp serve stops cleanly on SIGTERM");
    for f in &files {
        assert!(!f.exists(), "{} is left behind", f.display());
    }
    matches("csp-identify", &id);
    matches("csp-stats", &stats);
}

/// The GPU probe's schema against the output measured on the lent H200 (with its schema key),
/// and against a live one where a GPU is present here.
#[test]
fn the_gpu_probe_matches_its_schema() {
    let measured = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/results/2026-11-26-gpu-probe-h200/generated256m.json");
    let mut v: serde_json::Map<String, Value> = serde_json::from_slice(&std::fs::read(measured).unwrap()).unwrap();
    v.insert("schema".into(), "peerpath/gpu-probe/1".into());
    matches("gpu-probe", &serde_json::to_vec(&v).unwrap());
    let o = run(&mut pp(["gpu", "probe", "--bytes", "4M", "--repeat", "1", "--json"]));
    match o.code() {
        Some(0) => matches("gpu-probe", &o.stdout),
        code => {
            // No GPU (or no nvCOMP): exit 15, and the JSON still says why.
            assert_eq!(code, Some(15), "{}", o.stderr);
            matches("gpu-unavailable", &o.stdout);
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert!(o.stderr.contains(v["reason"].as_str().unwrap()), "{}", o.stderr);
            eprintln!("SKIPPED (live part): no GPU here: {}", o.stderr.trim());
        }
    }
}

#[test]
fn every_schema_file_is_a_known_kind_and_checks_something() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if !p.to_string_lossy().ends_with(".schema.json") {
            continue;
        }
        let s: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let kind = p.file_name().unwrap().to_str().unwrap().trim_end_matches(".schema.json").to_string();
        assert_eq!(s["$id"], format!("peerpath/{kind}/1"), "{}", p.display());
        assert_eq!(s["properties"]["schema"]["const"], format!("peerpath/{kind}/1"));
        assert!(s["required"].as_array().is_some_and(|r| r.len() > 1), "{kind}: requires its keys");
        known_keywords(&s, &kind).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        // The check refuses what it should.
        assert!(check(&s, &serde_json::json!({ "schema": "peerpath/other/1" }), &kind).is_err());
        n += 1;
    }
    assert_eq!(n, 28, "one schema file per kind of JSON output (src/jsonout.rs KINDS)");
}

/// The checker itself, as a standard validator reads the same schemas: a type admits exactly
/// its types (null only where listed), `required` holds objects only, unknown keywords are
/// refused.
#[test]
fn the_checker_holds_type_lists_to_their_types() {
    let nullable = serde_json::json!({"type": ["number", "null"]});
    assert!(check(&nullable, &serde_json::json!(1.5), "x").is_ok());
    assert!(check(&nullable, &Value::Null, "x").is_ok());
    assert!(check(&nullable, &serde_json::json!("1.5"), "x").unwrap_err().contains("expected one of"));
    let strict = serde_json::json!({"type": ["string"]});
    assert!(check(&strict, &Value::Null, "x").is_err());
    let single = serde_json::json!({"type": "string"});
    assert!(check(&single, &Value::Null, "x").unwrap_err().contains("expected \"string\""), "null is not a string");
    assert!(check(&single, &serde_json::json!(3), "x").is_err());
    assert!(check(&serde_json::json!({"type": "object"}), &Value::Null, "x").is_err());
    assert!(check(&serde_json::json!({"type": "integer"}), &serde_json::json!(3), "x").unwrap_err().contains("does not know"));
    // A key an object requires must be there, null or not; a null object requires nothing.
    let obj = serde_json::json!({"type": ["object", "null"], "required": ["a"], "properties": {"a": {"type": ["number", "null"]}, "b": {"type": "string"}}});
    assert!(check(&obj, &serde_json::json!({"a": null}), "x").is_ok());
    assert!(check(&obj, &Value::Null, "x").is_ok());
    assert!(check(&obj, &serde_json::json!({"b": "s"}), "x").unwrap_err().contains("required key a"));
    assert!(check(&obj, &serde_json::json!({"a": 1, "b": null}), "x").unwrap_err().contains("x.b"));
    let items = serde_json::json!({"type": "array", "items": {"type": "object", "properties": {"d": {"type": "string"}}}});
    assert!(check(&items, &serde_json::json!([{"d": "0"}, {"d": null}]), "x").unwrap_err().contains("x[1].d"));
    assert!(check(&serde_json::json!({"enum": ["a", 1]}), &serde_json::json!(1.0), "x").is_ok());
    assert!(check(&serde_json::json!({"enum": ["a", 1]}), &serde_json::json!("b"), "x").is_err());
    let closed = serde_json::json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false});
    assert!(check(&closed, &serde_json::json!({"a": 1}), "x").is_ok());
    assert!(check(&closed, &serde_json::json!({"a": 1, "z": 2}), "x").is_err());
    assert!(known_keywords(&serde_json::json!({"properties": {"a": {"anyOf": []}}}), "x").unwrap_err().contains("keyword anyOf"));
    assert!(known_keywords(&obj, "x").is_ok());
}
