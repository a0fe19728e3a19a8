//! Jobs for the store benches: made, written and moved on as a runner does, on any store.

use oneshot::job::record::{AuditEntry, Job, JobSpec, Risk, Transition};
use oneshot::job::{JobState, JobStore, JobTrigger};

/// Job `i`, PENDING, its id prefixed by `tag` (so two sets of jobs never collide).
pub fn job(i: usize, tag: &str) -> Job {
    let mut spec = JobSpec::new(
        format!("Fix the parser bug number {i}\nThe tokenizer drops brackets."),
        "/src/project",
        "claude",
        "codex",
    );
    spec.risk = Risk::Medium;
    Job::new(
        format!("job-{tag}{i:08x}"),
        spec,
        JobState::Pending,
        i as u64,
    )
}

/// Writes `j` with its creation's audit entry, sealed as `job create` seals them.
pub fn create(store: &dyn JobStore, j: &Job) {
    let audit = AuditEntry {
        seq: 0,
        at_ms: j.created_ms,
        actor: "bench".into(),
        entity_type: "job".into(),
        entity_id: j.id.clone(),
        action: oneshot::job::record::AuditAction::Create,
        metadata: Default::default(),
    };
    let r = oneshot::job::redactor(None);
    store
        .create(&r.seal(j).expect("seal"), &r.seal(&audit).expect("seal"))
        .expect("create");
}

/// Moves a claimed job to `to` as a runner does (sealing is part of a step's cost).
pub fn advance(store: &dyn JobStore, lease: &oneshot::job::Lease, job: &mut Job, to: JobState) {
    let t = Transition {
        from: job.state(),
        to,
        trigger: JobTrigger::Step,
        reason: None,
        at_ms: 2_000,
        by: lease.runner.clone(),
    };
    job.phase = oneshot::job::JobPhase::of(to, None, None);
    job.updated_ms = 2_000;
    let r = oneshot::job::redactor(None);
    let (job, t) = (r.seal(job).expect("seal"), r.seal(&t).expect("seal"));
    store.advance(lease, &job, Some(&t)).expect("advance");
}
