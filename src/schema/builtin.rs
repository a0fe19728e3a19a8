//! The schemas oneshot ships, each a JSON file in `builtin/` compiled into the binary. Each
//! follows OpenAI's strict-mode rules (every object closed, every property required), so the
//! same text goes to Claude (`--json-schema`), Codex (`--output-schema`) and into a prompt;
//! a test holds every one to the self-check.

/// A schema compiled into oneshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// The label it is asked for by (`--schema verdict`).
    pub label: &'static str,
    /// One line on what it is for, for `oneshot schema list`.
    pub description: &'static str,
    /// The schema, as JSON text.
    pub text: &'static str,
}

/// The auditor's verdict: done, retry or impossible, with a reason, a confidence and what is
/// still open. The default for agent auditors.
pub const VERDICT: Builtin = Builtin {
    label: "verdict",
    description: "an auditor's verdict: done|retry|impossible, reason, confidence 0..1, \
                  open criteria",
    text: include_str!("builtin/verdict.json"),
};

/// A git branch name and a short nickname for a task.
pub const BRANCH_SUGGEST: Builtin = Builtin {
    label: "branch-suggest",
    description: "a git branch name and a short nickname for a task",
    text: include_str!("builtin/branch-suggest.json"),
};

/// What an agent's terminal shows it doing: completed, waiting for something, working, stuck.
pub const NUDGENIK: Builtin = Builtin {
    label: "nudgenik",
    description: "an agent terminal's state (Completed, Needs Authorization, Waiting, \
                  Working, Error, …) with evidence",
    text: include_str!("builtin/nudgenik.json"),
};

/// How the conflicts of a rebase or merge were resolved, file by file.
pub const CONFLICT_RESOLVE: Builtin = Builtin {
    label: "conflict-resolve",
    description: "how merge conflicts were resolved, one action per file",
    text: include_str!("builtin/conflict-resolve.json"),
};

/// Every built-in schema, in the order `oneshot schema list` shows them.
pub const BUILTINS: &[Builtin] = &[VERDICT, BRANCH_SUGGEST, NUDGENIK, CONFLICT_RESOLVE];

/// The built-in schema with this label.
pub fn builtin(label: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.label == label)
}
