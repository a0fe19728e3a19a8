//! The crate docs' "Enums that may grow" held to the code: every public enum is either
//! `#[non_exhaustive]` or named in that list, and nothing the list names may grow. A new enum
//! left undecided fails here rather than in an embedder's `match` a release later.

use std::collections::BTreeSet;
use std::path::Path;

/// The enums the crate docs list as exhaustive on purpose (the last segment of each link).
fn listed() -> BTreeSet<String> {
    let lib = include_str!("lib.rs");
    let start = lib.find("//! # Enums that may grow").expect("the section");
    let section: String = lib[start..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("//!") && !l.starts_with("//! #"))
        .collect();
    section
        .split("[`")
        .skip(1)
        .filter_map(|s| s.split_once("`]").map(|(path, _)| path))
        .map(|path| path.rsplit("::").next().unwrap_or(path).to_string())
        .collect()
}

/// Every `pub enum` under `dir` that is not `#[non_exhaustive]`, by name, but for those in
/// `skip`.
fn undecided(dir: &Path, skip: &[std::path::PathBuf], out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if skip.contains(&path) {
            continue;
        }
        if path.is_dir() {
            undecided(&path, skip, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line.trim_start().strip_prefix("pub enum ") else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // Its doc comment and attributes: the lines above, up to the item before.
            let mut attrs = lines[..i].iter().rev().take_while(|l| !ends_an_item(l));
            if !attrs.any(|l| l.trim() == "#[non_exhaustive]") {
                out.insert(name);
            }
        }
    }
}

/// A blank line, or the last line of an item (not of a comment): what ends the lines above an
/// enum that are its own.
fn ends_an_item(line: &str) -> bool {
    let l = line.trim();
    l.is_empty() || (!l.starts_with("//") && (l.ends_with(';') || l.ends_with('}')))
}

#[test]
fn exhaustive_enums_are_the_listed_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // The command line is the binary's, and the executor is internal (lib.rs's `internal!`):
    // neither is public API. (The pipeline is internal too, but its `Stream` is re-exported.)
    let skip = ["cli", "main.rs", "executor"].map(|n| src.join(n));
    let mut found = BTreeSet::new();
    undecided(&src, &skip, &mut found);
    let listed = listed();
    let unlisted: Vec<_> = found.difference(&listed).collect();
    assert!(
        unlisted.is_empty(),
        "public enums neither #[non_exhaustive] nor listed in lib.rs's \"Enums that may grow\": \
         {unlisted:?}"
    );
    let stale: Vec<_> = listed.difference(&found).collect();
    assert!(
        stale.is_empty(),
        "listed as exhaustive in lib.rs but #[non_exhaustive] or gone: {stale:?}"
    );
}
