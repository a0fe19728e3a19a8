//! Exit codes: the one table, and the one place that maps what happened to a code.
//!
//! | code | constant | when |
//! | --- | --- | --- |
//! | 0 | [`OK`] | COMPLETED; any other command did what was asked |
//! | 1 | [`FAILED`] | FAILED; a runtime error |
//! | 2 | [`USAGE`] | a usage or configuration error; nothing was started |
//! | 3 | [`REJECTED`] | REJECTED |
//! | 4 | [`REFUSED`] | resume refused, or the session is locked by another process |
//! | 130 | [`INTERRUPTED`] | INTERRUPTED; resumable |
//!
//! [`TABLE`] says it in full; the README ("Exit codes") and `oneshot --help` show it and a test
//! keeps them true. Errors get their code from [`for_error`], which looks through the error's
//! chain for the library error that decides it; outcomes from [`for_outcome`]. Nothing else in
//! the CLI picks a number. (clap's own usage errors exit 2 as well.)

use oneshot::EngineError;
use oneshot::machine::SessionState;
use oneshot::policy::{PolicyError, ReloadError, TrustError};
use oneshot::replay::ReplayError;
use oneshot::session::Outcome;
use oneshot::store::{LockError, LogError, StoreError};
use std::error::Error;

/// The session COMPLETED; any other command did what was asked.
pub const OK: i32 = 0;
/// The session FAILED, or oneshot hit a runtime error.
pub const FAILED: i32 = 1;
/// A usage or configuration error: nothing was started.
pub const USAGE: i32 = 2;
/// The session was REJECTED.
pub const REJECTED: i32 = 3;
/// The session may not be resumed, or another process drives it.
pub const REFUSED: i32 = 4;
/// The session was interrupted (128 + SIGINT, as shells do); it is resumable.
pub const INTERRUPTED: i32 = 130;

/// Every code with its name and when it happens: `--help` shows the names, the README's "Exit codes"
/// section the whole table.
pub const TABLE: &[(i32, &str, &str)] = &[
    (
        OK,
        "COMPLETED",
        "the session completed; any other command did what was asked",
    ),
    (
        FAILED,
        "FAILED, or a runtime error",
        "the session failed; or a state file or log could not be read, the disk is full, the \
         trust store is broken; also failed policy tests, a difference found by `policy \
         replay --exit-code`, a schema check that finds an error, an `ask` whose target \
         failed, timed out or never gave an answer that fits, and a `job step` that leaves \
         its job in INTERVENTION_REQUIRED",
    ),
    (
        USAGE,
        "usage or configuration error",
        "bad arguments, a policy that does not load, a missing program, workdir or file, an \
         unknown or ambiguous session id, an unknown schema; nothing was started",
    ),
    (
        REJECTED,
        "REJECTED",
        "the auditor judged the task impossible",
    ),
    (
        REFUSED,
        "refused: resume not allowed, or the session is locked",
        "the session may not be resumed (it ended, its policy changed without trust, or its \
         state file was changed outside oneshot), or another process drives it (the message \
         names its pid); a job verb its state does not allow, or a job that moved meanwhile or that \
         a runner holds",
    ),
    (
        INTERRUPTED,
        "INTERRUPTED",
        "Ctrl-C or SIGTERM; `oneshot resume ID` continues",
    ),
];

/// The table as `--help` prints it: one short line per code.
pub fn help() -> String {
    let mut s = String::from("Exit codes:");
    for (code, name, _) in TABLE {
        s.push_str(&format!("\n  {code:<4} {name}"));
    }
    s
}

/// The code for how a session ended. A session stops short of a terminal state only when
/// interrupted (in INTERRUPTED, or in a checkpoint state when the interrupt came between two
/// processes).
pub fn for_outcome(o: &Outcome) -> i32 {
    match o.state {
        SessionState::Completed => OK,
        SessionState::Failed => FAILED,
        SessionState::Rejected => REJECTED,
        _ => INTERRUPTED,
    }
}

/// The code for an error that stops a command: the first error in its chain (outermost first)
/// that says which; [`FAILED`] when none does.
pub fn for_error(e: &anyhow::Error) -> i32 {
    e.chain().find_map(classify).unwrap_or(FAILED)
}

/// A usage error the CLI finds itself (a missing task, a workdir that is not a directory).
/// The message reads after "failed to …", like every error.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Usage {}

/// A [`Usage`] error as an [`anyhow::Error`].
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    Usage(message.into()).into()
}

/// A request the state of things refuses (a job verb its state does not allow): exit
/// [`REFUSED`], like a refused resume.
#[derive(Debug)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Refusal {}

/// A [`Refusal`] as an [`anyhow::Error`].
pub fn refused(message: impl Into<String>) -> anyhow::Error {
    Refusal(message.into()).into()
}

fn classify(e: &(dyn Error + 'static)) -> Option<i32> {
    if e.is::<Usage>() {
        return Some(USAGE);
    }
    if e.is::<Refusal>() {
        return Some(REFUSED);
    }
    if let Some(e) = e.downcast_ref::<oneshot::job::store::JobStoreError>() {
        use oneshot::job::store::JobStoreError as J;
        return Some(match e {
            J::NotFound { .. }
            | J::Ambiguous { .. }
            | J::NoToken { .. }
            | J::TokenExists { .. } => USAGE,
            J::Conflict { .. } | J::Stepped { .. } | J::Busy { .. } | J::Fenced { .. } => REFUSED,
            _ => FAILED,
        });
    }
    if let Some(e) = e.downcast_ref::<EngineError>() {
        return Some(engine(e));
    }
    if let Some(e) = e.downcast_ref::<StoreError>() {
        return Some(store(e));
    }
    // A schema that is not there, or does not read, is the user's to fix, like a policy.
    if e.is::<PolicyError>() || e.is::<oneshot::schema::SchemaError>() {
        return Some(USAGE);
    }
    // A config file the user wrote wrong (or cannot be read): theirs to fix, like a policy.
    if e.is::<oneshot::config::ConfigError>() {
        return Some(USAGE);
    }
    if let Some(e) = e.downcast_ref::<TrustError>() {
        return Some(match e {
            // Where the store lives, or the file the command line named, is the user's to fix.
            TrustError::NoLocation | TrustError::File { .. } => USAGE,
            TrustError::Store { .. } | TrustError::Corrupt { .. } => FAILED,
            _ => FAILED,
        });
    }
    if let Some(e) = e.downcast_ref::<LockError>() {
        return Some(lock(e));
    }
    if e.is::<LogError>() || e.is::<ReplayError>() || e.is::<ReloadError>() {
        return Some(FAILED);
    }
    None
}

fn engine(e: &EngineError) -> i32 {
    match e {
        EngineError::Store(e) => store(e),
        EngineError::Refused { .. } => REFUSED,
        EngineError::Policy(_)
        | EngineError::Exec(_)
        | EngineError::Usage(_)
        | EngineError::Redact(_) => USAGE,
        EngineError::Reload(_)
        | EngineError::Log { .. }
        | EngineError::Runtime(_)
        | EngineError::Internal { .. } => FAILED,
        // An error this CLI was not built to know: a failure, never a success.
        _ => FAILED,
    }
}

/// Held by another process: refused. The lock file could not be written (a full disk, a
/// read-only file system): a runtime error, not a refusal.
fn lock(e: &LockError) -> i32 {
    match e {
        LockError::Held { .. } => REFUSED,
        LockError::Io { .. } => FAILED,
        _ => FAILED,
    }
}

fn store(e: &StoreError) -> i32 {
    match e {
        StoreError::NotFound { .. } | StoreError::Ambiguous { .. } => USAGE,
        StoreError::Locked { source, .. } => lock(source),
        // A state file changed outside oneshot is not resumed.
        StoreError::Tampered { .. } => REFUSED,
        StoreError::Key { .. } => FAILED,
        StoreError::Corrupt { .. }
        | StoreError::NewerSchema { .. }
        | StoreError::OlderSchema { .. }
        | StoreError::Io { .. } => FAILED,
        _ => FAILED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;
    use std::path::PathBuf;

    fn io() -> std::io::Error {
        std::io::Error::from_raw_os_error(2)
    }

    fn not_found() -> StoreError {
        StoreError::NotFound {
            id: "abc".into(),
            dir: "/s/sessions".into(),
        }
    }

    fn locked() -> StoreError {
        StoreError::Locked {
            id: "abc".into(),
            source: LockError::Held { pid: Some(42) },
        }
    }

    fn code(e: impl Into<anyhow::Error>) -> i32 {
        for_error(&e.into())
    }

    #[test]
    fn store_errors() {
        assert_eq!(code(not_found()), USAGE);
        let ambiguous = StoreError::Ambiguous {
            id: "a".into(),
            matches: "ab, ac".into(),
        };
        assert_eq!(code(ambiguous), USAGE);
        assert_eq!(code(locked()), REFUSED);
        // A full disk while taking the lock is no refusal.
        let full = StoreError::Locked {
            id: "abc".into(),
            source: LockError::Io {
                path: "/s/lock".into(),
                source: std::io::Error::from_raw_os_error(libc::ENOSPC),
            },
        };
        assert_eq!(code(full), FAILED);
        let corrupt = StoreError::Corrupt {
            path: "/s/oneshot.json".into(),
            message: "EOF".into(),
        };
        assert_eq!(code(corrupt), FAILED);
        let newer = StoreError::NewerSchema {
            path: "/s/oneshot.json".into(),
            found: 99,
        };
        assert_eq!(code(newer), FAILED);
        let write = StoreError::Io {
            what: "write",
            path: "/s/oneshot.json".into(),
            source: io(),
        };
        assert_eq!(code(write), FAILED);
    }

    #[test]
    fn engine_errors_use_what_they_wrap() {
        assert_eq!(code(EngineError::Store(not_found())), USAGE);
        assert_eq!(code(EngineError::Store(locked())), REFUSED);
        let refused = EngineError::Refused {
            id: "abc".into(),
            state: SessionState::Completed,
            why: "there is nothing left to do".into(),
        };
        assert_eq!(code(refused), REFUSED);
        let read = PolicyError::Read {
            path: PathBuf::from("/x/p.lua"),
            source: io(),
        };
        assert_eq!(code(EngineError::Policy(read)), USAGE);
        assert_eq!(code(EngineError::Usage("x".into())), USAGE);
        let bad = oneshot::pipeline::Redactor::new(&["(".into()], vec![]).unwrap_err();
        assert_eq!(code(EngineError::Redact(bad)), USAGE);
        let log = EngineError::Log {
            id: "abc".into(),
            source: io(),
        };
        assert_eq!(code(log), FAILED);
        assert_eq!(code(EngineError::Runtime("x".into())), FAILED);
        let internal = EngineError::Internal {
            id: "abc".into(),
            message: "x".into(),
        };
        assert_eq!(code(internal), FAILED);
    }

    #[test]
    fn policy_and_trust_errors() {
        let load = PolicyError::Load {
            file: "p.lua".into(),
            line: Some(3),
            message: "unknown key".into(),
        };
        assert_eq!(code(load), USAGE);
        assert_eq!(code(TrustError::NoLocation), USAGE);
        let file = TrustError::File {
            path: "/x/p.lua".into(),
            source: io(),
        };
        assert_eq!(code(file), USAGE);
        let corrupt = TrustError::Corrupt {
            path: "/h/trust.json".into(),
            message: "not json".into(),
        };
        assert_eq!(code(corrupt), FAILED);
        let log = LogError::Read {
            path: "/s/oneshot-log.json".into(),
            source: io(),
        };
        assert_eq!(code(log), FAILED);
    }

    #[test]
    fn the_chain_is_searched_below_context() {
        let e = Err::<(), _>(not_found())
            .context("replay session abc")
            .unwrap_err();
        assert_eq!(for_error(&e), USAGE);
        let e = Err::<(), _>(io()).context("write x").unwrap_err();
        assert_eq!(for_error(&e), FAILED);
        assert_eq!(for_error(&usage("start a session: no task given")), USAGE);
        assert_eq!(for_error(&anyhow::anyhow!("anything else")), FAILED);
    }

    #[test]
    fn outcomes() {
        let outcome = |state| Outcome {
            session_id: "abc".into(),
            state,
            reason: None,
            paused: false,
        };
        assert_eq!(for_outcome(&outcome(SessionState::Completed)), OK);
        assert_eq!(for_outcome(&outcome(SessionState::Failed)), FAILED);
        assert_eq!(for_outcome(&outcome(SessionState::Rejected)), REJECTED);
        assert_eq!(
            for_outcome(&outcome(SessionState::Interrupted)),
            INTERRUPTED
        );
        // Paused at a checkpoint by an interrupt between two processes.
        assert_eq!(
            for_outcome(&outcome(SessionState::AuditPending)),
            INTERRUPTED
        );
    }

    #[test]
    fn the_readme_and_help_show_the_table() {
        let readme = include_str!("../../README.md");
        for (code, name, when) in TABLE {
            let row = format!("| `{code}` | {name} | {when} |");
            assert!(readme.contains(&row), "README.md lacks the row\n{row}");
        }
        let help = help();
        for (code, name, _) in TABLE {
            assert!(help.contains(&format!("\n  {code:<4} {name}")), "{help}");
        }
    }
}
