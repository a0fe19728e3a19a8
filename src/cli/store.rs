//! Which job store a command works on — `--store`, `store = "…"` in oneshot.toml or the
//! user's config.toml, `ONESHOT_STORE`, else `<state dir>/jobs.db` — and `oneshot store …`,
//! which looks after the store itself (`migrate`).

use super::config::{Files, Origin};
use super::exit::usage;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use oneshot::config::{Key, Value};
use oneshot::job::store::{PostgresStore, StoreLocation};
use std::path::Path;

/// `oneshot store --help`.
const EXAMPLES: &str = "\
Examples:
  oneshot store migrate --store postgres://oneshot@db.internal/jobs
  ONESHOT_STORE=postgres://oneshot@db.internal/jobs oneshot store migrate
  oneshot store migrate              # the store oneshot.toml (or the default) names

The store every `oneshot job …` command uses: --store URL|PATH, else `store` in oneshot.toml
or your config.toml, else ONESHOT_STORE, else <state dir>/jobs.db (a SQLite file). A
postgres:// URL's password is never shown; without one in the URL it comes from PGPASSWORD
or ~/.pgpass (PGPASSFILE), as for psql. docs/fleet.md says how to run runners on many machines.";

/// `oneshot store migrate --help`.
const MIGRATE_EXAMPLES: &str = "\
Examples:
  oneshot store migrate --store postgres://oneshot@db.internal/jobs
  oneshot store migrate --store 'postgres://oneshot@/jobs?host=/run/postgresql'
  oneshot store migrate --store ~/.local/state/oneshot/jobs.db   # SQLite: nothing to do

Run it once when the database is new, and after upgrading oneshot (stop the older runners
first): a runner refuses a database whose schema is not its own, naming this command. It is
safe to run again, and from several machines at once.";

/// The store a command was pointed at with `--store`; shared by `oneshot job …` and `oneshot
/// store …`, where every verb takes it.
#[derive(Debug, Args, Clone, Default)]
pub struct StoreFlag {
    /// The job store: a postgres:// URL (a fleet's shared database) or a SQLite file's path
    /// [default: `store` in oneshot.toml or your config.toml, else ONESHOT_STORE, else <state
    /// dir>/jobs.db].
    #[arg(long = "store", global = true, value_name = "URL|PATH")]
    pub store: Option<String>,
}

/// `oneshot store`: look after the job store itself.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct StoreArgs {
    /// The verb.
    #[command(subcommand)]
    pub command: StoreCommand,
    #[command(flatten)]
    pub flag: StoreFlag,
}

/// The verbs of `oneshot store`.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Create or upgrade a PostgreSQL store's tables to this oneshot's schema version; print
    /// the version before and after. A SQLite file needs none of this: it migrates itself
    /// when opened.
    #[command(after_help = MIGRATE_EXAMPLES)]
    Migrate,
}

/// The store a command works on, and who chose it: the flag, then the project's oneshot.toml,
/// the user's config.toml, `ONESHOT_STORE`, and last `<state dir>/jobs.db`. A relative path
/// given by the flag or the environment is taken from the current directory (a file's, from
/// the file's directory).
pub fn location(
    flag: Option<&str>,
    files: &Files,
    state_dir: &Path,
) -> Result<(StoreLocation, Origin)> {
    let cwd = std::env::current_dir().context("read the current directory")?;
    let parse = |text: &str, from: &str| {
        StoreLocation::parse(text, &cwd).map_err(|e| {
            usage(format!(
                "open the job store ({from}): {e}; give --store a file path or a \
                 postgres://USER@HOST/DB URL"
            ))
        })
    };
    if let Some(text) = flag {
        return Ok((parse(text, "--store")?, Origin::Flag));
    }
    if let Some((value, origin)) = files.get(Key::Store) {
        let at = match value {
            Value::Path(p) => StoreLocation::File(p.clone()),
            Value::Text(url) => {
                let from = match &origin {
                    Origin::File(path, line) => format!("store in {}:{line}", path.display()),
                    _ => "store".to_string(),
                };
                parse(url, &from)?
            }
            _ => anyhow::bail!("the config file's store is neither a path nor a URL"),
        };
        return Ok((at, origin));
    }
    if let Some(text) = std::env::var(Key::Store.env())
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        return Ok((
            parse(&text, Key::Store.env())?,
            Origin::Env(Key::Store.env()),
        ));
    }
    Ok((
        StoreLocation::File(state_dir.join("jobs.db")),
        Origin::Default,
    ))
}

/// Runs `oneshot store …`.
pub fn run(args: StoreArgs, files: &Files, state_dir: &Path, quiet: bool) -> Result<i32> {
    let (at, _) = location(args.flag.store.as_deref(), files, state_dir)?;
    match args.command {
        StoreCommand::Migrate => migrate(&at, quiet),
    }
}

/// `oneshot store migrate`.
fn migrate(at: &StoreLocation, quiet: bool) -> Result<i32> {
    match at {
        StoreLocation::Postgres(url) => {
            let m = PostgresStore::migrate(url)
                .map_err(|e| anyhow::Error::new(e).context("migrate the job store"))?;
            if !quiet {
                if m.from == m.to {
                    outln!("store {at}: already at schema version {}", m.to);
                } else {
                    outln!("store {at}: schema version {} → {}", m.from, m.to);
                }
            }
        }
        StoreLocation::File(_) => {
            // Opening it is what migrates it: done here, so a file that is no job store
            // (or a newer one) is reported now rather than by the next runner.
            oneshot::job::store::open(at)
                .map_err(|e| anyhow::Error::new(e).context("migrate the job store"))?;
            if !quiet {
                outln!(
                    "store {at}: a SQLite file migrates itself whenever oneshot opens it; it is \
                     current (`oneshot store migrate` is for a postgres:// store)"
                );
            }
        }
        // The kinds of store may grow (`#[non_exhaustive]`): one this command does not know.
        other => {
            anyhow::bail!(
                "migrate store {other}: `oneshot store migrate` does not know this kind of store"
            )
        }
    }
    Ok(super::exit::OK)
}
