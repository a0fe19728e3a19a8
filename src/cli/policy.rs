//! `oneshot policy check|test|replay|trust|stubs`.

use super::args::PolicyCommand;
use super::exit;
use anyhow::{Context, Result};
use oneshot::policy::{PolicyHost, PolicyOptions, TrustStore};
use oneshot::store::{Log, Store};

/// Runs one `policy` subcommand; returns the exit code.
pub fn run(store: &Store, cmd: PolicyCommand) -> Result<i32> {
    let opts = PolicyOptions::default();
    match cmd {
        PolicyCommand::Check { file, json } => {
            let report = oneshot::policy::check(&file, opts)?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                out!("{}", report.render());
            }
            Ok(exit::OK)
        }
        PolicyCommand::Test { file, json } => {
            let report = oneshot::policy::run_tests(&file, opts)?;
            if report.cases.is_empty() {
                return Err(no_tests(&file));
            }
            if json {
                outln!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                out!("{}", report.render());
            }
            Ok(if report.failed() > 0 {
                exit::FAILED
            } else {
                exit::OK
            })
        }
        PolicyCommand::Replay {
            id,
            policy,
            json,
            exit_code,
            stop_at_divergence,
        } => {
            let dir = store.open(&id)?;
            let host = PolicyHost::load(&policy, opts)?;
            let log = Log::read(dir.log_path())?;
            for w in &log.warnings {
                errln!("oneshot: warning: {w}");
            }
            let opts = oneshot::replay::ReplayOptions { stop_at_divergence };
            let report = oneshot::replay::replay_with(&log, &host, opts)
                .with_context(|| format!("replay session {}", dir.id()))?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                outln!("{}", report.render_table().trim_end());
            }
            Ok(if exit_code && report.differs() {
                exit::FAILED
            } else {
                exit::OK
            })
        }
        PolicyCommand::Trust { files } => {
            let trust = TrustStore::from_env()?;
            // A file that does not parse would only fail when a session reloads it: refuse it
            // now, with its line, and trust none of the files given.
            let paths: Vec<&std::path::Path> = files.iter().map(|f| f.as_path()).collect();
            let hashes = trust.trust_all(&paths, |file, bytes| {
                oneshot::policy::check_syntax(&file.display().to_string(), bytes).map_err(|e| {
                    anyhow::Error::new(e).context(format!(
                        "trust {}: it does not parse, so nothing was trusted",
                        file.display()
                    ))
                })
            })?;
            for (f, hash) in files.iter().zip(hashes) {
                outln!("trusted {} ({hash})", f.display());
            }
            Ok(exit::OK)
        }
        PolicyCommand::Stubs { dir } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
            for (name, text) in [
                ("oneshot.d.lua", oneshot::policy::stubs_luals()),
                ("oneshot.d.luau", oneshot::policy::stubs_luau()),
            ] {
                let path = dir.join(name);
                std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
                outln!("wrote {}", path.display());
            }
            Ok(exit::OK)
        }
    }
}

/// A policy without tests "passes" nothing: CI that runs `policy test` must not go green on a
/// test file that was misnamed or never written. Says where tests were looked for.
fn no_tests(file: &std::path::Path) -> anyhow::Error {
    let beside = oneshot::policy::test_file_for(file);
    let found = if beside.exists() {
        "exists but defines no tests"
    } else {
        "does not exist"
    };
    anyhow::anyhow!(
        "test policy {}: it has no tests; looked in {} (which {found}) and in the policy's \
         `tests` table (absent or empty) — add a case to either (see docs/policy.md)",
        file.display(),
        beside.display()
    )
}
