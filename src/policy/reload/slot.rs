//! `ReloadingPolicy`: the slot the engine holds, swapping in a fresh host when it is safe to.

use super::error::ReloadError;
use super::event::{ReloadEvent, ReloadOptions, UntrustedChange};
use super::mode::ReloadMode;
use super::trust::inside_workdir;
use super::trust::sha256_hex;
use super::watcher::{ChangeSignal, DEBOUNCE, PolicyWatcher};
use crate::policy::PolicyHost;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Hash of each file a generation was built from; `None` when it could not be read, or when
/// its content on disk was already not what the host was built from.
type Snapshot = BTreeMap<PathBuf, Option<String>>;

/// The running policy plus everything needed to replace it safely.
///
/// The engine calls [`poll`](Self::poll) only between hook calls (at transition boundaries and
/// about once a second), so a swap can never happen in the middle of a hook: the host a hook
/// runs on is borrowed from [`current`](Self::current) for the duration of the call.
pub struct ReloadingPolicy {
    host: PolicyHost,
    generation: u32,
    opts: ReloadOptions,
    watcher: Option<PolicyWatcher>,
    loaded: Snapshot,
    /// The watcher reported a change that has not been checked yet.
    dirty: bool,
    untrusted: Vec<UntrustedChange>,
    /// The problems last reported (a failure or untrusted files), still in effect; kept so the
    /// same problem is reported once and not on every poll.
    outstanding: Vec<ReloadEvent>,
}

impl ReloadingPolicy {
    /// Wraps the running `host` (generation `generation`) and starts watching its sources,
    /// unless the mode is [`ReloadMode::Off`] or the host is the builtin policy.
    pub fn new(
        host: PolicyHost,
        generation: u32,
        opts: ReloadOptions,
    ) -> Result<ReloadingPolicy, ReloadError> {
        let resolve = |source| ReloadError::Resolve {
            path: opts.workdir.clone(),
            source,
        };
        // Fail now, not on the first change, if the workdir cannot be resolved.
        std::fs::canonicalize(&opts.workdir).map_err(resolve)?;
        let mut this = ReloadingPolicy {
            host,
            generation,
            opts,
            watcher: None,
            loaded: Snapshot::new(),
            dirty: false,
            untrusted: Vec::new(),
            outstanding: Vec::new(),
        };
        if this.opts.mode == ReloadMode::Off {
            return Ok(this);
        }
        let Some(path) = this.host.path().map(Path::to_path_buf) else {
            return Ok(this);
        };
        let mut loaded = snapshot_with(&path, (this.opts.sources)(&this.host));
        let on_disk = loaded
            .get_mut(&path)
            .expect("snapshot_with includes the policy");
        if !same_content(&this.host, on_disk.as_deref()) {
            // Edited between the load and now: make the first check see it as a change.
            *on_disk = None;
            this.dirty = true;
        }
        let watched = this.watch_list(&loaded);
        let watcher = PolicyWatcher::new(watched, DEBOUNCE)?;
        this.watcher = Some(watcher);
        this.loaded = loaded;
        Ok(this)
    }

    /// The host to ask; valid until the next [`poll`](Self::poll) or
    /// [`reload_now`](Self::reload_now).
    pub fn current(&self) -> &PolicyHost {
        &self.host
    }

    /// The current generation; it goes up by one on each swap and never on a failed attempt.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The reload mode in force.
    pub fn mode(&self) -> ReloadMode {
        self.opts.mode
    }

    /// The files being watched (empty when reload is off or the policy is builtin).
    pub fn watched(&self) -> Vec<&Path> {
        self.loaded.keys().map(PathBuf::as_path).collect()
    }

    /// Resolves when the watcher has a change for [`poll`](Self::poll); never, without one.
    pub fn signal(&self) -> ChangeSignal {
        self.watcher
            .as_ref()
            .map_or_else(ChangeSignal::never, PolicyWatcher::signal)
    }

    /// Checks for a change without blocking and activates it if the mode allows and it
    /// validates. Cheap when nothing happened; while a change waits for trust, each call
    /// re-reads the trust store so trusting it takes effect at the next poll.
    pub fn poll(&mut self) -> Vec<ReloadEvent> {
        let Some(watcher) = &self.watcher else {
            return Vec::new();
        };
        if watcher.take_changed().is_some() {
            self.dirty = true;
        }
        if !self.dirty && self.untrusted.is_empty() {
            return Vec::new();
        }
        self.dirty = false;
        self.check()
    }

    /// Checks the files now, whether or not the watcher has seen anything (tests, benches,
    /// resume). Does nothing when reload is off or the policy is builtin.
    pub fn reload_now(&mut self) -> Vec<ReloadEvent> {
        let Some(watcher) = &self.watcher else {
            return Vec::new();
        };
        let _ = watcher.take_changed();
        self.dirty = false;
        self.check()
    }

    /// The first changed file waiting for trust, if any.
    pub fn pending_untrusted(&self) -> Option<&UntrustedChange> {
        self.untrusted.first()
    }

    /// The problems still in effect (a failed edit, files waiting for trust), for a status
    /// line; empty once the files on disk are the running generation again.
    pub fn outstanding(&self) -> &[ReloadEvent] {
        &self.outstanding
    }

    fn check(&mut self) -> Vec<ReloadEvent> {
        let Some(path) = self.host.path().map(Path::to_path_buf) else {
            return Vec::new();
        };
        let now = snapshot(self.loaded.keys().cloned().collect());
        let changed = differences(&self.loaded, &now);
        if changed.is_empty() {
            // Restored (or merely touched): the running generation is what is on disk.
            self.untrusted.clear();
            self.outstanding.clear();
            return Vec::new();
        }
        let untrusted = self.untrusted_among(&changed);
        if !untrusted.is_empty() {
            return self.report_untrusted(untrusted);
        }
        let host = match (self.opts.validate)(&path, &self.opts.policy) {
            Ok(host) => host,
            Err(e) => {
                let event = ReloadEvent::Failed {
                    error: crate::error::failure(&e),
                    files: changed.keys().cloned().collect(),
                    kept_generation: self.generation,
                };
                self.untrusted.clear();
                return self.report(vec![event]);
            }
        };
        let next = snapshot_with(&path, (self.opts.sources)(&host));
        // What was loaded must be what was vetted: a file rewritten between the check and the
        // load is checked again on the next poll instead of being activated unseen. (A custom
        // loader whose host carries no content hash can only be checked through the files.)
        let main_loaded =
            !host.file_hash().starts_with("sha256:") || same_content(&host, next[&path].as_deref());
        let rewritten = changed
            .iter()
            .any(|(f, h)| next.get(f).is_some_and(|n| n != h));
        if !main_loaded || rewritten {
            self.dirty = true;
            return Vec::new();
        }
        // Files the new content brought in (a newly required module) are vetted like edits.
        let fresh = differences(&self.loaded, &next);
        let untrusted = self.untrusted_among(&fresh);
        if !untrusted.is_empty() {
            return self.report_untrusted(untrusted);
        }
        self.swap(host, next, fresh.into_keys().collect())
    }

    /// What the watcher watches: the sources (`loaded`), then the gates — whose change only
    /// wakes the check; the check itself compares the sources.
    fn watch_list(&self, loaded: &Snapshot) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = loaded.keys().cloned().collect();
        for gate in (self.opts.gates)(&self.host) {
            if !files.contains(&gate) {
                files.push(gate);
            }
        }
        files
    }

    fn swap(&mut self, host: PolicyHost, next: Snapshot, files: Vec<PathBuf>) -> Vec<ReloadEvent> {
        self.host = host;
        self.generation = self.generation.saturating_add(1);
        self.loaded = next;
        self.untrusted.clear();
        self.outstanding.clear();
        let watched = self.watch_list(&self.loaded);
        if let Some(watcher) = &mut self.watcher
            && let Err(e) = watcher.set_files(watched)
        {
            // The new generation is fine; only its later edits may go unnoticed.
            tracing::warn!("{}", crate::error::failure(&e));
        }
        vec![ReloadEvent::Reloaded {
            generation: self.generation,
            hash: self.host.hash().to_string(),
            files,
        }]
    }

    fn untrusted_among(&self, files: &Snapshot) -> Vec<UntrustedChange> {
        files
            .iter()
            // An unreadable file activates nothing; the load will fail and say so.
            .filter_map(|(file, hash)| Some((file, hash.as_ref()?)))
            .filter(|(file, hash)| {
                self.needs_trust(file) && !self.opts.trust.is_trusted(file, hash)
            })
            .map(|(file, hash)| UntrustedChange {
                file: file.clone(),
                hash: hash.clone(),
            })
            .collect()
    }

    fn needs_trust(&self, file: &Path) -> bool {
        match self.opts.mode {
            ReloadMode::Trusted => true,
            ReloadMode::Off => false,
            ReloadMode::Auto => inside_workdir(file, &self.opts.workdir),
        }
    }

    fn report_untrusted(&mut self, untrusted: Vec<UntrustedChange>) -> Vec<ReloadEvent> {
        let events = untrusted.iter().map(ReloadEvent::untrusted).collect();
        self.untrusted = untrusted;
        self.report(events)
    }

    /// Returns `events` unless they are exactly what was last reported.
    fn report(&mut self, events: Vec<ReloadEvent>) -> Vec<ReloadEvent> {
        if events == self.outstanding {
            return Vec::new();
        }
        self.outstanding = events.clone();
        events
    }
}

/// [`snapshot`] of `sources`, plus the policy file itself should `sources` leave it out.
fn snapshot_with(policy: &Path, mut sources: Vec<PathBuf>) -> Snapshot {
    if !sources.iter().any(|s| s == policy) {
        sources.push(policy.to_path_buf());
    }
    snapshot(sources)
}

fn snapshot(files: Vec<PathBuf>) -> Snapshot {
    files
        .into_iter()
        .map(|f| {
            let hash = std::fs::read(&f).ok().map(|b| sha256_hex(&b));
            (f, hash)
        })
        .collect()
}

/// The entries of `now` whose hash differs from `then` (or that `then` lacks).
fn differences(then: &Snapshot, now: &Snapshot) -> Snapshot {
    now.iter()
        .filter(|(f, h)| then.get(*f) != Some(*h))
        .map(|(f, h)| (f.clone(), h.clone()))
        .collect()
}

/// Whether a file with full hash `full` is the content `host` was built from. The host keeps
/// a 16-digit prefix of the same sha256, which is enough to tell versions apart.
fn same_content(host: &PolicyHost, full: Option<&str>) -> bool {
    full.is_some_and(|full| full.starts_with(host.file_hash()))
}
