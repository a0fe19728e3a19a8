//! The eval manifest: a YAML file of cases, each a prompt (or a captured file), the schema its
//! answer must fit and what the answer must say. Everything is checked when it is loaded — the
//! input and golden files read, the schemas resolved, the expectations checked against them —
//! so a typo is a usage error naming the file, the line and the case before anything runs.

use super::EvalError;
use super::expect::Expect;
use crate::schema::{Registry, Schema, is_path};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Where a template puts the captured file's content.
pub const INPUT_PLACEHOLDER: &str = "{input}";

/// The default for [`Manifest::k`] when neither the manifest nor the caller sets it.
pub const DEFAULT_K: u32 = 3;

/// A manifest, loaded and checked.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The file.
    pub path: PathBuf,
    /// Its directory: input, golden and schema files are relative to it, and a target it names
    /// runs there.
    pub dir: PathBuf,
    /// Its default target, if it names one.
    pub target: Option<ManifestTarget>,
    /// Its `k`, if it sets one.
    pub k: Option<u32>,
    /// The cases, in order.
    pub cases: Vec<Case>,
}

/// A target named in a manifest (`target:` or `target_cmd:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestTarget {
    /// `target: AGENT[:MODEL]`.
    Agent(String),
    /// `target_cmd: CMDLINE`.
    Command(String),
}

/// One case.
#[derive(Debug, Clone)]
pub struct Case {
    /// Its id, unique in the manifest.
    pub id: String,
    /// The line of its `id:` in the manifest, when found.
    pub line: Option<usize>,
    /// The captured file it reads, as the manifest names it.
    pub input: Option<String>,
    /// The prompt, template applied.
    pub prompt: String,
    /// The schema the answer must fit.
    pub schema: Schema,
    /// What the answer must say.
    pub expect: Expect,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    target_cmd: Option<String>,
    #[serde(default)]
    schema: Option<String>,
    #[serde(default)]
    k: Option<u32>,
    #[serde(default)]
    prompt: Option<String>,
    cases: Vec<RawCase>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    id: String,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    input: Option<String>,
    #[serde(default)]
    schema: Option<String>,
    #[serde(default)]
    want: Option<Value>,
    #[serde(default)]
    golden: Option<String>,
    // Free text for people; kept so that `deny_unknown_fields` accepts it.
    #[serde(default)]
    #[allow(dead_code)]
    notes: Option<String>,
}

/// Reads and checks the manifest at `path`. Schema labels resolve in `registry`; schema, input
/// and golden files are relative to the manifest. A golden file that does not exist yet is an
/// error unless `update` (it is about to be written).
pub fn load(path: &Path, registry: &Registry, update: bool) -> Result<Manifest, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let raw: RawManifest =
        serde_yaml_ng::from_str(&text).map_err(|e| yaml_error(path, &text, &e))?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let err = |line: Option<usize>, case: Option<&str>, message: String| EvalError::Manifest {
        path: path.to_path_buf(),
        line,
        case: case.map(str::to_string),
        message,
    };
    let target = match (raw.target, raw.target_cmd) {
        (Some(_), Some(_)) => {
            return Err(err(
                None,
                None,
                "`target` and `target_cmd` both given; keep one".into(),
            ));
        }
        (Some(t), None) => Some(ManifestTarget::Agent(t)),
        (None, Some(c)) => Some(ManifestTarget::Command(c)),
        (None, None) => None,
    };
    if raw.k == Some(0) {
        return Err(err(None, None, "`k` must be at least 1".into()));
    }
    if raw.cases.is_empty() {
        return Err(err(None, None, "no cases".into()));
    }
    let mut seen = HashSet::new();
    let mut cases = Vec::with_capacity(raw.cases.len());
    for rc in raw.cases {
        let line = id_line(&text, &rc.id);
        let fail = |m: String| err(line, Some(&rc.id), m);
        if rc.id.trim().is_empty() {
            return Err(fail("an empty `id`".into()));
        }
        if !seen.insert(rc.id.clone()) {
            return Err(fail("the id is used by an earlier case too".into()));
        }
        let spec = rc
            .schema
            .as_deref()
            .or(raw.schema.as_deref())
            .ok_or_else(|| fail("no `schema` (here or at the top of the manifest)".into()))?;
        let schema = resolve_schema(registry, &dir, spec).map_err(|e| fail(e.to_string()))?;
        let prompt = compose_prompt(&dir, &rc, raw.prompt.as_deref()).map_err(&fail)?;
        let expect = match (rc.want, rc.golden) {
            (Some(_), Some(_)) => return Err(fail("`want` and `golden` both given".into())),
            (None, None) => return Err(fail("no `want` or `golden`".into())),
            (Some(want), None) => Expect::from_want(want, &schema).map_err(&fail)?,
            (None, Some(file)) => golden(&dir, &file, update).map_err(&fail)?,
        };
        cases.push(Case {
            id: rc.id,
            line,
            input: rc.input,
            prompt,
            schema,
            expect,
        });
    }
    Ok(Manifest {
        path: path.to_path_buf(),
        dir,
        target,
        k: raw.k,
        cases,
    })
}

/// A label, or a file relative to the manifest.
fn resolve_schema(
    registry: &Registry,
    dir: &Path,
    spec: &str,
) -> Result<Schema, crate::schema::SchemaError> {
    if is_path(spec) && !Path::new(spec).is_absolute() {
        let path = dir.join(spec);
        return registry.resolve(&path.to_string_lossy());
    }
    registry.resolve(spec)
}

/// The prompt: `prompt` alone; or the `input` file's content, put in the case's (else the
/// manifest's) `prompt` as a template — at `{input}`, or after it when it has none.
fn compose_prompt(dir: &Path, rc: &RawCase, default: Option<&str>) -> Result<String, String> {
    let Some(input) = &rc.input else {
        return rc
            .prompt
            .clone()
            .ok_or_else(|| "no `prompt` or `input`".to_string());
    };
    let path = dir.join(input);
    let content = std::fs::read_to_string(&path)
        .map_err(|e| format!("could not read the input {}: {e}", path.display()))?;
    Ok(match rc.prompt.as_deref().or(default) {
        None => content,
        Some(t) if t.contains(INPUT_PLACEHOLDER) => t.replace(INPUT_PLACEHOLDER, &content),
        Some(t) => format!("{}\n\n{content}", t.trim_end()),
    })
}

/// A golden file: read and parsed, unless it is about to be written.
fn golden(dir: &Path, file: &str, update: bool) -> Result<Expect, String> {
    let path = dir.join(file);
    let value = match std::fs::read_to_string(&path) {
        Ok(text) => Some(
            serde_json::from_str(&text)
                .map_err(|e| format!("the golden file {} is not JSON: {e}", path.display()))?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && update => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "the golden file {} does not exist; write it with --update",
                path.display()
            ));
        }
        Err(e) => return Err(format!("could not read {}: {e}", path.display())),
    };
    Ok(Expect::Golden { path, value })
}

/// The 1-based line of the case's `id:` (`- id: X` or `id: X`, quoted or not), so that a
/// problem found after parsing still points at the case.
fn id_line(text: &str, id: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start().trim_start_matches('-').trim_start();
            l.strip_prefix("id:")
                .map(|v| v.trim().trim_matches(['"', '\'']) == id)
                .unwrap_or(false)
        })
        .map(|i| i + 1)
}

/// A YAML error, with its line and — when it is inside `cases[N]` — that case's id.
fn yaml_error(path: &Path, text: &str, e: &serde_yaml_ng::Error) -> EvalError {
    let mut message = e.to_string();
    // The crate appends the place; it is shown as `file:line` instead.
    if let Some(at) = message.rfind(" at line ") {
        message.truncate(at);
    }
    let mut case = None;
    if let Some(rest) = message.strip_prefix("cases[")
        && let Some((n, tail)) = rest.split_once("]: ")
        && let Ok(n) = n.parse::<usize>()
    {
        let loose: Option<serde_yaml_ng::Value> = serde_yaml_ng::from_str(text).ok();
        case = loose
            .as_ref()
            .and_then(|v| {
                v.get("cases")?
                    .get(n)?
                    .get("id")?
                    .as_str()
                    .map(str::to_string)
            })
            .or_else(|| Some(format!("#{}", n + 1)));
        message = tail.to_string();
    }
    EvalError::Manifest {
        path: path.to_path_buf(),
        line: e.location().map(|l| l.line()),
        case,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_str(text: &str) -> Result<Manifest, EvalError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.yaml");
        std::fs::write(&path, text).unwrap();
        std::fs::write(dir.path().join("cap.txt"), "the capture").unwrap();
        load(&path, &Registry::builtin(), false)
    }

    #[test]
    fn an_input_goes_into_the_template() {
        let m = load_str(
            "schema: nudgenik\nprompt: 'Classify:\n\n  {input}'\ncases:\n  - id: a\n    input: cap.txt\n    want: Completed\n",
        )
        .unwrap();
        assert_eq!(
            m.cases[0].prompt,
            "Classify:\n{input}".replace("{input}", "the capture")
        );
        assert_eq!(m.cases[0].line, Some(6));
    }

    #[test]
    fn errors_name_the_case_and_the_line() {
        let e = load_str("cases:\n  - id: a\n    prompt: p\n    schema: verdict\n    wnat: done\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("m.yaml:5: case \"a\": unknown field `wnat`"),
            "{e}"
        );
        let e = load_str(
            "cases:\n  - id: a\n    input: nope.txt\n    schema: nudgenik\n    want: Completed\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("m.yaml:2: case \"a\": could not read the input"),
            "{e}"
        );
    }
}
