//! A command line split into argv once, run without a shell, with `{prompt}` filled in per run.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ExecError, Role};

/// The placeholder replaced by the prompt inside any argv element.
pub const PROMPT_PLACEHOLDER: &str = "{prompt}";
/// The placeholder replaced by the path of the file holding the whole prompt (the one
/// `$ONESHOT_PROMPT_FILE` names), for CLIs that read a prompt from a file (`aider
/// --message-file`): any size, nothing on the command line.
pub const PROMPT_FILE_PLACEHOLDER: &str = "{prompt_file}";

/// The largest prompt (in bytes) passed inline: in `$ONESHOT_PROMPT` and as `{prompt}` in argv.
/// Linux refuses a single argv or environment string over 128 KiB (`MAX_ARG_STRLEN`) and all of
/// them together over `ARG_MAX`; 100 KiB leaves room for the rest of the command line and the
/// environment. Larger prompts reach the agent on stdin and in `$ONESHOT_PROMPT_FILE` only.
pub const PROMPT_INLINE_MAX: usize = 100 * 1024;

/// An argv template such as `claude -p {prompt} --output-format stream-json`.
///
/// Split with POSIX shell-word rules but never run through a shell, so a prompt full of quotes,
/// `$` and backticks reaches the program verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandTemplate {
    argv: Vec<String>,
}

impl CommandTemplate {
    /// Splits `cmdline` with shell-word rules. An empty line or an unbalanced quote is an error.
    pub fn parse(cmdline: &str) -> Result<Self, ExecError> {
        let argv = shell_words::split(cmdline).map_err(|e| ExecError::BadQuoting {
            cmdline: cmdline.to_owned(),
            detail: e.to_string(),
        })?;
        Self::from_argv(argv)
    }

    /// Builds a template from words that are already split (no quoting rules applied).
    pub fn from_argv(argv: Vec<String>) -> Result<Self, ExecError> {
        match argv.first() {
            Some(program) if !program.is_empty() => Ok(Self { argv }),
            _ => Err(ExecError::EmptyCommand),
        }
    }

    /// Every word as written, `{prompt}` unfilled.
    pub fn words(&self) -> &[String] {
        &self.argv
    }

    /// The program word as written (a bare name, or a path).
    pub fn program(&self) -> &str {
        &self.argv[0]
    }

    /// argv with every `{prompt}` replaced by `prompt`, also inside longer words such as
    /// `--message={prompt}`.
    pub fn render(&self, prompt: &str) -> Vec<String> {
        self.argv
            .iter()
            .map(|word| word.replace(PROMPT_PLACEHOLDER, prompt))
            .collect()
    }

    /// Whether `{prompt}` appears in argv: such a command cannot take a prompt larger than
    /// [`PROMPT_INLINE_MAX`] on its command line.
    pub fn takes_prompt(&self) -> bool {
        self.argv.iter().any(|w| w.contains(PROMPT_PLACEHOLDER))
    }

    /// Refuses a `task` that this command would need in argv but that does not fit there,
    /// naming the role: checked before a session starts, since every prompt of the session
    /// holds the task.
    pub fn check_task(&self, role: Role, task: &str) -> Result<(), ExecError> {
        if self.takes_prompt() && task.len() > PROMPT_INLINE_MAX {
            return Err(ExecError::TaskTooLargeForArgv {
                role,
                command: self.to_string(),
                task_bytes: task.len(),
            });
        }
        Ok(())
    }

    /// Checks that the program exists and is executable, so the CLI can fail fast (exit 2)
    /// before a session starts.
    pub fn check(&self, workdir: &Path) -> Result<(), ExecError> {
        self.resolve(workdir).map(drop)
    }

    /// [`check`](Self::check), naming the role in the error.
    pub fn check_for(&self, role: Role, workdir: &Path) -> Result<(), ExecError> {
        self.check(workdir).map_err(|e| e.with_role(role))
    }

    /// The absolute path that will be executed.
    ///
    /// A word with a `/` is a path: relative ones are tried against `workdir`, then the current
    /// directory. A bare name is looked up on `PATH`, then in `workdir` (so `fix.sh` next to the
    /// code works without `./`). Resolving here, rather than leaving it to `execvp`, makes a
    /// relative program mean the same thing whatever the child's cwd is.
    pub fn resolve(&self, workdir: &Path) -> Result<PathBuf, ExecError> {
        let program = self.program();
        let candidates: Vec<PathBuf> = if program.contains('/') {
            let p = Path::new(program);
            if p.is_absolute() {
                vec![p.to_path_buf()]
            } else {
                let mut c = vec![workdir.join(p)];
                if let Ok(cwd) = std::env::current_dir() {
                    c.push(cwd.join(p));
                }
                c
            }
        } else {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut c: Vec<PathBuf> = std::env::split_paths(&path)
                .filter(|dir| !dir.as_os_str().is_empty())
                .map(|dir| dir.join(program))
                .collect();
            c.push(workdir.join(program));
            c
        };
        let mut not_executable = None;
        for candidate in candidates {
            match std::fs::metadata(&candidate) {
                Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => {
                    return Ok(absolute(candidate));
                }
                Ok(_) => {
                    not_executable.get_or_insert(candidate);
                }
                Err(_) => {}
            }
        }
        Err(match not_executable {
            Some(path) => ExecError::NotExecutable {
                role: None,
                program: program.to_owned(),
                path,
            },
            None => ExecError::NotFound {
                role: None,
                program: program.to_owned(),
                workdir: workdir.to_path_buf(),
            },
        })
    }
}

fn absolute(path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        return path;
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(&path))
        .unwrap_or(path)
}

impl std::fmt::Display for CommandTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&shell_words::join(&self.argv))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_with_quotes_and_renders_prompt_inside_words() {
        let t =
            CommandTemplate::parse(r#"agent -p "{prompt}" --msg='say: {prompt}!' plain"#).unwrap();
        assert_eq!(t.program(), "agent");
        assert_eq!(
            t.render("it's $HOME"),
            vec![
                "agent",
                "-p",
                "it's $HOME",
                "--msg=say: it's $HOME!",
                "plain"
            ]
        );
    }

    #[test]
    fn empty_and_unbalanced_lines_are_errors() {
        assert!(matches!(
            CommandTemplate::parse("   "),
            Err(ExecError::EmptyCommand)
        ));
        let err = CommandTemplate::parse("agent 'open").unwrap_err();
        assert!(matches!(err, ExecError::BadQuoting { .. }), "{err}");
        assert!(err.to_string().contains("close every quote"));
    }

    #[test]
    fn missing_program_names_role_and_workdir() {
        let dir = tempfile::tempdir().unwrap();
        let t = CommandTemplate::parse("fix-oneshot-missing.sh {prompt}").unwrap();
        let msg = t
            .check_for(Role::Worker, dir.path())
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            format!(
                "find worker command 'fix-oneshot-missing.sh': no such file in PATH or \
                 relative to {}; install it or fix the command line",
                dir.path().display()
            )
        );
    }

    #[test]
    fn finds_path_programs_and_workdir_relative_scripts() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            CommandTemplate::parse("sh -c true")
                .unwrap()
                .check(dir.path())
                .is_ok()
        );
        let script = dir.path().join("fix.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        let rel = CommandTemplate::parse("./fix.sh").unwrap();
        assert!(matches!(
            rel.check(dir.path()),
            Err(ExecError::NotExecutable { .. })
        ));
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            rel.resolve(dir.path()).unwrap(),
            dir.path().join("./fix.sh")
        );
        assert!(
            CommandTemplate::parse("fix.sh")
                .unwrap()
                .check(dir.path())
                .is_ok()
        );
    }
}
