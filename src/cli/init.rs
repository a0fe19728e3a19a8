//! `oneshot init`: a starter project — `oneshot.toml`, a policy `oneshot.lua` with its tests,
//! and the editor stubs — that passes `oneshot policy check` and `oneshot policy test` as
//! written, so a new user edits something that works.

use super::exit;
use anyhow::{Context, Result};
use std::path::Path;

/// The files `init` writes, and their content.
fn files() -> [(&'static str, &'static str); 5] {
    [
        (
            oneshot::config::PROJECT_FILE,
            include_str!("init/oneshot.toml"),
        ),
        ("oneshot.lua", include_str!("init/oneshot.lua")),
        ("oneshot_test.lua", include_str!("init/oneshot_test.lua")),
        // The same stubs `oneshot policy stubs` writes.
        ("oneshot.d.lua", oneshot::policy::stubs_luals()),
        ("oneshot.d.luau", oneshot::policy::stubs_luau()),
    ]
}

/// Writes the starter files into `dir`; refuses (exit 2) when any exists, unless `force`.
pub fn run(dir: &Path, force: bool) -> Result<i32> {
    let files = files();
    if !force {
        let existing: Vec<String> = files
            .iter()
            .map(|(name, _)| dir.join(name))
            .filter(|p| p.exists())
            .map(|p| p.display().to_string())
            .collect();
        if !existing.is_empty() {
            return Err(exit::usage(format!(
                "initialize {}: {} already exist{}; nothing was written (pass --force to \
                 overwrite)",
                dir.display(),
                existing.join(", "),
                if existing.len() == 1 { "s" } else { "" }
            )));
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
        outln!("wrote {}", path.display());
    }
    outln!(
        "next: set worker-cmd and auditor-cmd in {}, then `oneshot \"the task\"`",
        dir.join(oneshot::config::PROJECT_FILE).display()
    );
    Ok(exit::OK)
}
