//! `require`: sibling and nested modules, the search path, escapes, cycles, `sources()`.

use super::super::{PolicyError, PolicyHost, PolicyOptions};
use super::full_ctx;
use std::path::{Path, PathBuf};

fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn load(path: &Path) -> Result<PolicyHost, PolicyError> {
    PolicyHost::load(path, PolicyOptions::default())
}

#[test]
fn sibling_and_nested_modules_load_once() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "common.lua",
        "return { greeting = 'hi', n = {} }\n",
    );
    write(
        dir.path(),
        "lib/util/init.lua",
        "return { twice = function(s) return s .. s end }\n",
    );
    let policy = write(
        dir.path(),
        "p.lua",
        "local c = require('common')\nlocal u = require('lib.util')\n\
         assert(require('common') == c, 'cached')\n\
         return { next_prompt = function(ctx) return u.twice(require('common').greeting) end }\n",
    );
    let h = load(&policy).unwrap();
    assert_eq!(h.next_prompt(&full_ctx()).unwrap(), "hihi");
    let abs = |rel: &str| std::path::absolute(dir.path().join(rel)).unwrap();
    assert_eq!(
        h.sources(),
        &[abs("p.lua"), abs("common.lua"), abs("lib/util/init.lua")]
    );
    assert!(PolicyHost::builtin().sources().is_empty());
}

#[test]
fn search_path_is_used_after_the_policy_dir() {
    let dir = tempfile::tempdir().unwrap();
    let shared = tempfile::tempdir().unwrap();
    write(shared.path(), "shared.lua", "return 'from shared'\n");
    write(
        dir.path(),
        "p.lua",
        "return { next_prompt = function() return require('shared') end }",
    );
    let opts = PolicyOptions {
        module_paths: vec![shared.path().to_path_buf()],
        ..PolicyOptions::default()
    };
    // Loaded at top level only: inside a hook a new module is refused.
    let e = PolicyHost::load(&dir.path().join("p.lua"), opts.clone())
        .unwrap()
        .next_prompt(&full_ctx())
        .unwrap_err();
    assert!(
        e.to_string().contains("only while the policy file loads"),
        "{e}"
    );
    write(
        dir.path(),
        "p.lua",
        "local s = require('shared')\nreturn { next_prompt = function() return s end }",
    );
    let h = PolicyHost::load(&dir.path().join("p.lua"), opts.clone()).unwrap();
    assert_eq!(h.next_prompt(&full_ctx()).unwrap(), "from shared");
    // from_source: modules only.
    let h = PolicyHost::from_source("s.lua", "require('shared') return {}", opts).unwrap();
    assert_eq!(h.sources().len(), 1);
    assert!(h.sources()[0].ends_with("shared.lua"));
}

#[test]
fn escapes_and_missing_modules_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "x.lua", "return 1");
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path().join("x.lua"), dir.path().join("link.lua")).unwrap();
    for (call, want) in [
        ("require('../x')", "require(\"../x\"): invalid module name"),
        (
            "require('/etc/passwd')",
            "require(\"/etc/passwd\"): invalid module name",
        ),
        ("require('a..b')", "require(\"a..b\"): invalid module name"),
        ("require('.x')", "require(\".x\"): invalid module name"),
        (
            "require('nope')",
            "require(\"nope\"): module not found; looked for nope.lua",
        ),
        (
            "require(42)",
            "require expects a module name string, not number",
        ),
        #[cfg(unix)]
        ("require('link')", "require(\"link\"): "),
    ] {
        let policy = write(
            dir.path(),
            "p.lua",
            &format!("local a = 1\nlocal m = {call}\nreturn {{}}\n"),
        );
        let e = load(&policy)
            .err()
            .unwrap_or_else(|| panic!("{call} loaded"));
        let text = e.to_string();
        assert!(text.contains(&format!("p.lua:2: {want}")), "{call}: {text}");
        assert_eq!(e.location().as_deref(), Some("p.lua:2"), "{call}");
    }
    let policy = write(dir.path(), "p.lua", "require('link')\nreturn {}\n");
    #[cfg(unix)]
    assert!(
        load(&policy)
            .unwrap_err()
            .to_string()
            .contains("resolves outside")
    );
}

#[test]
fn cycles_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.lua", "return require('b')\n");
    write(dir.path(), "b.lua", "local x = 1\nreturn require('a')\n");
    let policy = write(dir.path(), "p.lua", "require('a')\nreturn {}\n");
    let text = load(&policy).unwrap_err().to_string();
    assert!(
        text.contains("b.lua:2: require(\"a\"): cyclic require: a -> b -> a"),
        "{text}"
    );
}

#[test]
fn module_errors_name_the_module_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "common.lua",
        "local M = {}\n\n\nerror('boom')\nreturn M\n",
    );
    write(dir.path(), "broken.lua", "local x =\n");
    let policy = write(
        dir.path(),
        "p.lua",
        "local c = require('common')\nreturn {}\n",
    );
    let e = load(&policy).unwrap_err();
    assert!(e.to_string().contains("common.lua:4: boom"), "{e}");
    assert_eq!(e.location().as_deref(), Some("common.lua:4"));
    let policy = write(dir.path(), "p.lua", "require('broken')\nreturn {}\n");
    let e = load(&policy).unwrap_err();
    assert!(e.to_string().contains("broken.lua:2"), "{e}");
}

#[test]
fn modules_share_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "evil.lua",
        "local f = io.open('/etc/passwd')\nreturn f\n",
    );
    let policy = write(dir.path(), "p.lua", "require('evil')\nreturn {}\n");
    let e = load(&policy).unwrap_err();
    assert!(matches!(e, PolicyError::Sandbox { .. }), "{e:?}");
    assert!(
        e.to_string().contains("evil.lua:1: io is not available"),
        "{e}"
    );
}

#[test]
fn the_hash_covers_modules_and_the_file_hash_only_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let module = write(dir.path(), "common.lua", "return { word = 'done' }\n");
    let policy = write(
        dir.path(),
        "p.lua",
        "local c = require('common')\nreturn { verdict = function() return c.word end }\n",
    );
    let before = load(&policy).unwrap();
    std::fs::write(&module, "return { word = 'retry' }\n").unwrap();
    let after = load(&policy).unwrap();
    assert_ne!(
        before.hash(),
        after.hash(),
        "a module edit is a different policy"
    );
    assert_eq!(before.file_hash(), after.file_hash());
    assert_ne!(before.hash(), before.file_hash());
    // Without modules the two are the same.
    let plain = write(dir.path(), "plain.lua", "return {}\n");
    let h = load(&plain).unwrap();
    assert_eq!(h.hash(), h.file_hash());
}
