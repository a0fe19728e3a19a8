//! TEMPORARY stand-in for the approve hook's types (replaced by the real module on merge).
#![allow(missing_docs)]
use crate::job::record::{PanelVerdict, Risk};
use std::collections::BTreeMap;
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalResult {
    pub outcome: String,
    pub completed: bool,
    pub verdict: Option<String>,
    pub reason: Option<String>,
    pub confidence: Option<f64>,
    pub diff_stat: String,
    pub files: Vec<String>,
    pub empty_diff: bool,
    pub panel: Vec<PanelVerdict>,
}
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalJob {
    pub id: String,
    pub task: String,
    pub risk: Risk,
    pub step: u32,
    pub max_loops: u32,
    pub counters: BTreeMap<String, u32>,
    pub retries: u32,
    pub empty_diffs: u32,
    pub same_findings: u32,
    pub no_progress_limit: u32,
    pub inputs: BTreeMap<String, String>,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    Approve,
    Human,
    Intervene,
}
#[derive(Debug, Clone, PartialEq)]
pub struct ApproveDecision {
    pub approval: Approval,
    pub reason: Option<String>,
}
pub fn default_approve(result: &ApprovalResult, job: &ApprovalJob) -> ApproveDecision {
    if !result.completed {
        return ApproveDecision {
            approval: Approval::Intervene,
            reason: Some(format!("the session ended {}", result.outcome)),
        };
    }
    if job.no_progress_limit > 0
        && (job.empty_diffs >= job.no_progress_limit || job.same_findings >= job.no_progress_limit)
    {
        return ApproveDecision {
            approval: Approval::Intervene,
            reason: Some("no progress".into()),
        };
    }
    ApproveDecision {
        approval: Approval::Human,
        reason: None,
    }
}
impl super::PolicyHost {
    pub fn approve(
        &self,
        result: &ApprovalResult,
        job: &ApprovalJob,
    ) -> Result<ApproveDecision, super::PolicyError> {
        Ok(default_approve(result, job))
    }
}
