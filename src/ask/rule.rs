//! The built-in permit rule of an ask with no policy: an auditor's is the session's built-in
//! rule ([`crate::policy::default_permit`]: it edits nothing); a worker's (a `job land`
//! resolver) lets it edit, but only files inside the directory it is asked in.

use crate::policy::{FILE_EDIT_TOOLS, PermitDecision, default_permit};
use crate::process::Role;
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// Answers a tool request of an ask's target in `dir` as `role`, when the ask has no policy:
/// the auditor may use every tool but the file-editing ones; the worker may use every tool
/// (reads go anywhere the sandbox lets them), and a file-editing one only when every file it
/// names lies inside `dir` (symbolic links followed). An edit that names no file is refused:
/// it cannot be shown to stay inside.
pub fn builtin_permit(role: Role, tool: &str, input: &Value, dir: &Path) -> PermitDecision {
    if role == Role::Auditor || !FILE_EDIT_TOOLS.contains(&tool) {
        return default_permit(role, tool);
    }
    let paths = named_paths(input);
    if paths.is_empty() {
        return PermitDecision::deny(format!(
            "{tool} names no file: only edits of files inside {} are allowed",
            dir.display()
        ));
    }
    match paths.iter().find(|p| !inside(Path::new(p), dir)) {
        Some(out) => PermitDecision::deny(format!(
            "{out} is outside {}: only files inside it may be edited",
            dir.display()
        )),
        None => PermitDecision::allow(),
    }
}

/// The files a tool's input names: Claude's and Gemini's `file_path` (`notebook_path`,
/// `absolute_path`, `path`), at the top or in an ACP request's `rawInput`, and the paths of an
/// ACP request's `locations` and diffs.
fn named_paths(input: &Value) -> Vec<String> {
    const KEYS: [&str; 4] = ["file_path", "notebook_path", "absolute_path", "path"];
    let mut paths = Vec::new();
    for v in [input, &input["rawInput"]] {
        paths.extend(KEYS.iter().filter_map(|k| v[*k].as_str().map(String::from)));
    }
    for list in ["locations", "content"] {
        if let Some(items) = input[list].as_array() {
            paths.extend(
                items
                    .iter()
                    .filter_map(|i| i["path"].as_str().map(String::from)),
            );
        }
    }
    paths
}

/// Whether `path` (relative to `dir` when relative) lies inside `dir`, `..` and symbolic links
/// of the part that exists resolved.
fn inside(path: &Path, dir: &Path) -> bool {
    let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut lexical = PathBuf::new();
    for c in dir.join(path).components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            c => lexical.push(c),
        }
    }
    // The longest part that exists, resolved; the rest (a file to be made) appended.
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    while existing.symlink_metadata().is_err() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
            break;
        };
        rest.push(name);
        existing = parent;
    }
    let Ok(mut real) = existing.canonicalize() else {
        return false;
    };
    real.extend(rest.iter().rev());
    real.starts_with(&root) && real != root
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_worker_edits_inside_the_directory_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("wt");
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/a.rs"), "").unwrap();
        std::os::unix::fs::symlink(tmp.path(), dir.join("out")).unwrap();
        let edit = |p: &str| json!({"file_path": p, "content": "x"});
        let allowed = |tool, input: Value| builtin_permit(Role::Worker, tool, &input, &dir).allow;
        assert!(allowed("Write", edit("src/a.rs")));
        assert!(allowed(
            "Edit",
            edit(&dir.join("src/new.rs").display().to_string())
        ));
        assert!(allowed(
            "write_file",
            json!({"rawInput": {"file_path": "b.txt"}})
        ));
        assert!(!allowed("Write", edit("../b.txt")));
        assert!(!allowed("Write", edit("/etc/passwd")));
        assert!(
            !allowed("Write", edit("out/b.txt")),
            "a link out is outside"
        );
        assert!(!allowed("Write", json!({"content": "x"})), "no file named");
        assert!(!allowed(
            "edit",
            json!({"locations": [{"path": dir.join("a").display().to_string()},
                                 {"path": "/tmp/elsewhere"}]})
        ));
        // Reads and other tools go through; the auditor edits nothing.
        assert!(allowed("Read", json!({"file_path": "/etc/hosts"})));
        assert!(allowed("Bash", json!({"command": "ls"})));
        assert!(!builtin_permit(Role::Auditor, "Write", &edit("src/a.rs"), &dir).allow);
    }
}
