//! The tag the ACP driver dispatches `session/update` on. A kind this agent version does not
//! know is [`SessionUpdate::Other`], kept as [`crate::agent::AgentEvent::Unknown`].

use serde::Deserialize;

/// A `session/update`'s `sessionUpdate`.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum SessionUpdate {
    AgentMessageChunk,
    AgentThoughtChunk,
    UserMessageChunk,
    ToolCall,
    ToolCallUpdate,
    /// Kinds that carry nothing a run needs (their lines still reach the log).
    #[serde(
        rename = "available_commands_update",
        alias = "current_mode_update",
        alias = "plan",
        alias = "config_option_update"
    )]
    Quiet,
    #[serde(other)]
    Other,
}
