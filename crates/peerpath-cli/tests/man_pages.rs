//! What a distribution packager checks of `peerpath man`, `peerpath completions` and `--help`:
//! every page renders without groff warnings and with option names whole, every command has a
//! page, the completion scripts complete commands, options and paths, and every long option of
//! every command's `--help` is in docs/usage.md. The checks that need groff, bash, zsh or fish
//! skip, saying so, where it is not installed.

mod common;

use common::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every command's path below peerpath (`[]`, `["compress"]`, `["ec", "encode"]`, ...), read from
/// the `Commands:` lists of the commands' own `--help` (so hidden commands are left out, as the
/// man pages leave them out).
fn command_paths() -> Vec<Vec<String>> {
    fn walk(path: Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut args = path.clone();
        args.push("--help".into());
        let help = run(&mut pp(&args)).ok().stdout_str();
        let subs: Vec<String> = help
            .lines()
            .skip_while(|l| *l != "Commands:")
            .skip(1)
            .take_while(|l| !l.is_empty())
            .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|name| *name != "help")
            .map(String::from)
            .collect();
        out.push(path.clone());
        for s in subs {
            let mut p = path.clone();
            p.push(s);
            walk(p, out);
        }
    }
    let mut out = Vec::new();
    walk(Vec::new(), &mut out);
    out
}

fn page_name(path: &[String]) -> String {
    std::iter::once("peerpath").chain(path.iter().map(String::as_str)).collect::<Vec<_>>().join("-") + ".1"
}

/// Every page, as `peerpath man --dir` writes them into `dir`.
fn write_pages(dir: &Path) -> Vec<PathBuf> {
    run(pp(["man", "--dir"]).arg(dir)).ok();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(dir).expect("read the man directory").map(|e| e.expect("a directory entry").path()).collect();
    pages.sort();
    pages
}

/// A page rendered as `man -Tutf8` would show it, 80 columns wide: (text, groff's warnings).
fn render(groff: &Path, page: &Path) -> (String, String) {
    let mut c = std::process::Command::new(groff);
    c.args(["-ww", "-man", "-Tutf8", "-rLL=80n", "-P-cbou"]).arg(page).env("LC_ALL", "C.UTF-8");
    let out = run(&mut c).ok();
    (out.stdout_str(), out.stderr)
}

/// Every visible command has its page, `peerpath man PATH...` prints that page byte for byte, and
/// every page a page refers to (`peerpath-ec-encode(1)`) is one of them.
#[test]
fn every_command_has_a_page_and_man_prints_it_alike() {
    let tmp = scratch();
    let pages = write_pages(tmp.path());
    let names: BTreeSet<String> = pages.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    let paths = command_paths();
    let want: BTreeSet<String> = paths.iter().map(|p| page_name(p)).collect();
    assert_eq!(names, want, "`man --dir` writes a page for each command `--help` lists, and no other");
    for path in &paths {
        let printed = run(&mut pp(std::iter::once("man".to_string()).chain(path.iter().cloned()))).ok().stdout;
        let file = std::fs::read(tmp.path().join(page_name(path))).unwrap();
        assert!(printed == file, "`peerpath man {}` differs from {}", path.join(" "), page_name(path));
    }
    for page in &pages {
        let roff = std::fs::read_to_string(page).unwrap();
        for line in roff.lines() {
            if let Some(name) = line.strip_suffix("(1)").filter(|n| n.starts_with("peerpath")) {
                let file = format!("{}.1", name.replace("\\-", "-"));
                assert!(names.contains(&file), "{} refers to {name}(1), which is not a page", page.display());
            }
        }
    }
}

/// groff (`-ww`, as lintian and `man --warnings` run it) has nothing to say of any page.
#[test]
fn every_page_renders_without_groff_warnings() {
    let Some(tools) = tools_or_skip("every_page_renders_without_groff_warnings", &["groff"]) else { return };
    let tmp = scratch();
    let warned: Vec<String> = write_pages(tmp.path()).iter().map(|p| render(&tools[0], p).1).filter(|w| !w.is_empty()).collect();
    assert!(warned.is_empty(), "groff warns:\n{}", warned.join(""));
}

/// No option name is split across lines with a hyphenation hyphen (U+2010): `--de‐` / `vice-memory`
/// cannot be searched for or pasted.
#[test]
fn option_names_are_not_hyphenated() {
    let Some(tools) = tools_or_skip("option_names_are_not_hyphenated", &["groff"]) else { return };
    let tmp = scratch();
    let mut split = Vec::new();
    for page in write_pages(tmp.path()) {
        for line in render(&tools[0], &page).0.lines() {
            let last = line.split_whitespace().last().unwrap_or("");
            if last.ends_with('\u{2010}') && last.trim_start_matches(['[', '(', '`', '"', '\'']).starts_with('-') {
                split.push(format!("{}: {line}", page.file_name().unwrap().to_string_lossy()));
            }
        }
    }
    assert!(split.is_empty(), "option names hyphenated at a line's end:\n{}", split.join("\n"));
}

/// `peerpath gzip`'s options are a table of its own (gzip's grammar, not clap's): its page shows
/// each line of it as a line, not filled into a paragraph.
#[test]
fn gzip_page_keeps_its_option_table() {
    let Some(tools) = tools_or_skip("gzip_page_keeps_its_option_table", &["groff"]) else { return };
    let tmp = scratch();
    write_pages(tmp.path());
    let words = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    let page: BTreeSet<String> = render(&tools[0], &tmp.path().join("peerpath-gzip.1")).0.lines().map(words).collect();
    let help = run(&mut pp(["gzip", "--help"])).ok().stdout_str();
    let lost: Vec<&str> = help.lines().filter(|l| !l.trim().is_empty() && !page.contains(&words(l))).collect();
    assert!(lost.is_empty(), "lines of `peerpath gzip --help` its man page does not show as lines:\n{}", lost.join("\n"));
}

/// Runs bash's completion function for each command line (its last word the one completed) in a
/// directory holding `a-file.gz` and `a-dir/`: per line, the candidates and the `compopt`
/// options asked for, sorted.
fn bash_complete(bash: &Path, lines: &[&[&str]]) -> Vec<(Vec<String>, Vec<String>)> {
    let tmp = scratch();
    let script = tmp.path().join("peerpath.bash");
    std::fs::write(&script, run(&mut pp(["completions", "bash"])).ok().stdout).unwrap();
    let cwd = tmp.path().join("cwd");
    std::fs::create_dir_all(cwd.join("a-dir")).unwrap();
    std::fs::write(cwd.join("a-file.gz"), b"").unwrap();
    // compopt works only while readline completes; here it records what it was asked.
    let mut sh = String::from("source \"$1\"; compopt() { echo \"@compopt $*\"; }\nfn=$(complete -p peerpath | sed 's/.*-F \\([^ ]*\\).*/\\1/')\n");
    for words in lines {
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        sh.push_str(&format!(
            "COMP_WORDS=({w}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; COMPREPLY=()\n\
             $fn peerpath \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"; echo @end\n",
            w = quoted.join(" ")
        ));
    }
    let mut c = std::process::Command::new(bash);
    c.args(["--norc", "--noprofile", "-c", &sh, "bash"]).arg(&script).current_dir(&cwd);
    let out = run(&mut c).ok().stdout_str();
    let mut results = Vec::new();
    let (mut words, mut opts) = (Vec::new(), Vec::new());
    for line in out.lines() {
        if line == "@end" {
            words.sort();
            opts.sort();
            results.push((std::mem::take(&mut words), std::mem::take(&mut opts)));
        } else if let Some(o) = line.strip_prefix("@compopt ") {
            opts.push(o.to_string());
        } else if !line.is_empty() {
            words.push(line.to_string());
        }
    }
    assert_eq!(results.len(), lines.len(), "bash completed every line:\n{out}");
    results
}

/// `peerpath <TAB>` offers the commands, `peerpath ec <TAB>` ec's, `--eng<TAB>` the option,
/// `-o <TAB>` files and directories.
#[test]
fn bash_completes_commands_options_and_paths() {
    let Some(tools) = tools_or_skip("bash_completes_commands_options_and_paths", &["bash"]) else { return };
    let got = bash_complete(&tools[0], &[&["peerpath", ""], &["peerpath", "ec", ""], &["peerpath", "compress", "--eng"], &["peerpath", "compress", "-o", ""], &["peerpath", "compress", "--engine", ""]]);
    let top: BTreeSet<String> = command_paths().into_iter().filter(|p| p.len() == 1).map(|p| p[0].clone()).collect();
    let offered: BTreeSet<String> = got[0].0.iter().cloned().collect();
    assert!(offered.is_superset(&top), "`peerpath <TAB>` lacks {:?}", top.difference(&offered).collect::<Vec<_>>());
    for sub in ["encode", "verify", "repair", "decode"] {
        assert!(got[1].0.iter().any(|w| w == sub), "`peerpath ec <TAB>` lacks {sub}: {:?}", got[1].0);
    }
    assert_eq!(got[2].0, ["--engine"], "`peerpath compress --eng<TAB>`");
    assert_eq!(got[3].0, ["a-dir", "a-file.gz"], "`peerpath compress -o <TAB>` offers files and directories");
    assert_eq!(got[4].0, ["auto", "cpu", "emulated", "gpu"], "`peerpath compress --engine <TAB>`");
}

/// A hidden command (`nic-serve`, started by `serve --mode devmem`) is not offered, as `--help`
/// and the man pages leave it out; a directory option (`man --dir`) offers directories only.
#[test]
fn bash_offers_no_hidden_command_and_only_directories_for_a_directory() {
    let Some(tools) = tools_or_skip("bash_offers_no_hidden_command_and_only_directories_for_a_directory", &["bash"]) else { return };
    let got = bash_complete(&tools[0], &[&["peerpath", ""], &["peerpath", "man", "--dir", ""]]);
    assert!(!got[0].0.iter().any(|w| w == "nic-serve"), "`peerpath <TAB>` offers the hidden nic-serve: {:?}", got[0].0);
    assert!(got[1].0.is_empty() && got[1].1.iter().any(|o| o == "-o plusdirs"), "`peerpath man --dir <TAB>` should offer directories only: {:?}", got[1]);
}

/// The zsh and fish scripts load without errors and complete `peerpath ec`'s commands.
#[test]
fn zsh_and_fish_scripts_load() {
    let tmp = scratch();
    if let Some(tools) = tools_or_skip("zsh_and_fish_scripts_load (zsh)", &["zsh"]) {
        let script = tmp.path().join("_peerpath");
        std::fs::write(&script, run(&mut pp(["completions", "zsh"])).ok().stdout).unwrap();
        let mut c = std::process::Command::new(&tools[0]);
        // Its home the scratch directory: the shells make files there (fish's ~/.config/fish).
        c.env("HOME", tmp.path()).env("XDG_CONFIG_HOME", tmp.path()).env("XDG_DATA_HOME", tmp.path());
        c.args(["-f", "-c", "autoload -Uz compinit && compinit -u -D && source \"$1\" && print -r -- $_comps[peerpath]", "zsh"]).arg(&script);
        let out = run(&mut c).ok();
        assert_eq!(out.stdout_str().trim(), "_peerpath", "zsh registers the completion:\n{}", out.describe());
        assert!(out.stderr.is_empty(), "zsh says:\n{}", out.describe());
    }
    if let Some(tools) = tools_or_skip("zsh_and_fish_scripts_load (fish)", &["fish"]) {
        let script = tmp.path().join("peerpath.fish");
        std::fs::write(&script, run(&mut pp(["completions", "fish"])).ok().stdout).unwrap();
        let mut c = std::process::Command::new(&tools[0]);
        c.env("HOME", tmp.path()).env("XDG_CONFIG_HOME", tmp.path()).env("XDG_DATA_HOME", tmp.path());
        c.args(["--no-config", "-c", "source $argv[1]; and complete -C 'peerpath ec '"]).arg(&script);
        let out = run(&mut c).ok();
        assert!(out.stderr.is_empty(), "fish says:\n{}", out.describe());
        let listed = out.stdout_str();
        let subs: BTreeSet<&str> = listed.lines().filter_map(|l| l.split('\t').next()).collect();
        assert!(["encode", "verify", "repair", "decode"].iter().all(|s| subs.contains(s)), "fish completes `peerpath ec `:\n{}", out.describe());
    }
}

/// Each command's long options, as its `--help` lists them (`  -o, --output <OUTPUT>`,
/// `      --json`; gzip's own table alike).
fn long_options(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = if l.len() > 4 && l.starts_with('-') && !l.starts_with("--") && l[2..].starts_with(", ") { &l[4..] } else { l };
            let name: String = l.strip_prefix("--")?.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            (!name.is_empty() && name != "help" && name != "version").then(|| format!("--{name}"))
        })
        .collect()
}

/// docs/usage.md names every long option of every command's `--help`.
#[test]
fn every_long_option_in_help_is_in_usage_md() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/usage.md")).expect("docs/usage.md is readable");
    let named = |opt: &str| doc.match_indices(opt).any(|(i, _)| !doc[i + opt.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-'));
    let mut missing = Vec::new();
    for path in command_paths() {
        let help = run(&mut pp(path.iter().map(String::as_str).chain(["--help"]))).ok().stdout_str();
        for opt in long_options(&help) {
            if !named(&opt) {
                missing.push(format!("peerpath {} {opt}", path.join(" ")));
            }
        }
    }
    assert!(missing.is_empty(), "options docs/usage.md does not name:\n{}", missing.join("\n"));
}

/// No line of any `--help` is wider than clap wraps them (100 columns): a long unbroken example
/// runs off a terminal.
#[test]
fn help_lines_fit_100_columns() {
    let mut wide = Vec::new();
    for path in command_paths() {
        let help = run(&mut pp(path.iter().map(String::as_str).chain(["--help"]))).ok().stdout_str();
        wide.extend(help.lines().filter(|l| l.chars().count() > 100).map(|l| format!("peerpath {} --help: {l}", path.join(" "))));
    }
    assert!(wide.is_empty(), "lines over 100 columns:\n{}", wide.join("\n"));
}
