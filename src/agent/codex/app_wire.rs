//! The tags the app-server driver dispatches on: notification methods and item types. A tag
//! this Codex version does not know is `Other`, kept as [`crate::agent::AgentEvent::Unknown`].

use serde::Deserialize;

/// A notification's method.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Notice {
    #[serde(rename = "turn/started")]
    TurnStarted,
    #[serde(rename = "item/started")]
    ItemStarted,
    #[serde(rename = "item/completed")]
    ItemCompleted,
    #[serde(rename = "item/agentMessage/delta")]
    AgentMessageDelta,
    #[serde(
        rename = "item/reasoning/textDelta",
        alias = "item/reasoning/summaryTextDelta"
    )]
    ReasoningDelta,
    #[serde(rename = "thread/tokenUsage/updated")]
    TokenUsage,
    #[serde(rename = "error")]
    Error,
    #[serde(rename = "turn/completed")]
    TurnCompleted,
    #[serde(rename = "configWarning", alias = "warning")]
    Warning,
    /// Notifications that carry nothing a run needs (their lines still reach the log).
    #[serde(
        rename = "thread/started",
        alias = "thread/status/changed",
        alias = "account/rateLimits/updated",
        alias = "remoteControl/status/changed",
        alias = "serverRequest/resolved",
        alias = "item/commandExecution/outputDelta",
        alias = "thread/name/updated",
        alias = "turn/diff/updated"
    )]
    Quiet,
    #[serde(other)]
    Other,
}

/// An item's `type`.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(super) enum ItemKind {
    AgentMessage,
    Reasoning,
    UserMessage,
    CommandExecution,
    FileChange,
    McpToolCall,
    WebSearch,
    #[serde(other)]
    Other,
}
