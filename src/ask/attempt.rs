//! One run of the target: started read-only (an agent as an auditor is), its protocol spoken
//! through the same driver the sessions use, tool requests answered by the policy's `permit`
//! when the ask has one, else by the built-in rule for the ask's role, stopped
//! at the timeout; its answer is what its protocol calls the final result (a command's: its
//! stdout).

use super::{AskError, Denial, Permits, Target};
use crate::agent::AnswerSchema;
use crate::agent::Tap;
use crate::executor::{CommandTemplate, Control, Invocation, ProcessEvent, StdinMode, Supervised};
use crate::pipeline::Stream;
use crate::process::Role;
use std::path::Path;
use std::time::Duration;

/// How much of a target's stdout and stderr is kept: an answer is a JSON object, not a file.
const KEEP: usize = 1 << 20;

/// One run.
pub(super) struct Run<'a> {
    pub target: &'a Target,
    pub prompt: &'a str,
    pub schema_text: &'a str,
    pub schema_file: &'a Path,
    pub dir: &'a Path,
    pub timeout: Duration,
    pub env: &'a [(String, String)],
    /// Where the target may go (Landlock), when it is confined.
    pub confine: Option<&'a crate::executor::confine::Confinement>,
    /// Its way out (the egress proxy), when it is confined.
    pub gateway: Option<std::sync::Arc<dyn crate::sandbox::Gateway>>,
    /// The environment it starts from, when it is confined.
    pub base_env: Option<std::sync::Arc<Vec<(std::ffi::OsString, std::ffi::OsString)>>>,
    /// The asking policy's per-agent limits.
    pub limits: crate::sandbox::limits::AgentLimits,
    /// Who answers tool requests; `None`: the built-in rule for `role`.
    pub permit: Option<&'a Permits>,
    /// The role the permit rule answers.
    pub role: Role,
}

impl Run<'_> {
    /// Runs the target once and returns its answer's text; the tool requests it refused are
    /// added to `denied`.
    pub async fn answer(&self, denied: &mut Vec<Denial>) -> Result<String, AskError> {
        let id = format!("ask-{}", uuid::Uuid::new_v4());
        let (invocation, mut tap) = self.invocation(&id)?;
        let running = invocation
            .spawn()
            .map_err(|e| AskError::Start(crate::error::failure(&e)))?;
        let mut sup = running.supervise();
        if let Some(tap) = &mut tap {
            tap.open(self.prompt, &sup);
        }
        let result = self.drive(&mut sup, tap.as_mut(), denied).await;
        // Anything the target started that left its group (it ran with the mark).
        crate::executor::sweep(&id);
        result
    }

    /// What to start, and the reader of its protocol when it is an agent.
    fn invocation(&self, id: &str) -> Result<(Invocation, Option<Tap>), AskError> {
        let (command, mut env, stdin, tap) = match self.target {
            Target::Agent(spec) => {
                let schema = AnswerSchema {
                    text: self.schema_text,
                    file: self.schema_file,
                };
                let launch = spec.launch(Role::Auditor, None, Some(schema));
                let tap = Tap::for_agent(spec, &launch, Role::Auditor, self.dir, None);
                let command = CommandTemplate::from_argv(launch.argv)
                    .map_err(|e| AskError::Start(crate::error::failure(&e)))?;
                (command, launch.env, launch.stdin, Some(tap))
            }
            Target::Command(line) => {
                let command = CommandTemplate::parse(line)
                    .map_err(|e| AskError::Start(crate::error::failure(&e)))?;
                (command, Vec::new(), StdinMode::Prompt, None)
            }
        };
        env.extend(self.env.iter().cloned());
        command
            .check_for(Role::Auditor, self.dir)
            .map_err(|e| AskError::Start(crate::error::failure(&e)))?;
        let invocation = Invocation {
            role: Role::Auditor,
            command,
            prompt: self.prompt.to_string(),
            session_id: id.to_string(),
            iteration: 1,
            workdir: self.dir.to_path_buf(),
            env,
            stdin,
            confine: self.confine.cloned(),
            gateway: self.gateway.clone(),
            base_env: self.base_env.clone(),
            limits: self.limits,
        };
        Ok((invocation, tap))
    }

    /// Reads the run to its end: output through the protocol's reader (its replies and the
    /// answers to its tool requests written back), the timeout enforced.
    async fn drive(
        &self,
        sup: &mut Supervised,
        mut tap: Option<&mut Tap>,
        denied: &mut Vec<Denial>,
    ) -> Result<String, AskError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let mut timed_out = false;
        let mut limited = None;
        let ended = loop {
            tokio::select! {
                ev = sup.events.recv() => match ev {
                    Some(ProcessEvent::Output(stream, bytes)) => {
                        let keep = match stream {
                            Stream::Stdout => &mut stdout,
                            Stream::Stderr => &mut stderr,
                        };
                        if keep.len() < KEEP {
                            keep.extend_from_slice(&bytes);
                        }
                        if let (Some(tap), Stream::Stdout) = (tap.as_deref_mut(), stream) {
                            self.heard(tap, sup, &bytes, denied).await;
                        }
                        sup.recycle(bytes);
                    }
                    Some(ProcessEvent::Exited { code, signal }) => break (code, signal),
                    // Killed already; its exit follows.
                    Some(ProcessEvent::LimitReached(words)) => limited = Some(words),
                    None => break (None, None),
                },
                _ = tokio::time::sleep_until(deadline), if !timed_out => {
                    timed_out = true;
                    sup.control(Control::Stop(Duration::from_secs(2)));
                }
            }
        };
        if timed_out {
            return Err(AskError::Timeout(self.timeout));
        }
        if let Some(words) = limited {
            return Err(AskError::Limit(words));
        }
        let end = tap.map(|t| t.finish()).unwrap_or_default();
        if let Some(f) = end.failure {
            return Err(AskError::Agent(f));
        }
        let answer = end.answer;
        let answer = answer.unwrap_or_else(|| String::from_utf8_lossy(&stdout).into_owned());
        if answer.trim().is_empty() {
            let how = match ended {
                (Some(c), _) => format!("exited with code {c}"),
                (None, Some(s)) => format!("was killed by signal {s}"),
                _ => "ended".to_string(),
            };
            let stderr = String::from_utf8_lossy(&stderr);
            let stderr = stderr.trim();
            let mut from = stderr.len().saturating_sub(2000);
            while !stderr.is_char_boundary(from) {
                from += 1;
            }
            return Err(AskError::NoAnswer {
                how,
                stderr: stderr[from..].to_string(),
            });
        }
        Ok(answer)
    }

    /// Feeds stdout to the agent's reader (its protocol's replies go back there) and answers
    /// its tool requests: the policy's `permit` when the ask has one, else the built-in rule
    /// for the ask's role. The agent waits for each answer, so the output read
    /// meanwhile stays in the pipe.
    async fn heard(
        &self,
        tap: &mut Tap,
        sup: &mut Supervised,
        bytes: &[u8],
        denied: &mut Vec<Denial>,
    ) {
        for (id, tool, input) in tap.hear(bytes, sup).permissions {
            let d = match self.permit {
                Some(p) => p.policy.permit(self.role, &tool, &input, &p.ctx).await,
                None => super::builtin_permit(self.role, &tool, &input, self.dir),
            };
            if !d.allow {
                denied.push(Denial {
                    tool: tool.clone(),
                    reason: d.reason.clone().unwrap_or_default(),
                });
            }
            tap.permit(&id, d.allow, d.reason.as_deref(), &input, sup);
        }
    }
}
