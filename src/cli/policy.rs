//! `oneshot policy check|test|replay|trust|stubs`.

use super::args::PolicyCommand;
use super::run::Exit;
use anyhow::{Context, Result};
use oneshot::policy::{PolicyError, PolicyHost, PolicyOptions, TrustStore};
use oneshot::store::{Log, Store};

/// A policy that does not load is a configuration error: exit 2 with file:line.
fn load_err(e: PolicyError) -> anyhow::Error {
    Exit(2, anyhow::anyhow!("{e}")).into()
}

/// Runs one `policy` subcommand; returns the exit code.
pub fn run(store: &Store, cmd: PolicyCommand) -> Result<i32> {
    let opts = PolicyOptions::default();
    match cmd {
        PolicyCommand::Check { file, json } => {
            let report = oneshot::policy::check(&file, opts).map_err(load_err)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.render());
            }
            Ok(0)
        }
        PolicyCommand::Test { file, json } => {
            let report = oneshot::policy::run_tests(&file, opts).map_err(load_err)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.render());
            }
            Ok(if report.failed() > 0 { 1 } else { 0 })
        }
        PolicyCommand::Replay {
            id,
            policy,
            json,
            exit_code,
        } => {
            let dir = store
                .open(&id)
                .map_err(|e| Exit(2, anyhow::Error::new(e)))?;
            let host = PolicyHost::load(&policy, opts).map_err(load_err)?;
            let log = Log::read(dir.log_path())
                .with_context(|| format!("cannot read the log of session {}", dir.id()))?;
            for w in &log.warnings {
                eprintln!("oneshot: warning: {w}");
            }
            let report = oneshot::replay::replay(&log, &host)
                .with_context(|| format!("cannot replay session {}", dir.id()))?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{}", report.render_table().trim_end());
            }
            Ok(if exit_code && report.differs() { 1 } else { 0 })
        }
        PolicyCommand::Trust { files } => {
            let trust = TrustStore::from_env().map_err(|e| Exit(2, e.into()))?;
            for f in files {
                let hash = trust
                    .trust(&f)
                    .with_context(|| format!("cannot trust {}", f.display()))?;
                println!("trusted {} ({hash})", f.display());
            }
            Ok(0)
        }
        PolicyCommand::Stubs { dir } => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            for (name, text) in [
                ("oneshot.d.lua", oneshot::policy::stubs_luals()),
                ("oneshot.d.luau", oneshot::policy::stubs_luau()),
            ] {
                let path = dir.join(name);
                std::fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                println!("wrote {}", path.display());
            }
            Ok(0)
        }
    }
}
