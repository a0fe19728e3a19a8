//! A job's branch name, chosen once at `create` and kept in its spec: `oneshot/<slug>-<short
//! id>`, the slug made from the task's first line without a model call; or, when a namer is
//! asked ([`suggest`]), the branch it suggests (checked with `git check-ref-format --branch`,
//! kept under `oneshot/`, the short id appended so that two jobs never share one) and a
//! nickname for `job list`.
//!
//! ```
//! use oneshot::job::naming::{branch_from_task, slug};
//! assert_eq!(slug("Add a --json flag to `list`\nmore words"), "add-a-json-flag-to-list");
//! assert_eq!(
//!     branch_from_task("Fix the parser", "job-1a2b3c4d"),
//!     "oneshot/fix-the-parser-1a2b3c4d"
//! );
//! // Nothing to make a slug of: the job id alone.
//! assert_eq!(branch_from_task("修正する", "job-1a2b3c4d"), "oneshot/job-1a2b3c4d");
//! ```

use crate::ask::{Ask, AskError, Target};
use crate::schema::Registry;
use std::path::Path;
use std::time::Duration;

pub use crate::job::record::PREFIX;

/// The longest slug [`slug`] makes, in characters.
pub const SLUG_CHARS: usize = 40;

/// The task's first line as lowercase ASCII words joined by `-`, cut at a word boundary to at
/// most [`SLUG_CHARS`] characters (a single longer word is cut inside). Empty when the line has
/// no ASCII letter or digit.
pub fn slug(task: &str) -> String {
    let line = task.trim().lines().next().unwrap_or("");
    let mut out = String::new();
    for word in line
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_ascii_lowercase();
        let need = if out.is_empty() { 0 } else { 1 } + word.len();
        if out.len() + need > SLUG_CHARS {
            if out.is_empty() {
                out.push_str(&word[..SLUG_CHARS]);
            }
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word);
    }
    out
}

/// The job id's short form: its hex digits (`job-1a2b3c4d` → `1a2b3c4d`).
pub fn short_id(job_id: &str) -> &str {
    job_id.strip_prefix("job-").unwrap_or(job_id)
}

/// The default branch of job `job_id` doing `task`: `oneshot/<slug>-<short id>`, or
/// `oneshot/<job id>` when the task gives no slug.
pub fn branch_from_task(task: &str, job_id: &str) -> String {
    match slug(task) {
        s if s.is_empty() => format!("{PREFIX}{job_id}"),
        s => format!("{PREFIX}{s}-{}", short_id(job_id)),
    }
}

/// The branch a namer's suggestion becomes for job `job_id`: under `oneshot/` (a leading
/// `oneshot/` it gave is not doubled), with the short id appended; checked by
/// `git check-ref-format --branch`.
pub fn branch_from_suggestion(suggested: &str, job_id: &str) -> Result<String, NamingError> {
    let name = suggested.trim();
    let name = name.strip_prefix(PREFIX).unwrap_or(name);
    let name = name.trim_end_matches('/');
    if name.is_empty() {
        return Err(NamingError::BadBranch {
            branch: suggested.to_string(),
            why: "it is empty".into(),
        });
    }
    let branch = format!("{PREFIX}{name}-{}", short_id(job_id));
    check_branch(&branch)?;
    Ok(branch)
}

/// Checks `branch` with `git check-ref-format --branch`: what git would accept as a branch.
pub fn check_branch(branch: &str) -> Result<(), NamingError> {
    if branch.starts_with('-') {
        // git would read it as an option, and refuses such a branch anyway.
        return Err(NamingError::BadBranch {
            branch: branch.to_string(),
            why: "it starts with '-'".into(),
        });
    }
    let out = std::process::Command::new("git")
        .args(["check-ref-format", "--branch"])
        .arg(branch)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| NamingError::Git(e.to_string()))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Err(NamingError::BadBranch {
        branch: branch.to_string(),
        why: if said.is_empty() {
            "git check-ref-format --branch refuses it".into()
        } else {
            said
        },
    })
}

/// A name a namer gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The branch, checked, under `oneshot/`, with the short id.
    pub branch: String,
    /// The nickname, trimmed to one line (`None` when it gave an empty one).
    pub nickname: Option<String>,
}

/// Why a namer gave no usable name. `job create` falls back to [`branch_from_task`] and says
/// this.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NamingError {
    /// The ask failed: the target did not run, timed out, or never fit the schema.
    #[error("the namer did not answer: {0}")]
    Ask(#[from] AskError),
    /// The branch it suggested is not a valid branch name.
    #[error("the suggested branch {branch:?} is not a valid branch name: {why}")]
    BadBranch {
        /// The name as checked.
        branch: String,
        /// What git said.
        why: String,
    },
    /// `git` could not be run to check the name.
    #[error("run git check-ref-format: {0}")]
    Git(String),
}

/// The longest nickname kept, in characters.
const NICKNAME_CHARS: usize = 60;

/// Asks `target` (with `env` added to its environment, running in `dir`) for a branch name
/// and a nickname for `task` with the built-in `branch-suggest` schema, and makes job
/// `job_id`'s branch of it ([`branch_from_suggestion`]).
pub async fn suggest(
    target: Target,
    env: Vec<(String, String)>,
    task: &str,
    job_id: &str,
    dir: &Path,
    timeout: Duration,
) -> Result<Named, NamingError> {
    let schema = Registry::builtin()
        .resolve("branch-suggest")
        .map_err(AskError::from)?;
    let prompt = format!(
        "Suggest a git branch name and a short nickname (two to four words) for this coding \
         task. The branch: lowercase words joined by hyphens, no spaces.\n\nTASK:\n{task}"
    );
    let mut ask = Ask::new(target, schema, prompt);
    ask.env = env;
    ask.dir = dir.to_path_buf();
    ask.timeout = timeout;
    let answer = crate::ask::ask(&ask).await?;
    let text = |k: &str| {
        answer
            .value
            .get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let branch = branch_from_suggestion(&text("branch"), job_id)?;
    let nickname = text("nickname");
    let nickname = nickname.split_whitespace().collect::<Vec<_>>().join(" ");
    let nickname = (!nickname.is_empty()).then(|| nickname.chars().take(NICKNAME_CHARS).collect());
    Ok(Named { branch, nickname })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slug_is_lowercase_ascii_words_of_the_first_line() {
        assert_eq!(
            slug("  Fix: the Parser's bug #12\nsecond line"),
            "fix-the-parser-s-bug-12"
        );
        assert_eq!(slug("ÜBER naïve café"), "ber-na-ve-caf");
        assert_eq!(slug("\n\n"), "");
    }

    #[test]
    fn a_slug_is_cut_at_a_word_boundary() {
        let s = slug("implement the new configuration loader for every subcommand today");
        assert!(s.len() <= SLUG_CHARS, "{s}");
        assert_eq!(s, "implement-the-new-configuration-loader");
        let long = "a".repeat(70);
        assert_eq!(slug(&long).len(), SLUG_CHARS);
    }

    #[test]
    fn every_default_branch_is_a_valid_branch() {
        for task in ["Fix it", "x", "...", "a/b..c", "release 1.2.3 @{now}"] {
            let b = branch_from_task(task, "job-0011aabb");
            check_branch(&b).unwrap_or_else(|e| panic!("{task:?} → {b}: {e}"));
            assert!(b.starts_with(PREFIX) && b.contains("0011aabb"), "{b}");
        }
    }

    #[test]
    fn a_suggestion_stays_under_oneshot_and_gets_the_short_id() {
        assert_eq!(
            branch_from_suggestion("feature/json-flag", "job-0011aabb").unwrap(),
            "oneshot/feature/json-flag-0011aabb"
        );
        assert_eq!(
            branch_from_suggestion("oneshot/fix-x", "job-0011aabb").unwrap(),
            "oneshot/fix-x-0011aabb"
        );
        for bad in ["", "bad..name", "x.lock/y", "a b", "-x/../y"] {
            let e = branch_from_suggestion(bad, "job-0011aabb").unwrap_err();
            assert!(matches!(e, NamingError::BadBranch { .. }), "{bad:?}: {e}");
        }
    }
}
