//! One run of one command: what to start, with which prompt, and where.

use std::path::PathBuf;
use std::process::Stdio;

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;

use super::prompt_file::PromptFile;
use super::identity::identity_of;
use super::{
    CommandTemplate, ExecError, PROMPT_FILE_PLACEHOLDER, PROMPT_INLINE_MAX, Role,
    Running,
};

/// Everything needed to start one agent process.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// Worker or auditor (env `ONESHOT_ROLE`).
    pub role: Role,
    /// The argv template; `{prompt}` is filled in.
    pub command: CommandTemplate,
    /// Delivered on stdin and in the file named by env `ONESHOT_PROMPT_FILE`, whatever its
    /// size; in env `ONESHOT_PROMPT` and as `{prompt}` in argv when it fits there
    /// ([`PROMPT_INLINE_MAX`]).
    pub prompt: String,
    /// env `ONESHOT_SESSION_ID`.
    pub session_id: String,
    /// env `ONESHOT_ITERATION`.
    pub iteration: u32,
    /// The child's working directory; relative program paths are resolved against it.
    pub workdir: PathBuf,
    /// Extra environment, applied before the `ONESHOT_*` variables (which therefore win).
    pub env: Vec<(String, String)>,
    /// What the process reads on stdin.
    pub stdin: StdinMode,
    /// Where the agent may go (namespaces and Landlock, or Landlock alone); `None` runs it
    /// unconfined.
    pub confine: Option<super::confine::Confinement>,
    /// The agent's way out (the egress proxy): with namespaces, the agent gets a network of
    /// its own whose one way out is this; without, it is served on a port of the host's
    /// loopback. `None`: the agent uses the network as oneshot does (`--network open`).
    pub gateway: Option<std::sync::Arc<dyn crate::sandbox::Gateway>>,
    /// The environment the agent starts from in place of oneshot's whole one: oneshot's with
    /// the credentials dropped ([`crate::sandbox::env::filter`]). `None`: oneshot's as it is.
    pub base_env: Option<std::sync::Arc<Vec<(std::ffi::OsString, std::ffi::OsString)>>>,
    /// What the agent may spend (the policy's `limits.memory`, `pids`, `cpu`): a cgroup it
    /// joins before exec, or a watch over its process tree ([`crate::sandbox::limits`]).
    pub limits: crate::sandbox::limits::AgentLimits,
}

/// What an agent process reads on stdin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StdinMode {
    /// The prompt, then end of file: commands and CLIs that read their task from stdin.
    #[default]
    Prompt,
    /// Nothing (end of file at once): CLIs that take the prompt on their command line and
    /// would otherwise append stdin to it (Gemini, Aider).
    Empty,
    /// Kept open for the engine to write to ([`super::Supervised::input`]): CLIs that speak a
    /// protocol on stdin (Claude's stream-json with its control requests). The prompt is not
    /// written; the protocol carries it.
    Open,
}

impl Invocation {
    /// Whether the prompt is too large to stand for `{prompt}` in this command's argv: argv
    /// then gets one line naming `$ONESHOT_PROMPT_FILE` instead (the prompt is whole on stdin
    /// and in the file).
    pub fn prompt_replaced_in_argv(&self) -> bool {
        self.command.takes_prompt() && !fits_inline(&self.prompt)
    }

    /// Starts the process in its own process group, with stdout and stderr piped and the prompt
    /// being written to its stdin by a background task. Must be called inside a tokio runtime.
    ///
    /// On Linux the spawned child is a reaper (see `shim.rs`): a subreaper that forks the agent,
    /// waits for it, kills everything left below it, and exits with the agent's status; it
    /// leads the group, the agent is in it. Its parent-death signal makes it kill the agent and
    /// all its descendants if oneshot dies without running any destructor (kill -9); where the
    /// kernel refuses a subreaper, the agent itself is the child and gets
    /// `PR_SET_PDEATHSIG = SIGKILL`. The kernel fires it when the *thread* that
    /// spawned the child exits, not the process: spawn from a thread that lives as long as the
    /// session (the engine spawns from its own loop: the thread that runs `block_on`, or a
    /// runtime worker thread, which lives as long as the runtime), never from a short-lived
    /// thread such as tokio's blocking pool, whose idle threads exit and take the child along.
    pub fn spawn(&self) -> Result<Running, ExecError> {
        if !self.workdir.is_dir() {
            return Err(ExecError::Workdir {
                path: self.workdir.clone(),
            });
        }
        let program = self
            .command
            .resolve(&self.workdir)
            .map_err(|e| e.with_role(self.role))?;
        let prompt_file = PromptFile::write(&self.prompt, &self.workdir)?;
        let mut argv = if fits_inline(&self.prompt) {
            self.command.render(&self.prompt)
        } else {
            self.command
                .render(&pointer(prompt_file.path(), self.prompt.len()))
        };
        let file_word = prompt_file.path().to_string_lossy();
        for word in &mut argv {
            if word.contains(PROMPT_FILE_PLACEHOLDER) {
                *word = word.replace(PROMPT_FILE_PLACEHOLDER, &file_word);
            }
        }
        let reaper = cfg!(target_os = "linux") && super::shim::available();
        // The agent's limits: a cgroup to join between fork and exec (so everything it starts
        // is inside from its first instruction), or a watch started once it runs.
        let limits = crate::sandbox::limits::prepare(
            &format!("{}-{}-{}", self.session_id, self.role.as_str(), uuid::Uuid::new_v4().simple()),
            &self.limits,
        )
        .map_err(|e| ExecError::Confine {
            role: self.role,
            message: format!("limit the agent's memory and processes: {e}"),
        })?;
        let join_fds = limits.join_fds();
        // The ruleset is made here, where allocating is fine; the agent only enforces it. It
        // stays open until the child exists.
        #[cfg(target_os = "linux")]
        let ruleset = match &self.confine {
            Some(c) => super::confine::prepare(c).map_err(|e| ExecError::Confine {
                role: self.role,
                message: e.to_string(),
            })?,
            None => None,
        };
        #[cfg(target_os = "linux")]
        let confine_fd = ruleset.as_ref().map_or(-1, super::confine::Prepared::raw);
        // The agent's namespaces, planned here; it enters them between fork and exec.
        #[cfg(target_os = "linux")]
        let namespaces = self.confine.as_ref().filter(|c| c.namespaces);
        #[cfg(target_os = "linux")]
        let mut ns = match namespaces {
            Some(c) => Some(
                crate::sandbox::namespace::Plan::with_forwards(
                    &c.hidden,
                    &c.kept(),
                    self.gateway.is_some(),
                    self.gateway.as_ref().map(|g| g.forwards()).unwrap_or_default(),
                )
                .prepare()
                .map_err(|e| ExecError::Confine {
                    role: self.role,
                    message: format!("confine the agent (namespaces): {e}"),
                })?,
            ),
            None => None,
        };
        #[cfg(not(target_os = "linux"))]
        let namespaces: Option<&super::confine::Confinement> = None;
        // Where the gateway listens: inside the agent's own network namespace, or (without
        // one) on a port of the host's loopback, made here.
        let host_listener = match (&self.gateway, namespaces) {
            (Some(_), None) => Some(
                std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).map_err(|e| {
                    ExecError::Confine {
                        role: self.role,
                        message: format!("open the agent's proxy port on 127.0.0.1: {e}"),
                    }
                })?,
            ),
            _ => None,
        };
        let gateway_env = match &self.gateway {
            Some(g) => {
                let port = match &host_listener {
                    Some(l) => l.local_addr().map(|a| a.port()).unwrap_or_default(),
                    None => crate::sandbox::namespace::AGENT_PROXY_PORT,
                };
                g.argv(&mut argv, port);
                g.env(port)
            }
            None => Vec::new(),
        };
        // Made before the fork: the reaper may not allocate.
        #[cfg(target_os = "linux")]
        let (file, dir) = (c_path(prompt_file.path()), c_path(prompt_file.dir()));
        let mut wrap = CommandWrap::with_new(&program, |cmd| {
            if let Some(base) = &self.base_env {
                cmd.env_clear().envs(base.iter().map(|(k, v)| (k, v)));
            }
            cmd.arg0(&argv[0])
                .args(&argv[1..])
                .current_dir(&self.workdir)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .envs(gateway_env.iter().map(|(k, v)| (k, v)))
                .env("ONESHOT_PROMPT_FILE", prompt_file.path())
                .env("ONESHOT_SESSION_ID", &self.session_id)
                .env("ONESHOT_ITERATION", self.iteration.to_string())
                .env("ONESHOT_ROLE", self.role.as_str())
                .stdin(match self.stdin {
                    StdinMode::Empty => Stdio::null(),
                    StdinMode::Prompt | StdinMode::Open => Stdio::piped(),
                })
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            // No agent can approve its own work: no dashboard token, sign-in link or cookie
            // reaches it, whether inherited or given in the target's own environment.
            for name in crate::token::withheld_env() {
                cmd.env_remove(name);
            }
            for (k, v) in &self.env {
                if k == crate::token::TOKEN_ENV || crate::token::holds_secret(v) {
                    cmd.env_remove(k);
                }
            }
            // Unset rather than inherited when too large: a stale prompt is worse than none.
            if fits_inline(&self.prompt) {
                cmd.env("ONESHOT_PROMPT", &self.prompt);
            } else {
                cmd.env_remove("ONESHOT_PROMPT");
            }
            #[cfg(target_os = "linux")]
            if !join_fds.is_empty() {
                let fds = join_fds.clone();
                // SAFETY: `join_self` writes to descriptors open in this process, and
                // allocates nothing; first, so the reaper and the agent are both inside.
                unsafe {
                    cmd.pre_exec(move || crate::sandbox::limits::join_self(&fds));
                }
            }
            // The plan's address: it lives in this frame until the spawn returns, and the
            // child reads its own copy of it.
            let ns_at = ns.as_ref().map_or(0, |p| p as *const _ as usize);
            #[cfg(target_os = "linux")]
            if reaper {
                // SAFETY: `split` only makes async-signal-safe calls between fork and exec.
                let parent = std::process::id() as libc::pid_t;
                unsafe {
                    cmd.pre_exec(move || {
                        let ns = (ns_at != 0)
                            .then(|| &*(ns_at as *const crate::sandbox::namespace::Prepared));
                        super::shim::split(parent, &file, &dir, confine_fd, ns)
                    });
                }
            } else {
                set_parent_death_signal(cmd);
                if ns_at != 0 {
                    // SAFETY: `enter` only makes async-signal-safe calls between fork and
                    // exec, on a plan that outlives the spawn.
                    unsafe {
                        cmd.pre_exec(move || {
                            crate::sandbox::namespace::enter(
                                &*(ns_at as *const crate::sandbox::namespace::Prepared),
                            )
                        });
                    }
                }
                if confine_fd >= 0 {
                    // SAFETY: `enforce` only makes async-signal-safe calls between fork and
                    // exec, on a ruleset open until the spawn returns.
                    unsafe {
                        cmd.pre_exec(move || super::confine::enforce(confine_fd));
                    }
                }
            }
        });
        // ProcessGroup must come first: KillOnDrop only sets tokio's kill_on_drop, which
        // SIGKILLs the direct child alone. `Running`'s Drop kills the rest of the group.
        wrap.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
        let mut child = wrap.spawn().map_err(|source| {
            if source.raw_os_error() == Some(libc::E2BIG) {
                ExecError::PromptTooLarge {
                    program: self.command.program().to_owned(),
                    prompt_bytes: self.prompt.len(),
                }
            } else {
                ExecError::Spawn {
                    program: self.command.program().to_owned(),
                    source,
                }
            }
        })?;
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .expect("a just-spawned child has a pid");
        // The agent has exec'd (the spawn waits for it): its namespace sent the listener.
        #[cfg(target_os = "linux")]
        let listeners = match ns.as_mut().map(|p| p.take_listener()).transpose() {
            Ok(inside) => inside.flatten().map(|l| (l.proxy, l.forwards)).or(host_listener
                .map(|l| (l, Vec::new()))),
            Err(e) => {
                return Err(ExecError::Confine {
                    role: self.role,
                    message: format!("confine the agent (namespaces): {e}"),
                });
            }
        };
        #[cfg(not(target_os = "linux"))]
        let listeners = host_listener.map(|l| (l, Vec::new()));
        let limits = limits.start(pid);
        let gateway = match (&self.gateway, listeners) {
            (Some(g), Some((l, forwards))) => Some(g.serve(l, forwards)),
            _ => None,
        };
        let identity = identity_of(pid, pid);
        // Take stdin before anything calls `wait`: tokio's `Child::wait` closes stdin first.
        let stdin = child.stdin().take();
        let stdout = child.stdout().take();
        let stderr = child.stderr().take();
        let (stdin_task, stdin) = match self.stdin {
            StdinMode::Prompt => (
                stdin.map(|s| tokio::spawn(write_prompt(s, self.prompt.clone()))),
                None,
            ),
            StdinMode::Open => (None, stdin),
            StdinMode::Empty => (None, None),
        };
        tracing::debug!(role = %self.role, pid, program = %program.display(), "spawned");
        Ok(Running {
            child,
            identity,
            stdout,
            stderr,
            stdin_task,
            stdin,
            reaped: false,
            reaper,
            session_id: self.session_id.clone(),
            _gateway: gateway,
            limits,
            _prompt_file: prompt_file,
        })
    }
}

/// A path as a C string (a path holds no NUL).
#[cfg(target_os = "linux")]
fn c_path(path: &std::path::Path) -> std::ffi::CString {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap_or_default()
}

/// Small enough for `ONESHOT_PROMPT` and argv.
fn fits_inline(prompt: &str) -> bool {
    prompt.len() <= PROMPT_INLINE_MAX
}

/// What `{prompt}` becomes in argv when the prompt does not fit there: one line telling the
/// agent where the whole prompt is. (The task alone always fits: a session whose task does not
/// is refused before it starts; this is for the later prompts that carry output or critique.)
fn pointer(file: &std::path::Path, bytes: usize) -> String {
    format!(
        "Your instructions are {bytes} bytes, too long for a command line. Read them from the \
         file {} (also named by $ONESHOT_PROMPT_FILE) and follow them.",
        file.display()
    )
}

/// Writes the prompt and closes stdin so the child sees EOF. A child that never reads stdin
/// makes the write fail with EPIPE once it exits; that is expected and ignored.
async fn write_prompt(mut stdin: ChildStdin, prompt: String) {
    if let Err(e) = stdin.write_all(prompt.as_bytes()).await
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        tracing::debug!(error = %e, "could not write the prompt to stdin");
    }
}

/// Asks the kernel to SIGKILL the child when the spawning thread dies. If the parent is
/// already gone by the time the child runs this (the race prctl's man page warns about),
/// the child kills itself instead of running orphaned.
#[cfg(target_os = "linux")]
fn set_parent_death_signal(cmd: &mut tokio::process::Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe
    // syscalls (prctl, getppid, raise), allocating nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::raise(libc::SIGKILL);
            }
            Ok(())
        });
    }
}
