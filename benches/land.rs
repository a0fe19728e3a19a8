//! Landing approved jobs, through the release binary, beside plain git in the same run.
//!
//! N jobs (default 100) are made on one git repository, each worker writing a file of its own
//! (so no two conflict); `oneshot job run` takes them all to APPROVAL_REQUIRED and `job approve`
//! to SUCCESS. Then, from copies of the same repository at that moment:
//!
//! - **baseline**: plain git lands the same branches one after another, as a careful human
//!   would: `git rebase main BRANCH` then `git checkout main && git merge --ff-only BRANCH`;
//! - **oneshot**: one `oneshot job land ID…` of all N (each job rebased onto the moving base,
//!   its checks — none here — run again, the base fast-forwarded, the land recorded in the
//!   store's audit trail).
//!
//! Both end with the same N commits on `main` (checked). Run: `cargo bench --bench land`
//! (`-- N` for another count). `ONESHOT_BENCH_BIN=PATH` measures another build.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/git.rs"]
mod support_git;
use support_git::git;

const BUILT: &str = env!("CARGO_BIN_EXE_oneshot");

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100);
    let bin = std::env::var("ONESHOT_BENCH_BIN").unwrap_or_else(|_| BUILT.to_string());
    println!("binary: {bin}");
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let repo = root.join("repo");
    let state = root.join("state");
    fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    fs::write(repo.join("base.txt"), "base\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "base"]);

    let started = Instant::now();
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let worker = format!("sh -c 'echo {i} > file-{i}.txt'");
        let out = oneshot(&bin, &state, &repo)
            .args([
                "job",
                "create",
                "--worker-cmd",
                &worker,
                "--auditor-cmd",
                "echo VERDICT: DONE",
                "--activate",
                &format!("write file {i}"),
            ])
            .output()
            .expect("oneshot job create");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        ids.push(String::from_utf8(out.stdout).unwrap().trim().to_string());
    }
    must(oneshot(&bin, &state, &repo).args(["job", "run", "--parallel", "8"]));
    let mut approve = oneshot(&bin, &state, &repo);
    approve.args(["job", "approve"]).args(&ids);
    must(&mut approve);
    println!(
        "{n} jobs made, run and approved in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let branches: Vec<String> = ids
        .iter()
        .map(|id| branch_of(&bin, &state, &repo, id))
        .collect();

    // The baseline works on a copy of the repository as it is now, with the same branches.
    let copy = root.join("copy");
    let ok = Command::new("cp")
        .arg("-a")
        .arg(&repo)
        .arg(&copy)
        .status()
        .expect("cp")
        .success();
    assert!(ok);
    // The copy's worktrees are oneshot's (they still exist, so `prune` keeps them): plain git
    // works on the branches alone.
    fs::remove_dir_all(copy.join(".git/worktrees")).expect("forget the copy's worktrees");
    git(&copy, &["worktree", "prune"]);
    let base_before = rev(&repo, "main");

    let t = Instant::now();
    for b in &branches {
        git(&copy, &["rebase", "-q", "main", b]);
        git(&copy, &["checkout", "-q", "main"]);
        git(&copy, &["merge", "-q", "--ff-only", b]);
    }
    let plain = t.elapsed();

    let t = Instant::now();
    let mut land = oneshot(&bin, &state, &repo);
    land.args(["job", "land"]).args(&ids);
    must(&mut land);
    let landed = t.elapsed();

    let count = |dir: &Path| {
        let out = Command::new("git")
            .args(["rev-list", "--count", &format!("{base_before}..main")])
            .current_dir(dir)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<usize>()
            .unwrap()
    };
    assert_eq!(count(&copy), n, "plain git landed every branch");
    assert_eq!(count(&repo), n, "oneshot landed every job");
    let per = |d: Duration| d.as_secs_f64() * 1000.0 / n as f64;
    println!("| landing {n} jobs (rebase + fast-forward each) | total | per land |");
    println!("| --- | --- | --- |");
    println!(
        "| plain `git rebase` + `git merge --ff-only` (baseline) | {:.2} s | {:.1} ms |",
        plain.as_secs_f64(),
        per(plain)
    );
    println!(
        "| `oneshot job land` of all {n} | {:.2} s | {:.1} ms |",
        landed.as_secs_f64(),
        per(landed)
    );
}

fn rev(dir: &Path, what: &str) -> String {
    let out = Command::new("git")
        .args(["rev-parse", what])
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn oneshot(bin: &str, state: &Path, repo: &Path) -> Command {
    let mut c = Command::new(bin);
    c.arg("--state-dir").arg(state).current_dir(repo);
    for (k, _) in std::env::vars() {
        if k.starts_with("ONESHOT_") {
            c.env_remove(k);
        }
    }
    c.env("ONESHOT_ACTOR", "bench")
        .env("NO_COLOR", "1")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "b@b")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "b@b")
        .stdin(Stdio::null());
    c
}

fn must(c: &mut Command) {
    let out = c.output().expect("oneshot");
    assert!(
        out.status.success(),
        "{c:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The job's branch, as `job show --json` names it.
fn branch_of(bin: &str, state: &Path, repo: &Path, id: &str) -> String {
    let out = oneshot(bin, state, repo)
        .args(["job", "show", id, "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("job show --json");
    v["job"]["workspace"]["branch"]
        .as_str()
        .unwrap_or_else(|| panic!("no branch in {v}"))
        .to_string()
}
