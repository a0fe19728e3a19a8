//! Reading an agent's own transcript after its run stopped badly (killed for silence, crashed,
//! interrupted): the transcript is the agent's record of what it really did, which oneshot's
//! output tail may have cut short. Claude Code keeps one per session at
//! `$CLAUDE_CONFIG_DIR/projects/<cwd with / and . as ->/<session id>.jsonl`
//! (`~/.claude` without the variable).

use crate::executor::TranscriptFacts;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Tools whose `file_path` input names a file they wrote.
const WRITING_TOOLS: [&str; 4] = ["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// Where Claude Code keeps the transcript of session `session` run in `cwd`, with `env`
/// giving the environment (`CLAUDE_CONFIG_DIR`, `HOME`).
pub fn claude_transcript(
    cwd: &Path,
    session: &str,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let config = match env("CLAUDE_CONFIG_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(env("HOME")?).join(".claude"),
    };
    let project: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| if c == '/' || c == '.' { '-' } else { c })
        .collect();
    Some(
        config
            .join("projects")
            .join(project)
            .join(format!("{session}.jsonl")),
    )
}

/// The facts in a Claude transcript; `None` when it cannot be read. Lines that do not parse
/// are skipped (a transcript cut by a crash ends mid-line).
pub fn read_claude(path: &Path) -> Option<TranscriptFacts> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut facts = TranscriptFacts {
        path: path.display().to_string(),
        ..TranscriptFacts::default()
    };
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(content) = v["message"]["content"].as_array() else {
            continue;
        };
        for block in content {
            match (v["type"].as_str(), block["type"].as_str()) {
                (Some("assistant"), Some("text")) => {
                    if let Some(t) = block["text"].as_str().filter(|t| !t.trim().is_empty()) {
                        facts.last_message = Some(t.to_string());
                    }
                }
                (Some("assistant"), Some("tool_use")) => {
                    let name = block["name"].as_str().unwrap_or_default();
                    if WRITING_TOOLS.contains(&name)
                        && let Some(f) = block["input"]["file_path"].as_str()
                        && !facts.files.iter().any(|x| x == f)
                    {
                        facts.files.push(f.to_string());
                    }
                }
                (Some("user"), Some("tool_result")) => facts.tool_results += 1,
                _ => {}
            }
        }
    }
    Some(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_follows_claudes_layout() {
        let env = |k: &str| match k {
            "HOME" => Some("/home/u".into()),
            _ => None,
        };
        let p = claude_transcript(Path::new("/w/my.app"), "s1", env).unwrap();
        assert_eq!(p, Path::new("/home/u/.claude/projects/-w-my-app/s1.jsonl"));
    }

    #[test]
    fn facts_are_read_and_a_torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        std::fs::write(
            &p,
            concat!(
                r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Write","input":{"file_path":"/w/a.txt"}}]}}"#,
                "\n",
                r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}}"#,
                "\n",
                r#"{"type":"assistant","message":{"content":[{"type":"text","text":"wrote a.txt"}]}}"#,
                "\n",
                r#"{"type":"assistant","message":{"content":[{"type":"te"#,
            ),
        )
        .unwrap();
        let f = read_claude(&p).unwrap();
        assert_eq!(f.files, ["/w/a.txt"]);
        assert_eq!(f.tool_results, 1);
        assert_eq!(f.last_message.as_deref(), Some("wrote a.txt"));
        assert!(read_claude(&dir.path().join("missing")).is_none());
    }
}
