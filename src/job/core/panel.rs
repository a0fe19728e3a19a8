//! A panel's verdicts made one (seed 003 §1.3): whether they pass as the job aggregates them,
//! and the artifact version that keeps them.

use crate::job::events::{HarvestFacts, SessionEnd};
use crate::job::record::{ArtifactVersion, Job, PanelVerdict};

/// Whether the panel passes, and why not.
pub(in crate::job) fn aggregate(
    how: crate::job::record::Aggregate,
    panel: &[PanelVerdict],
) -> (bool, String) {
    let done = panel
        .iter()
        .filter(|v| v.verdict == crate::job::record::PanelWord::Done)
        .count();
    let pass = match how {
        crate::job::record::Aggregate::All => done == panel.len(),
        crate::job::record::Aggregate::Majority => done * 2 > panel.len(),
    };
    let dissent: Vec<String> = panel
        .iter()
        .filter(|v| v.verdict != crate::job::record::PanelWord::Done)
        .map(|v| format!("{} said {}: {}", v.auditor, v.verdict, v.reason))
        .collect();
    (
        pass,
        format!(
            "the panel did not pass ({done} of {} said done, {} needed): {}",
            panel.len(),
            match how {
                crate::job::record::Aggregate::All => "all",
                crate::job::record::Aggregate::Majority => "a majority",
            },
            dissent.join("; ")
        ),
    )
}

/// The artifact version a panel's verdicts add: the harvest's facts with each auditor's
/// verdict and the aggregate (`done` when it passed).
pub(in crate::job) fn panel_artifact(
    job: &Job,
    now: u64,
    facts: &HarvestFacts,
    end: Option<&SessionEnd>,
    panel: &[PanelVerdict],
    passed: bool,
) -> ArtifactVersion {
    ArtifactVersion {
        version: 0,
        step: job.steps,
        at_ms: now,
        session: job.session().map(str::to_string),
        outcome: end.map_or("UNKNOWN".into(), |e| e.outcome.to_string()),
        commit: None,
        diff_hash: facts.diff_hash.clone(),
        diff_stat: facts.diff_stat.clone(),
        files: facts.files.clone(),
        final_message: end.map(|e| e.final_message.clone()).unwrap_or_default(),
        verdict: Some(if passed { "done" } else { "retry" }.into()),
        confidence: None,
        panel: panel.to_vec(),
    }
}
