//! The engine's own records in `oneshot-log.json` (the pipeline writes the `activity` ones).

use crate::executor::Role;
use crate::machine::SessionState;
use serde::Serialize;

/// `{"type":"state_change", …}`, fsynced with the state file at every transition.
#[derive(Debug, Serialize)]
pub(crate) struct StateChange<'a> {
    pub ts: u64,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub from: SessionState,
    pub to: SessionState,
    pub iteration: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<&'a str>,
    pub policy_hash: &'a str,
    pub generation: u32,
}

/// `{"type":"process", …}`: a process started or ended.
#[derive(Debug, Serialize)]
pub(crate) struct ProcessRecord<'a> {
    pub ts: u64,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub event: &'static str,
    pub role: Role,
    pub iteration: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
}

/// `{"type":"session", …}` (created, resumed) and `{"type":"warning", …}` records.
#[derive(Debug, Serialize)]
pub(crate) struct Note<'a> {
    pub ts: u64,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_hash: Option<&'a str>,
}
