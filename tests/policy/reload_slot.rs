//! `ReloadingPolicy` against real files and the real OS watcher: edits, broken edits, trust,
//! modes, debounce and module sources. Each test uses its own temp directories.

use crate::common;
use common::poll_for;
use oneshot::policy::{
    PolicyHost, PolicyOptions, ReloadEvent, ReloadMode, ReloadOptions, ReloadingPolicy, TrustStore,
    sha256_hex,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tempfile::TempDir;

fn src(max_iterations: u32) -> String {
    format!("return {{\n  limits = {{ max_iterations = {max_iterations} }},\n}}\n")
}

/// The policy lives in `policy_dir`, the session works in `workdir`; they are the same
/// directory when the test is about a policy the agent could write.
struct World {
    policy: PathBuf,
    workdir: PathBuf,
    trust: TrustStore,
    _dirs: Vec<TempDir>,
}

impl World {
    fn new(policy_inside_workdir: bool) -> World {
        let work = TempDir::new().unwrap();
        let outside = TempDir::new().unwrap();
        let policy_dir = if policy_inside_workdir {
            work.path()
        } else {
            outside.path()
        };
        let policy = policy_dir.join("policy.lua");
        std::fs::write(&policy, src(3)).unwrap();
        World {
            policy,
            workdir: work.path().to_path_buf(),
            trust: TrustStore::at(outside.path().join("state/trust.json")),
            _dirs: vec![work, outside],
        }
    }

    fn options(&self, mode: ReloadMode) -> ReloadOptions {
        let mut opts = ReloadOptions::new(&self.workdir, self.trust.clone());
        opts.mode = mode;
        opts
    }

    fn slot(&self, mode: ReloadMode) -> ReloadingPolicy {
        let host = PolicyHost::load(&self.policy, PolicyOptions::default()).unwrap();
        ReloadingPolicy::new(host, 1, self.options(mode)).unwrap()
    }
}

/// Everything reported over `period`.
fn collect(slot: &mut ReloadingPolicy, period: Duration) -> Vec<ReloadEvent> {
    let deadline = Instant::now() + period;
    let mut all = Vec::new();
    while Instant::now() < deadline {
        all.extend(slot.poll());
        std::thread::sleep(Duration::from_millis(10));
    }
    all
}

/// How editors save: write a sibling temp file, then rename it over the original.
fn save_by_rename(path: &Path, content: &str) {
    let tmp = path.with_extension("lua.swp");
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn max_iterations(slot: &ReloadingPolicy) -> u32 {
    slot.current().limits().max_iterations
}

const SECOND: Duration = Duration::from_secs(1);
const QUIET: Duration = Duration::from_millis(600);

#[test]
fn an_edit_is_a_new_generation_within_a_second() {
    let w = World::new(false);
    let mut slot = w.slot(ReloadMode::Auto);
    let old_hash = slot.current().hash().to_string();
    std::fs::write(&w.policy, src(7)).unwrap();
    let events = poll_for(&mut slot, SECOND);
    let [
        ReloadEvent::Reloaded {
            generation,
            hash,
            files,
        },
    ] = events.as_slice()
    else {
        panic!("expected one reload within a second, got {events:?}");
    };
    assert_eq!(*generation, 2);
    assert_ne!(*hash, old_hash);
    assert_eq!(hash, slot.current().hash());
    assert_eq!(files, std::slice::from_ref(&w.policy));
    assert_eq!(slot.generation(), 2);
    assert_eq!(max_iterations(&slot), 7);
    assert_eq!(events[0].record_type(), "policy_reload");
    assert!(slot.outstanding().is_empty());
}

#[test]
fn editor_saves_by_rename_keep_being_seen() {
    let w = World::new(false);
    let mut slot = w.slot(ReloadMode::Auto);
    save_by_rename(&w.policy, &src(4));
    assert!(matches!(
        poll_for(&mut slot, SECOND).as_slice(),
        [ReloadEvent::Reloaded { generation: 2, .. }]
    ));
    // The rename replaced the inode; a watch on the file itself would be deaf now.
    save_by_rename(&w.policy, &src(5));
    assert!(matches!(
        poll_for(&mut slot, SECOND).as_slice(),
        [ReloadEvent::Reloaded { generation: 3, .. }]
    ));
    assert_eq!(max_iterations(&slot), 5);
}

#[test]
fn a_broken_edit_keeps_the_last_good_generation_and_a_fix_activates() {
    let w = World::new(false);
    let mut slot = w.slot(ReloadMode::Auto);
    let good_hash = slot.current().hash().to_string();
    let broken = "return {\n  limits = {\n    max_iterations = ,\n  },\n}\n";
    std::fs::write(&w.policy, broken).unwrap();
    let events = poll_for(&mut slot, SECOND);
    let [
        event @ ReloadEvent::Failed {
            error,
            files,
            kept_generation,
        },
    ] = events.as_slice()
    else {
        panic!("expected one failure, got {events:?}");
    };
    assert!(error.contains("policy.lua:3"), "{error}");
    assert_eq!(files, std::slice::from_ref(&w.policy));
    assert_eq!(*kept_generation, 1);
    assert_eq!(event.record_type(), "policy_reload_failed");
    assert!(
        event
            .to_string()
            .starts_with("policy edit not activated, generation 1 keeps deciding: failed to load"),
        "{event}"
    );
    assert_eq!(slot.generation(), 1);
    assert_eq!(slot.current().hash(), good_hash);
    assert_eq!(max_iterations(&slot), 3);
    assert_eq!(slot.outstanding(), events.as_slice());

    // Saving the same broken content again is the same failure: reported once.
    std::fs::write(&w.policy, broken).unwrap();
    assert_eq!(collect(&mut slot, QUIET), []);

    std::fs::write(&w.policy, src(9)).unwrap();
    let events = poll_for(&mut slot, SECOND);
    assert!(
        matches!(
            events.as_slice(),
            [ReloadEvent::Reloaded { generation: 2, .. }]
        ),
        "failed attempts must not consume generations: {events:?}"
    );
    assert_eq!(max_iterations(&slot), 9);
    assert!(slot.outstanding().is_empty());
}

#[test]
fn reverting_a_broken_edit_clears_the_failure_without_a_new_generation() {
    let w = World::new(false);
    let mut slot = w.slot(ReloadMode::Auto);
    std::fs::write(&w.policy, "return {\n  nonsense = true,\n}\n").unwrap();
    let events = poll_for(&mut slot, SECOND);
    let [ReloadEvent::Failed { error, .. }] = events.as_slice() else {
        panic!("expected a failure, got {events:?}");
    };
    assert!(error.contains("policy.lua:2"), "{error}");
    std::fs::write(&w.policy, src(3)).unwrap();
    assert_eq!(collect(&mut slot, QUIET), []);
    assert!(slot.outstanding().is_empty());
    assert_eq!(slot.generation(), 1);
}

#[test]
fn a_policy_inside_the_workdir_waits_for_trust() {
    let w = World::new(true);
    let mut slot = w.slot(ReloadMode::Auto);
    let edited = src(99);
    std::fs::write(&w.policy, &edited).unwrap();
    let events = poll_for(&mut slot, SECOND);
    let [event @ ReloadEvent::Untrusted { file, hash, hint }] = events.as_slice() else {
        panic!("expected the edit to need trust, got {events:?}");
    };
    assert_eq!(file, &w.policy);
    assert_eq!(*hash, sha256_hex(edited.as_bytes()));
    assert!(hint.contains("oneshot policy trust"), "{hint}");
    assert!(hint.contains("to activate it"), "{hint}");
    assert_eq!(event.record_type(), "policy_untrusted");
    assert_eq!(slot.generation(), 1);
    assert_eq!(max_iterations(&slot), 3, "an untrusted edit must not run");
    assert_eq!(slot.pending_untrusted().unwrap().hash, *hash);
    // Reported once, however often the engine polls.
    assert_eq!(collect(&mut slot, QUIET), []);

    let trusted = w.trust.trust(&w.policy).unwrap();
    assert_eq!(trusted, *hash);
    let events = slot.poll();
    assert!(
        matches!(
            events.as_slice(),
            [ReloadEvent::Reloaded { generation: 2, .. }]
        ),
        "trusting must activate at the next poll: {events:?}"
    );
    assert_eq!(max_iterations(&slot), 99);
    assert!(slot.pending_untrusted().is_none());
}

#[test]
fn trust_is_for_content_so_a_later_edit_needs_it_again() {
    let w = World::new(true);
    let mut slot = w.slot(ReloadMode::Auto);
    std::fs::write(&w.policy, src(4)).unwrap();
    w.trust.trust(&w.policy).unwrap();
    assert!(matches!(
        poll_for(&mut slot, SECOND).as_slice(),
        [ReloadEvent::Reloaded { generation: 2, .. }]
    ));
    std::fs::write(&w.policy, src(100)).unwrap();
    assert!(matches!(
        poll_for(&mut slot, SECOND).as_slice(),
        [ReloadEvent::Untrusted { .. }]
    ));
    assert_eq!(max_iterations(&slot), 4);
}

#[test]
fn off_never_reloads() {
    let w = World::new(false);
    let mut slot = w.slot(ReloadMode::Off);
    std::fs::write(&w.policy, src(8)).unwrap();
    assert_eq!(collect(&mut slot, QUIET), []);
    assert_eq!(slot.reload_now(), []);
    assert_eq!(slot.generation(), 1);
    assert_eq!(max_iterations(&slot), 3);
    assert!(slot.watched().is_empty());
}

#[test]
fn trusted_mode_requires_trust_even_outside_the_workdir() {
    let w = World::new(false);
    let mut slot = w.slot(ReloadMode::Trusted);
    std::fs::write(&w.policy, src(6)).unwrap();
    assert!(matches!(
        poll_for(&mut slot, SECOND).as_slice(),
        [ReloadEvent::Untrusted { .. }]
    ));
    assert_eq!(slot.generation(), 1);
    w.trust.trust(&w.policy).unwrap();
    assert!(matches!(
        slot.poll().as_slice(),
        [ReloadEvent::Reloaded { generation: 2, .. }]
    ));
}

#[test]
fn two_quick_saves_are_one_reload() {
    let w = World::new(false);
    let mut slot = w.slot(ReloadMode::Auto);
    std::fs::write(&w.policy, src(4)).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    save_by_rename(&w.policy, &src(6));
    let events = collect(&mut slot, SECOND);
    assert!(
        matches!(
            events.as_slice(),
            [ReloadEvent::Reloaded { generation: 2, .. }]
        ),
        "{events:?}"
    );
    assert_eq!(max_iterations(&slot), 6);
}

#[test]
fn restoring_the_running_content_is_not_a_new_generation() {
    let w = World::new(false);
    let mut slot = w.slot(ReloadMode::Auto);
    std::fs::write(&w.policy, src(3)).unwrap();
    assert_eq!(collect(&mut slot, QUIET), []);
    assert_eq!(slot.generation(), 1);

    std::fs::write(&w.policy, src(4)).unwrap();
    assert!(matches!(
        poll_for(&mut slot, SECOND).as_slice(),
        [ReloadEvent::Reloaded { generation: 2, .. }]
    ));
    // An edit and its undo inside one debounce window.
    std::fs::write(&w.policy, src(5)).unwrap();
    std::fs::write(&w.policy, src(4)).unwrap();
    assert_eq!(collect(&mut slot, QUIET), []);
    assert_eq!(slot.reload_now(), []);
    assert_eq!(slot.generation(), 2);
}

#[test]
fn reload_now_does_not_wait_for_the_watcher() {
    let w = World::new(false);
    let mut slot = w.slot(ReloadMode::Auto);
    std::fs::write(&w.policy, src(2)).unwrap();
    assert!(matches!(
        slot.reload_now().as_slice(),
        [ReloadEvent::Reloaded { generation: 2, .. }]
    ));
    // The watcher's own report of that write arrives later and finds nothing new.
    assert_eq!(collect(&mut slot, QUIET), []);
    assert_eq!(slot.generation(), 2);
}

#[test]
fn the_validate_hook_can_refuse_a_policy_that_loads() {
    let w = World::new(false);
    let mut opts = w.options(ReloadMode::Auto);
    // Stands in for the engine's loader, which also runs the policy's own tests.
    opts.validate = Box::new(|path, opts| {
        let host = PolicyHost::load(path, opts.clone())?;
        if host.limits().max_iterations > 10 {
            return Err(oneshot::policy::PolicyError::Load {
                file: "policy.lua".into(),
                line: Some(2),
                message: "test `bounded` failed".into(),
            });
        }
        Ok(host)
    });
    let host = PolicyHost::load(&w.policy, PolicyOptions::default()).unwrap();
    let mut slot = ReloadingPolicy::new(host, 1, opts).unwrap();
    std::fs::write(&w.policy, src(50)).unwrap();
    let events = slot.reload_now();
    assert!(
        matches!(events.as_slice(), [ReloadEvent::Failed { error, .. }] if error.contains("bounded")),
        "{events:?}"
    );
    assert_eq!(max_iterations(&slot), 3);
}

#[test]
fn the_builtin_policy_has_nothing_to_watch() {
    let w = World::new(false);
    let mut slot =
        ReloadingPolicy::new(PolicyHost::builtin(), 1, w.options(ReloadMode::Auto)).unwrap();
    assert!(slot.watched().is_empty());
    assert_eq!(slot.reload_now(), []);
    assert_eq!(slot.poll(), []);
    assert_eq!(slot.current().hash(), "builtin");
}

#[test]
fn a_missing_workdir_is_an_error() {
    let w = World::new(false);
    let mut opts = w.options(ReloadMode::Auto);
    opts.workdir = w.workdir.join("nope");
    let host = PolicyHost::load(&w.policy, PolicyOptions::default()).unwrap();
    let err = ReloadingPolicy::new(host, 1, opts).err().unwrap();
    assert!(err.to_string().contains("nope"), "{err}");
}
