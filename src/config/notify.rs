//! The `[notify]` table: where needs-a-human events are sent (`[[notify.sink]]`: a command or
//! an `http://` webhook, each with the events it takes) and the dashboard's address for the
//! link in each. What is sent, when and how often is `crate::notify`'s.

use crate::notify::NotifyKind;
use std::time::Duration;
use toml::Spanned;
use toml::de::DeValue;

/// A sink's timeout unless it says: a command or a POST that takes longer is a failed attempt.
pub const DEFAULT_SINK_TIMEOUT: Duration = Duration::from_secs(10);

/// The `[notify]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyDef {
    /// `[[notify.sink]]`, in the file's order.
    pub sinks: Vec<SinkDef>,
    /// `link-base = "http://127.0.0.1:8719"`: the dashboard's address; an event's link is
    /// `<link-base>/jobs/<id>`. No link without it.
    pub link_base: Option<String>,
    /// The table's line (1-based).
    pub line: usize,
    /// The config file's directory: where a command sink runs.
    pub dir: std::path::PathBuf,
}

/// One `[[notify.sink]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkDef {
    /// Where the events go.
    pub to: SinkTo,
    /// `events = [...]`: the kinds it takes; every kind when not given.
    pub events: Option<Vec<NotifyKind>>,
    /// `timeout = "10s"`: how long one attempt may take.
    pub timeout: Duration,
    /// Its line (1-based).
    pub line: usize,
}

/// Where a sink sends.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SinkTo {
    /// `command = "sh notify.sh"`: run with the event as JSON on stdin.
    Command(String),
    /// `webhook = "http://host:port/path"`: the event POSTed as JSON.
    Webhook(String),
}

impl SinkDef {
    /// Whether the sink takes events of `kind`.
    pub fn takes(&self, kind: NotifyKind) -> bool {
        self.events.as_ref().is_none_or(|e| e.contains(&kind))
    }
}

const NOTIFY_KEYS: [&str; 2] = ["sink", "link-base"];
const SINK_KEYS: [&str; 4] = ["command", "webhook", "events", "timeout"];

/// Reads the `notify` table; `Err((byte offset, message))` names what is wrong and where.
pub(super) fn parse(
    value: &Spanned<DeValue<'_>>,
    line_of: impl Fn(usize) -> usize,
) -> Result<NotifyDef, (usize, String)> {
    let DeValue::Table(table) = value.get_ref() else {
        return Err((
            value.span().start,
            "notify must be a table: [notify], with [[notify.sink]] tables".into(),
        ));
    };
    let mut def = NotifyDef {
        sinks: Vec::new(),
        link_base: None,
        line: line_of(value.span().start),
        dir: std::path::PathBuf::new(),
    };
    for (key, v) in table {
        let here = v.span().start;
        match key.get_ref().as_ref() {
            "link-base" => def.link_base = Some(link_base(v)?),
            "sink" => {
                let DeValue::Array(items) = v.get_ref() else {
                    return Err((
                        here,
                        "notify.sink must be a list of tables: write each as [[notify.sink]]"
                            .into(),
                    ));
                };
                for item in items {
                    def.sinks.push(sink(item, &line_of)?);
                }
            }
            other => return Err((key.span().start, unknown("notify", other, &NOTIFY_KEYS))),
        }
    }
    Ok(def)
}

fn unknown(table: &str, word: &str, keys: &[&str]) -> String {
    match crate::policy::suggest_name(word, keys) {
        Some(near) => format!("unknown key {table}.{word}; did you mean {near}?"),
        None => format!(
            "unknown key {table}.{word}; the keys of {table} are {}",
            keys.join(", ")
        ),
    }
}

fn link_base(v: &Spanned<DeValue<'_>>) -> Result<String, (usize, String)> {
    match v.get_ref() {
        DeValue::String(s)
            if s.starts_with("http://") || s.starts_with("https://") && s.len() > 8 =>
        {
            Ok(s.trim_end_matches('/').to_string())
        }
        _ => Err((
            v.span().start,
            "notify.link-base must be the dashboard's address, like \"http://127.0.0.1:8719\" \
             (an event's link is <link-base>/jobs/<id>)"
                .into(),
        )),
    }
}

fn sink(
    item: &Spanned<DeValue<'_>>,
    line_of: &impl Fn(usize) -> usize,
) -> Result<SinkDef, (usize, String)> {
    let at = item.span().start;
    let DeValue::Table(keys) = item.get_ref() else {
        return Err((
            at,
            "each notify.sink must be a table ([[notify.sink]] with command = … or webhook = …)"
                .into(),
        ));
    };
    let (mut command, mut webhook) = (None, None);
    let mut def = SinkDef {
        to: SinkTo::Command(String::new()),
        events: None,
        timeout: DEFAULT_SINK_TIMEOUT,
        line: line_of(at),
    };
    for (key, v) in keys {
        let k = key.get_ref().as_ref();
        let here = v.span().start;
        match k {
            "command" => match v.get_ref() {
                DeValue::String(s) if !s.trim().is_empty() => {
                    shell_words::split(s).map_err(|e| {
                        (
                            here,
                            format!("notify.sink.command {s:?} does not split ({e})"),
                        )
                    })?;
                    command = Some(s.trim().to_string());
                }
                _ => {
                    return Err((
                        here,
                        "notify.sink.command must be a command-line string, like \"sh \
                         notify.sh\""
                            .into(),
                    ));
                }
            },
            "webhook" => match v.get_ref() {
                DeValue::String(s) => {
                    crate::notify::webhook_target(s).map_err(|e| (here, e))?;
                    webhook = Some(s.trim().to_string());
                }
                _ => {
                    return Err((
                        here,
                        "notify.sink.webhook must be a URL string, like \
                         \"http://127.0.0.1:9000/hook\""
                            .into(),
                    ));
                }
            },
            "events" => {
                let names = NotifyKind::ALL.map(NotifyKind::as_str).join(", ");
                let DeValue::Array(items) = v.get_ref() else {
                    return Err((
                        here,
                        format!("notify.sink.events must be an array of event names ({names})"),
                    ));
                };
                let mut kinds = Vec::new();
                for i in items {
                    let kind = match i.get_ref() {
                        DeValue::String(s) => NotifyKind::from_word(s),
                        _ => None,
                    };
                    kinds.push(kind.ok_or_else(|| {
                        (
                            i.span().start,
                            format!(
                                "notify.sink.events: not an event name; the events are {names}"
                            ),
                        )
                    })?);
                }
                def.events = Some(kinds);
            }
            "timeout" => {
                def.timeout = match v.get_ref() {
                    DeValue::String(s) => humantime::parse_duration(s.trim()).ok(),
                    DeValue::Integer(i) => i.as_str().parse::<u64>().ok().map(Duration::from_secs),
                    _ => None,
                }
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    (
                        here,
                        "notify.sink.timeout must be a duration like \"10s\" or a number of \
                         seconds, more than 0"
                            .to_string(),
                    )
                })?;
            }
            other => return Err((key.span().start, unknown("notify.sink", other, &SINK_KEYS))),
        }
    }
    def.to = match (command, webhook) {
        (Some(c), None) => SinkTo::Command(c),
        (None, Some(w)) => SinkTo::Webhook(w),
        (Some(_), Some(_)) => {
            return Err((
                at,
                "a notify.sink has both command and webhook; give each its own [[notify.sink]]"
                    .into(),
            ));
        }
        (None, None) => {
            return Err((
                at,
                "a notify.sink needs command = \"…\" or webhook = \"http://…\"".into(),
            ));
        }
    };
    Ok(def)
}
