//! Reload over several files: modules listed by `ReloadOptions::sources` are watched and vetted
//! like the policy itself.

use crate::common;
use common::poll_for;
use oneshot::policy::{
    PolicyHost, PolicyOptions, ReloadEvent, ReloadOptions, ReloadingPolicy, TrustStore,
};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tempfile::TempDir;

fn src(max_iterations: u32) -> String {
    format!("return {{\n  limits = {{ max_iterations = {max_iterations} }},\n}}\n")
}

fn save_by_rename(path: &Path, content: &str) {
    let tmp = path.with_extension("lua.swp");
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A policy outside the workdir, a module in a third directory, a trust store.
struct Dirs {
    policy: PathBuf,
    work: TempDir,
    lib: TempDir,
    trust: TrustStore,
    _outside: TempDir,
}

fn dirs() -> Dirs {
    let outside = TempDir::new().unwrap();
    let policy = outside.path().join("policy.lua");
    std::fs::write(&policy, src(3)).unwrap();
    Dirs {
        policy,
        work: TempDir::new().unwrap(),
        lib: TempDir::new().unwrap(),
        trust: TrustStore::at(outside.path().join("trust.json")),
        _outside: outside,
    }
}

fn slot(d: &Dirs, sources: oneshot::policy::Sources) -> ReloadingPolicy {
    let mut opts = ReloadOptions::new(d.work.path(), d.trust.clone());
    opts.sources = sources;
    let host = PolicyHost::load(&d.policy, PolicyOptions::default()).unwrap();
    ReloadingPolicy::new(host, 1, opts).unwrap()
}

#[test]
fn a_changed_module_in_another_directory_reloads() {
    let d = dirs();
    let module = d.lib.path().join("common.lua");
    std::fs::write(&module, "return { n = 1 }\n").unwrap();
    let listed = module.clone();
    let mut slot = slot(
        &d,
        Box::new(move |host| vec![host.path().unwrap().to_path_buf(), listed.clone()]),
    );
    assert_eq!(slot.watched().len(), 2);

    save_by_rename(&module, "return { n = 2 }\n");
    let events = poll_for(&mut slot, Duration::from_secs(1));
    let [
        ReloadEvent::Reloaded {
            generation, files, ..
        },
    ] = events.as_slice()
    else {
        panic!("expected the module change to reload, got {events:?}");
    };
    assert_eq!(*generation, 2);
    assert_eq!(files, &[module]);
}

#[test]
fn the_policy_is_watched_even_when_sources_leaves_it_out() {
    let d = dirs();
    let module = d.lib.path().join("common.lua");
    std::fs::write(&module, "return {}\n").unwrap();
    let listed = module.clone();
    let mut slot = slot(&d, Box::new(move |_| vec![listed.clone()]));
    assert_eq!(slot.watched().len(), 2);
    std::fs::write(&d.policy, src(4)).unwrap();
    assert!(matches!(
        poll_for(&mut slot, Duration::from_secs(1)).as_slice(),
        [ReloadEvent::Reloaded { generation: 2, .. }]
    ));
    assert_eq!(slot.current().limits().max_iterations, 4);
}

#[test]
fn a_module_newly_pulled_in_from_the_workdir_needs_trust() {
    let d = dirs();
    let module = d.work.path().join("helpers.lua");
    std::fs::write(&module, "return {}\n").unwrap();
    let listed = module.clone();
    // Stands in for `require`: the edited policy starts depending on a file the agent can write.
    let mut slot = slot(
        &d,
        Box::new(move |host| {
            let mut files = vec![host.path().unwrap().to_path_buf()];
            if host.limits().max_iterations == 7 {
                files.push(listed.clone());
            }
            files
        }),
    );
    assert_eq!(slot.watched().len(), 1);

    std::fs::write(&d.policy, src(7)).unwrap();
    let events = poll_for(&mut slot, Duration::from_secs(1));
    assert!(
        matches!(events.as_slice(), [ReloadEvent::Untrusted { file, .. }] if *file == module),
        "{events:?}"
    );
    assert_eq!(slot.generation(), 1);
    assert_eq!(slot.current().limits().max_iterations, 3);

    d.trust.trust(&module).unwrap();
    assert!(matches!(
        slot.poll().as_slice(),
        [ReloadEvent::Reloaded { generation: 2, .. }]
    ));
    assert_eq!(slot.watched().len(), 2);
}
