//! The keys a config file may hold: the long flags they mirror, and what kind of value each
//! takes.

/// One config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// `worker`: the worker agent, `AGENT[:MODEL]` (or `cmd` for `worker-cmd`).
    Worker,
    /// `auditor`: the auditor agent, `AGENT[:MODEL]` (or `cmd` for `auditor-cmd`).
    Auditor,
    /// `worker-cmd`: the worker's command line.
    WorkerCmd,
    /// `auditor-cmd`: the auditor's command line.
    AuditorCmd,
    /// `policy`: the policy file.
    Policy,
    /// `max-iterations`: the iteration budget, overriding the policy's.
    MaxIterations,
    /// `timeout`: the worker's wall-clock timeout, overriding the policy's.
    Timeout,
    /// `inactivity-timeout`: the silence that stops an agent, overriding the policy's.
    InactivityTimeout,
    /// `state-dir`: where sessions are stored.
    StateDir,
    /// `hook-budget`: the wall-clock budget of one policy hook call.
    HookBudget,
    /// `policy-path`: extra directories policy modules are loaded from.
    PolicyPath,
    /// `policy-reload`: when an edited policy is loaded into a running session.
    PolicyReload,
    /// `sandbox`: whether the agents are confined (Landlock) away from oneshot's files.
    Sandbox,
    /// `network`: what the agents' network is (`policy`, `none`, `open`).
    Network,
    /// `check`: commands run after the worker and before the auditor (a string or an array).
    Check,
    /// `namer`: who `job create` asks for a branch name and nickname, `AGENT[:MODEL]` or a
    /// `[targets.NAME]`.
    Namer,
    /// `store`: where `oneshot job …` and `oneshot store` keep jobs — a SQLite file's path or
    /// a `postgres://` URL.
    Store,
}

/// Every key, in the order `oneshot config` shows them.
pub const KEYS: [Key; 17] = [
    Key::Worker,
    Key::Auditor,
    Key::WorkerCmd,
    Key::AuditorCmd,
    Key::Policy,
    Key::MaxIterations,
    Key::Timeout,
    Key::InactivityTimeout,
    Key::StateDir,
    Key::HookBudget,
    Key::PolicyPath,
    Key::PolicyReload,
    Key::Sandbox,
    Key::Network,
    Key::Check,
    Key::Namer,
    Key::Store,
];

/// What a key's value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A string.
    Text,
    /// A string naming a file or directory; relative to the config file's directory.
    Path,
    /// A path or an array of paths.
    Paths,
    /// A whole number of at least 1.
    Count,
    /// A duration string (`"90s"`, `"5m"`) or a number of seconds.
    Duration,
    /// `auto`, `trusted` or `off`.
    Reload,
    /// `true`/`false`, or `"on"`/`"off"`.
    Switch,
    /// `policy`, `none` or `open`.
    Network,
    /// A string or an array of strings (command lines).
    Texts,
    /// A job store: a `postgres://` URL (kept as text) or a file path (relative to the config
    /// file's directory).
    Store,
}

impl Key {
    /// The key as written in a file (and as its long flag, without `--`).
    pub fn name(self) -> &'static str {
        match self {
            Key::Worker => "worker",
            Key::Auditor => "auditor",
            Key::WorkerCmd => "worker-cmd",
            Key::AuditorCmd => "auditor-cmd",
            Key::Policy => "policy",
            Key::MaxIterations => "max-iterations",
            Key::Timeout => "timeout",
            Key::InactivityTimeout => "inactivity-timeout",
            Key::StateDir => "state-dir",
            Key::HookBudget => "hook-budget",
            Key::PolicyPath => "policy-path",
            Key::PolicyReload => "policy-reload",
            Key::Sandbox => "sandbox",
            Key::Network => "network",
            Key::Check => "check",
            Key::Namer => "namer",
            Key::Store => "store",
        }
    }

    /// The environment variable that sets it.
    pub fn env(self) -> &'static str {
        match self {
            Key::Worker => "ONESHOT_WORKER",
            Key::Auditor => "ONESHOT_AUDITOR",
            Key::WorkerCmd => "ONESHOT_WORKER_CMD",
            Key::AuditorCmd => "ONESHOT_AUDITOR_CMD",
            Key::Policy => "ONESHOT_POLICY",
            Key::MaxIterations => "ONESHOT_MAX_ITERATIONS",
            Key::Timeout => "ONESHOT_TIMEOUT",
            Key::InactivityTimeout => "ONESHOT_INACTIVITY_TIMEOUT",
            Key::StateDir => "ONESHOT_STATE_DIR",
            Key::HookBudget => "ONESHOT_HOOK_BUDGET",
            Key::PolicyPath => "ONESHOT_POLICY_PATH",
            Key::PolicyReload => "ONESHOT_POLICY_RELOAD",
            Key::Sandbox => "ONESHOT_SANDBOX",
            Key::Network => "ONESHOT_NETWORK",
            Key::Check => "ONESHOT_CHECK",
            Key::Namer => "ONESHOT_NAMER",
            Key::Store => "ONESHOT_STORE",
        }
    }

    /// The key named `name`.
    pub fn from_name(name: &str) -> Option<Key> {
        KEYS.into_iter().find(|k| k.name() == name)
    }

    pub(crate) fn kind(self) -> Kind {
        match self {
            Key::Worker | Key::Auditor | Key::WorkerCmd | Key::AuditorCmd | Key::Namer => {
                Kind::Text
            }
            Key::Policy | Key::StateDir => Kind::Path,
            Key::PolicyPath => Kind::Paths,
            Key::MaxIterations => Kind::Count,
            Key::Timeout | Key::InactivityTimeout | Key::HookBudget => Kind::Duration,
            Key::PolicyReload => Kind::Reload,
            Key::Sandbox => Kind::Switch,
            Key::Network => Kind::Network,
            Key::Check => Kind::Texts,
            Key::Store => Kind::Store,
        }
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
