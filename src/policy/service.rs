//! A loaded policy on a thread of its own, asked from any thread.
//!
//! A [`PolicyHost`] holds a Luau state and cannot leave the thread that made it, but an `ask`
//! (a job's panel auditor, `oneshot ask --policy`) may run on any thread of a multi-threaded
//! runtime, and its future must stay `Send`. A [`PolicyService`] loads the policy on a thread it
//! owns and answers questions sent over a channel; its handle is cheap to clone, `Send` and
//! `Sync`. The thread ends when the last handle is dropped.
//!
//! The questions are the host's own calls ([`PolicyHost::permit`],
//! [`PolicyHost::audit_prompt_hook`], [`PolicyHost::verdict`]), so the rules are the ones a
//! session follows, not a second copy. A `permit` fails closed as a session's does: a hook that
//! fails, or a service whose thread is gone, answers a deny that says why.

use super::{
    EgressDecision, EgressHookAnswer, EgressQuery, HookCtx, PermitDecision, PolicyError,
    PolicyHost, PolicyOptions, VerdictDecision,
};
use crate::executor::Role;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, mpsc};

/// A question for the policy's thread.
type Call = Box<dyn FnOnce(&PolicyHost) + Send>;

/// What a question asked of a service whose thread is gone (it panicked) fails with.
pub const SERVICE_GONE: &str = "the policy's thread is gone: it stopped answering";

/// A cloneable, `Send + Sync` handle to a policy loaded on a thread of its own.
#[derive(Clone)]
pub struct PolicyService {
    calls: mpsc::Sender<Call>,
    hash: Arc<str>,
    path: Option<Arc<std::path::Path>>,
}

impl fmt::Debug for PolicyService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyService")
            .field("path", &self.path)
            .field("hash", &self.hash)
            .finish()
    }
}

impl PolicyService {
    /// Loads the policy file at `path` (`None`: the built-in policy) on a new thread; resolves
    /// once it has loaded, or with the load's error.
    pub async fn start(
        path: Option<PathBuf>,
        opts: PolicyOptions,
    ) -> Result<PolicyService, PolicyError> {
        let name = path.as_ref().map(|p| p.display().to_string());
        PolicyService::spawn(name, loader(path, opts)).await
    }

    /// Serves the host `load` makes, made on the service's thread (a host cannot move between
    /// threads). `name` names the policy in the error when no thread can be started.
    pub async fn spawn(
        name: Option<String>,
        load: impl FnOnce() -> Result<PolicyHost, PolicyError> + Send + 'static,
    ) -> Result<PolicyService, PolicyError> {
        let (tell, loaded) = tokio::sync::oneshot::channel();
        let calls = launch(name.clone(), load, move |made| {
            let _ = tell.send(made);
        })?;
        let (hash, path) = loaded.await.map_err(|_| ended_while_loading(name))??;
        Ok(PolicyService { calls, hash, path })
    }

    /// [`PolicyService::start`] for a caller that cannot await — the job core's judge, asked
    /// in the middle of a synchronous step: waits on this thread while the policy loads on
    /// its own.
    pub fn start_blocking(
        path: Option<PathBuf>,
        opts: PolicyOptions,
    ) -> Result<PolicyService, PolicyError> {
        let name = path.as_ref().map(|p| p.display().to_string());
        let (tell, loaded) = mpsc::channel();
        let calls = launch(name.clone(), loader(path, opts), move |made| {
            let _ = tell.send(made);
        })?;
        let (hash, path) = loaded.recv().map_err(|_| ended_while_loading(name))??;
        Ok(PolicyService { calls, hash, path })
    }

    /// Runs `f` on the policy's thread and waits for it on this one ([`PolicyService::call`]
    /// for a caller that cannot await).
    pub(crate) fn call_blocking<T: Send + 'static>(
        &self,
        hook: &str,
        f: impl FnOnce(&PolicyHost) -> Result<T, PolicyError> + Send + 'static,
    ) -> Result<T, PolicyError> {
        let (tell, answer) = mpsc::channel();
        self.post(hook, f, move |v| {
            let _ = tell.send(v);
        })?;
        answer.recv().map_err(|_| gone(hook))?
    }

    /// The policy's content hash, as a session records it (`builtin` for the built-in one).
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The policy file, absolute; `None` for the built-in policy.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    /// Runs `f` on the policy's thread. `hook` names the question in the error when the thread
    /// is gone.
    async fn call<T: Send + 'static>(
        &self,
        hook: &str,
        f: impl FnOnce(&PolicyHost) -> Result<T, PolicyError> + Send + 'static,
    ) -> Result<T, PolicyError> {
        let (tell, answer) = tokio::sync::oneshot::channel();
        self.post(hook, f, move |v| {
            let _ = tell.send(v);
        })?;
        answer.await.map_err(|_| gone(hook))?
    }

    /// Sends `f` to the policy's thread, its answer to `tell`; the error when the thread is
    /// gone.
    fn post<T: Send + 'static>(
        &self,
        hook: &str,
        f: impl FnOnce(&PolicyHost) -> Result<T, PolicyError> + Send + 'static,
        tell: impl FnOnce(Result<T, PolicyError>) + Send + 'static,
    ) -> Result<(), PolicyError> {
        self.calls
            .send(Box::new(move |host: &PolicyHost| tell(f(host))))
            .map_err(|_| gone(hook))
    }

    /// Whether `role`'s agent may use `tool` with `input`: the `permit` hook, or the built-in
    /// rule when the policy has none ([`PolicyHost::permit`]). Never fails: a hook that fails,
    /// or a thread that is gone, is a deny whose reason says so (permit fails closed).
    pub async fn permit(
        &self,
        role: Role,
        tool: &str,
        input: &serde_json::Value,
        ctx: &Arc<HookCtx>,
    ) -> PermitDecision {
        let (tool, input, ctx) = (tool.to_string(), input.clone(), Arc::clone(ctx));
        match self
            .call("permit", move |h| h.permit(role, &tool, &input, &ctx))
            .await
        {
            Ok(d) => d,
            Err(e) => PermitDecision::deny(format!(
                "denied because the permit policy failed: {} (permit fails closed)",
                crate::error::failure(&e)
            )),
        }
    }

    /// Whether an agent may open a connection the policy's `network` lists leave open: the
    /// `egress` hook ([`PolicyHost::egress`]). Never fails: a hook that fails, or a thread that
    /// is gone, is a refusal whose reason says so (egress fails closed).
    pub async fn egress(&self, req: EgressQuery, ctx: &Arc<HookCtx>) -> EgressHookAnswer {
        let ctx = Arc::clone(ctx);
        match self.call("egress", move |h| Ok(h.egress(&req, &ctx))).await {
            Ok(answer) => answer,
            Err(e) => EgressHookAnswer::Decided(EgressDecision {
                allow: false,
                reason: Some(format!(
                    "refused because the egress policy failed: {} (egress fails closed)",
                    crate::error::failure(&e)
                )),
            }),
        }
    }

    /// The policy's `network` lists ([`PolicyHost::network_rules`]); empty lists when the
    /// policy's thread is gone (so only the hook, which then refuses, could allow anything).
    pub async fn network_rules(&self) -> crate::sandbox::egress::NetworkRules {
        self.call("network", |h| Ok(h.network_rules().clone()))
            .await
            .unwrap_or_default()
    }

    /// The policy's per-agent `limits` (`memory`, `pids`, `cpu`); none when the policy's thread
    /// is gone.
    pub async fn agent_limits(&self) -> crate::sandbox::limits::AgentLimits {
        self.call("limits", |h| Ok(h.limits().agent()))
            .await
            .unwrap_or_default()
    }

    /// The policy's `env` lists ([`PolicyHost::env_rules`]); `Err` when the policy's thread is
    /// gone (an environment must not be built as if the policy had passed nothing on purpose).
    pub async fn env_rules(&self) -> Result<crate::sandbox::env::EnvRules, PolicyError> {
        self.call("env", |h| Ok(h.env_rules().clone())).await
    }

    /// The `audit_prompt` hook's answer; `None` when the policy has none or it returned nil
    /// ([`PolicyHost::audit_prompt_hook`]).
    pub async fn audit_prompt_hook(
        &self,
        ctx: &Arc<HookCtx>,
    ) -> Result<Option<String>, PolicyError> {
        let ctx = Arc::clone(ctx);
        self.call("audit_prompt", move |h| h.audit_prompt_hook(&ctx))
            .await
    }

    /// The verdict in an auditor's `output`: the `verdict` hook, or the built-in parser
    /// ([`PolicyHost::verdict`]).
    pub async fn verdict(
        &self,
        output: &str,
        ctx: &Arc<HookCtx>,
    ) -> Result<VerdictDecision, PolicyError> {
        let (output, ctx) = (output.to_string(), Arc::clone(ctx));
        self.call("verdict", move |h| h.verdict(&output, &ctx))
            .await
    }
}

/// What a loaded service reports: its hash and file.
type Made = Result<(Arc<str>, Option<Arc<std::path::Path>>), PolicyError>;

/// Starts the service's thread: it loads the host with `load`, reports the outcome through
/// `tell`, then answers calls until the last handle is dropped.
fn launch(
    name: Option<String>,
    load: impl FnOnce() -> Result<PolicyHost, PolicyError> + Send + 'static,
    tell: impl FnOnce(Made) + Send + 'static,
) -> Result<mpsc::Sender<Call>, PolicyError> {
    let (calls, inbox) = mpsc::channel::<Call>();
    std::thread::Builder::new()
        .name("oneshot-policy".into())
        .spawn(move || {
            let host = match load() {
                Ok(host) => host,
                Err(e) => return tell(Err(e)),
            };
            tell(Ok((
                Arc::<str>::from(host.hash()),
                host.path().map(Arc::<std::path::Path>::from),
            )));
            while let Ok(call) = inbox.recv() {
                call(&host);
                // `oneshot.log` lines went to the trace as they were written; nothing else
                // reads them here, so they must not pile up.
                host.take_logs();
            }
        })
        .map_err(|e| PolicyError::Load {
            file: name.unwrap_or_else(|| "the built-in policy".into()),
            line: None,
            message: format!("cannot start a thread for the policy: {e}"),
        })?;
    Ok(calls)
}

/// Loads the policy file at `path`, or the built-in policy.
fn loader(
    path: Option<PathBuf>,
    opts: PolicyOptions,
) -> impl FnOnce() -> Result<PolicyHost, PolicyError> + Send + 'static {
    move || PolicyHost::load_or_builtin(path.as_deref(), opts)
}

/// What a question asked of a service whose thread is gone fails with.
fn gone(hook: &str) -> PolicyError {
    PolicyError::Runtime {
        hook: hook.to_string(),
        message: SERVICE_GONE.to_string(),
    }
}

fn ended_while_loading(name: Option<String>) -> PolicyError {
    PolicyError::Load {
        file: name.unwrap_or_else(|| "the built-in policy".into()),
        line: None,
        message: "the policy's thread ended while it loaded".into(),
    }
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;
