//! Nothing lost: at the end of a run, the agent's own transcript is read back and every
//! assistant message it holds that the stream did not carry is added to the run's timeline
//! (and its account), by message id, and said. turns.md found none missing in any run of the
//! pinned Claude; this is what makes "none missing" checked rather than assumed.

use super::tap::Tap;
use super::{AgentEvent, AgentKind, DriverSetup};
use std::collections::HashSet;

/// The ids of the assistant messages in the transcript of the conversation a run continues
/// (`setup.resume`), read as it starts: at its end they are the earlier runs' messages, which
/// its stream never carried and which are not missing from it.
pub(super) fn earlier_messages(kind: AgentKind, setup: &DriverSetup) -> HashSet<String> {
    let (Some(read), Some(session)) = (kind.def().transcript_messages, setup.resume.as_deref())
    else {
        return HashSet::new();
    };
    match (kind.def().transcript)(&setup.cwd, session) {
        Some(path) => read(&path).into_iter().map(|m| m.id).collect(),
        None => HashSet::new(),
    }
}

impl Tap {
    /// Reconciles the run's timeline with the agent's transcript; returns the ids of the
    /// messages added (empty when the agent keeps no transcript oneshot reads, or none was
    /// missing).
    pub(crate) fn reconcile(&mut self) -> Vec<String> {
        let Some(read) = self.kind.def().transcript_messages else {
            return Vec::new();
        };
        let Some(session) = self.timeline.session_id().map(str::to_owned) else {
            return Vec::new();
        };
        let Some(path) = (self.kind.def().transcript)(self.cwd(), &session) else {
            return Vec::new();
        };
        self.reconcile_with(read(&path))
    }

    /// Adds to the timeline each of `messages` (a transcript's, in order) it lacks and no
    /// earlier run of the conversation wrote; returns their ids.
    fn reconcile_with(
        &mut self,
        messages: Vec<super::transcript::TranscriptMessage>,
    ) -> Vec<String> {
        let mut added = Vec::new();
        for m in messages {
            // Streamed in this run, or an earlier run's in a continued conversation.
            if self.timeline.message(&m.id).is_some() || self.earlier.contains(&m.id) {
                continue;
            }
            for event in [
                AgentEvent::AssistantText {
                    message_id: Some(m.id.clone()),
                    index: 0,
                    text: m.text,
                    partial: false,
                },
                AgentEvent::MessageStopped {
                    message_id: Some(m.id.clone()),
                    stop_reason: None,
                },
            ] {
                self.timeline.apply(&event);
                self.narrative.apply(&event);
            }
            added.push(m.id);
        }
        added
    }
}

#[cfg(test)]
mod tests {
    use super::super::transcript::{TranscriptMessage, claude_messages};
    use super::*;
    use crate::agent::{AgentKind, DriverSetup, Protocol};

    /// A Claude worker's reader, in a new conversation.
    fn claude_tap() -> Tap {
        Tap::new(
            AgentKind::Claude,
            Protocol::Claude,
            DriverSetup {
                role: crate::process::Role::Worker,
                cwd: ".".into(),
                model: None,
                resume: None,
            },
        )
    }

    #[test]
    fn a_message_only_the_transcript_holds_is_added_once_and_named() {
        let mut tap = claude_tap();
        tap.push(b"{\"type\":\"assistant\",\"message\":{\"id\":\"msg_1\",\"content\":[{\"type\":\"text\",\"text\":\"first\"}]}}\n");
        let transcript = vec![
            TranscriptMessage {
                id: "msg_1".into(),
                text: "first".into(),
            },
            TranscriptMessage {
                id: "msg_2".into(),
                text: "reply to HELLO".into(),
            },
        ];
        assert_eq!(tap.reconcile_with(transcript.clone()), ["msg_2"]);
        assert_eq!(
            tap.timeline.message("msg_2").map(|m| m.text()).as_deref(),
            Some("reply to HELLO")
        );
        assert!(tap.narrative.text().contains("reply to HELLO"));
        assert!(tap.reconcile_with(transcript).is_empty(), "once");
    }

    #[test]
    fn a_continued_conversations_earlier_messages_are_not_missing_from_this_run() {
        let mut tap = claude_tap();
        // What the transcript held when this run continued the conversation.
        tap.earlier = ["msg_0".to_string()].into();
        tap.push(b"{\"type\":\"assistant\",\"message\":{\"id\":\"msg_1\",\"content\":[{\"type\":\"text\",\"text\":\"second\"}]}}\n");
        let transcript = ["msg_0", "msg_1", "msg_2"]
            .map(|id| TranscriptMessage {
                id: id.into(),
                text: format!("text of {id}"),
            })
            .to_vec();
        assert_eq!(tap.reconcile_with(transcript), ["msg_2"]);
        assert!(!tap.narrative.text().contains("text of msg_0"));
    }

    #[test]
    fn a_claude_transcript_gives_its_messages_in_order_one_per_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"type":"user","message":{"role":"user","content":"start"}}"#, "\n",
                r#"{"type":"assistant","uuid":"u1","message":{"id":"msg_a","content":[{"type":"text","text":"Tool "}]}}"#, "\n",
                r#"{"type":"assistant","uuid":"u2","message":{"id":"msg_a","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}"#, "\n",
                r#"{"type":"assistant","uuid":"u3","isSidechain":true,"message":{"id":"msg_sub","content":[{"type":"text","text":"sub"}]}}"#, "\n",
                r#"{"type":"queue-operation","operation":"enqueue","content":"hello"}"#, "\n",
                r#"{"type":"assistant","uuid":"u4","message":{"id":"msg_b","content":[{"type":"text","text":"Notified"}]}}"#, "\n",
                "{\"type\":\"assistant\",\"message\":{\"id\":\"msg_c\",\"cont",
            ),
        )
        .unwrap();
        let got = claude_messages(&path);
        assert_eq!(
            got,
            [
                TranscriptMessage {
                    id: "msg_a".into(),
                    text: "Tool ".into()
                },
                TranscriptMessage {
                    id: "msg_b".into(),
                    text: "Notified".into()
                },
            ]
        );
    }
}
