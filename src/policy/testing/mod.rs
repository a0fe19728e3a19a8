//! `oneshot policy test`: a policy's own tests, OPA-style.
//!
//! Tests come from the policy's `tests` key and from a sibling `NAME_test.lua`, which runs in
//! the same sandbox (same state, budget and memory cap) with the policy's table as the global
//! `policy` (also passed as `...`). Either source is a table whose entries are case tables,
//! run through the same Rust calls the engine makes ([`PolicyHost::verdict`], …, so built-in
//! defaults apply to absent hooks), or test functions `function(t) … end` given an assert
//! helper `t`. Each test runs under the hook budget.

mod case;
mod input;
mod report;

pub use report::{TestCase, TestReport};

use super::error::PolicyError;
use super::host::{LuaPolicy, chunk_name, read_policy, syntax_error};
use super::schema::find_line;
use super::{PolicyHost, PolicyOptions};
use mlua::chunk::ChunkMode;
use mlua::{Function, Table, Value};
use std::path::{Path, PathBuf};

/// The hook name test-file and test-function errors are reported under.
const TESTS_HOOK: &str = "tests";

/// One test, before it runs.
enum Spec {
    Case {
        name: String,
        table: Table,
        location: Option<String>,
    },
    Func {
        name: String,
        func: Function,
        location: Option<String>,
    },
    /// An entry that is neither: it fails with this message.
    Invalid {
        name: String,
        message: String,
        location: Option<String>,
    },
}

/// Loads the policy at `path` and runs its tests (see the module docs). A policy that fails to
/// load, or a test file that fails to load, is an error; failing tests are in the report.
pub fn run_tests(path: &Path, opts: PolicyOptions) -> Result<TestReport, PolicyError> {
    let source = read_policy(path)?;
    run_on_source(path, &source, &opts)
}

/// What a hot reload calls before activating an edit: loads the policy and runs its own tests;
/// any failing test is a [`PolicyError::Tests`] listing them. The host returned is a fresh load
/// of the same bytes the tests ran against, untouched by the tests.
pub fn validate_for_reload(path: &Path, opts: PolicyOptions) -> Result<PolicyHost, PolicyError> {
    let source = read_policy(path)?;
    let report = run_on_source(path, &source, &opts)?;
    if report.failed() > 0 {
        return Err(PolicyError::Tests {
            file: chunk_name(path),
            total: report.cases.len(),
            failures: report.failures(),
        });
    }
    PolicyHost::load_source(path, &source, &opts)
}

/// How many tests the policy at `path` has (loading its test file, not running the tests).
pub(crate) fn count(host: &PolicyHost, path: &Path, source: &str) -> Result<usize, PolicyError> {
    Ok(collect(host, path, source)?.len())
}

/// The sibling test file of `path`: `NAME_test.lua` next to `NAME.lua`.
pub fn test_file_for(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{stem}_test.lua"))
}

fn run_on_source(
    path: &Path,
    source: &str,
    opts: &PolicyOptions,
) -> Result<TestReport, PolicyError> {
    let host = PolicyHost::load_source(path, source, opts)?;
    let specs = collect(&host, path, source)?;
    let Some(policy) = host.lua.as_ref() else {
        return Ok(TestReport::default());
    };
    let t: Table = policy
        .lua
        .load(include_str!("assert.lua"))
        .set_name("=oneshot-assert")
        .eval()
        .map_err(|e| PolicyError::Runtime {
            hook: TESTS_HOOK.into(),
            message: e.to_string(),
        })?;
    let cases = specs
        .into_iter()
        .map(|spec| match spec {
            Spec::Case {
                name,
                table,
                location,
            } => match case::run(&host, &table) {
                Ok(()) => pass(name),
                Err(f) => fail(name, f.message, f.location.or(location)),
            },
            Spec::Func {
                name,
                func,
                location,
            } => match policy.call::<()>(TESTS_HOOK, &func, &t) {
                Ok(()) => pass(name),
                Err(e) => {
                    let at = e.location().or(location);
                    let message = match e {
                        PolicyError::Runtime { message, .. } => message,
                        other => other.to_string(),
                    };
                    fail(name, message, at)
                }
            },
            Spec::Invalid {
                name,
                message,
                location,
            } => fail(name, message, location),
        })
        .collect();
    Ok(TestReport { cases })
}

fn pass(name: String) -> TestCase {
    TestCase {
        name,
        passed: true,
        message: None,
        location: None,
    }
}

fn fail(name: String, message: String, location: Option<String>) -> TestCase {
    TestCase {
        name,
        passed: false,
        message: Some(message),
        location,
    }
}

/// The policy's `tests` entries, then the test file's.
fn collect(host: &PolicyHost, path: &Path, source: &str) -> Result<Vec<Spec>, PolicyError> {
    let Some(policy) = host.lua.as_ref() else {
        return Ok(Vec::new());
    };
    let mut specs = Vec::new();
    if let Some(tests) = &policy.parsed.tests {
        entries(tests, &chunk_name(path), source, &mut specs)?;
    }
    let file = test_file_for(path);
    if file.is_file() {
        let text = read_policy(&file)?;
        let name = chunk_name(&file);
        let tests = load_test_file(policy, &name, &text)?;
        entries(&tests, &name, &text, &mut specs)?;
    }
    Ok(specs)
}

/// Runs a test file's top level in the policy's state, with `policy` in its environment.
fn load_test_file(policy: &LuaPolicy, name: &str, text: &str) -> Result<Table, PolicyError> {
    let lua = &policy.lua;
    let setup = |e: mlua::Error| PolicyError::Load {
        file: name.to_string(),
        line: None,
        message: e.to_string(),
    };
    // Reads fall through to the sandbox's globals; `policy` is the policy's own table.
    let env = lua.create_table().map_err(setup)?;
    env.raw_set("policy", &policy.table).map_err(setup)?;
    let meta = lua.create_table().map_err(setup)?;
    meta.raw_set("__index", lua.globals()).map_err(setup)?;
    env.set_metatable(Some(meta)).map_err(setup)?;
    let chunk = lua
        .load(text)
        .set_name(format!("@{name}"))
        .set_mode(ChunkMode::Text)
        .set_environment(env)
        .into_function()
        .map_err(|e| syntax_error(name, e))?;
    // A test file may load helper modules of its own, like the policy's top level.
    policy.modules.set_open(true);
    let value = policy.call::<Value>(TESTS_HOOK, &chunk, &policy.table);
    policy.modules.set_open(false);
    match value? {
        Value::Table(t) => Ok(t),
        other => Err(PolicyError::Load {
            file: name.to_string(),
            line: None,
            message: format!(
                "a test file must return a table of cases and test functions, not {}",
                other.type_name()
            ),
        }),
    }
}

/// Turns a tests table into specs: the list part in order, then named entries by name.
fn entries(
    tests: &Table,
    file: &str,
    source: &str,
    out: &mut Vec<Spec>,
) -> Result<(), PolicyError> {
    let bad = |e: mlua::Error| PolicyError::Load {
        file: file.to_string(),
        line: find_line(source, "tests"),
        message: e.to_string(),
    };
    let len = tests.raw_len();
    let mut named = Vec::new();
    for pair in tests.pairs::<Value, Value>() {
        let (key, value) = pair.map_err(bad)?;
        match key {
            Value::Integer(i) if i >= 1 && (i as usize) <= len => {}
            Value::String(s) => named.push((s.to_string_lossy(), value)),
            other => named.push((other.to_string().unwrap_or_default(), value)),
        }
    }
    named.sort_by(|a, b| a.0.cmp(&b.0));
    let listed = (1..=len).map(|i| -> Result<(Option<String>, Value), PolicyError> {
        Ok((None, tests.raw_get(i).map_err(bad)?))
    });
    for (i, entry) in listed
        .chain(named.into_iter().map(|(k, v)| Ok((Some(k), v))))
        .enumerate()
    {
        let (key, value) = entry?;
        let fallback = key.clone().unwrap_or_else(|| format!("{file} #{}", i + 1));
        let line_of = |n: &str| find_line(source, n).map(|l| format!("{file}:{l}"));
        out.push(match value {
            Value::Table(table) => {
                let own: Option<String> = match table.raw_get::<Value>("name") {
                    Ok(Value::String(s)) => Some(s.to_string_lossy()),
                    _ => None,
                };
                let location = own.as_deref().or(key.as_deref()).and_then(line_of);
                Spec::Case {
                    name: own.unwrap_or(fallback),
                    table,
                    location,
                }
            }
            Value::Function(func) => {
                let info = func.info();
                let location = match (info.short_src, info.line_defined) {
                    (Some(src), Some(line)) => Some(format!("{src}:{line}")),
                    _ => key.as_deref().and_then(line_of),
                };
                Spec::Func {
                    name: fallback,
                    func,
                    location,
                }
            }
            other => Spec::Invalid {
                location: key.as_deref().and_then(line_of),
                message: format!(
                    "a test must be a case table or a function, not {}",
                    other.type_name()
                ),
                name: fallback,
            },
        });
    }
    Ok(())
}
