//! Aider writes plain text, not a protocol, and exits 0 even when its provider refused every
//! call. Its failures are read from its words: litellm's exception lines
//! (`litellm.AuthenticationError: …`, `litellm.BadRequestError: OpenAIException - … 401 …`).

mod agent;

pub(crate) use agent::AGENT;

use crate::agent::line::status_in;
use crate::agent::{AgentEvent, ErrorKind, LineParser};

/// Parser for Aider's plain-text output: each line is assistant text (progress); a litellm
/// exception line is also an [`AgentEvent::Error`].
#[derive(Debug, Default)]
pub struct AiderParser;

impl LineParser for AiderParser {
    fn feed(&mut self, line: &[u8], out: &mut Vec<AgentEvent>) {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.trim().is_empty() {
            return;
        }
        if let Some(at) = text.find("litellm.")
            && text[at..].contains("Error")
        {
            let message = text[at..].to_string();
            let status = status_in(&message).or_else(|| code_in(&message));
            let kind = match status {
                Some(s) => ErrorKind::from_status(s),
                None => ErrorKind::from_text(&message),
            };
            out.push(AgentEvent::Error {
                kind,
                status,
                message,
            });
            return;
        }
        out.push(AgentEvent::AssistantText {
            message_id: None,
            index: 0,
            text: format!("{text}\n"),
            partial: true,
        });
    }
}

/// The reader for one run (the registry's `Protocol::Aider`): it only listens.
pub(crate) fn driver(_: crate::agent::DriverSetup) -> Box<dyn crate::agent::Driver> {
    Box::new(crate::agent::driver::Listen(AiderParser))
}

/// An HTTP status in litellm's own words: `"code": 401`, `Error code: 401`.
fn code_in(text: &str) -> Option<u16> {
    for key in ["Error code: ", "\"code\": ", "'code': "] {
        if let Some(at) = text.find(key) {
            let digits: String = text[at + key.len()..]
                .trim_start_matches(['"', '\''])
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(n) = digits.parse::<u16>()
                && (100..=599).contains(&n)
            {
                return Some(n);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn litellm_errors_are_failures_and_the_rest_is_text() {
        let mut p = AiderParser;
        let mut out = Vec::new();
        p.feed_str("Aider v0.86.2\n", &mut out);
        p.feed_str(
            "litellm.BadRequestError: OpenAIException - Error code: 401 - {'error': 'bad key'}",
            &mut out,
        );
        p.feed_str("litellm.APIConnectionError: Connection refused", &mut out);
        assert!(
            matches!(&out[0], AgentEvent::AssistantText { text, .. } if text == "Aider v0.86.2\n")
        );
        assert!(matches!(
            &out[1],
            AgentEvent::Error {
                kind: ErrorKind::Auth,
                status: Some(401),
                ..
            }
        ));
        assert!(matches!(
            &out[2],
            AgentEvent::Error {
                kind: ErrorKind::Network,
                status: None,
                ..
            }
        ));
    }
}
