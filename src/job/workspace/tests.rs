//! Real repositories in temporary directories, the real `git`: every path of provision,
//! harvest, diff and cleanup.

mod plain;
mod race;
mod remote;

use super::*;
use crate::job::record::JobSpec;
use std::fs;
use std::path::Path;
use std::process::Command;

/// A commit message as a harvest takes it: through a redactor.
fn message(text: &str) -> crate::redact::Redacted<String> {
    crate::redact::Redactor::new(&[], Vec::new())
        .unwrap()
        .text(text)
}

/// Runs git in `dir` as a user would (own identity, no global config) and returns stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "user")
        .env("GIT_AUTHOR_EMAIL", "user@example.com")
        .env("GIT_COMMITTER_NAME", "user")
        .env("GIT_COMMITTER_EMAIL", "user@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository on `main` with one commit holding `a.txt` and `sub/b.txt`.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "--initial-branch=main"]);
    fs::write(p.join("a.txt"), "one\n").expect("write");
    fs::create_dir(p.join("sub")).expect("mkdir");
    fs::write(p.join("sub/b.txt"), "bee\n").expect("write");
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "initial"]);
    dir
}

fn spec(source: &Path) -> JobSpec {
    JobSpec {
        task: "test".into(),
        source: source.to_owned(),
        remote: None,
        base: None,
        worker: "cmd:true".into(),
        auditor: "cmd:true".into(),
        panel: Vec::new(),
        aggregate: Default::default(),
        policy: None,
        risk: Default::default(),
        inputs: Default::default(),
        limits: Default::default(),
        author: None,
        checks: Vec::new(),
        branch: None,
        nickname: None,
    }
}

fn has_branch(repo: &Path, branch: &str) -> bool {
    !git(repo, &["branch", "--list", branch]).is_empty()
}

#[test]
fn check_source_tells_git_plain_and_missing_apart() {
    let r = repo();
    let root = r.path().canonicalize().expect("canon");
    let git_kind = check_source(&spec(&r.path().join("sub"))).expect("git");
    assert_eq!(git_kind, SourceKind::Git { root });
    let plain = tempfile::tempdir().expect("tempdir");
    assert_eq!(
        check_source(&spec(plain.path())).expect("plain"),
        SourceKind::Plain
    );
    let err = check_source(&spec(&plain.path().join("nope"))).unwrap_err();
    assert!(matches!(err, WorkspaceError::SourceMissing { .. }), "{err}");
}

#[test]
fn harvest_commits_on_the_branch_and_leaves_the_source_alone() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    fs::write(r.path().join("a.txt"), "dirty, not the job's\n").expect("write");
    let source_head = git(r.path(), &["rev-parse", "HEAD"]);
    let ws = provision("job-1", &spec(r.path()), state.path()).expect("provision");
    assert_eq!(ws.branch.as_deref(), Some("oneshot/job-1"));
    assert_eq!(ws.base_commit.as_deref(), Some(source_head.as_str()));
    assert_eq!(
        fs::read_to_string(ws.path.join("a.txt")).expect("read"),
        "one\n"
    );

    fs::write(ws.path.join("a.txt"), "one\ntwo\n").expect("write");
    fs::write(ws.path.join("new.txt"), "new\n").expect("write");
    let h = harvest(&ws, &message("job-1: step 1"), None).expect("harvest");
    let commit = h.commit.clone().expect("a commit");
    assert_eq!(git(r.path(), &["rev-parse", "oneshot/job-1"]), commit);
    assert_eq!(
        git(r.path(), &["log", "-1", "--format=%an %s", &commit]),
        "oneshot job-1: step 1"
    );
    assert_eq!(h.files, vec!["a.txt".to_owned(), "new.txt".to_owned()]);
    assert_eq!(h.diff_stat, " 2 files changed, 2 insertions(+)");
    assert!(!h.empty);
    // The user's checkout: same HEAD, same branch, their dirty file as they left it.
    assert_eq!(git(r.path(), &["rev-parse", "HEAD"]), source_head);
    assert_eq!(git(r.path(), &["symbolic-ref", "--short", "HEAD"]), "main");
    assert_eq!(git(r.path(), &["status", "--porcelain"]), "M a.txt");
    assert_eq!(
        fs::read_to_string(r.path().join("a.txt")).expect("read"),
        "dirty, not the job's\n"
    );

    let again = harvest(&ws, &message("job-1: step 2"), None).expect("harvest again");
    assert_eq!(again.commit, None);
    assert_eq!(again.diff_hash, h.diff_hash);
    assert_eq!(git(r.path(), &["rev-parse", "oneshot/job-1"]), commit);
    let patch = diff(&ws).expect("diff");
    assert!(
        patch.contains("+two") && patch.contains("+++ b/new.txt"),
        "{patch}"
    );
}

#[test]
fn diff_shows_uncommitted_and_untracked_work_without_staging_it() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let ws = provision("job-d", &spec(r.path()), state.path()).expect("provision");
    fs::write(ws.path.join("a.txt"), "changed\n").expect("write");
    fs::write(ws.path.join("untracked.txt"), "fresh\n").expect("write");
    let patch = diff(&ws).expect("diff");
    assert!(
        patch.contains("+changed") && patch.contains("+fresh"),
        "{patch}"
    );
    assert_eq!(
        git(&ws.path, &["status", "--porcelain"]),
        "M a.txt\n?? untracked.txt"
    );
}

#[test]
fn an_empty_harvest_is_empty_and_its_workspace_goes() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let s = spec(r.path());
    let ws = provision("job-e", &s, state.path()).expect("provision");
    let h = harvest(&ws, &message("nothing"), None).expect("harvest");
    assert!(h.empty && h.commit.is_none() && h.files.is_empty() && h.diff_stat.is_empty());
    assert_eq!(diff(&ws).expect("diff"), "");
    assert_eq!(
        cleanup(&s, &ws, false).expect("cleanup"),
        Cleanup::Removed { note: None }
    );
    assert!(!ws.path.exists());
    assert!(!has_branch(r.path(), "oneshot/job-e"));
}

#[test]
fn cleanup_keeps_uncommitted_then_unmerged_work() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let s = spec(r.path());
    let ws = provision("job-k", &s, state.path()).expect("provision");
    fs::write(ws.path.join("work.txt"), "precious\n").expect("write");
    let Cleanup::Kept { reason } = cleanup(&s, &ws, false).expect("cleanup") else {
        panic!("uncommitted work removed");
    };
    assert!(
        reason.contains("uncommitted") && reason.contains("work.txt"),
        "{reason}"
    );
    harvest(&ws, &message("work"), None).expect("harvest");
    let Cleanup::Kept { reason } = cleanup(&s, &ws, false).expect("cleanup") else {
        panic!("unmerged work removed");
    };
    assert!(
        reason.contains("oneshot/job-k") && reason.contains("1 commit"),
        "{reason}"
    );
    assert!(ws.path.join("work.txt").exists());
}

#[test]
fn cleanup_removes_the_workspace_once_merged() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let s = spec(r.path());
    let ws = provision("job-m", &s, state.path()).expect("provision");
    fs::write(ws.path.join("work.txt"), "done\n").expect("write");
    harvest(&ws, &message("work"), None).expect("harvest");
    git(
        r.path(),
        &["merge", "-q", "--no-ff", "-m", "merge", "oneshot/job-m"],
    );
    assert_eq!(
        cleanup(&s, &ws, false).expect("cleanup"),
        Cleanup::Removed { note: None }
    );
    assert!(!ws.path.exists());
    assert!(!has_branch(r.path(), "oneshot/job-m"));
    assert!(!git(r.path(), &["worktree", "list"]).contains("job-m"));
    // Cleaning up again finds nothing left to do.
    assert_eq!(
        cleanup(&s, &ws, false).expect("again"),
        Cleanup::Removed { note: None }
    );
}

#[test]
fn discard_removes_the_worktree_but_keeps_an_unmerged_branch() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let s = spec(r.path());
    let ws = provision("job-x", &s, state.path()).expect("provision");
    fs::write(ws.path.join("work.txt"), "maybe\n").expect("write");
    let commit = harvest(&ws, &message("work"), None)
        .expect("harvest")
        .commit
        .expect("commit");
    fs::write(ws.path.join("loose.txt"), "uncommitted\n").expect("write");
    let Cleanup::Removed { note: Some(note) } = cleanup(&s, &ws, true).expect("cleanup") else {
        panic!("discard must remove and say the branch was kept");
    };
    assert!(
        note.contains("oneshot/job-x") && note.contains("kept"),
        "{note}"
    );
    assert!(!ws.path.exists());
    assert_eq!(git(r.path(), &["rev-parse", "oneshot/job-x"]), commit);
}

#[test]
fn provision_is_idempotent_and_recovers_a_deleted_worktree() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let s = spec(r.path());
    let ws = provision("job-i", &s, state.path()).expect("provision");
    assert_eq!(provision("job-i", &s, state.path()).expect("again"), ws);
    fs::write(ws.path.join("work.txt"), "kept across\n").expect("write");
    harvest(&ws, &message("work"), None).expect("harvest");
    // The source moves on, and the worktree directory disappears (a crash, a cleanup by hand).
    fs::write(r.path().join("a.txt"), "later\n").expect("write");
    git(r.path(), &["commit", "-q", "-am", "later"]);
    fs::remove_dir_all(&ws.path).expect("rm");
    let back = provision("job-i", &s, state.path()).expect("recovered");
    assert_eq!(back, ws, "same path, branch and base as the first time");
    assert_eq!(
        fs::read_to_string(ws.path.join("work.txt")).expect("read"),
        "kept across\n"
    );
    assert!(
        harvest(&back, &message("again"), None)
            .expect("harvest")
            .commit
            .is_none()
    );
}

#[test]
fn a_branch_checked_out_elsewhere_is_refused() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let other = tempfile::tempdir().expect("tempdir");
    let elsewhere = other.path().join("wt");
    let elsewhere_s = elsewhere.to_str().expect("utf-8");
    git(
        r.path(),
        &["worktree", "add", "-q", "-b", "oneshot/job-o", elsewhere_s],
    );
    let err = provision("job-o", &spec(r.path()), state.path()).unwrap_err();
    assert!(
        matches!(err, WorkspaceError::BranchConflict { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("another worktree"), "{err}");
}

#[test]
fn a_subdirectory_source_works_in_the_same_subdirectory() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let s = spec(&r.path().join("sub"));
    let ws = provision("job-s", &s, state.path()).expect("provision");
    assert!(ws.path.ends_with("job-s/sub"), "{}", ws.path.display());
    assert_eq!(
        fs::read_to_string(ws.path.join("b.txt")).expect("read"),
        "bee\n"
    );
    fs::write(ws.path.join("c.txt"), "sea\n").expect("write");
    let h = harvest(&ws, &message("sub work"), None).expect("harvest");
    assert_eq!(h.files, vec!["sub/c.txt".to_owned()]);
    assert!(diff(&ws).expect("diff").contains("+++ b/sub/c.txt"));
    assert_eq!(provision("job-s", &s, state.path()).expect("again"), ws);
    assert!(matches!(
        cleanup(&s, &ws, false).expect("cleanup"),
        Cleanup::Kept { .. }
    ));
    assert!(matches!(
        cleanup(&s, &ws, true).expect("discard"),
        Cleanup::Removed { note: Some(_) }
    ));
    assert!(
        !state.path().join("job-s").exists(),
        "the whole worktree goes, not just sub/"
    );
}

#[test]
fn a_base_that_does_not_resolve_is_named() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let mut s = spec(r.path());
    s.base = Some("no-such-rev".into());
    let err = provision("job-b", &s, state.path()).unwrap_err();
    assert!(matches!(err, WorkspaceError::BadBase { .. }), "{err}");
    assert!(err.to_string().contains("\"no-such-rev\""), "{err}");
    assert!(!has_branch(r.path(), "oneshot/job-b"));
}

#[test]
fn an_explicit_base_starts_the_branch_there() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let first = git(r.path(), &["rev-parse", "HEAD"]);
    fs::write(r.path().join("a.txt"), "second\n").expect("write");
    git(r.path(), &["commit", "-q", "-am", "second"]);
    let mut s = spec(r.path());
    s.base = Some("HEAD~1".into());
    let ws = provision("job-h", &s, state.path()).expect("provision");
    assert_eq!(ws.base_commit.as_deref(), Some(first.as_str()));
    assert_eq!(
        fs::read_to_string(ws.path.join("a.txt")).expect("read"),
        "one\n"
    );
}

#[test]
fn a_branch_pointing_elsewhere_is_refused() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    git(r.path(), &["branch", "oneshot/job-z"]);
    fs::write(r.path().join("a.txt"), "second\n").expect("write");
    git(r.path(), &["commit", "-q", "-am", "second"]);
    let err = provision("job-z", &spec(r.path()), state.path()).unwrap_err();
    assert!(err.to_string().contains("points elsewhere"), "{err}");
}

#[test]
fn harvest_refuses_a_workspace_switched_off_its_branch() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let ws = provision("job-w", &spec(r.path()), state.path()).expect("provision");
    git(&ws.path, &["switch", "-q", "-c", "agent-branch"]);
    let err = harvest(&ws, &message("work"), None).unwrap_err();
    assert!(matches!(err, WorkspaceError::OffBranch { .. }), "{err}");
    assert!(err.to_string().contains("agent-branch"), "{err}");
}

/// A branch named for its task (as `job create` names them) is the one provisioned, and
/// cleanup removes it with the ref that kept its base: the job is found by its worktree, not
/// by the branch's name.
#[test]
fn a_branch_named_in_the_spec_is_provisioned_and_cleaned_up_with_its_base_ref() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let mut s = spec(r.path());
    s.branch = Some("oneshot/fix-the-parser-0000000n".into());
    let ws = provision("job-0000000n", &s, state.path()).expect("provision");
    assert_eq!(
        ws.branch.as_deref(),
        Some("oneshot/fix-the-parser-0000000n")
    );
    assert!(!has_branch(r.path(), "oneshot/job-0000000n"));
    let base_ref = "refs/oneshot/base/job-0000000n";
    assert_eq!(
        git(r.path(), &["rev-parse", base_ref]),
        git(r.path(), &["rev-parse", "main"])
    );
    fs::write(ws.path.join("work.txt"), "done\n").expect("write");
    harvest(&ws, &message("work"), None).expect("harvest");
    git(
        r.path(),
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "merge",
            "oneshot/fix-the-parser-0000000n",
        ],
    );
    assert_eq!(
        cleanup(&s, &ws, false).expect("cleanup"),
        Cleanup::Removed { note: None }
    );
    assert!(!has_branch(r.path(), "oneshot/fix-the-parser-0000000n"));
    assert!(git(r.path(), &["for-each-ref", "refs/oneshot/"]).is_empty());
}
