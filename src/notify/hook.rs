//! The policy's say over one event: the job's `on_notify(ctx)` (`crate::policy`) is asked
//! before the event is claimed, so that what the store keeps is what is sent. It may let the
//! event go as it is, add fields to its `extra`, or suppress it. It fails open: a policy that
//! does not load, or a hook that errors, overruns its budget or answers nonsense, leaves the
//! event to be sent as it is, with a warning written into its record.

use super::Event;
use crate::policy::{NotifyDecision, NotifyFacts, PolicyHost, PolicyOptions};
use std::path::Path;

/// What the policy said of an event.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Said {
    /// Send it (with whatever `extra` the hook put into the event); `warning` when the hook
    /// failed open.
    Send {
        /// Why the hook's answer was not used, for the record.
        warning: Option<String>,
    },
    /// Do not send it: which policy said so, and why.
    Suppress {
        /// For the record: the hook's place, the policy's hash, its reason.
        why: String,
    },
}

/// Asks the `on_notify` of the policy at `policy` (the job's; `None`: the built-in policy,
/// which has none) about `event`, filling its `extra`. Loads the policy afresh, as a step's
/// judgements do: an edit to the file counts from the next event. Blocking (the Lua call runs
/// under the hook budget): call it off the async loop.
pub(super) fn ask(policy: Option<&Path>, event: &mut Event) -> Said {
    let Some(path) = policy else {
        return Said::Send { warning: None };
    };
    match PolicyHost::load(path, PolicyOptions::default()) {
        Ok(host) => decide(&host, event),
        Err(e) => Said::Send {
            warning: Some(format!(
                "the job's policy was not asked (on_notify fails open, so the event was sent as \
                 it is): {}",
                crate::error::failure(&e)
            )),
        },
    }
}

/// [`ask`] with the policy loaded.
pub(super) fn decide(host: &PolicyHost, event: &mut Event) -> Said {
    if !host.has_hook("on_notify") {
        return Said::Send { warning: None };
    }
    let facts = NotifyFacts {
        kind: event.kind.as_str().to_string(),
        job: event.job.clone(),
        title: event.title.clone(),
        state: event.state.as_str().to_string(),
        reason: event.reason.clone(),
        link: event.link.clone(),
        at_ms: event.at_ms,
        at: event.at.clone(),
        cause: event.cause.clone(),
    };
    let answer = host.on_notify(&facts);
    // What the hook printed with `oneshot.log` already went to the log; nothing records it
    // against a notification.
    let _ = host.take_logs();
    let site = host
        .hook_site("on_notify")
        .unwrap_or_else(|| "on_notify".to_string());
    match answer {
        Ok(NotifyDecision::Send { extra }) => {
            event.extra = extra;
            Said::Send { warning: None }
        }
        Ok(NotifyDecision::Suppress { reason }) => Said::Suppress {
            why: format!(
                "suppressed by the policy's on_notify ({site}, policy {}): {}",
                host.hash(),
                reason.as_deref().unwrap_or("it gave no reason")
            ),
        },
        Err(e) => Said::Send {
            warning: Some(format!(
                "on_notify ({site}, policy {}) fails open, so the event was sent as it is: {}",
                host.hash(),
                crate::error::failure(&e)
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobState;
    use crate::notify::NotifyKind;
    use std::time::Duration;

    fn event(kind: NotifyKind) -> Event {
        Event {
            kind,
            job: "job-00000001".into(),
            title: "write hi".into(),
            state: JobState::ApprovalRequired,
            reason: Some("the policy asks a human".into()),
            at_ms: 1_767_225_600_000,
            at: "2026-01-01T00:00:00.000Z".into(),
            link: Some("http://127.0.0.1:8719/jobs/job-00000001".into()),
            cause: "transition 4".into(),
            extra: serde_json::Map::new(),
        }
    }

    fn host(source: &str) -> PolicyHost {
        PolicyHost::from_source("n.lua", source, PolicyOptions::default()).unwrap()
    }

    const POLICY: &str = r#"return {
  on_notify = function(ctx)
    if ctx.kind == "budget_80" then return false, "budgets are read in the morning" end
    if ctx.kind == "approval_pending" then
      return { extra = { ticket = "OPS-" .. ctx.job:sub(-4), risk = 3, urgent = true,
                         cause = ctx.cause, state = ctx.state, at = ctx.at_ms } }
    end
    return nil
  end,
}"#;

    #[test]
    fn suppresses_one_kind_and_enriches_another_with_the_event_s_facts() {
        let h = host(POLICY);
        let mut e = event(NotifyKind::Budget80);
        match decide(&h, &mut e) {
            Said::Suppress { why } => {
                assert!(why.contains("budgets are read in the morning"), "{why}");
                assert!(why.contains("n.lua:2"), "names the hook's place: {why}");
                assert!(why.contains(h.hash()), "names the policy: {why}");
            }
            other => panic!("{other:?}"),
        }
        let mut e = event(NotifyKind::ApprovalPending);
        assert_eq!(decide(&h, &mut e), Said::Send { warning: None });
        assert_eq!(
            serde_json::Value::Object(e.extra.clone()),
            serde_json::json!({"ticket": "OPS-0001", "risk": 3, "urgent": true,
                               "cause": "transition 4", "state": "APPROVAL_REQUIRED",
                               "at": 1_767_225_600_000_u64})
        );
        let mut e = event(NotifyKind::AgentStalled);
        assert_eq!(decide(&h, &mut e), Said::Send { warning: None });
        assert!(e.extra.is_empty());
    }

    #[test]
    fn true_nil_and_no_hook_send_as_is() {
        for source in [
            "return { on_notify = function() return true end }",
            "return { on_notify = function() end }",
            "return { on_notify = function() return {} end }",
            "return {}",
        ] {
            let mut e = event(NotifyKind::ApprovalPending);
            assert_eq!(decide(&host(source), &mut e), Said::Send { warning: None });
            assert_eq!(e, event(NotifyKind::ApprovalPending), "{source}");
        }
        let mut e = event(NotifyKind::ApprovalPending);
        assert_eq!(ask(None, &mut e), Said::Send { warning: None });
    }

    #[test]
    fn an_error_a_budget_or_a_bad_answer_fails_open_with_a_warning() {
        let budget = PolicyHost::from_source(
            "n.lua",
            "return { on_notify = function() while true do end end }",
            PolicyOptions {
                hook_budget: Duration::from_millis(20),
                ..PolicyOptions::default()
            },
        )
        .unwrap();
        let cases = [
            (
                host("return { on_notify = function(ctx) error('no pager today') end }"),
                "no pager today",
            ),
            (budget, "budget"),
            (
                host("return { on_notify = function(ctx) ctx.kind = 'x' end }"),
                "sandbox",
            ),
            (
                host("return { on_notify = function() return 'no' end }"),
                "returned \"no\"",
            ),
            (
                host("return { on_notify = function() return { extra = { t = {} } } end }"),
                "extra.t = a table",
            ),
            (
                host("return { on_notify = function() return { extr = {} } end }"),
                "only the key `extra`",
            ),
            (
                host("return { on_notify = function() return { extra = { ['a b'] = 1 } } end }"),
                "extra keys of 1 to 64",
            ),
            (
                host(
                    "return { on_notify = function() return { extra = { x = string.rep('a', 1025) } } end }",
                ),
                "a string of 1025 bytes",
            ),
            (
                host("return { on_notify = function() return { extra = { x = 0/0 } } end }"),
                "finite number",
            ),
            (
                host(
                    "return { on_notify = function() local t = {} for i = 1, 33 do t['k' .. i] = i end return { extra = t } end }",
                ),
                "at most 32 fields",
            ),
        ];
        for (h, words) in cases {
            let mut e = event(NotifyKind::ApprovalPending);
            match decide(&h, &mut e) {
                Said::Send {
                    warning: Some(warning),
                } => {
                    assert!(warning.contains(words), "{words}: {warning}");
                    assert!(warning.contains("fails open"), "{warning}");
                    assert!(warning.contains("n.lua:1"), "{warning}");
                }
                other => panic!("{words}: {other:?}"),
            }
            assert!(e.extra.is_empty(), "sent as it is: {words}");
        }
    }

    #[test]
    fn a_policy_that_does_not_load_is_sent_as_is_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broken.lua");
        std::fs::write(&path, "return { on_notfy = function() end }").unwrap();
        let mut e = event(NotifyKind::InterventionRequired);
        match ask(Some(&path), &mut e) {
            Said::Send {
                warning: Some(warning),
            } => assert!(warning.contains("did you mean on_notify"), "{warning}"),
            other => panic!("{other:?}"),
        }
        std::fs::write(&path, POLICY).unwrap();
        let mut e = event(NotifyKind::Budget80);
        assert!(matches!(ask(Some(&path), &mut e), Said::Suppress { .. }));
    }
}
