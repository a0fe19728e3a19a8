//! What the auditors of a job's panel said.

use serde::{Deserialize, Serialize};

/// One auditor of a panel and what it said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelVerdict {
    /// The auditor (as the spec names it).
    pub auditor: String,
    /// What it said.
    pub verdict: PanelWord,
    /// Its reason.
    #[serde(default)]
    pub reason: String,
    /// Its confidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
}

/// A panel auditor's answer: a verdict, or `error` when it gave no valid one (stored and shown
/// as the lowercase word).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum PanelWord {
    /// The work is done.
    Done,
    /// It needs another attempt.
    Retry,
    /// It cannot be done.
    Impossible,
    /// The auditor gave no valid verdict (it failed, or answered something else). A stored
    /// word this version does not know reads as this.
    #[serde(other)]
    Error,
}

impl PanelWord {
    /// The word as stored (`done`, `retry`, `impossible`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            PanelWord::Done => "done",
            PanelWord::Retry => "retry",
            PanelWord::Impossible => "impossible",
            PanelWord::Error => "error",
        }
    }

    /// The word an auditor answered (any case); anything else is [`PanelWord::Error`].
    pub fn read(word: &str) -> PanelWord {
        match word.trim().to_ascii_lowercase().as_str() {
            "done" => PanelWord::Done,
            "retry" => PanelWord::Retry,
            "impossible" => PanelWord::Impossible,
            _ => PanelWord::Error,
        }
    }
}

impl std::fmt::Display for PanelWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
