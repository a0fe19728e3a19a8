//! Making a job: the front door `oneshot job create` (and an embedding program) calls. The spec
//! is stored as it will be run — the task and inputs without their secrets, no command line
//! holding one — with the audit entry of its creation, in DRAFT or, activated, PENDING.

use crate::job::record::{Job, JobSpec};
use crate::job::store::{JobStore, JobStoreError};
use crate::job::verbs::{self, VerbContext};
use crate::job::{JobState, JobTrigger};

/// How a job is made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Creating {
    /// Who makes it ([`verbs::actor`] for the user running oneshot).
    pub actor: String,
    /// PENDING at once (claimable by a runner), rather than DRAFT.
    pub activate: bool,
    /// Now, ms since the epoch.
    pub now_ms: u64,
}

/// A job made.
#[derive(Debug, Clone, PartialEq)]
pub struct Created {
    /// The job as stored.
    pub job: Job,
    /// What was taken out of the spec before it was stored (`the task`, `input db`): each held
    /// a secret, and is stored and given to the agents without it. Pass secrets through the
    /// environment instead.
    pub redacted: Vec<String>,
}

/// Why no job was made. Nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CreateError {
    /// A player's command line holds a secret: stored without it, a runner could not run it.
    #[error(
        "the {role} command line holds a secret ({shown}); a job stores it without the secret \
         and could not run it — pass secrets through the environment instead (the runner's \
         environment reaches the agents)"
    )]
    SecretInCommand {
        /// `worker`, `auditor` or `panel`.
        role: &'static str,
        /// The command line as it would be stored.
        shown: String,
    },
    /// The remote's URL holds a password or a token: the store would keep it.
    #[error(
        "the remote {shown} holds a password or token in its URL, which the job store would \
         keep and every runner print; give the URL without it and let git find the \
         credentials on each runner (a credential helper, ssh keys, ~/.netrc)"
    )]
    SecretInRemote {
        /// The URL, its secret masked.
        shown: String,
    },
    /// The task is empty.
    #[error("the task is empty")]
    EmptyTask,
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] JobStoreError),
    /// What would be written could not go through the redactor.
    #[error("redact what the job writes: {0}")]
    Seal(#[from] crate::redact::SealError),
    /// Activation was refused (never, for a job just made in DRAFT).
    #[error(transparent)]
    Verb(#[from] verbs::VerbError),
}

impl From<verbs::GiveError> for CreateError {
    fn from(e: verbs::GiveError) -> Self {
        match e {
            verbs::GiveError::Verb(e) => CreateError::Verb(e),
            verbs::GiveError::Store(e) => CreateError::Store(e),
            verbs::GiveError::Seal { source, .. } => CreateError::Seal(source),
        }
    }
}

/// A fresh job id: `job-` and 8 hex digits.
pub fn new_id() -> String {
    format!("job-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

/// Makes job `id` of `spec` in `store` (see the module doc). The spec's players, source and
/// policy are the caller's to have checked (`oneshot job create` checks them all before).
pub fn create(
    store: &dyn JobStore,
    id: &str,
    spec: JobSpec,
    how: &Creating,
) -> Result<Created, CreateError> {
    if spec.task.trim().is_empty() {
        return Err(CreateError::EmptyTask);
    }
    if let Some(url) = &spec.remote
        && crate::job::workspace::holds_secret(url)
    {
        return Err(CreateError::SecretInRemote {
            shown: crate::job::workspace::shown_url(url),
        });
    }
    let (mut spec, redacted) = without_secrets(spec)?;
    if spec.author.is_none() {
        // A remote's job is asked for where it is made: the git identity configured here.
        let here = std::path::Path::new(".");
        let at = if spec.remote.is_some() {
            here
        } else {
            &spec.source
        };
        spec.author = Some(author_of(at, &how.actor));
    }
    // Named from the task as stored: a secret never ends up in a branch name. A plain
    // directory's copy has no branch of the job's; a remote is a git repository.
    let git = spec.remote.is_some()
        || matches!(
            crate::job::workspace::check_source(&spec),
            Ok(crate::job::workspace::SourceKind::Git { .. })
        );
    if git {
        spec.branch = Some(branch(&spec, id));
    }
    let redactor = crate::job::redactor(spec.policy.as_deref());
    let mut job = Job::new(id, spec, JobState::Draft, how.now_ms);
    job.reason = Some(crate::job::JobReason::Created {
        actor: how.actor.clone(),
    });
    let cx = VerbContext {
        actor: how.actor.clone(),
        now_ms: how.now_ms,
        policy_hash: verbs::policy_hash(&job),
        ..Default::default()
    };
    // Recorded as a move into DRAFT from nothing (the entry has no `from`).
    let audit = verbs::audit_entry(
        &job,
        crate::job::record::AuditAction::Create,
        JobState::Draft,
        &cx,
    );
    store.create(&redactor.seal(&job)?, &redactor.seal(&audit)?)?;
    if how.activate {
        verbs::write(store, &job, JobTrigger::Activate, &cx)?;
    }
    Ok(Created {
        job: store.get(id)?,
        redacted,
    })
}

/// Job `id`'s branch: the one `spec` names, else one named from the task, else
/// `oneshot/<id>` — the first the redactor leaves alone. A name that looks like a secret
/// (`…-sk-ant-…`) would be stored redacted, and no longer be the branch's name.
fn branch(spec: &JobSpec, id: &str) -> String {
    let redactor = crate::job::redactor(spec.policy.as_deref());
    spec.branch
        .clone()
        .into_iter()
        .chain([crate::job::naming::branch_from_task(&spec.task, id)])
        .find(|b| redactor.redact(b) == b.as_str())
        .unwrap_or_else(|| format!("{}{id}", crate::job::naming::PREFIX))
}

/// The spec as the store will keep it, and what held a secret: the task and inputs redacted;
/// a command line holding one refused.
fn without_secrets(mut spec: JobSpec) -> Result<(JobSpec, Vec<String>), CreateError> {
    let redactor = crate::job::redactor(spec.policy.as_deref());
    let players = [("worker", &spec.worker), ("auditor", &spec.auditor)]
        .into_iter()
        .chain(spec.panel.iter().map(|p| ("panel", p)));
    for (role, player) in players {
        let shown = redactor.redact(player);
        if shown != player.as_str() {
            return Err(CreateError::SecretInCommand {
                role,
                shown: shown.into_owned(),
            });
        }
    }
    let mut held = Vec::new();
    let task = redactor.redact(&spec.task).into_owned();
    if task != spec.task {
        held.push("the task".to_string());
        spec.task = task;
    }
    for (key, value) in spec.inputs.iter_mut() {
        let redacted = redactor.redact(value).into_owned();
        if redacted != *value {
            held.push(format!("input {key}"));
            *value = redacted;
        }
    }
    Ok((spec, held))
}

/// Who a job's work is committed as: the git identity configured for `source` (the user's, as
/// `git commit` there would use it), else `actor` (`$ONESHOT_ACTOR`, else the OS user) as
/// `actor@localhost`.
pub fn author_of(source: &std::path::Path, actor: &str) -> crate::job::record::Author {
    let git = |key: &str| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(source)
            .args(["config", "--get", key])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let email = git("user.email");
    let name = git("user.name").unwrap_or_else(|| actor.to_string());
    let email = email.unwrap_or_else(|| format!("{}@localhost", name.replace(' ', ".")));
    crate::job::record::Author { name, email }
}
