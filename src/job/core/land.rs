//! Landing a SUCCESS job's work where it came from, as the job core sees it: a `land` verb the
//! core allows (a SUCCESS job, or one a failed land sent to INTERVENTION_REQUIRED and a human
//! fixed) and answers with [`JobEffect::Land`] — the git work, done at the edge
//! ([`crate::job::workspace::land`]) — whose outcome comes back as [`JobEvent::Landed`]. A landed job
//! keeps its state and records where its work went ([`Landed`]); a land that failed moves it
//! SUCCESS → INTERVENTION_REQUIRED by the trigger `land failed`, with the evidence
//! ([`LandFailure`]) as its reason.

use crate::job::record::{AuditAction, Job};
use crate::job::step::{JobEffect, Step, StepError, VerbWrite};
use crate::job::verbs::{VerbContext, VerbError, audit_entry};
use crate::job::{JobReason, JobState, JobTrigger};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

/// Where a land put the job's work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LandTarget {
    /// A local repository's branch, fast-forwarded to the job's rebased branch.
    Branch {
        /// The base branch (`main`).
        branch: String,
        /// Its commit before the land.
        from: String,
        /// Its commit after: the job's rebased head.
        to: String,
    },
    /// The source's remote: the job's branch, rebased onto the remote's base, pushed there for
    /// a pull request.
    Remote {
        /// The remote's name (`origin`).
        remote: String,
        /// The base branch on the remote (`main`).
        branch: String,
        /// The remote base's commit the job was rebased onto.
        onto: String,
        /// The ref pushed (`refs/heads/oneshot/job-…`).
        pushed_ref: String,
        /// The pushed commit.
        head: String,
        /// What opens the pull request: a URL of the remote's host, or a `git request-pull`
        /// command.
        pull_request: String,
    },
    /// A plain directory: the changed files copied back into it.
    Directory {
        /// The source directory.
        path: PathBuf,
        /// The files written or removed there.
        files: Vec<String>,
    },
}

/// What a land did, as the job keeps it: `job show` says "landed into main at …", and
/// `job cleanup` knows the work is safe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Landed {
    /// Where the work went.
    pub target: LandTarget,
    /// The commits landed (the job's rebased commits), oldest first; empty for a directory, or
    /// for a land that found its work already there (a re-run after a crash).
    #[serde(default)]
    pub commits: Vec<String>,
    /// When (ms since the epoch).
    pub at_ms: u64,
    /// Who landed it.
    pub by: String,
}

impl fmt::Display for Landed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            LandTarget::Branch { branch, to, .. } => {
                write!(f, "landed into {branch} at {}", short(to))
            }
            LandTarget::Remote {
                remote,
                pushed_ref,
                head,
                ..
            } => write!(f, "pushed to {remote} as {pushed_ref} at {}", short(head)),
            LandTarget::Directory { path, files } => write!(
                f,
                "copied back into {} ({} file(s))",
                path.display(),
                files.len()
            ),
        }
    }
}

/// A commit id as people read it.
pub fn short(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}

/// Why a land did not land: the evidence a human needs, kept in the job's reason. The base
/// is untouched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LandFailure {
    /// Rebasing the job's branch onto the base conflicted (and no resolver resolved it).
    Conflict {
        /// What the branch was rebased onto (`main at 1a2b3c4d5e`).
        onto: String,
        /// The files that conflicted.
        files: Vec<String>,
        /// The job's worktree, where a human resolves it.
        worktree: PathBuf,
    },
    /// A resolver's resolution of the conflicts did not hold up against git (the rebase was
    /// aborted).
    Unresolved {
        /// What the branch was rebased onto.
        onto: String,
        /// The files that conflicted.
        files: Vec<String>,
        /// The job's worktree.
        worktree: PathBuf,
        /// What was wrong with the resolution (markers left, a file not reported…).
        problems: Vec<String>,
    },
    /// A check failed on the rebased result.
    Check {
        /// The check's name (its command).
        name: String,
        /// How it ended (`exit status 1`).
        status: String,
        /// The end of its output.
        tail: String,
    },
    /// A plain directory's source changed files the job changed too, since the job's copy.
    SourceChanged {
        /// The source directory.
        path: PathBuf,
        /// The files changed on both sides.
        files: Vec<String>,
    },
}

impl fmt::Display for LandFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LandFailure::Conflict {
                onto,
                files,
                worktree,
            } => write!(
                f,
                "land failed: rebasing onto {onto} conflicts in {}; resolve it in {} (rebase \
                 there, fix, `git rebase --continue`), then `oneshot job land` again",
                files.join(", "),
                worktree.display()
            ),
            LandFailure::Unresolved {
                onto,
                files,
                worktree,
                problems,
            } => write!(
                f,
                "land failed: rebasing onto {onto} conflicts in {}, and the resolver's resolution \
                 was refused ({}); resolve it in {} by hand, then `oneshot job land` again",
                files.join(", "),
                problems.join("; "),
                worktree.display()
            ),
            LandFailure::Check { name, status, tail } => {
                write!(
                    f,
                    "land failed: check `{name}` failed on the rebased result ({status})"
                )?;
                match tail.trim() {
                    "" => Ok(()),
                    t => write!(f, ": {t}"),
                }
            }
            LandFailure::SourceChanged { path, files } => write!(
                f,
                "land failed: {} changed since the job's copy was made, in files the job changed \
                 too: {}; merge them by hand in the job's workspace, then `oneshot job land` again",
                path.display(),
                files.join(", ")
            ),
        }
    }
}

/// How the git work of a land ended, as the edge tells the core.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LandOutcome {
    /// The work is where it belongs.
    Landed {
        /// Where.
        target: LandTarget,
        /// The commits landed.
        commits: Vec<String>,
    },
    /// It did not land; the base is untouched.
    Failed(LandFailure),
}

/// Whether `job` may land now: a SUCCESS job not landed yet, or an INTERVENTION_REQUIRED one
/// whose last move was a failed land (a human fixed it in the workspace). Anything else is
/// refused, saying why.
pub fn may_land(job: &Job) -> Result<(), VerbError> {
    crate::job::next(job.state(), JobTrigger::Land).map_err(|refused| VerbError::Refused {
        id: job.id.clone(),
        refused,
    })?;
    match (job.state(), &job.reason, &job.landed) {
        (JobState::Success, _, Some(landed)) => Err(VerbError::NotLandable {
            id: job.id.clone(),
            why: format!("it is already {landed}"),
        }),
        (JobState::InterventionRequired, Some(JobReason::LandFailed { .. }), _) => Ok(()),
        (JobState::InterventionRequired, reason, _) => Err(VerbError::NotLandable {
            id: job.id.clone(),
            why: format!(
                "INTERVENTION_REQUIRED allows land only after a failed land, and this job is \
                 there because: {}; fix it and `oneshot job resubmit {}`",
                reason
                    .as_ref()
                    .map_or("(no reason recorded)".to_string(), ToString::to_string),
                job.id
            ),
        }),
        _ => Ok(()),
    }
}

impl Step {
    /// The `land` verb: allowed ([`may_land`]), the core asks for the git work.
    pub(in crate::job) fn land(&self) -> Result<Vec<JobEffect>, StepError> {
        may_land(&self.job)?;
        Ok(vec![JobEffect::Land])
    }

    /// What the land's git work did: a landed job keeps its state (or, landed from
    /// INTERVENTION_REQUIRED, is SUCCESS again) and records where its work went; a failed land
    /// moves it to INTERVENTION_REQUIRED with the evidence. Either way one write with its audit
    /// entry (`land`).
    pub(in crate::job) fn landed(
        &mut self,
        now: u64,
        outcome: LandOutcome,
        cx: &VerbContext,
    ) -> Result<Vec<JobEffect>, StepError> {
        may_land(&self.job)?;
        let before = self.job.clone();
        let (transition, audit) = match outcome {
            LandOutcome::Landed { target, commits } => {
                let transition = match before.state() {
                    JobState::Success => None,
                    _ => {
                        let reason = JobReason::Verb {
                            verb: JobTrigger::Land.name().to_string(),
                            actor: cx.actor.clone(),
                            feedback: None,
                        };
                        self.moved(now, JobTrigger::Land, Some(reason), &cx.actor)
                    }
                };
                let landed = Landed {
                    target,
                    commits,
                    at_ms: now,
                    by: cx.actor.clone(),
                };
                let mut audit = audit_entry(&before, AuditAction::Land, JobState::Success, cx);
                audit.metadata.insert("result".into(), "landed".into());
                put(&mut audit.metadata, "landed", &landed);
                self.job.landed = Some(landed);
                self.job.updated_ms = now;
                (transition, audit)
            }
            LandOutcome::Failed(failure) => {
                let reason = JobReason::LandFailed {
                    failure: failure.clone(),
                };
                let t = self.moved(now, JobTrigger::LandFailed, Some(reason), &cx.actor);
                let mut audit = audit_entry(
                    &before,
                    AuditAction::Land,
                    JobState::InterventionRequired,
                    cx,
                );
                audit.metadata.insert("result".into(), "failed".into());
                put(&mut audit.metadata, "failure", &failure);
                (t, audit)
            }
        };
        if let Some(t) = &transition {
            self.job.count(t.trigger.name());
        }
        Ok(vec![JobEffect::Decide(VerbWrite {
            expected: before.state(),
            transition,
            audit,
            revoke: false,
        })])
    }
}

fn put<T: Serialize>(m: &mut serde_json::Map<String, serde_json::Value>, k: &str, v: &T) {
    if let Ok(v) = serde_json::to_value(v) {
        m.insert(k.into(), v);
    }
}
