//! Everything that can go wrong while starting, stopping or inspecting an agent process.

use std::path::PathBuf;

use super::Role;

/// An executor error. Messages are lowercase fragments that read after "failed to …", end with
/// what to do next, and leave the OS error to the chain ([`crate::error`]).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The agent's Landlock ruleset could not be made.
    #[error(
        "{message}; the {role} was not started (run with --sandbox off to run agents unconfined)"
    )]
    Confine {
        /// Worker or auditor.
        role: Role,
        /// What went wrong.
        message: String,
    },

    /// The command line has no words.
    #[error("run an empty command line: give the program to run, e.g. `claude -p {{prompt}}`")]
    EmptyCommand,

    /// shell-word splitting failed (an unbalanced quote or a trailing backslash).
    #[error("split command line `{cmdline}`: {detail}; close every quote and escape")]
    BadQuoting {
        /// The line as given.
        cmdline: String,
        /// What shell-words reported.
        detail: String,
    },

    /// The program is neither on `PATH` nor a file relative to the workdir or current directory.
    #[error(
        "find {}command '{program}': no such file in PATH or relative to {}; install it or fix \
         the command line",
        role_prefix(*.role),
        .workdir.display()
    )]
    NotFound {
        /// The role the command was meant for, when known (worded into the message).
        role: Option<Role>,
        /// The program as written in the command line.
        program: String,
        /// The workdir relative paths were tried against.
        workdir: PathBuf,
    },

    /// The program exists but cannot be executed.
    #[error(
        "run {}command '{program}': {} is not an executable file; check it or `chmod +x` it",
        role_prefix(*.role),
        .path.display()
    )]
    NotExecutable {
        /// The role the command was meant for, when known.
        role: Option<Role>,
        /// The program as written in the command line.
        program: String,
        /// Where it was found.
        path: PathBuf,
    },

    /// The workdir does not exist or is not a directory.
    #[error("use workdir {}: it is not an existing directory; create it or pass another", .path.display())]
    Workdir {
        /// The workdir as given.
        path: PathBuf,
    },

    /// `argv` plus environment exceed the kernel's limit (E2BIG): the command line or the
    /// environment is huge (a prompt over [`PROMPT_INLINE_MAX`](super::PROMPT_INLINE_MAX) never
    /// goes there).
    #[error(
        "start '{program}': its arguments and environment are larger than the system allows \
         (E2BIG; the prompt is {prompt_bytes} bytes); shorten the command line or the environment"
    )]
    PromptTooLarge {
        /// The program being started.
        program: String,
        /// Size of the prompt.
        prompt_bytes: usize,
    },

    /// The task is too large for a command that takes it as `{prompt}` in argv.
    #[error(
        "pass the {task_bytes}-byte task to the {role} command `{command}` as {{prompt}}: one \
         command-line argument holds at most {max} bytes; remove {{prompt}} from the command and \
         let it read the prompt from stdin or from the file named by $ONESHOT_PROMPT_FILE",
        max = super::PROMPT_INLINE_MAX
    )]
    TaskTooLargeForArgv {
        /// Which command.
        role: Role,
        /// The command line.
        command: String,
        /// Size of the task.
        task_bytes: usize,
    },

    /// The private prompt file (`$ONESHOT_PROMPT_FILE`) could not be written.
    #[error("write the prompt file {}; check the space and permissions of the temporary directory (TMPDIR)", .path.display())]
    PromptFile {
        /// The file or its directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// Any other spawn failure.
    #[error("start '{program}'")]
    Spawn {
        /// The program being started.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// A signal could not be sent to a process group we own.
    #[error("signal process group {pgid}")]
    Signal {
        /// The group.
        pgid: i32,
        /// The OS error.
        #[source]
        source: nix::errno::Errno,
    },

    /// A file or directory could not be read while looking for changes.
    #[error("read {} while looking for changed files", .path.display())]
    Scan {
        /// The path that failed.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// A git command failed inside a repository.
    #[error("run `git {args}` in {}: {stderr}; check the repository", .workdir.display())]
    Git {
        /// The git arguments.
        args: String,
        /// Where it ran.
        workdir: PathBuf,
        /// What git printed (or why it could not start).
        stderr: String,
    },
}

fn role_prefix(role: Option<Role>) -> &'static str {
    match role {
        Some(Role::Worker) => "worker ",
        Some(Role::Auditor) => "auditor ",
        None => "",
    }
}

impl ExecError {
    /// Names the role in a not-found / not-executable error so the CLI can say which command
    /// of the session is broken.
    pub fn with_role(self, role: Role) -> Self {
        match self {
            ExecError::NotFound {
                program, workdir, ..
            } => ExecError::NotFound {
                role: Some(role),
                program,
                workdir,
            },
            ExecError::NotExecutable { program, path, .. } => ExecError::NotExecutable {
                role: Some(role),
                program,
                path,
            },
            other => other,
        }
    }
}
