//! The directed mode's decision: an answer derived from the request itself (the directives of
//! turns.md's "Fake server additions"), so a test can script races whose request order varies.
//!
//! The last of the conversation's user texts, notifications and tool results decides:
//! * a user text: its own directives (`[[text:T]]`, `[[bash:CMD]]`, `[[bgbash:CMD]]`,
//!   `[[hang:S]]`); with none, `reply to: <its text without directives>`;
//! * a tool result: the pending `[[ontool:SPEC]]`, else `Tool finished. <first 200 chars>`;
//! * a `<task-notification>`: the pending `[[onnotify:SPEC]]`, else `Notified: <first 200 chars>`.
//!
//! A deferred SPEC is pending when it is in the latest user text carrying one before the event
//! and no event of its kind came in between: each `[[ontool]]` / `[[onnotify]]` answers the
//! first tool result / notification after its message only.
//!
//! Claude Code's trailing `system` injections (a user message merged into the running turn, or
//! a merged notification) are each acknowledged by appending
//! ` | queued user message seen: X` to the answer, X being what that message alone would have
//! answered. Directives in tool results, notifications and the model's turns are never read.

use super::conversation::Item;
use super::directive::{Action, Script, parse};
use std::time::Duration;

/// What to answer: wait `hang`, then these actions (never empty).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Plan {
    pub(super) hang: Duration,
    pub(super) actions: Vec<Action>,
}

impl Plan {
    /// A one-line account of the plan (recorded on the request, for tests and failures).
    pub(super) fn describe(&self) -> String {
        let acts = describe(&self.actions);
        if self.hang.is_zero() {
            acts
        } else {
            format!("hang {:.2}s; {acts}", self.hang.as_secs_f64())
        }
    }
}

/// How many characters of a tool output or notification an answer quotes.
const QUOTE: usize = 200;

/// The plan for a request whose conversation is `items`.
pub(super) fn decide(items: &[Item]) -> Plan {
    let (history, injected) = split_injected(items);
    let Some(at) = history
        .iter()
        .rposition(|i| !matches!(i, Item::Model | Item::Injected(_)))
    else {
        return plan(
            0.0,
            vec![Action::Text(
                "fake model: no user text in the request".into(),
            )],
        );
    };
    let mut p = answer(history, at);
    let acks: Vec<String> = injected
        .iter()
        .map(|inj| {
            // The injected message as if it had come last, after the same history.
            let mut alone = history.to_vec();
            alone.push(inj.clone());
            let last = alone.len() - 1;
            describe(&answer(&alone, last).actions)
        })
        .collect();
    if !acks.is_empty() {
        let seen: String = acks
            .iter()
            .map(|x| format!(" | queued user message seen: {x}"))
            .collect();
        match p.actions.iter_mut().rev().find_map(|a| match a {
            Action::Text(t) => Some(t),
            _ => None,
        }) {
            Some(t) => t.push_str(&seen),
            None => p
                .actions
                .insert(0, Action::Text(seen.trim_start_matches(" | ").to_string())),
        }
    }
    p
}

/// The conversation up to its trailing injections, and those injections' contents.
fn split_injected(items: &[Item]) -> (&[Item], Vec<Item>) {
    let n = items
        .iter()
        .rev()
        .take_while(|i| matches!(i, Item::Injected(_)))
        .count();
    let (history, tail) = items.split_at(items.len() - n);
    let injected = tail
        .iter()
        .map(|i| match i {
            Item::Injected(inner) => (**inner).clone(),
            other => other.clone(),
        })
        .collect();
    (history, injected)
}

/// The answer to `items[at]` (a user text, tool result or notification).
fn answer(items: &[Item], at: usize) -> Plan {
    match &items[at] {
        Item::User(text) => {
            let d = parse(text);
            if !d.errors.is_empty() {
                return plan(0.0, vec![bad(&d.errors)]);
            }
            or_default(d.now, format!("reply to: {}", d.rest))
        }
        Item::ToolResult(out) => or_default(
            pending(items, at, |d| d.ontool.clone()).unwrap_or_default(),
            format!("Tool finished. {}", quote(out)),
        ),
        Item::Notification(text) => or_default(
            pending(items, at, |d| d.onnotify.clone()).unwrap_or_default(),
            format!("Notified: {}", quote(text)),
        ),
        Item::Injected(inner) => {
            let mut alone = items[..at].to_vec();
            alone.push((**inner).clone());
            answer(&alone, at)
        }
        Item::Model => unreachable!("decide never answers a model turn"),
    }
}

/// The SPEC `pick` finds in the latest user text before `items[at]` that carries one, unless an
/// event of the same kind as `items[at]` came after that text (the SPEC was used).
fn pending(
    items: &[Item],
    at: usize,
    pick: impl Fn(&super::directive::Directives) -> Option<Script>,
) -> Option<Script> {
    let same_kind = |i: &Item| {
        let i = match i {
            Item::Injected(inner) => inner.as_ref(),
            other => other,
        };
        std::mem::discriminant(i) == std::mem::discriminant(&items[at])
    };
    for j in (0..at).rev() {
        if same_kind(&items[j]) {
            // An earlier event of this kind: anything before it was used by it.
            // Keep looking only for a SPEC after it, which we would already have met.
            return None;
        }
        let text = match &items[j] {
            Item::User(t) => t,
            Item::Injected(inner) => match inner.as_ref() {
                Item::User(t) => t,
                _ => continue,
            },
            _ => continue,
        };
        let d = parse(text);
        if let Some(s) = pick(&d) {
            return Some(s);
        }
    }
    None
}

/// `s`, answering `default` when it names no action (a bare hang only delays the default).
fn or_default(s: Script, default: String) -> Plan {
    let actions = if s.actions.is_empty() {
        vec![Action::Text(default)]
    } else {
        s.actions
    };
    plan(s.hang, actions)
}

/// A plan whose adjacent texts are one text, joined by a space: Claude Code turns each text
/// block into an `assistant` line of its own and reports only the last in its `result`, so
/// messages it concatenated (`[[text:A]]` queued behind `[[text:B]]`) answer `A B` as one.
fn plan(hang: f64, actions: Vec<Action>) -> Plan {
    let mut merged: Vec<Action> = Vec::new();
    for a in actions {
        match (merged.last_mut(), a) {
            (Some(Action::Text(prev)), Action::Text(t)) => {
                prev.push(' ');
                prev.push_str(&t);
            }
            (_, a) => merged.push(a),
        }
    }
    Plan {
        hang: Duration::from_secs_f64(hang),
        actions: merged,
    }
}

fn bad(errors: &[String]) -> Action {
    Action::Text(format!("fake model: bad directive: {}", errors.join("; ")))
}

fn quote(s: &str) -> String {
    s.chars().take(QUOTE).collect()
}

/// Texts as they are; tool calls as `bash: CMD` / `bgbash: CMD`; joined by spaces.
fn describe(actions: &[Action]) -> String {
    actions
        .iter()
        .map(|a| match a {
            Action::Text(t) => t.clone(),
            Action::Bash(c) => format!("bash: {c}"),
            Action::BgBash(c) => format!("bgbash: {c}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(s: &str) -> Item {
        Item::User(s.into())
    }

    fn texts(p: &Plan) -> Vec<String> {
        p.actions
            .iter()
            .map(|a| match a {
                Action::Text(t) => t.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_user_text_answers_from_its_directives_or_quotes_itself() {
        let p = decide(&[user("hi [[hang:0.5]] [[text:A]]")]);
        assert_eq!(p.hang, Duration::from_millis(500));
        assert_eq!(texts(&p), ["A"]);
        assert_eq!(
            texts(&decide(&[user("hello  there")])),
            ["reply to: hello there"]
        );
        // Merged user turns: the last real text decides.
        let p = decide(&[user("[[text:OLD]]"), user("new [[bash:ls]]")]);
        assert_eq!(p.actions, [Action::Bash("ls".into())]);
    }

    #[test]
    fn ontool_answers_the_first_tool_result_after_it_only() {
        let start = user("go [[bash:ls]] [[ontool:bash=pwd]]");
        let r1 = Item::ToolResult("[[text:never]] out1".into());
        let p = decide(&[start.clone(), Item::Model, r1.clone()]);
        assert_eq!(p.actions, [Action::Bash("pwd".into())]);
        let r2 = Item::ToolResult("out2".into());
        let p = decide(&[start, Item::Model, r1, Item::Model, r2]);
        assert_eq!(texts(&p), ["Tool finished. out2"]);
    }

    #[test]
    fn onnotify_is_used_by_the_first_notification_and_the_latest_wins() {
        let n = |s: &str| Item::Notification(format!("<task-notification>{s}"));
        let items = [
            user("a [[onnotify:text=ONE]]"),
            Item::Model,
            user("b [[onnotify:hang=0.25;text=TWO]]"),
            Item::Model,
            n("x"),
        ];
        let p = decide(&items);
        assert_eq!(
            (p.hang, texts(&p)),
            (Duration::from_millis(250), vec!["TWO".to_string()])
        );
        let mut more = items.to_vec();
        more.extend([Item::Model, n("y")]);
        assert_eq!(texts(&decide(&more)), ["Notified: <task-notification>y"]);
    }

    #[test]
    fn trailing_injections_are_acknowledged() {
        let items = [
            user("go [[bash:sleep 1]]"),
            Item::Model,
            Item::ToolResult("done".into()),
            Item::Injected(Box::new(user("second [[text:reply to SECOND]]"))),
            Item::Injected(Box::new(Item::Notification("<task-notification>t".into()))),
        ];
        assert_eq!(
            texts(&decide(&items)),
            [
                "Tool finished. done | queued user message seen: reply to SECOND \
              | queued user message seen: Notified: <task-notification>t"
            ]
        );
    }
}
