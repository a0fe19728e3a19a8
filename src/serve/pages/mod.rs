//! The dashboard's pages, rendered on the server from the job store (and the state
//! directory's sessions): the board, a job's page, a session's page and the inbox of what
//! waits for a human. Each function returns a whole HTML5 document in which every text read
//! from the store is escaped; their one script, [`LIVE_JS`], only keeps them live.
//! What they show is what the store holds — a state is never inferred — and whether anyone is
//! working on a job is judged by the store's clock, saying *stale* or *unknown* when it must.
//!
//! The server (another part of [`crate::serve`]) routes `/` to [`board_with_sessions`],
//! `/jobs/{id}` to [`job`], `/sessions/{id}` to [`session`], `/inbox` to [`inbox`] and
//! `/assets/style.css` to [`STYLE`]; a page's forms POST to
//! `/jobs/{id}/{verb}` with the fields `forms.rs` describes: `state`, `attempt` and
//! `diff_hash` binding the verb to what the page showed; a reject adds `feedback` and
//! `comments` (`file:line: text` lines).

mod account;
#[cfg(test)]
mod account_tests;
mod board;
mod decisions;
mod diff;
#[cfg(test)]
mod diff_tests;
mod forms;
mod hook;
mod html;
mod inbox;
mod job;
#[cfg(test)]
mod job_sections_tests;
mod liveness;
mod policy;
mod runners;
mod sessions;
#[cfg(test)]
mod sessions_tests;
mod spend;
#[cfg(test)]
mod tests;
mod time;
mod timeline;
mod trail;

pub(crate) use account::Account;

use crate::job::store::{JobStore, JobStoreError};
use crate::store::StoreError;
use std::path::Path;

/// Who is looking, and what their token lets them do: a form shows only for a verb the
/// viewer's scopes cover (the server checks the scope again on the POST).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewer {
    /// The token's name: shown in the header (and the actor the server audits a verb as).
    pub name: String,
    /// The `operate` scope: resubmit, suspend, resume, cancel.
    pub can_operate: bool,
    /// The `approve` scope: approve, reject.
    pub can_approve: bool,
}

/// The board's filters, as its GET form sends them; a blank field filters nothing.
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct BoardQuery {
    /// Only jobs in this state (any case: `approval_required`).
    pub state: Option<String>,
    /// Only jobs of this risk (`low`, `medium`, `high`).
    pub risk: Option<String>,
    /// Only jobs whose lease names a runner containing this.
    pub runner: Option<String>,
    /// Only jobs whose id, nickname or task contains this (any case).
    pub q: Option<String>,
}

/// Where the board is served.
pub const BOARD_PATH: &str = "/";

/// Where the inbox is served.
pub const INBOX_PATH: &str = "/inbox";

/// Where the agents' spending per day is served.
pub const SPEND_PATH: &str = "/spend";

/// Where [`STYLE`] is served.
pub const STYLE_PATH: &str = "/assets/style.css";

/// The pages' stylesheet, served at [`STYLE_PATH`].
pub const STYLE: &str = include_str!("style.css");

/// Where [`LIVE_JS`] is served.
pub const LIVE_JS_PATH: &str = "/assets/live.js";

/// The pages' one script: it keeps a page in step with its live stream (`crate::serve`'s
/// `/events` routes) and shows the connection badge. A page works without it, as a snapshot.
pub const LIVE_JS: &str = include_str!("live.js");

/// Where the board's live stream is served.
pub const BOARD_EVENTS_PATH: &str = "/events";

/// The board: every job grouped by state with counts, filtered by `query`, each with the
/// runner holding it and its heartbeat age (or *stale* / *unknown*), and the runners panel.
/// Fails only when the store cannot list the jobs.
pub fn board(
    store: &dyn JobStore,
    query: &BoardQuery,
    viewer: &Viewer,
) -> Result<String, JobStoreError> {
    board::render(store, query, viewer, None)
}

/// [`board`], with a section listing the sessions under `state_dir` (`oneshot list`'s):
/// each with its state, task, age and whether a live oneshot drives it (*stale* when the one
/// that did is gone mid-step, *unknown* when its state file does not read).
pub fn board_with_sessions(
    store: &dyn JobStore,
    query: &BoardQuery,
    viewer: &Viewer,
    state_dir: &Path,
) -> Result<String, JobStoreError> {
    board::render(store, query, viewer, Some(state_dir))
}

/// Session `id`'s page (an id or unique prefix) under `state_dir`: its state, who drives it,
/// its policy, a stop form when a live oneshot drives it and `viewer` may operate, and its
/// activity log. [`StoreError::NotFound`] / [`StoreError::Ambiguous`] when `id` names no
/// session / several.
pub fn session(state_dir: &Path, id: &str, viewer: &Viewer) -> Result<String, StoreError> {
    sessions::render(state_dir, id, viewer)
}

/// Where session `id`'s page is served (its stop is a POST to this path + `/stop`).
pub fn session_path(id: &str) -> String {
    sessions::session_path(id)
}

/// Job `id`'s page (an id or a unique prefix): spec, state and reason, lease, the action
/// forms `viewer` may use, attempts with the agents' accounts, history, decisions and audit
/// trail. [`JobStoreError::NotFound`] / [`JobStoreError::Ambiguous`] when `id` names no job /
/// several.
///
/// The diff against the job's base is read from its workspace when it is on this machine
/// (`state_dir`, as `job diff` judges it), with a file list linking to each file's hunks.
pub fn job(
    store: &dyn JobStore,
    id: &str,
    viewer: &Viewer,
    state_dir: &Path,
) -> Result<String, JobStoreError> {
    job::render(store, id, viewer, state_dir)
}

/// The inbox: the jobs waiting for a human (APPROVAL_REQUIRED, INTERVENTION_REQUIRED), the
/// longest wait first, each with how long it has waited.
pub fn inbox(store: &dyn JobStore, viewer: &Viewer) -> Result<String, JobStoreError> {
    inbox::render(store, viewer)
}

/// The agents' spending — turns, tokens, dollars (estimates) — per day over the last two
/// weeks and per job, from the sessions' journals in the store.
pub fn spend(store: &dyn JobStore, viewer: &Viewer) -> Result<String, JobStoreError> {
    spend::render(store, viewer)
}
