//! Reading one config file: TOML, every key known, every value of its key's kind, each
//! remembered with its line so a later message can say where it came from.

use super::ConfigError;
use super::key::{Key, Kind};
use crate::policy::ReloadMode;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// A checked value. Paths are absolute (relative ones are taken from the file's directory).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Value {
    /// `worker-cmd`, `auditor-cmd`; `store` when it is a `postgres://` URL.
    Text(String),
    /// `policy`, `state-dir`; `store` when it is a file.
    Path(PathBuf),
    /// `policy-path`.
    Paths(Vec<PathBuf>),
    /// `max-iterations`.
    Count(u32),
    /// `timeout`, `inactivity-timeout`, `hook-budget`.
    Duration(Duration),
    /// `policy-reload`.
    Reload(ReloadMode),
    /// On or off.
    Switch(bool),
    /// What the agents' network is.
    Network(crate::process::NetworkMode),
    /// `check`: command lines.
    Texts(Vec<String>),
}

/// One key of a file, with its value and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The key.
    pub key: Key,
    /// Its value.
    pub value: Value,
    /// Its line in the file (1-based).
    pub line: usize,
}

/// A loaded, checked config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its keys, in the file's order.
    pub entries: Vec<Entry>,
    /// Its `[targets.NAME]` tables, for `oneshot ask` and `oneshot eval`.
    pub targets: Vec<super::TargetDef>,
    /// Its `[notify]` table: where needs-a-human events are sent.
    pub notify: Option<super::NotifyDef>,
}

impl ConfigFile {
    /// Reads and checks the file at `path`: a syntax error, an unknown key or a value of the
    /// wrong kind fails with its line.
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        ConfigFile::parse(path, &text)
    }

    /// Checks `text` as the content of the file at `path`.
    pub fn parse(path: &Path, text: &str) -> Result<ConfigFile, ConfigError> {
        let invalid = |at: usize, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: line_of(text, at),
            message,
        };
        let table = DeTable::parse(text).map_err(|e| {
            let at = e.span().map(|s| s.start).unwrap_or(0);
            // toml's message is several lines with a source excerpt; its first line says it.
            let message = e.message().lines().next().unwrap_or("invalid TOML").trim();
            invalid(
                at,
                format!("{message} (this file must be TOML: key = value)"),
            )
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut entries = Vec::new();
        let mut targets = Vec::new();
        let mut notify = None;
        for (name, value) in table.get_ref() {
            let at = name.span().start;
            let word = name.get_ref().as_ref();
            if word == "targets" {
                targets = super::target::parse(value, |at| line_of(text, at))
                    .map_err(|(at, m)| invalid(at, m))?;
                continue;
            }
            if word == "notify" {
                let mut def = super::notify::parse(value, |at| line_of(text, at))
                    .map_err(|(at, m)| invalid(at, m))?;
                def.dir = base.to_path_buf();
                notify = Some(def);
                continue;
            }
            let key = Key::from_name(word).ok_or_else(|| invalid(at, unknown(word)))?;
            let value = checked(key, value, base).map_err(|m| invalid(value.span().start, m))?;
            entries.push(Entry {
                key,
                value,
                line: line_of(text, at),
            });
        }
        Ok(ConfigFile {
            path: path.to_path_buf(),
            entries,
            targets,
            notify,
        })
    }

    /// The entry for `key`, if the file sets it.
    pub fn get(&self, key: Key) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }
}

/// The 1-based line of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Why `word` is not a key, and what was probably meant.
fn unknown(word: &str) -> String {
    let names = super::KEYS.map(Key::name);
    match crate::policy::suggest_name(word, &names) {
        Some(near) => format!("unknown key {word}; did you mean {near}?"),
        None => format!(
            "unknown key {word}; the keys are {}, and [targets.NAME] and [notify] tables",
            names.join(", ")
        ),
    }
}

/// `value` as `key` wants it, or why not.
fn checked(key: Key, value: &Spanned<DeValue<'_>>, base: &Path) -> Result<Value, String> {
    let value = value.get_ref();
    let wrong = |wants: &str| {
        format!(
            "{key} must be {wants}, not {} {}",
            article(value.type_str()),
            value.type_str()
        )
    };
    let path = |v: &DeValue<'_>| match v {
        DeValue::String(s) if !s.is_empty() => Ok(base.join(s.as_ref())),
        _ => Err(wrong("a path string")),
    };
    Ok(match key.kind() {
        Kind::Text => match value {
            DeValue::String(s) if !s.trim().is_empty() => Value::Text(s.to_string()),
            DeValue::String(_) if matches!(key, Key::Worker | Key::Auditor) => {
                return Err(format!(
                    "{key} is empty; give an agent (claude, codex, gemini, aider, cline) or cmd"
                ));
            }
            DeValue::String(_) => return Err(format!("{key} is empty; give a command line")),
            _ if matches!(key, Key::Worker | Key::Auditor) => {
                return Err(wrong("an agent name string (claude, codex:MODEL, …)"));
            }
            _ => return Err(wrong("a command-line string")),
        },
        Kind::Path => Value::Path(path(value)?),
        // Checked here, so a bad URL fails with its line; a file is made absolute like any
        // path, a URL kept as written (its password is read again when the store is opened).
        Kind::Store => match value {
            DeValue::String(s) => match crate::job::store::StoreLocation::parse(s, base)? {
                crate::job::store::StoreLocation::File(p) => Value::Path(p),
                crate::job::store::StoreLocation::Postgres(_) => Value::Text(s.trim().to_string()),
            },
            _ => return Err(wrong("a file path or a postgres:// URL string")),
        },
        Kind::Paths => match value {
            DeValue::Array(items) => Value::Paths(
                items
                    .iter()
                    .enumerate()
                    .map(|(n, i)| {
                        path(i.get_ref()).map_err(|_| {
                            let kind = i.get_ref().type_str();
                            format!(
                                "{key} must be an array of path strings; item {} is {} {kind}",
                                n + 1,
                                article(kind)
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
            other => Value::Paths(vec![
                path(other).map_err(|_| wrong("a path string or an array of them"))?,
            ]),
        },
        Kind::Texts => {
            let text = |v: &DeValue<'_>| match v {
                DeValue::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
                _ => None,
            };
            match value {
                DeValue::Array(items) => Value::Texts(
                    items
                        .iter()
                        .enumerate()
                        .map(|(n, i)| {
                            text(i.get_ref()).ok_or_else(|| {
                                format!(
                                    "{key} must be an array of command strings; item {} is not a \
                                     non-empty string",
                                    n + 1
                                )
                            })
                        })
                        .collect::<Result<_, _>>()?,
                ),
                other => Value::Texts(vec![
                    text(other).ok_or_else(|| wrong("a command string or an array of them"))?,
                ]),
            }
        }
        Kind::Count => match value {
            DeValue::Integer(i) => match i.as_str().parse::<u32>() {
                Ok(n) if i.radix() == 10 && n >= 1 => Value::Count(n),
                _ => {
                    return Err(format!(
                        "{key} must be a whole number of at least 1, not {i}"
                    ));
                }
            },
            _ => return Err(wrong("a whole number of at least 1")),
        },
        Kind::Duration => match value {
            DeValue::String(s) => {
                Value::Duration(humantime::parse_duration(s.trim()).map_err(|e| {
                    format!("{key} = \"{s}\" is not a duration ({e}); try \"90s\" or \"5m\"")
                })?)
            }
            DeValue::Integer(i) => match i.as_str().parse::<u64>() {
                Ok(n) if i.radix() == 10 => Value::Duration(Duration::from_secs(n)),
                _ => return Err(format!("{key} must be a number of seconds, not {i}")),
            },
            _ => {
                return Err(wrong(
                    "a duration string like \"5m\" or a number of seconds",
                ));
            }
        },
        Kind::Reload => match value {
            DeValue::String(s) => Value::Reload(s.parse().map_err(|e| format!("{key}: {e}"))?),
            _ => return Err(wrong("one of \"auto\", \"trusted\", \"off\"")),
        },
        Kind::Network => match value {
            DeValue::String(s) => Value::Network(s.parse().map_err(|e| format!("{key}: {e}"))?),
            _ => return Err(wrong("one of \"policy\", \"none\", \"open\"")),
        },
        Kind::Switch => match value {
            DeValue::Boolean(b) => Value::Switch(*b),
            DeValue::String(s) => Value::Switch(crate::config::switch(s).ok_or_else(|| {
                format!("{key} = \"{s}\": say true or false (or \"on\" or \"off\")")
            })?),
            _ => return Err(wrong("true or false")),
        },
    })
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigFile, String> {
        ConfigFile::parse(Path::new("/p/oneshot.toml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn every_key_reads_with_its_line() {
        let f = parse(
            "# comment\nworker-cmd = \"sh fix.sh\"\nauditor-cmd = 'sh check.sh'\n\
             policy = \"p/strict.lua\"\nmax-iterations = 3\ntimeout = \"10m\"\n\
             inactivity-timeout = 90\nstate-dir = \"/s\"\nhook-budget = \"250ms\"\n\
             policy-path = [\"lib\", \"/abs\"]\npolicy-reload = \"off\"\n",
        )
        .unwrap();
        assert_eq!(f.entries.len(), 10);
        let get = |k| f.get(k).unwrap();
        assert_eq!(get(Key::WorkerCmd).line, 2);
        assert_eq!(
            get(Key::Policy).value,
            Value::Path("/p/p/strict.lua".into())
        );
        assert_eq!(get(Key::MaxIterations).value, Value::Count(3));
        assert_eq!(
            get(Key::Timeout).value,
            Value::Duration(Duration::from_secs(600))
        );
        assert_eq!(
            get(Key::InactivityTimeout).value,
            Value::Duration(Duration::from_secs(90))
        );
        assert_eq!(
            get(Key::PolicyPath).value,
            Value::Paths(vec!["/p/lib".into(), "/abs".into()])
        );
        assert_eq!(get(Key::PolicyReload).value, Value::Reload(ReloadMode::Off));
        assert_eq!(get(Key::PolicyReload).line, 11);
    }

    #[test]
    fn a_store_is_a_file_or_a_postgres_url() {
        let f = parse("store = \"jobs/jobs.db\"").unwrap();
        assert_eq!(
            f.get(Key::Store).unwrap().value,
            Value::Path("/p/jobs/jobs.db".into())
        );
        let f = parse("\nstore = \"postgres://ann@db.example/jobs\"").unwrap();
        let e = f.get(Key::Store).unwrap();
        assert_eq!(
            e.value,
            Value::Text("postgres://ann@db.example/jobs".into())
        );
        assert_eq!(e.line, 2);
        let e = parse("store = \"mysql://ann@db/jobs\"").unwrap_err();
        assert!(
            e.starts_with("load config /p/oneshot.toml:1: store mysql://") && e.contains("SQLite"),
            "{e}"
        );
        // A bad URL's message never repeats its password.
        let e = parse("store = \"postgres://ann:hunter22@db\"").unwrap_err();
        assert!(
            e.contains("name the database") && !e.contains("hunter22"),
            "{e}"
        );
        let e = parse("store = 3").unwrap_err();
        assert!(
            e.contains("store must be a file path or a postgres:// URL"),
            "{e}"
        );
    }

    #[test]
    fn mistakes_name_the_line_and_the_fix() {
        assert_eq!(
            parse("policy = \"p.lua\"\nmax-iteratons = 3\n").unwrap_err(),
            "load config /p/oneshot.toml:2: unknown key max-iteratons; did you mean \
             max-iterations?"
        );
        assert_eq!(
            parse("\n\nmax-iterations = \"3\"\n").unwrap_err(),
            "load config /p/oneshot.toml:3: max-iterations must be a whole number of at least \
             1, not a string"
        );
        assert_eq!(
            parse("max-iterations = 0").unwrap_err(),
            "load config /p/oneshot.toml:1: max-iterations must be a whole number of at least \
             1, not 0"
        );
        let e = parse("timeout = \"soon\"").unwrap_err();
        assert!(
            e.starts_with("load config /p/oneshot.toml:1: timeout = \"soon\" is not a duration"),
            "{e}"
        );
        assert!(parse("worker = \"claude:opus\"").is_ok());
        let e = parse("worker = 1").unwrap_err();
        assert!(e.contains("worker must be an agent name string"), "{e}");
        let e = parse("a = 1\nb = = 2\n").unwrap_err();
        assert!(e.starts_with("load config /p/oneshot.toml:2: "), "{e}");
        assert_eq!(
            parse("policy-path = [\"lib\", 1]").unwrap_err(),
            "load config /p/oneshot.toml:1: policy-path must be an array of path strings; item \
             2 is an integer"
        );
        let e = parse("policy-reload = \"sometimes\"").unwrap_err();
        assert!(
            e.starts_with("load config /p/oneshot.toml:1: policy-reload: "),
            "{e}"
        );
    }
}
