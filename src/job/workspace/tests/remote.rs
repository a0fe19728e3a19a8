//! Jobs whose source is a git remote (a bare repository): each "machine" is a state directory
//! of its own with its own mirror; the work travels only through the remote.

use super::{git, message, repo, spec, *};
use crate::job::record::Job;
use std::sync::Arc;

/// A bare repository cloned from [`repo`]: the remote every machine reaches.
fn bare() -> (tempfile::TempDir, String) {
    let r = repo();
    let dir = tempfile::tempdir().expect("tempdir");
    let url = dir.path().join("remote.git");
    git(
        dir.path(),
        &[
            "clone",
            "-q",
            "--bare",
            &r.path().display().to_string(),
            "remote.git",
        ],
    );
    (dir, url.display().to_string())
}

fn remote_job(id: &str, url: &str) -> Job {
    let mut s = spec(Path::new("."));
    s.remote = Some(url.to_owned());
    s.base = Some("main".into());
    Job::new(id, s, crate::job::JobState::Pending, 0)
}

fn remote_ref(url: &str, branch: &str) -> Option<String> {
    let sha = git(
        Path::new(url),
        &[
            "for-each-ref",
            "--format=%(objectname)",
            &format!("refs/heads/{branch}"),
        ],
    );
    (!sha.is_empty()).then_some(sha)
}

#[test]
fn harvest_pushes_the_branch_and_another_machine_starts_from_it() {
    let (_d, url) = bare();
    let (m1, m2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut job = remote_job("job-00000001", &url);
    let ws = provision_job(&job, m1.path()).expect("provision on machine 1");
    assert!(ws.path.starts_with(m1.path().join("worktrees")));
    assert_eq!(ws.base_branch.as_deref(), Some("main"));
    fs::write(ws.path.join("new.txt"), "one\n").unwrap();
    let h = harvest(&ws, &message("first"), None).expect("harvest");
    let branch = ws.branch.clone().unwrap();
    assert_eq!(
        remote_ref(&url, &branch),
        h.commit,
        "the branch is on the remote"
    );
    // Machine 2 provisions the same job (its runner died on machine 1): it starts from the
    // pushed branch, on the same base.
    job.workspace = Some(ws.clone());
    let ws2 = provision_job(&job, m2.path()).expect("provision on machine 2");
    assert!(ws2.path.starts_with(m2.path()));
    assert_eq!(ws2.base_commit, ws.base_commit);
    assert_eq!(
        fs::read_to_string(ws2.path.join("new.txt")).unwrap(),
        "one\n"
    );
    // Its next harvest goes on from there; machine 1, stale, can no longer push.
    fs::write(ws2.path.join("new.txt"), "two\n").unwrap();
    let h2 = harvest(&ws2, &message("second"), None).expect("harvest on machine 2");
    assert_eq!(remote_ref(&url, &branch), h2.commit);
    fs::write(ws.path.join("late.txt"), "late\n").unwrap();
    let late = harvest(&ws, &message("late"), None).expect_err("a stale push is refused");
    assert!(matches!(late, WorkspaceError::PushRefused { .. }), "{late}");
    assert_eq!(
        remote_ref(&url, &branch),
        h2.commit,
        "the newer work is intact"
    );
    // Provisioning machine 1 again brings it up to the remote's copy.
    let again = provision_job(&job, m1.path()).expect("provision again on machine 1");
    assert_eq!(git(&again.path, &["rev-parse", "HEAD"]), h2.commit.unwrap());
}

#[test]
fn diff_anywhere_reads_the_pushed_branch_on_a_machine_without_the_worktree() {
    let (_d, url) = bare();
    let (m1, m3) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let job = remote_job("job-00000002", &url);
    let ws = provision_job(&job, m1.path()).unwrap();
    fs::write(ws.path.join("a.txt"), "changed\n").unwrap();
    harvest(&ws, &message("edit"), None).unwrap();
    let here = diff_anywhere(&job.spec, &ws, &job.id, m1.path()).unwrap();
    let mut moved = ws.clone();
    moved.path = m3.path().join("worktrees/job-00000002");
    let there = diff_anywhere(&job.spec, &moved, &job.id, m3.path()).unwrap();
    assert_eq!(here, there);
    assert!(there.contains("+changed"), "{there}");
    // A job of a local source whose worktree is elsewhere cannot be read here.
    let mut local = job.spec.clone();
    local.remote = None;
    let e = diff_anywhere(&local, &moved, &job.id, m3.path()).unwrap_err();
    assert!(matches!(e, WorkspaceError::Elsewhere { .. }), "{e}");
}

#[test]
fn ten_jobs_provision_at_once_from_one_mirror() {
    let (_d, url) = bare();
    let m = Arc::new(tempfile::tempdir().unwrap());
    let url = Arc::new(url);
    let threads: Vec<_> = (0..10)
        .map(|i| {
            let (m, url) = (Arc::clone(&m), Arc::clone(&url));
            std::thread::spawn(move || {
                provision_job(&remote_job(&format!("job-1000000{i}"), &url), m.path())
            })
        })
        .collect();
    for t in threads {
        let ws = t.join().unwrap().expect("provision");
        assert_eq!(fs::read_to_string(ws.path.join("a.txt")).unwrap(), "one\n");
    }
    let mirrors: Vec<_> = fs::read_dir(m.path().join("mirrors"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "git"))
        .collect();
    assert_eq!(mirrors.len(), 1, "one mirror per remote");
}

#[test]
fn a_url_s_password_or_token_is_never_shown() {
    assert_eq!(
        shown_url("https://ann:hunter2@git.example/r.git"),
        "https://ann:[REDACTED]@git.example/r.git"
    );
    let token = "https://ghp_0123456789abcdefghij0123456789abcdefXY@github.com/o/r.git";
    assert!(!shown_url(token).contains("ghp_"), "{}", shown_url(token));
    assert!(holds_secret(token));
    assert!(!holds_secret("ssh://git@git.example/r.git"));
    assert!(!holds_secret("/srv/git/r.git"));
    let e = check_remote("https://ann:hunter2@127.0.0.1:9/r.git", None).unwrap_err();
    assert!(!e.to_string().contains("hunter2"), "{e}");
    assert!(e.to_string().contains("127.0.0.1:9"), "{e}");
}
