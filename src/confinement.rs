//! What an agent of a session (or of an `ask`) is confined to: oneshot's own files hidden —
//! the sealing key, the trust store, the state directories — and writes allowed in the workdir
//! (with its repository's git metadata), temp dirs, devices and the agent CLIs' config and
//! caches under the home directory.

use crate::agent::AgentKind;
use crate::executor::confine::Confinement;
use crate::process::{NetworkMode, Sandbox};
use std::path::{Path, PathBuf};

/// Directories under the home directory the agent CLIs (and the tools they run) keep their
/// config, sessions and caches in.
const HOME_WRITABLE: &[&str] = &[
    ".claude",
    ".claude.json",
    ".codex",
    ".gemini",
    ".aider",
    ".cline",
    ".cache",
    ".npm",
    ".config",
    ".local/share",
    ".local/state",
    ".cargo",
];

/// The confinement of an agent working in `workdir`, kept away from `hidden` (the session
/// store, the trust store: what the caller knows of) besides the sealing key and oneshot's own
/// user directories. With `namespaces` the hidden paths are masked in the agent's own mount
/// namespace and the whole home directory is writable; without, Landlock alone hides them and
/// only the CLIs' own directories under it are (made when missing, so that a first run can
/// write there).
pub fn for_agents(
    workdir: &Path,
    hidden: &[PathBuf],
    kinds: &[AgentKind],
    namespaces: bool,
) -> Confinement {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let mut hidden = hidden.to_vec();
    hidden.extend(crate::store::default_key_path(var));
    // A state directory named for every oneshot started from here (an ask's target, run
    // by `oneshot ask`, sees no `--state-dir`).
    hidden.extend(
        var("ONESHOT_STATE_DIR")
            .map(PathBuf::from)
            .filter(|d| !left_reachable(d, workdir)),
    );
    // oneshot's own directories, whatever is in them now or later. Made when missing, so an
    // agent cannot make one first (a trust store of its own, say).
    for (xdg, fallback) in [
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CONFIG_HOME", ".config"),
    ] {
        if let Some(dir) = crate::paths::user_dir(&var, xdg, fallback) {
            let ours = dir.join("oneshot");
            // A best effort: when it cannot be made, an agent cannot make it either.
            let _ = crate::store::create_private_dir(&ours);
            hidden.push(ours);
        }
    }
    let home = var("HOME").map(PathBuf::from);
    let mut writable = git_dirs(workdir);
    writable.push(std::env::temp_dir());
    writable.extend(["/tmp", "/var/tmp", "/dev"].map(PathBuf::from));
    if let Some(home) = &home {
        if namespaces {
            // Its new entries too (`~/go`, `~/.gitconfig`): what is ours there is masked.
            writable.push(home.clone());
        } else {
            writable.extend(HOME_WRITABLE.iter().map(|d| home.join(d)));
        }
    }
    for kind in kinds {
        for dir in own_dirs(*kind, home.as_deref(), &var) {
            // Landlock grants only what exists: the CLI's first run makes it otherwise, in a
            // home directory it may not write.
            let _ = crate::store::create_private_dir(&dir);
            writable.push(dir);
        }
    }
    Confinement {
        hidden,
        writable,
        workdir: Some(workdir.to_path_buf()),
        namespaces,
    }
}

/// Whether the state dir `dir` is left reachable to agents working in `workdir`: when it lies
/// inside the workdir. Landlock cannot take a right back below a granted directory, so hiding
/// it would leave the agents unable to create anything at the workdir's top; the workdir wins
/// (the key stays hidden, so the seal still holds), and the caller tells the user.
pub(crate) fn left_reachable(dir: &Path, workdir: &Path) -> bool {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    real(dir).starts_with(real(workdir))
}

/// How agents are confined when the user wants it `on`, the machine offers Landlock as
/// `machine` ([`crate::executor::confine::available`]) and namespaces as `namespaces`
/// ([`crate::sandbox::namespace::available`]), and the one warning to give: agents that run
/// with less than namespaces though the user did not turn the sandbox off.
pub fn decide(
    on: bool,
    machine: Sandbox,
    namespaces: Result<(), String>,
    network: NetworkMode,
) -> (Sandbox, Option<String>) {
    if !on {
        return (Sandbox::Off, None);
    }
    let landlock = match &machine {
        Sandbox::Landlock { abi } => Some(*abi),
        _ => None,
    };
    let refused = match namespaces {
        Ok(()) => return (Sandbox::Namespaces { landlock, network }, None),
        Err(why) => why,
    };
    match machine {
        Sandbox::Landlock { .. } => {
            let warning = format!(
                "sandbox: namespaces unavailable ({refused}); the agents are confined by \
                 Landlock alone, so they cannot make new entries in $HOME (~/go, ~/.gitconfig, \
                 ~/.cache/…) and their network is not confined to the policy's allowlist. To \
                 allow unprivileged user namespaces: `sysctl kernel.unprivileged_userns_clone=1` \
                 (Debian), `sysctl kernel.apparmor_restrict_unprivileged_userns=0` (Ubuntu 24.04 \
                 and later), or a user.max_user_namespaces above 0"
            );
            (machine, Some(warning))
        }
        Sandbox::Unavailable { .. } => {
            let warning = format!(
                "sandbox {machine}; a kernel with Landlock (5.13+) confines them (--sandbox off \
                 says you know, and silences this)"
            );
            (machine, Some(warning))
        }
        other => (other, None),
    }
}

/// Where the CLI of `kind` keeps its config, sessions and caches.
fn own_dirs(
    kind: AgentKind,
    home: Option<&Path>,
    var: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Vec<PathBuf> {
    (kind.def().own_dir)(home, var).into_iter().collect()
}

/// The git metadata a workdir's commits write to: the `.git` of the repository holding it,
/// and for a worktree (a `.git` file) its own directory and the repository's shared one.
fn git_dirs(workdir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Some(top) = workdir.ancestors().find(|d| d.join(".git").exists()) else {
        return out;
    };
    let dot_git = top.join(".git");
    if dot_git.is_dir() {
        out.push(dot_git);
        return out;
    }
    // A worktree: `gitdir: PATH` names its private directory; its `commondir` file names the
    // repository's, relative to it.
    let Ok(text) = std::fs::read_to_string(&dot_git) else {
        return out;
    };
    let Some(gitdir) = text.lines().find_map(|l| l.strip_prefix("gitdir:")) else {
        return out;
    };
    let gitdir = top.join(gitdir.trim());
    if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir")) {
        out.push(gitdir.join(common.trim()));
    }
    out.push(gitdir);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_win_and_their_refusal_says_what_is_lost() {
        let landlock = Sandbox::Landlock { abi: 7 };
        assert_eq!(
            decide(true, landlock.clone(), Ok(()), NetworkMode::Policy),
            (
                Sandbox::Namespaces {
                    landlock: Some(7),
                    network: NetworkMode::Policy
                },
                None
            )
        );
        let (s, warning) = decide(
            true,
            landlock.clone(),
            Err("EPERM".into()),
            NetworkMode::Policy,
        );
        assert_eq!(s, landlock);
        let warning = warning.unwrap();
        assert!(
            warning.contains("EPERM") && warning.contains("$HOME"),
            "{warning}"
        );
        assert_eq!(
            decide(false, landlock, Ok(()), NetworkMode::Open),
            (Sandbox::Off, None)
        );
    }

    #[test]
    fn a_kernel_without_landlock_gives_one_warning_and_off_gives_none() {
        let none = Sandbox::Unavailable {
            why: "this kernel has no Landlock".into(),
        };
        let refused = || Err("refused".to_string());
        let (s, warning) = decide(true, none.clone(), refused(), NetworkMode::Policy);
        assert_eq!(s, none);
        let warning = warning.expect("a warning");
        assert!(warning.contains("agents run unconfined"), "{warning}");
        assert!(warning.contains("this kernel has no Landlock"), "{warning}");
        assert!(warning.contains("--sandbox off"), "{warning}");
        assert_eq!(
            decide(false, none.clone(), refused(), NetworkMode::Policy),
            (Sandbox::Off, None)
        );
        assert_eq!(
            decide(true, none, Ok(()), NetworkMode::None),
            (
                Sandbox::Namespaces {
                    landlock: None,
                    network: NetworkMode::None
                },
                None
            )
        );
    }

    #[test]
    fn each_cli_writes_its_own_config_directory_where_its_environment_puts_it() {
        let home = tempfile::tempdir().unwrap();
        let none = |_: &str| None;
        let gemini = own_dirs(AgentKind::Gemini, Some(home.path()), &none);
        assert_eq!(gemini, [home.path().join(".gemini")]);
        let claude = |v: Option<&str>| {
            let var = move |k: &str| match k {
                "CLAUDE_CONFIG_DIR" => v.map(Into::into),
                _ => None,
            };
            own_dirs(AgentKind::Claude, Some(home.path()), &var)
        };
        assert_eq!(claude(None), [home.path().join(".claude")]);
        assert_eq!(claude(Some("/x/c")), [PathBuf::from("/x/c")]);
        assert!(own_dirs(AgentKind::Aider, None, &none).is_empty());
    }
}
