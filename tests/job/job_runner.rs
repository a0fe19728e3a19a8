//! The job runner on real git repositories, a real SQLite store and real processes: many jobs
//! at once each in its own worktree, two runners sharing one store, a cancel that takes a
//! job from the runner mid-session.

use crate::job_env;
use job_env::{DONE, Env, git, repo, sealed};
use oneshot::job::record::{AuditAction, Job, JobSpec};
use oneshot::job::runner::{self, Note, RunnerOptions};
use oneshot::job::store::prelude::*;
use oneshot::job::verbs::{self, VerbContext};
use oneshot::job::{Decision, JobState, JobStore, JobTrigger, SqliteStore};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

fn new_job(store: &SqliteStore, n: usize, source: &Path, worker: &str) -> String {
    let id = format!("job-{n:08x}");
    let spec = JobSpec::new(
        format!("task number {n}"),
        source,
        format!("cmd:{worker}"),
        "cmd:echo VERDICT: DONE",
    );
    let job = Job::new(id.clone(), spec, JobState::Pending, n as u64 + 1);
    let cx = VerbContext {
        actor: "tester".into(),
        now_ms: job.created_ms,
        ..Default::default()
    };
    store
        .create(
            &sealed(&job),
            &sealed(&verbs::audit_entry(
                &job,
                AuditAction::Create,
                JobState::Pending,
                &cx,
            )),
        )
        .unwrap();
    id
}

fn options(state: &Path, parallel: usize, on_note: Rc<dyn Fn(&Note)>) -> RunnerOptions {
    RunnerOptions {
        state_dir: state.to_path_buf(),
        runner: runner::runner_id(),
        lease_ttl: Duration::from_secs(1),
        parallel,
        max_steps: None,
        only: None,
        on_note,
        shutdown: Default::default(),
        session_output: false,
        wait: false,
        notify: None,
        reserve: None,
    }
}

fn run_local(store: Arc<dyn JobStore>, opts: RunnerOptions) -> Vec<runner::StepEnd> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, runner::run(store, opts)).unwrap()
}

#[test]
fn twenty_jobs_four_at_a_time_each_in_its_own_worktree() {
    let tmp = tempfile::tempdir().unwrap();
    let src = repo(tmp.path());
    // Apart from where the agents write: a directory holding it takes no new entries from them.
    let private = tempfile::tempdir().unwrap();
    let state = private.path().join("state");
    let store = SqliteStore::open(state.join("jobs.db")).unwrap();
    let ids: Vec<String> = (0..20)
        .map(|n| {
            new_job(
                &store,
                n,
                &src,
                "sh -c 'printf %s \"$ONESHOT_PROMPT\" > out.txt; sleep 0.2'",
            )
        })
        .collect();
    // Which jobs are mid-step at each move: never more than four.
    let busy = Rc::new(RefCell::new((BTreeSet::<String>::new(), 0usize)));
    let b = Rc::clone(&busy);
    let note: Rc<dyn Fn(&Note)> = Rc::new(move |n| {
        if let Note::Moved { job, transition } = n {
            let mut b = b.borrow_mut();
            if transition.to.is_resting() {
                b.0.remove(job);
            } else {
                b.0.insert(job.clone());
            }
            b.1 = b.1.max(b.0.len());
        }
    });
    let ends = run_local(Arc::new(store), options(&state, 4, note));
    assert_eq!(ends.len(), 20);
    let most = busy.borrow().1;
    assert!(
        (2..=4).contains(&most),
        "at most four at once, and more than one: {most}"
    );
    let store = SqliteStore::open(state.join("jobs.db")).unwrap();
    let mut paths = BTreeSet::new();
    for id in &ids {
        let job = store.get(id).unwrap();
        assert_eq!(
            job.state(),
            JobState::ApprovalRequired,
            "{id}: {:?}",
            job.reason
        );
        let ws = job.workspace.clone().unwrap();
        assert!(paths.insert(ws.path.clone()), "one worktree per job");
        let branch = ws.branch.clone().unwrap();
        // Made in the store without a branch (as jobs were before branches were named from
        // the task): the job id names it.
        assert_eq!(branch, format!("oneshot/{id}"));
        // The work is committed on the job's branch, and the source's own tree is untouched.
        let shown = git(&src, &["show", &format!("{branch}:out.txt")]);
        assert!(shown.starts_with("task number "), "{shown}");
        let history = store.history(id).unwrap();
        let moves: Vec<JobState> = history.iter().map(|t| t.to).collect();
        use JobState::*;
        assert_eq!(
            moves,
            [Provisioning, Executing, Harvesting, ApprovalRequired]
        );
        let arts = store.artifacts(id).unwrap();
        assert_eq!(arts.len(), 1);
        assert_eq!(arts[0].files, ["out.txt"]);
        assert!(arts[0].commit.is_some());
        assert_eq!(
            store.lease(id).unwrap(),
            None,
            "a resting job holds no lease"
        );
    }
    assert!(!src.join("out.txt").exists());
    assert_eq!(git(&src, &["status", "--porcelain"]), "");
}

#[test]
fn two_runners_on_one_store_never_run_the_same_step() {
    let tmp = tempfile::tempdir().unwrap();
    let src = repo(tmp.path());
    // Apart from where the agents write: a directory holding it takes no new entries from them.
    let private = tempfile::tempdir().unwrap();
    let state = private.path().join("state");
    let db = state.join("jobs.db");
    let store = SqliteStore::open(&db).unwrap();
    let ids: Vec<String> = (0..10)
        .map(|n| new_job(&store, n, &src, "sh -c 'echo x > out.txt'"))
        .collect();
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let db = db.clone();
            let state = state.clone();
            std::thread::spawn(move || {
                let store = SqliteStore::open(&db).unwrap();
                let ends = run_local(Arc::new(store), options(&state, 2, Rc::new(|_| {})));
                ends.into_iter().map(|e| e.job).collect::<Vec<_>>()
            })
        })
        .collect();
    let mut stepped: Vec<String> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    stepped.sort();
    assert_eq!(stepped, ids, "each job stepped once, by one runner");
    for id in &ids {
        let history = store.history(id).unwrap();
        let steps = history
            .iter()
            .filter(|t| t.trigger == JobTrigger::Step)
            .count();
        assert_eq!(steps, 1, "{id}: {history:?}");
        let by: BTreeSet<&str> = history.iter().map(|t| t.by.as_str()).collect();
        assert_eq!(by.len(), 1, "one runner moved {id}: {by:?}");
        assert_eq!(store.get(id).unwrap().state(), JobState::ApprovalRequired);
    }
}

#[test]
fn a_cancel_mid_session_takes_the_job_from_its_runner_and_stops_the_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let src = repo(tmp.path());
    // Apart from where the agents write: a directory holding it takes no new entries from them.
    let private = tempfile::tempdir().unwrap();
    let state = private.path().join("state");
    let db = state.join("jobs.db");
    let store = SqliteStore::open(&db).unwrap();
    let pidfile = tmp.path().join("worker.pid");
    let worker = format!("sh -c 'echo $$ > {}; exec sleep 60'", pidfile.display());
    let id = new_job(&store, 1, &src, &worker);
    // A human cancels as soon as the worker runs.
    let canceler = {
        let (db, id, pidfile) = (db.clone(), id.clone(), pidfile.clone());
        std::thread::spawn(move || {
            let store = SqliteStore::open(&db).unwrap();
            for _ in 0..400 {
                if pidfile.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            let job = store.get(&id).unwrap();
            assert_eq!(job.state(), JobState::Executing);
            let cx = VerbContext {
                actor: "ana".into(),
                now_ms: oneshot_now(),
                ..Default::default()
            };
            let (after, t, audit) = verbs::apply(&job, JobTrigger::Cancel, &cx).unwrap();
            store
                .decide(&Decision {
                    job: &sealed(&after),
                    expected: JobState::Executing,
                    transition: Some(&sealed(&t)),
                    audit: &sealed(&audit),
                    revoke: true,
                })
                .unwrap();
        })
    };
    let started = std::time::Instant::now();
    let ends = run_local(Arc::new(store), options(&state, 1, Rc::new(|_| {})));
    canceler.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the runner stopped well before the agent would have"
    );
    assert_eq!(ends.len(), 1);
    assert_eq!(
        ends[0].ended,
        runner::Ended::Lost(
            "canceled by ana while it was EXECUTING; this runner stopped its work on it".into()
        ),
        "{:?}",
        ends[0]
    );
    assert_eq!(ends[0].state, JobState::Canceled, "{:?}", ends[0]);
    let store = SqliteStore::open(&db).unwrap();
    assert_eq!(store.get(&id).unwrap().state(), JobState::Canceled);
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let alive = unsafe { libc_kill(pid, 0) } == 0;
    assert!(!alive, "the worker {pid} was stopped with its session");
    let audit = store.audit(Some(&id)).unwrap();
    assert_eq!(audit.last().unwrap().action, AuditAction::Cancel);
    assert_eq!(audit.last().unwrap().actor, "ana");
}

fn oneshot_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

unsafe extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

#[test]
fn a_panel_of_auditors_judges_in_parallel_and_is_aggregated() {
    let tmp = tempfile::tempdir().unwrap();
    let src = repo(tmp.path());
    // Apart from where the agents write: a directory holding it takes no new entries from them.
    let private = tempfile::tempdir().unwrap();
    let state = private.path().join("state");
    let store = SqliteStore::open(state.join("jobs.db")).unwrap();
    let verdict = |v: &str| {
        format!(
            "cmd:sh -c 'sleep 1; echo {{\\\"verdict\\\": \\\"{v}\\\", \\\"reason\\\": \\\"I say {v}\\\", \\\"confidence\\\": 0.9, \\\"open_criteria\\\": []}}'"
        )
    };
    let mut ids = Vec::new();
    for (n, how) in [(1, "majority"), (2, "all")] {
        let id = new_job(&store, n, &src, "sh -c 'echo x > out.txt'");
        // The spec is the store's to keep: set the panel through a fresh create.
        let mut job = store.get(&id).unwrap();
        job.id = format!("job-panel{n:03}");
        job.spec.panel = vec![verdict("done"), verdict("done"), verdict("retry")];
        job.spec.aggregate = how.parse().unwrap();
        let cx = VerbContext {
            actor: "tester".into(),
            now_ms: 100 + n as u64,
            ..Default::default()
        };
        store
            .create(
                &sealed(&job),
                &sealed(&verbs::audit_entry(
                    &job,
                    AuditAction::Create,
                    JobState::Pending,
                    &cx,
                )),
            )
            .unwrap();
        // The first, panel-less copy is not wanted.
        let plain = store.get(&id).unwrap();
        let (gone, t, audit) = verbs::apply(&plain, JobTrigger::Cancel, &cx).unwrap();
        store
            .decide(&Decision {
                job: &sealed(&gone),
                expected: JobState::Pending,
                transition: Some(&sealed(&t)),
                audit: &sealed(&audit),
                revoke: false,
            })
            .unwrap();
        ids.push(job.id);
    }
    let started = std::time::Instant::now();
    run_local(Arc::new(store), options(&state, 2, Rc::new(|_| {})));
    // Three one-second auditors per job, two jobs at once: in parallel, well under 6 s.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let store = SqliteStore::open(state.join("jobs.db")).unwrap();
    let majority = store.get(&ids[0]).unwrap();
    assert_eq!(
        majority.state(),
        JobState::ApprovalRequired,
        "{:?} {:?}",
        majority.reason,
        store.artifacts(&ids[0]).unwrap()
    );
    let all = store.get(&ids[1]).unwrap();
    assert_eq!(all.state(), JobState::InterventionRequired);
    assert!(
        all.reason_words()
            .as_deref()
            .unwrap()
            .contains("I say retry"),
        "{:?}",
        all.reason
    );
    let arts = store.artifacts(&ids[1]).unwrap();
    let panel = &arts.last().unwrap().panel;
    let said: Vec<&str> = panel.iter().map(|v| v.verdict.as_str()).collect();
    assert_eq!(said, ["done", "done", "retry"]);
    assert_eq!(arts.len(), 2, "the harvest's version, then the panel's");
}

/// `oneshot job run ARGS` under `ulimit LIMIT` (e.g. `-Sn 40`): its exit status and stderr.
fn run_limited(env: &Env, limit: &str, args: &str) -> (bool, String) {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit {limit} && exec \"$0\" --state-dir \"$1\" job run {args}"
        ))
        .arg(env!("CARGO_BIN_EXE_oneshot"))
        .arg(env.state_dir())
        .current_dir(env.repo())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn hard_open_files() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    line.split_whitespace()
        .nth(4)
        .unwrap()
        .parse()
        .unwrap_or(u64::MAX)
}

#[test]
fn job_run_raises_its_open_file_limit_to_hold_many_sessions() {
    if hard_open_files() < 1_000 {
        eprintln!("skipped: the hard limit on open files is too low to raise to");
        return;
    }
    let env = Env::new();
    // Twelve sessions alive together hold about 70 files, beyond a soft limit of 40: the runner
    // raises it to the hard limit (else it would warn, and late agents would fail to start).
    let ids: Vec<String> = (0..12)
        .map(|_| env.create("sh -c 'echo hi > f.txt; sleep 3'", DONE, &["--activate"]))
        .collect();
    let (ok, stderr) = run_limited(&env, "-Sn 40", "--parallel 12");
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    for id in &ids {
        assert_eq!(env.state(id), "APPROVAL_REQUIRED", "{id}: {stderr}");
    }
}

#[test]
fn job_run_warns_when_the_hard_limit_cannot_hold_its_parallel_steps() {
    let env = Env::new();
    let (ok, stderr) = run_limited(&env, "-n 100", "--parallel 50");
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("--parallel 50 may need about 564 open files")
            && stderr.contains("may open 100")
            && stderr.contains("ulimit -n"),
        "{stderr}"
    );
}
