//! Reading an agent's own transcript after its run stopped badly (killed for silence, crashed,
//! interrupted): the transcript is the agent's record of what it really did, which oneshot's
//! output tail may have cut short. Claude Code keeps one per session at
//! `$CLAUDE_CONFIG_DIR/projects/<cwd with / and . as ->/<session id>.jsonl`
//! (`~/.claude` without the variable); Codex names its rollout file when the thread starts
//! (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<thread id>.jsonl`); Gemini CLI files it under
//! its project's name (`~/.gemini/tmp/<project>/chats/session-<time>-<first 8 of the id>.jsonl`).
//! The paths are journaled in the state file as soon as they are known.

use crate::process::TranscriptFacts;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Tools whose `file_path` input names a file they wrote.
const WRITING_TOOLS: [&str; 4] = ["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// Where Claude Code keeps the transcript of session `session` run in `cwd`, with `env`
/// giving the environment (`CLAUDE_CONFIG_DIR`, `HOME`).
pub(crate) fn claude_transcript(
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
pub(crate) fn read_claude(path: &Path) -> Option<TranscriptFacts> {
    let (text, mut facts) = opened(path)?;
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

/// One assistant message of a transcript: its id and its text blocks, joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptMessage {
    /// The message id (`msg_…`), the one its stream lines carry.
    pub id: String,
    /// Its text.
    pub text: String,
}

/// The assistant messages of a Claude transcript, in order, one per message id (Claude writes
/// a line per content block). Subagents' lines (`isSidechain`) are not the session's own.
pub(crate) fn claude_messages(path: &Path) -> Vec<TranscriptMessage> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let mut out: Vec<TranscriptMessage> = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["type"] != "assistant" || v["isSidechain"] == true {
            continue;
        }
        let Some(id) = v["message"]["id"].as_str() else {
            continue;
        };
        let texts = v["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str());
        let at = match out.iter().position(|m| m.id == id) {
            Some(at) => at,
            None => {
                out.push(TranscriptMessage {
                    id: id.to_string(),
                    text: String::new(),
                });
                out.len() - 1
            }
        };
        for t in texts {
            out[at].text.push_str(t);
        }
    }
    out
}

/// A transcript's text, and its facts with nothing read yet.
fn opened(path: &Path) -> Option<(String, TranscriptFacts)> {
    let text = std::fs::read_to_string(path).ok()?;
    let facts = TranscriptFacts {
        path: path.display().to_string(),
        ..TranscriptFacts::default()
    };
    Some((text, facts))
}

/// Where Gemini CLI keeps the transcript of session `session`, with `env` giving `HOME`:
/// the one chat file, in any project, whose name ends with the id's first 8 characters and
/// whose first line names the whole id. `None` until Gemini has written it.
pub(crate) fn gemini_transcript(
    session: &str,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let short = session.get(..8)?;
    let tmp = PathBuf::from(env("HOME")?).join(".gemini").join("tmp");
    let suffix = format!("-{short}.jsonl");
    std::fs::read_dir(tmp)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|project| std::fs::read_dir(project.path().join("chats")).ok())
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("session-") && n.ends_with(&suffix))
                && first_line_names(p, session)
        })
}

/// Whether the first line of `path` is a header naming `session`.
fn first_line_names(path: &Path, session: &str) -> bool {
    use std::io::{BufRead, Read};
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut line = String::new();
    let _ = std::io::BufReader::new(f.take(64 * 1024)).read_line(&mut line);
    serde_json::from_str::<Value>(&line).is_ok_and(|v| v["sessionId"] == session)
}

/// The facts in a Gemini CLI chat file; `None` when it cannot be read. Its `gemini` lines are
/// the model's answers, with their tool calls and results; `$set` lines update its header.
pub(crate) fn read_gemini(path: &Path) -> Option<TranscriptFacts> {
    let (text, mut facts) = opened(path)?;
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["type"] != "gemini" {
            continue;
        }
        if let Some(t) = v["content"].as_str().filter(|t| !t.trim().is_empty()) {
            facts.last_message = Some(t.to_string());
        }
        for call in v["toolCalls"].as_array().into_iter().flatten() {
            if call["result"].is_array() {
                facts.tool_results += 1;
            }
            let writes = matches!(call["name"].as_str(), Some("write_file" | "replace"));
            if writes
                && let Some(f) = call["args"]["file_path"].as_str()
                && !facts.files.iter().any(|x| x == f)
            {
                facts.files.push(f.to_string());
            }
        }
    }
    Some(facts)
}

/// The facts in a Codex rollout file; `None` when it cannot be read. The assistant's messages
/// and tool outputs are its `response_item`s; the files it changed, its `FileChange` items and
/// `apply_patch` calls (a shell command's writes cannot be told from its text).
pub(crate) fn read_codex(path: &Path) -> Option<TranscriptFacts> {
    let (text, mut facts) = opened(path)?;
    let add = |facts: &mut TranscriptFacts, f: &str| {
        if !f.is_empty() && !facts.files.iter().any(|x| x == f) {
            facts.files.push(f.to_string());
        }
    };
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let p = &v["payload"];
        match (v["type"].as_str(), p["type"].as_str()) {
            (Some("response_item"), Some("message")) if p["role"] == "assistant" => {
                let said: String = p["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                if !said.trim().is_empty() {
                    facts.last_message = Some(said);
                }
            }
            (Some("response_item"), Some("function_call_output" | "custom_tool_call_output")) => {
                facts.tool_results += 1
            }
            (Some("response_item"), Some("function_call" | "custom_tool_call"))
                if p["name"] == "apply_patch" =>
            {
                let patch = p["input"]
                    .as_str()
                    .or(p["arguments"].as_str())
                    .unwrap_or("");
                for l in patch.lines() {
                    for head in ["*** Add File: ", "*** Update File: ", "*** Delete File: "] {
                        if let Some(f) = l.strip_prefix(head) {
                            add(&mut facts, f.trim());
                        }
                    }
                }
            }
            (Some("event_msg"), Some("item_completed")) if p["item"]["type"] == "FileChange" => {
                match &p["item"]["changes"] {
                    Value::Object(m) => m.keys().for_each(|f| add(&mut facts, f)),
                    Value::Array(a) => a
                        .iter()
                        .filter_map(|c| c["path"].as_str())
                        .for_each(|f| add(&mut facts, f)),
                    _ => {}
                }
            }
            _ => {}
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

    /// A chat file as Gemini CLI 0.61 writes it (trimmed), found by its session id.
    #[test]
    fn a_gemini_chat_is_found_and_read() {
        let home = tempfile::tempdir().unwrap();
        let chats = home.path().join(".gemini/tmp/work/chats");
        std::fs::create_dir_all(&chats).unwrap();
        let sid = "817112be-ae1e-45fa-a0f6-6a29d058d706";
        std::fs::write(
            chats.join("session-2026-11-23T20-58-ad792b34.jsonl"),
            r#"{"sessionId":"ad792b34-1644-4bbe-8455-a67d4dcb42db","kind":"main"}"#,
        )
        .unwrap();
        let p = chats.join("session-2026-11-23T20-58-817112be.jsonl");
        std::fs::write(
            &p,
            concat!(
                r#"{"sessionId":"817112be-ae1e-45fa-a0f6-6a29d058d706","kind":"main"}"#,
                "\n",
                r#"{"id":"u1","type":"user","content":[{"text":"hi"}]}"#,
                "\n",
                r#"{"id":"g1","type":"gemini","content":"","toolCalls":[{"id":"w1","name":"write_file","args":{"file_path":"/w/b.txt","content":"bee"},"result":[{"functionResponse":{}}],"status":"success"}]}"#,
                "\n",
                r#"{"$set":{"lastUpdated":"2026-11-23T20:58:24.736Z"}}"#,
                "\n",
                r#"{"id":"g2","type":"gemini","content":"done zz"}"#,
                "\n",
            ),
        )
        .unwrap();
        let env = |k: &str| (k == "HOME").then(|| home.path().as_os_str().to_owned());
        assert_eq!(gemini_transcript(sid, env).as_deref(), Some(p.as_path()));
        assert!(gemini_transcript("00000000-x", env).is_none());
        let f = read_gemini(&p).unwrap();
        assert_eq!(f.last_message.as_deref(), Some("done zz"));
        assert_eq!(f.tool_results, 1);
        assert_eq!(f.files, ["/w/b.txt"]);
    }

    /// Lines as Codex 0.169 writes them (trimmed), a torn last one included.
    #[test]
    fn a_codex_rollout_gives_its_last_message_tool_outputs_and_patched_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rollout.jsonl");
        std::fs::write(
            &p,
            concat!(
                r#"{"type":"session_meta","payload":{"id":"th-1","cwd":"/w"}}"#,
                "\n",
                r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}"#,
                "\n",
                r#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"echo hi > a.txt\"}","call_id":"c1"}}"#,
                "\n",
                r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Process exited with code 0"}}"#,
                "\n",
                r#"{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** Add File: b.txt\n+bee\n*** End Patch"}}"#,
                "\n",
                r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done zz"}]}}"#,
                "\n",
                r#"{"type":"response_item","payload":{"type":"mess"#,
            ),
        )
        .unwrap();
        let f = read_codex(&p).unwrap();
        assert_eq!(f.last_message.as_deref(), Some("done zz"));
        assert_eq!(f.tool_results, 1);
        assert_eq!(f.files, ["b.txt"]);
    }
}
