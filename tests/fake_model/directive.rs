//! The turn directives a test writes into its prompts for the directed mode
//! ([`super::FakeModel::directed`]): `[[text:T]]`, `[[bash:CMD]]`, `[[bgbash:CMD]]`,
//! `[[hang:S]]`, and the deferred `[[ontool:SPEC]]` / `[[onnotify:SPEC]]`, whose SPEC is
//! `key=value` items (`hang`, `text`, `bash`, `bgbash`) joined by `;`.
//!
//! A directive is `[[NAME:ARG]]`, ARG running to the first `]]` after it. Unknown names are left
//! as ordinary text, so prose with brackets is harmless.

/// One thing an answer does, in the order the directives name them.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Action {
    /// An assistant text.
    Text(String),
    /// A shell command through the CLI's shell tool.
    Bash(String),
    /// A shell command Claude runs in the background (`run_in_background: true`); a plain
    /// shell call for the other CLIs.
    BgBash(String),
}

/// What one answer does: wait `hang` seconds, then the actions (none: the caller's default).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Script {
    pub(super) hang: f64,
    pub(super) actions: Vec<Action>,
}

/// The directives of one text block.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Directives {
    /// The immediate answer (`text`, `bash`, `bgbash`, `hang`).
    pub(super) now: Script,
    /// `[[ontool:SPEC]]`: the answer after the next tool result.
    pub(super) ontool: Option<Script>,
    /// `[[onnotify:SPEC]]`: the answer to the next background-task notification.
    pub(super) onnotify: Option<Script>,
    /// The text with every directive removed, trimmed (what a default answer quotes).
    pub(super) rest: String,
    /// Malformed directives, each described, so the answer can say what went wrong.
    pub(super) errors: Vec<String>,
}

const NAMES: &[&str] = &["text", "bash", "bgbash", "hang", "ontool", "onnotify"];
const SPEC_KEYS: &[&str] = &["hang", "text", "bash", "bgbash"];

/// Reads every directive of `text`.
pub(super) fn parse(text: &str) -> Directives {
    let mut d = Directives::default();
    let mut rest = String::new();
    let mut tail = text;
    while let Some(start) = tail.find("[[") {
        let after = &tail[start + 2..];
        let parsed = after.split_once(':').and_then(|(name, _)| {
            let name = name.trim();
            NAMES.contains(&name).then_some(name)
        });
        let Some(name) = parsed else {
            rest.push_str(&tail[..start + 2]);
            tail = after;
            continue;
        };
        let arg_start = after.find(':').unwrap() + 1;
        let Some(len) = after[arg_start..].find("]]") else {
            rest.push_str(&tail[..start + 2]);
            tail = after;
            continue;
        };
        let arg = &after[arg_start..arg_start + len];
        rest.push_str(&tail[..start]);
        tail = &after[arg_start + len + 2..];
        match name {
            "ontool" => d.ontool = Some(spec(arg, &mut d.errors)),
            "onnotify" => d.onnotify = Some(spec(arg, &mut d.errors)),
            _ => item(name, arg, &mut d.now, &mut d.errors),
        }
    }
    rest.push_str(tail);
    d.rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
    d
}

/// Adds one `name`/`arg` item to `script`.
fn item(name: &str, arg: &str, script: &mut Script, errors: &mut Vec<String>) {
    match name {
        "text" => script.actions.push(Action::Text(arg.to_string())),
        "bash" => script.actions.push(Action::Bash(arg.to_string())),
        "bgbash" => script.actions.push(Action::BgBash(arg.to_string())),
        "hang" => match arg.trim().parse::<f64>() {
            // Several hangs add up.
            Ok(s) if s.is_finite() && s >= 0.0 => script.hang += s,
            _ => errors.push(format!("hang wants seconds (e.g. 2.5), got {arg:?}")),
        },
        _ => errors.push(format!("unknown item {name:?}")),
    }
}

/// A SPEC: `key=value` items joined by `;`. An item ends at a `;` followed by (spaces and) a
/// known key and `=`, so a command may hold `;` of its own (`bash=sleep 1; echo x`).
fn spec(arg: &str, errors: &mut Vec<String>) -> Script {
    let mut script = Script::default();
    for piece in split_spec(arg) {
        match piece.split_once('=') {
            Some((k, v)) if SPEC_KEYS.contains(&k.trim()) => item(k.trim(), v, &mut script, errors),
            _ => errors.push(format!(
                "a SPEC item is hang=S, text=T, bash=CMD or bgbash=CMD, got {piece:?}"
            )),
        }
    }
    script
}

fn split_spec(arg: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for (i, _) in arg.match_indices(';') {
        let next = arg[i + 1..].trim_start();
        if SPEC_KEYS
            .iter()
            .any(|k| next.strip_prefix(k).is_some_and(|r| r.starts_with('=')))
        {
            pieces.push(arg[start..i].trim());
            start = i + 1;
        }
    }
    pieces.push(arg[start..].trim());
    pieces.retain(|p| !p.is_empty());
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_in_order_with_the_rest_quoted() {
        let d = parse("start [[hang:1.5]] it [[text:A]] [[bgbash:sleep 2; echo BG]] [[x:y]]");
        assert_eq!(d.now.hang, 1.5);
        assert_eq!(
            d.now.actions,
            vec![
                Action::Text("A".into()),
                Action::BgBash("sleep 2; echo BG".into())
            ]
        );
        assert_eq!(d.rest, "start it [[x:y]]");
        assert!(d.errors.is_empty());
    }

    #[test]
    fn specs_split_only_before_a_key() {
        let d = parse("go [[onnotify:hang=0.5; bash=sleep 1; echo x;text=done]] [[ontool:text=T]]");
        let n = d.onnotify.unwrap();
        assert_eq!(n.hang, 0.5);
        assert_eq!(
            n.actions,
            vec![
                Action::Bash("sleep 1; echo x".into()),
                Action::Text("done".into())
            ]
        );
        assert_eq!(d.ontool.unwrap().actions, vec![Action::Text("T".into())]);
        assert_eq!(d.rest, "go");
    }

    #[test]
    fn malformed_directives_are_reported() {
        let d = parse("[[hang:soon]] [[onnotify:wait=3]] [[text:unclosed");
        assert_eq!(d.errors.len(), 2, "{:?}", d.errors);
        assert_eq!(d.rest, "[[text:unclosed");
    }
}
