//! `oneshot schema list|show|check`: the JSON Schemas structured answers are checked against
//! (the registry: `oneshot::schema`). The logic is the library's; this maps arguments to it
//! and prints.

use super::exit;
use super::show::one_line;
use anyhow::Result;
use clap::{Args, Subcommand};
use oneshot::schema::{Checked, Origin, Registry, Severity};
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  oneshot schema list                        # the built-ins and the project's own
  oneshot schema show verdict                # what an agent auditor is asked to answer
  oneshot schema check                       # every schema; exit 1 on an error
  oneshot schema check --strict my.json      # warnings (OpenAI strict mode) fail too
  oneshot schema --registry ~/schemas list

A schema is named by its label (a built-in, or NAME for NAME.json in the registry) or by a
file path (anything with a '/' or ending in .json). The registry is --registry DIR,
$ONESHOT_SCHEMAS, else .oneshot/schemas/ in the project (the directory holding oneshot.toml,
else the git root, else the current directory). A file there never replaces a built-in.";

const LIST: &str = "\
Examples:
  oneshot schema list
  oneshot schema list --json | jq -r .label";

const SHOW: &str = "\
Examples:
  oneshot schema show verdict
  oneshot schema show .oneshot/schemas/triage.json
  oneshot schema show nudgenik > nudgenik.json   # a starting point for your own";

const CHECK: &str = "\
Examples:
  oneshot schema check                   # the built-ins and every file in the registry
  oneshot schema check triage ./other.json
  oneshot schema check --strict --json

Each problem prints as FILE: /json/pointer: what is wrong (a built-in's label for FILE).
Errors (exit 1) break the schema for every agent: not valid JSON Schema, the root not an
object schema, a required key missing from properties, additionalProperties as a schema
without properties. Warnings are OpenAI strict mode's rules (Codex --output-schema): every
object \"additionalProperties\": false, every property required (optional = nullable),
supported keywords and formats only; --strict makes them fail too.";

/// `oneshot schema …`
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct SchemaArgs {
    /// The directory of your own schemas (NAME.json, used as NAME) [default: .oneshot/schemas
    /// in the project].
    #[arg(long, global = true, env = oneshot::schema::ENV, value_name = "DIR")]
    pub registry: Option<PathBuf>,
    #[command(subcommand)]
    pub command: SchemaCommand,
}

/// The `schema` subcommands.
#[derive(Debug, Subcommand)]
pub enum SchemaCommand {
    /// List the schemas: label, origin (builtin or the file), what each is for.
    #[command(after_help = LIST)]
    List {
        /// Print one JSON object per schema (NDJSON).
        #[arg(long)]
        json: bool,
    },
    /// Print a schema's JSON.
    #[command(after_help = SHOW)]
    Show {
        /// A label or a file.
        #[arg(value_name = "LABEL|FILE")]
        schema: String,
    },
    /// Self-check schemas, each problem with its JSON pointer; exit 1 on an error.
    #[command(after_help = CHECK)]
    Check {
        /// Labels or files [default: every built-in and every file in the registry].
        #[arg(value_name = "LABEL|FILE")]
        schemas: Vec<String>,
        /// Fail on warnings (OpenAI strict-mode rules) as well.
        #[arg(long)]
        strict: bool,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

/// Runs one `schema` subcommand; returns the exit code.
pub fn run(args: SchemaArgs) -> Result<i32> {
    let cwd = std::env::current_dir()?;
    let dir = Registry::locate(args.registry.as_deref(), |k| std::env::var_os(k), &cwd);
    let registry = Registry::open(&dir)?;
    match args.command {
        SchemaCommand::List { json } => list(&registry, json),
        SchemaCommand::Show { schema } => {
            let schema = registry.resolve(&schema)?;
            out!("{}", oneshot::schema::pretty(&schema.text));
            Ok(exit::OK)
        }
        SchemaCommand::Check {
            schemas,
            strict,
            json,
        } => check(&registry, &schemas, strict, json),
    }
}

fn list(registry: &Registry, json: bool) -> Result<i32> {
    for r in registry.refused() {
        errln!(
            "oneshot: warning: schema file {} is not used: {}",
            r.path.display(),
            r.why
        );
    }
    let mut rows = Vec::new();
    for label in registry.labels() {
        // A user file that does not read or parse is listed; `check` says what is wrong.
        let (origin, description) = match registry.resolve(label) {
            Ok(s) => (s.origin.clone(), s.description()),
            Err(e) => {
                let path = registry.user().iter().find(|u| u.label == label);
                let origin = path.map_or(Origin::Builtin, |u| Origin::User(u.path.clone()));
                (origin, format!("(broken: {})", oneshot::error::chain(&e)))
            }
        };
        rows.push((label.to_string(), origin, description));
    }
    if json {
        for (label, origin, description) in &rows {
            let (kind, path) = kind_and_path(origin);
            let row = serde_json::json!({
                "label": label,
                "origin": kind,
                "path": path,
                "description": description,
            });
            outln!("{row}");
        }
        return Ok(exit::OK);
    }
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(5).max(5);
    let origins: Vec<String> = rows.iter().map(|r| r.1.describe()).collect();
    let owidth = origins.iter().map(String::len).max().unwrap_or(6).max(6);
    outln!("{:<width$}  {:<owidth$}  DESCRIPTION", "LABEL", "ORIGIN");
    for ((label, _, description), origin) in rows.iter().zip(&origins) {
        outln!(
            "{label:<width$}  {origin:<owidth$}  {}",
            one_line(description, 80)
        );
    }
    if let Some(dir) = registry.dir() {
        let state = if dir.is_dir() { "" } else { " (absent)" };
        outln!("registry: {}{state}", dir.display());
    }
    Ok(exit::OK)
}

fn check(registry: &Registry, specs: &[String], strict: bool, json: bool) -> Result<i32> {
    let all: Vec<Checked> = if specs.is_empty() {
        registry.check_all()
    } else {
        specs
            .iter()
            .map(|s| registry.check_spec(s))
            .collect::<Result<_, _>>()?
    };
    let errors: usize = all.iter().map(|c| c.count(Severity::Error)).sum();
    let warnings: usize = all.iter().map(|c| c.count(Severity::Warning)).sum();
    let ok = errors == 0 && (!strict || warnings == 0);
    if json {
        let schemas: Vec<_> = all
            .iter()
            .map(|c| {
                let (kind, path) = kind_and_path(&c.origin);
                serde_json::json!({
                    "name": c.name,
                    "origin": kind,
                    "path": path,
                    "problems": c.problems,
                })
            })
            .collect();
        let report = serde_json::json!({
            "ok": ok,
            "errors": errors,
            "warnings": warnings,
            "schemas": schemas,
        });
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for c in &all {
            let name = c.display_name();
            if c.problems.is_empty() {
                outln!("{name}: ok");
            }
            for p in &c.problems {
                outln!("{name}: {p}");
            }
        }
        outln!(
            "{} schema(s) checked: {errors} error(s), {warnings} warning(s){}",
            all.len(),
            if strict { " (--strict)" } else { "" }
        );
    }
    Ok(if ok { exit::OK } else { exit::FAILED })
}

/// `builtin`, `user` (the registry directory) or `file`, and the file's path.
fn kind_and_path(origin: &Origin) -> (&'static str, Option<String>) {
    match origin {
        Origin::Builtin => ("builtin", None),
        Origin::User(p) => ("user", Some(p.display().to_string())),
        Origin::File(p) => ("file", Some(p.display().to_string())),
    }
}
