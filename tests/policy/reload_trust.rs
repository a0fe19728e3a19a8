//! The trust store on disk: round trip, file format, atomic replacement, failing closed.

use oneshot::policy::{TrustError, TrustStore, sha256_hex};
use std::os::unix::fs::MetadataExt;
use tempfile::TempDir;

#[test]
fn trust_round_trip() {
    let dir = TempDir::new().unwrap();
    let policy = dir.path().join("strict.lua");
    std::fs::write(&policy, "return {}").unwrap();
    let store = TrustStore::at(dir.path().join("data/oneshot/trust.json"));

    let hash = store.trust(&policy).unwrap();
    assert_eq!(hash, sha256_hex(b"return {}"));
    assert_eq!(hash.len(), "sha256:".len() + 64);
    assert!(store.is_trusted(&policy, &hash));
    assert!(!store.is_trusted(&policy, &sha256_hex(b"return { }")));
    assert!(!store.is_trusted(&dir.path().join("other.lua"), &hash));

    assert!(store.untrust(&policy).unwrap());
    assert!(!store.is_trusted(&policy, &hash));
    assert!(!store.untrust(&policy).unwrap(), "nothing left to untrust");
}

#[test]
fn the_file_maps_canonical_paths_to_full_hashes() {
    let dir = TempDir::new().unwrap();
    let real = dir.path().join("policies");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("p.lua"), "return {}").unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
    let store = TrustStore::at(dir.path().join("trust.json"));

    // Trusted through a symlinked directory, found through the real one and vice versa.
    let hash = store.trust(&dir.path().join("link/p.lua")).unwrap();
    assert!(store.is_trusted(&real.join("p.lua"), &hash));

    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.path()).unwrap()).unwrap();
    let canonical = std::fs::canonicalize(real.join("p.lua")).unwrap();
    assert_eq!(
        json,
        serde_json::json!({ "version": 1, "files": { canonical.to_str().unwrap(): hash } })
    );
}

#[test]
fn writes_replace_the_store_atomically() {
    let dir = TempDir::new().unwrap();
    let a = dir.path().join("a.lua");
    let b = dir.path().join("b.lua");
    std::fs::write(&a, "return {}").unwrap();
    std::fs::write(&b, "return { }").unwrap();
    let state = dir.path().join("state");
    let store = TrustStore::at(state.join("trust.json"));

    store.trust(&a).unwrap();
    let first = std::fs::metadata(store.path()).unwrap().ino();
    store.trust(&b).unwrap();
    let second = std::fs::metadata(store.path()).unwrap().ino();
    // A new inode means the store was renamed into place, never rewritten where it stood.
    assert_ne!(first, second);
    let names: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["trust.json"], "no temp file may be left behind");
    assert_eq!(store.entries().unwrap().len(), 2);
}

#[test]
fn a_corrupt_store_trusts_nothing_and_is_left_alone() {
    let dir = TempDir::new().unwrap();
    let policy = dir.path().join("p.lua");
    std::fs::write(&policy, "return {}").unwrap();
    let path = dir.path().join("trust.json");
    std::fs::write(&path, "{ not json").unwrap();
    let store = TrustStore::at(&path);

    assert!(!store.is_trusted(&policy, &sha256_hex(b"return {}")));
    let err = store.trust(&policy).unwrap_err();
    assert!(matches!(err, TrustError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("trust.json"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ not json");

    std::fs::write(&path, r#"{ "version": 2, "files": {} }"#).unwrap();
    let err = store.trust(&policy).unwrap_err();
    assert!(err.to_string().contains("version 2"), "{err}");
}

#[test]
fn trusting_a_missing_file_names_it() {
    let dir = TempDir::new().unwrap();
    let store = TrustStore::at(dir.path().join("trust.json"));
    let err = store.trust(&dir.path().join("nope.lua")).unwrap_err();
    assert!(matches!(err, TrustError::File { .. }), "{err:?}");
    assert!(err.to_string().contains("nope.lua"), "{err}");
    assert!(!store.path().exists(), "a failed trust writes nothing");
}
