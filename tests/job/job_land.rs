//! `oneshot job land` and `job approve --land`, through the real binary on real git
//! repositories with command-line agents: a fast-forward chain, a conflict that leaves the base
//! untouched and the job INTERVENTION_REQUIRED (then fixed by hand and landed), a remote source
//! (a bare repository) that gets the branch pushed, a plain directory copied back (and refused
//! when its source changed the same file), five jobs approved and landed at once, and cleanup
//! after a land.

use serde_json::Value;
use std::path::Path;

use crate::job_env;
use job_env::{DONE, Env, git};

/// A worker that writes `text` to `file`.
fn writes(file: &str, text: &str) -> String {
    format!("sh -c 'printf \"{text}\\n\" > {file}'")
}

/// A job that wrote `text` to `file`, stepped and approved: SUCCESS, not landed. Runs from
/// `source` (the repository unless given).
fn success(env: &Env, file: &str, text: &str, source: Option<&Path>) -> String {
    let id = stepped(env, file, text, source);
    env.ok(&["job", "approve", &id]);
    id
}

/// A job that wrote `text` to `file` and waits in APPROVAL_REQUIRED.
fn stepped(env: &Env, file: &str, text: &str, source: Option<&Path>) -> String {
    let worker = writes(file, text);
    let mut extra = vec!["--activate"];
    let src;
    if let Some(s) = source {
        src = s.display().to_string();
        extra.extend(["--source", &src]);
    }
    let id = env.create(&worker, DONE, &extra);
    env.ok(&["job", "step", &id]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    id
}

fn out(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn landed(env: &Env, id: &str) -> Value {
    env.show(id)["job"]["landed"].clone()
}

#[test]
fn two_jobs_on_different_files_land_by_a_fast_forward_chain_and_clean_up() {
    let env = Env::new();
    let repo = env.repo();
    let before = git(&repo, &["rev-parse", "main"]);
    let a = success(&env, "b.txt", "bee", None);
    let b = success(&env, "c.txt", "sea", None);

    let o = env.oneshot(&["job", "land", &a, &b]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains(&format!("{a}: landed into main: ")), "{text}");
    assert!(text.contains(&format!("{b}: landed into main: ")), "{text}");

    // main moved by fast-forward: the first job's commit on the old main, the second rebased
    // on the first; the user's checkout followed (it is clean and on main).
    let head = git(&repo, &["rev-parse", "main"]);
    let la = landed(&env, &a);
    let lb = landed(&env, &b);
    assert_eq!(la["target"]["from"], before.as_str());
    assert_eq!(la["target"]["to"], lb["target"]["from"]);
    assert_eq!(lb["target"]["to"], head.as_str());
    assert_eq!(git(&repo, &["rev-parse", "HEAD~2"]), before);
    assert_eq!(
        std::fs::read_to_string(repo.join("b.txt")).unwrap(),
        "bee\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("c.txt")).unwrap(),
        "sea\n"
    );
    assert_eq!(lb["commits"].as_array().unwrap().len(), 1);
    assert_eq!(lb["commits"][0], head.as_str());
    assert_eq!(env.state(&a), "SUCCESS");
    // The audit trail has the land with the commits; `job show` says where it went.
    let audit = env.show(&b)["audit"].clone();
    let land = audit
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "land")
        .expect("a land entry");
    assert_eq!(land["metadata"]["result"], "landed");
    assert_eq!(land["metadata"]["landed"]["target"]["branch"], "main");
    let shown = env.ok(&["job", "show", &b]);
    assert!(
        shown.contains(&format!("landed:   landed into main at {}", &head[..10])),
        "{shown}"
    );

    // Landed again: refused, nothing changes.
    let o = env.oneshot(&["job", "land", &a]);
    assert_eq!(o.status.code(), Some(4), "{}", out(&o));
    assert!(out(&o).contains("already landed into main"), "{}", out(&o));

    // The branches are merged into main now: cleanup removes everything.
    for id in [&a, &b] {
        let o = env.oneshot(&["job", "cleanup", id]);
        assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    }
    assert!(git(&repo, &["branch", "--list", "oneshot/*"]).is_empty());
}

#[test]
fn a_conflict_leaves_the_base_untouched_and_a_fixed_job_lands() {
    let env = Env::new();
    let repo = env.repo();
    let first = success(&env, "a.txt", "one", None);
    let second = success(&env, "a.txt", "two", None);
    env.ok(&["job", "land", &first]);
    let main = git(&repo, &["rev-parse", "main"]);

    let o = env.oneshot(&["job", "land", &second]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("not landed, SUCCESS → INTERVENTION_REQUIRED"),
        "{text}"
    );
    assert!(text.contains("conflicts in a.txt"), "{text}");
    assert_eq!(git(&repo, &["rev-parse", "main"]), main, "the base moved");
    assert_eq!(env.state(&second), "INTERVENTION_REQUIRED");
    let job = env.show(&second);
    assert_eq!(job["job"]["cause"]["kind"], "land_failed");
    assert_eq!(job["job"]["cause"]["failure"]["kind"], "conflict");
    assert_eq!(job["job"]["cause"]["failure"]["files"][0], "a.txt");
    let history = job["history"].as_array().unwrap();
    assert_eq!(history.last().unwrap()["trigger"], "land failed");
    let shown = env.ok(&["job", "show", &second]);
    assert!(shown.contains("conflicts in a.txt"), "{shown}");

    // The job's worktree is back on its branch, no rebase left behind: a human resolves it.
    let wt = job["job"]["workspace"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let wt = Path::new(&wt);
    assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "two\n");
    let rebase = std::process::Command::new("git")
        .args(["rebase", "main"])
        .current_dir(wt)
        .output()
        .unwrap();
    assert!(!rebase.status.success());
    std::fs::write(wt.join("a.txt"), "one\ntwo\n").unwrap();
    git(wt, &["add", "a.txt"]);
    git(wt, &["-c", "core.editor=true", "rebase", "--continue"]);

    let o = env.oneshot(&["job", "land", &second]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert_eq!(env.state(&second), "SUCCESS");
    assert_eq!(
        std::fs::read_to_string(repo.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    let history = env.show(&second)["history"].clone();
    let last = history.as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["from"].as_str(), last["trigger"].as_str()),
        (Some("INTERVENTION_REQUIRED"), Some("land"))
    );

    // INTERVENTION_REQUIRED for another reason: land is refused, naming why.
    let other = env.job_in("INTERVENTION_REQUIRED");
    let o = env.oneshot(&["job", "land", &other]);
    assert_eq!(o.status.code(), Some(4), "{}", out(&o));
    assert!(out(&o).contains("only after a failed land"), "{}", out(&o));
    assert!(
        out(&o).contains(&format!("oneshot job resubmit {other}")),
        "{}",
        out(&o)
    );
}

#[test]
fn a_dirty_checkout_of_the_base_is_refused_and_nothing_moves() {
    let env = Env::new();
    let repo = env.repo();
    let id = success(&env, "b.txt", "bee", None);
    std::fs::write(repo.join("a.txt"), "edited\n").unwrap();
    let main = git(&repo, &["rev-parse", "main"]);
    let o = env.oneshot(&["job", "land", &id]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(
        out(&o).contains("uncommitted changes (a.txt)"),
        "{}",
        out(&o)
    );
    assert_eq!(git(&repo, &["rev-parse", "main"]), main);
    assert_eq!(env.state(&id), "SUCCESS");
    assert!(landed(&env, &id).is_null());
    // Clean again: it lands.
    git(&repo, &["checkout", "a.txt"]);
    env.ok(&["job", "land", &id]);
    assert_eq!(
        std::fs::read_to_string(repo.join("b.txt")).unwrap(),
        "bee\n"
    );
}

#[test]
fn a_remote_source_gets_the_branch_pushed_and_the_pull_request_command() {
    let env = Env::new();
    let root = env.dir.path();
    let bare = root.join("origin.git");
    git(root, &["clone", "-q", "--bare", "repo", "origin.git"]);
    git(root, &["clone", "-q", "origin.git", "clone"]);
    let clone = root.join("clone");
    // Someone else pushes to main meanwhile: the job is rebased onto the remote's main.
    let id = success(&env, "b.txt", "bee", Some(&clone));
    git(
        &env.repo(),
        &["remote", "add", "origin", bare.to_str().unwrap()],
    );
    std::fs::write(env.repo().join("z.txt"), "z\n").unwrap();
    git(&env.repo(), &["add", "z.txt"]);
    git(&env.repo(), &["commit", "-qm", "z"]);
    git(&env.repo(), &["push", "-q", "origin", "main"]);
    let remote_main = git(&bare, &["rev-parse", "main"]);
    let local_main = git(&clone, &["rev-parse", "main"]);

    let o = env.oneshot(&["job", "land", &id]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let branch = env.branch(&id);
    assert!(
        text.contains(&format!("pushed to origin as refs/heads/{branch}")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "open the pull request: git request-pull origin/main {} {branch}",
            bare.display()
        )),
        "{text}"
    );
    // The branch is on the remote, on top of its main; nothing else moved.
    let pushed = git(&bare, &["rev-parse", &branch]);
    assert_eq!(
        git(&bare, &["rev-parse", &format!("{branch}~1")]),
        remote_main
    );
    assert_eq!(git(&bare, &["rev-parse", "main"]), remote_main);
    assert_eq!(git(&clone, &["rev-parse", "main"]), local_main);
    let l = landed(&env, &id);
    assert_eq!(l["target"]["kind"], "remote");
    assert_eq!(l["target"]["head"], pushed.as_str());
    assert_eq!(l["target"]["onto"], remote_main.as_str());
    // Pushed counts as safe: cleanup goes through.
    let o = env.oneshot(&["job", "cleanup", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
}

#[test]
fn a_plain_directory_lands_by_copying_back_and_refuses_a_source_that_changed_the_same_file() {
    let env = Env::new();
    let plain = env.dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(plain.join("a.txt"), "a\n").unwrap();
    std::fs::write(plain.join("keep.txt"), "keep\n").unwrap();

    let id = success(&env, "a.txt", "job", Some(&plain));
    // The source changes another file meanwhile: that is not in the way.
    std::fs::write(plain.join("keep.txt"), "mine\n").unwrap();
    let o = env.oneshot(&["job", "land", &id]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains(&format!("copied back into {}", plain.display())),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(plain.join("a.txt")).unwrap(),
        "job\n"
    );
    assert_eq!(
        std::fs::read_to_string(plain.join("keep.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(landed(&env, &id)["target"]["files"][0], "a.txt");
    // Landed, the copy loses nothing: cleanup removes it without --discard.
    let o = env.oneshot(&["job", "cleanup", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));

    // The source changes the very file the job changed: refused with the list.
    let other = success(&env, "keep.txt", "job", Some(&plain));
    std::fs::write(plain.join("keep.txt"), "mine again\n").unwrap();
    let o = env.oneshot(&["job", "land", &other]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("keep.txt; merge them by hand"), "{text}");
    assert_eq!(
        std::fs::read_to_string(plain.join("keep.txt")).unwrap(),
        "mine again\n"
    );
    assert_eq!(env.state(&other), "INTERVENTION_REQUIRED");
    let failure = env.show(&other)["job"]["cause"]["failure"].clone();
    assert_eq!(failure["kind"], "source_changed");
    assert_eq!(failure["files"], serde_json::json!(["keep.txt"]));
}

#[test]
fn approve_land_of_five_jobs_reports_each_and_lands_all() {
    let env = Env::new();
    let repo = env.repo();
    let ids: Vec<String> = (0..5)
        .map(|i| stepped(&env, &format!("f{i}.txt"), &format!("{i}"), None))
        .collect();
    let mut args = vec!["job", "approve"];
    args.extend(ids.iter().map(String::as_str));
    args.push("--land");
    let o = env.oneshot(&args);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    for (i, id) in ids.iter().enumerate() {
        assert!(
            text.contains(&format!("{id}: APPROVAL_REQUIRED → SUCCESS")),
            "{text}"
        );
        assert!(text.contains(&format!("{id}: landed into main")), "{text}");
        assert_eq!(
            std::fs::read_to_string(repo.join(format!("f{i}.txt"))).unwrap(),
            format!("{i}\n")
        );
    }
    assert_eq!(git(&repo, &["rev-list", "--count", "main"]), "6");

    // One refused among several: each reported, the exit status says so.
    let o = env.oneshot(&["job", "approve", &ids[0], "--land"]);
    assert_eq!(o.status.code(), Some(4), "{}", out(&o));
    assert!(
        out(&o).contains("approve is not allowed in SUCCESS"),
        "{}",
        out(&o)
    );
    let o = env.oneshot(&["job", "land", &ids[1], &ids[2], "--json"]);
    assert_eq!(o.status.code(), Some(4), "{}", out(&o));
    let rows: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["result"] == "error"), "{rows:?}");
}

/// A resolver command: reads the question, runs `edit` in the worktree, answers `report`.
fn resolver(env: &Env, name: &str, edit: &str, action: &str) -> String {
    let script = env.dir.path().join(name);
    let answer = format!(
        r#"{{"all_resolved":true,"confidence":0.9,"summary":"done","files":[{{"path":"a.txt","action":"{action}","description":"both lines kept"}}]}}"#
    );
    std::fs::write(
        &script,
        format!("cat > /dev/null\n{edit}\necho '{answer}'\n"),
    )
    .unwrap();
    format!("cmd:sh {}", script.display())
}

#[test]
fn a_resolver_resolves_the_conflict_and_one_leaving_markers_is_refused() {
    let env = Env::new();
    let repo = env.repo();
    let first = success(&env, "a.txt", "one", None);
    let lazy = success(&env, "a.txt", "two", None);
    let second = success(&env, "a.txt", "three", None);
    env.ok(&["job", "land", &first]);
    let main = git(&repo, &["rev-parse", "main"]);

    // Says it merged, edits nothing: the markers are still there.
    let liar = resolver(&env, "liar.sh", "true", "merged");
    let o = env.oneshot(&["job", "land", &lazy, "--resolver", &liar]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("a.txt: conflict markers left"), "{text}");
    assert_eq!(git(&repo, &["rev-parse", "main"]), main, "the base moved");
    assert_eq!(env.state(&lazy), "INTERVENTION_REQUIRED");
    let failure = env.show(&lazy)["job"]["cause"]["failure"].clone();
    assert_eq!(failure["kind"], "unresolved");

    // Edits the file and reports it: the rebase goes on and the job lands.
    let good = resolver(&env, "good.sh", "printf 'one\\nthree\\n' > a.txt", "merged");
    let o = env.oneshot(&["job", "land", &second, "--resolver", &good]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert_eq!(
        std::fs::read_to_string(repo.join("a.txt")).unwrap(),
        "one\nthree\n"
    );
    assert_eq!(git(&repo, &["rev-parse", "main~1"]), main);
    assert_eq!(env.state(&second), "SUCCESS");
}

#[test]
fn the_checks_run_again_on_the_rebased_result_and_a_failure_lands_nothing() {
    let env = Env::new();
    let repo = env.repo();
    // Passes where the job ran; fails once the base gains a file saying otherwise.
    let check = "! test -f broken.flag";
    let worker = writes("d.txt", "dee");
    let id = env.create(&worker, DONE, &["--activate", "--check", check]);
    env.ok(&["job", "step", &id]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    env.ok(&["job", "approve", &id]);
    std::fs::write(repo.join("broken.flag"), "x\n").unwrap();
    git(&repo, &["add", "broken.flag"]);
    git(&repo, &["commit", "-qm", "break the check"]);
    let before = git(&repo, &["rev-parse", "main"]);

    let o = env.oneshot(&["job", "land", &id]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("check `{check}` failed")), "{text}");
    assert_eq!(
        git(&repo, &["rev-parse", "main"]),
        before,
        "the base is untouched"
    );
    assert_eq!(env.state(&id), "INTERVENTION_REQUIRED");
    let cause = &env.show(&id)["job"]["cause"];
    assert_eq!(cause["failure"]["kind"], "check", "{cause}");
    assert_eq!(cause["failure"]["name"], check, "{cause}");

    // Fixed on the base, the same job lands from INTERVENTION_REQUIRED.
    git(&repo, &["rm", "-q", "broken.flag"]);
    git(&repo, &["commit", "-qm", "unbreak"]);
    let o = env.oneshot(&["job", "land", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert_eq!(env.state(&id), "SUCCESS");
}

#[test]
fn several_jobs_land_in_the_order_that_lands_the_most() {
    let env = Env::new();
    let x = success(&env, "f.txt", "ex", None);
    let z = success(&env, "g.txt", "zed", None);
    // Overlaps both others: landed first, as given, it would leave both to conflict.
    let both = "sh -c 'printf why > f.txt; printf why > g.txt'";
    let y = env.create(both, DONE, &["--activate"]);
    env.ok(&["job", "step", &y]);
    env.ok(&["job", "approve", &y]);
    let list = env.ok(&["job", "list"]);
    assert!(list.contains("overlaps"), "{list}");

    let o = env.oneshot(&["job", "land", &y, &x, &z]);
    let text = out(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "one of them could not land: {text}"
    );
    let at = |id: &str| text.find(&format!("{id}:")).unwrap();
    assert!(at(&x) < at(&y) && at(&z) < at(&y), "{text}");
    assert_eq!(env.state(&x), "SUCCESS");
    assert_eq!(env.state(&z), "SUCCESS");
    assert_eq!(env.state(&y), "INTERVENTION_REQUIRED");
    // Landed jobs overlap nothing any more: the base has their work.
    let list = env.ok(&["job", "list", "--state", "SUCCESS"]);
    assert!(!list.contains(&format!("overlaps {x}")), "{list}");
}

#[test]
fn the_jobs_policy_names_the_resolver_when_no_flag_does() {
    let env = Env::new();
    let repo = env.repo();
    let first = success(&env, "a.txt", "one", None);
    let good = resolver(&env, "good.sh", "printf 'one\\nfour\\n' > a.txt", "merged");
    let policy = env.dir.path().join("p.lua");
    std::fs::write(&policy, format!("return {{ resolver = {good:?} }}\n")).unwrap();
    let with_policy = |text: &str| {
        let id = env.create(
            &writes("a.txt", text),
            DONE,
            &["--activate", "--policy", policy.to_str().unwrap()],
        );
        env.ok(&["job", "step", &id]);
        env.ok(&["job", "approve", &id]);
        id
    };
    let id = with_policy("four");
    let third = with_policy("five");
    env.ok(&["job", "land", &first]);
    let o = env.oneshot(&["job", "land", &id]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert_eq!(
        std::fs::read_to_string(repo.join("a.txt")).unwrap(),
        "one\nfour\n"
    );

    // A resolver the policy names that is no agent is said, with where it came from.
    std::fs::write(&policy, "return { resolver = \"nosuchagent\" }\n").unwrap();
    let o = env.oneshot(&["job", "land", &third]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("nosuchagent (resolver in "), "{text}");
    assert_eq!(
        env.state(&third),
        "SUCCESS",
        "nothing was landed or recorded"
    );
}
