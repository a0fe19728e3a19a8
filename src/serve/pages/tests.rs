//! The pages on a real SQLite store: jobs made, claimed, moved, harvested and logged through
//! the store's own calls, its clock a [`ManualClock`] so that leases expire without waiting.
//! (A job page's attempts told as the agents' accounts: account_tests.rs.)

use super::liveness::{Fleet, Liveness};
use super::*;
use crate::engine::Stream;
use crate::job::record::{ArtifactVersion, AuditAction, AuditEntry, Risk, Transition};
use crate::job::store::prelude::*;
use crate::job::store::{Lease, ManualClock, RunnerBeat, SessionEntry, SqliteStore};
use crate::job::{Job, JobPhase, JobSpec, JobState, JobTrigger};
use crate::process::Role;
use crate::store::{Activity, Record};
use serde_json::json;
use std::sync::Arc;

pub(super) const TTL: u64 = 30_000;

pub(super) fn sealed<T: serde::Serialize + serde::de::DeserializeOwned>(
    value: &T,
) -> crate::redact::Redacted<T> {
    crate::job::redactor(None).seal(value).expect("seal")
}

/// A store on a temporary file, and its clock.
pub(super) struct World {
    _dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    store: SqliteStore,
}

pub(super) fn world() -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(0));
    let store =
        SqliteStore::open_with_clock(dir.path().join("jobs.db"), clock.clone()).expect("open");
    World {
        _dir: dir,
        clock,
        store,
    }
}

pub(super) fn viewer(operate: bool, approve: bool) -> Viewer {
    Viewer {
        name: "ann".into(),
        can_operate: operate,
        can_approve: approve,
    }
}

impl World {
    /// The state directory the pages are served with (nothing in it).
    pub(super) fn state_dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// The store, its clock set to `ms`.
    pub(super) fn at(&self, ms: u64) -> &SqliteStore {
        self.clock.set(ms);
        &self.store
    }

    /// A job made PENDING at `at`.
    pub(super) fn add(&self, id: &str, task: &str, risk: Risk, at: u64) -> Job {
        let mut spec = JobSpec::new(task, "/src", "claude", "codex");
        spec.risk = risk;
        let j = Job::new(id, spec, JobState::Pending, at);
        let audit = AuditEntry::job(id, AuditAction::Create, "ann", at, Default::default());
        self.at(at)
            .create(&sealed(&j), &sealed(&audit))
            .expect("create");
        j
    }

    /// `runner` claims `j` at `at` and moves it into PROVISIONING.
    pub(super) fn claim(&self, j: &mut Job, runner: &str, ttl: u64, at: u64) -> Lease {
        let claim = self
            .at(at)
            .claim(runner, Some(&j.id), ttl)
            .expect("claim")
            .expect("claimable");
        j.steps += 1;
        self.moved(
            j,
            &claim.lease,
            JobState::Provisioning,
            JobTrigger::Step,
            at,
        );
        claim.lease
    }

    /// Moves `j` to `to` under `lease`.
    pub(super) fn moved(
        &self,
        j: &mut Job,
        lease: &Lease,
        to: JobState,
        trigger: JobTrigger,
        at: u64,
    ) {
        let t = Transition {
            from: j.state(),
            to,
            trigger,
            reason: None,
            at_ms: at,
            by: lease.runner.clone(),
        };
        j.phase = JobPhase::of(to, None, None);
        j.updated_ms = at;
        self.at(at)
            .advance(lease, &sealed(&*j), Some(&sealed(&t)))
            .expect("advance");
    }

    /// A whole step of `j` from PENDING to APPROVAL_REQUIRED at `at`, harvesting an
    /// artifact of `diff_hash` made by session `session`.
    pub(super) fn to_approval(
        &self,
        j: &mut Job,
        session: &str,
        diff_hash: &str,
        at: u64,
    ) -> Lease {
        let lease = self.claim(j, "runner-a", TTL, at);
        self.moved(j, &lease, JobState::Executing, JobTrigger::Provisioned, at);
        self.moved(j, &lease, JobState::Harvesting, JobTrigger::Completed, at);
        let artifact = ArtifactVersion {
            version: 0,
            step: j.steps,
            at_ms: at,
            session: Some(session.into()),
            outcome: "COMPLETED".into(),
            commit: Some("1a2b3c4d5e".into()),
            diff_hash: diff_hash.into(),
            diff_stat: "src/lib.rs | 2 +-".into(),
            files: vec!["src/lib.rs".into()],
            final_message: "Fixed the parser.".into(),
            verdict: Some("done: the tests pass".into()),
            confidence: Some(0.9),
            panel: vec![],
        };
        self.at(at)
            .add_artifact(&lease, &sealed(&artifact))
            .expect("artifact");
        self.moved(
            j,
            &lease,
            JobState::ApprovalRequired,
            JobTrigger::Harvested(crate::job::Harvest::ApprovalRequired),
            at,
        );
        lease
    }
}

/// The position of `needle` in `page`, which must hold it.
pub(super) fn pos(page: &str, needle: &str) -> usize {
    page.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} is not in the page:\n{page}"))
}

/// The HTML of the board's group of `state`.
fn group<'a>(page: &'a str, state: &str) -> &'a str {
    let start = pos(page, &format!("id=\"state-{state}\""));
    let end = page[start..].find("</section>").expect("end of group") + start;
    &page[start..end]
}

#[test]
fn the_board_groups_jobs_by_state_and_counts_each() {
    let w = world();
    w.add("job-00000001", "first", Risk::Low, 10);
    w.add("job-00000002", "second", Risk::Low, 20);
    let mut third = w.add("job-00000003", "third", Risk::High, 30);
    w.to_approval(&mut third, "s-3", "sha256:33", 40);

    let page = board(w.at(1_000), &BoardQuery::default(), &viewer(false, false)).unwrap();
    assert!(page.starts_with("<!doctype html>"), "{page}");
    assert!(page.trim_end().ends_with("</html>"));
    let pending = group(&page, "pending");
    assert!(
        pending.contains("<span class=\"count\">2</span>"),
        "{pending}"
    );
    assert!(pending.contains("href=\"/jobs/job-00000001\""));
    assert!(pending.contains("href=\"/jobs/job-00000002\""));
    assert!(!pending.contains("job-00000003"));
    let waiting = group(&page, "approval_required");
    assert!(
        waiting.contains("<span class=\"count\">1</span>"),
        "{waiting}"
    );
    assert!(waiting.contains("job-00000003"));
    // States the store holds no job in are not shown; the groups follow the machine's order.
    assert!(!page.contains("id=\"state-executing\""));
    assert!(pos(&page, "id=\"state-pending\"") < pos(&page, "id=\"state-approval_required\""));
    assert!(
        page.contains("<span class=\"total\">3 jobs</span>"),
        "{page}"
    );
    assert!(page.contains(">PENDING 2</a>"), "{page}");
    // A resting job holds no lease: nothing claims it is worked on.
    assert!(!pending.contains("badge live") && !pending.contains("badge stale"));
}

#[test]
fn pending_jobs_say_they_wait_for_memory_while_every_live_runner_holds_back() {
    let w = world();
    w.add("job-00000001", "wait for room", Risk::Medium, 10);
    let beat = |at: u64, runner: &str, waiting: Option<crate::job::store::RunnerWait>| {
        w.at(at)
            .runner_beat(&RunnerBeat {
                runner: runner.into(),
                host: "box".into(),
                pid: 42,
                ttl_ms: TTL,
                waiting,
            })
            .unwrap();
    };
    let memory = crate::job::store::RunnerWait::Memory {
        available: 1 << 30,
        reserve: 4 << 30,
    };
    beat(1_000, "runner-a", Some(memory.clone()));
    let page = board(w.at(2_000), &BoardQuery::default(), &viewer(false, false)).unwrap();
    let pending = group(&page, "pending");
    assert!(
        pending.contains("Every live runner is waiting for memory: 1 GiB available, reserve 4 GiB"),
        "{pending}"
    );
    let runners = &page[pos(&page, "<section class=\"runners\">")..];
    assert!(runners.contains("waiting for memory"), "{runners}");
    // Another live runner that would claim: the jobs wait for it, not for memory.
    beat(1_500, "runner-b", None);
    let page = board(w.at(2_000), &BoardQuery::default(), &viewer(false, false)).unwrap();
    assert!(
        !group(&page, "pending").contains("waiting for memory"),
        "{page}"
    );
    // Once that one is stale, the holding one (beating on) speaks for the fleet again.
    beat(1_500 + TTL, "runner-a", Some(memory));
    let page = board(
        w.at(1_500 + TTL + 1),
        &BoardQuery::default(),
        &viewer(false, false),
    )
    .unwrap();
    assert!(
        group(&page, "pending").contains("waiting for memory"),
        "{page}"
    );
}

#[test]
fn a_lease_that_expired_by_the_stores_clock_reads_stale_and_a_live_one_names_its_runner() {
    let w = world();
    let mut j = w.add("job-00000001", "lease me", Risk::Medium, 10);
    let beat = |at: u64, ttl: u64| {
        w.at(at)
            .runner_beat(&RunnerBeat {
                runner: "runner-a".into(),
                host: "box".into(),
                pid: 42,
                ttl_ms: ttl,
                waiting: None,
            })
            .unwrap();
    };
    beat(1_000, TTL);
    w.claim(&mut j, "runner-a", TTL, 1_000);

    let page = board(w.at(5_000), &BoardQuery::default(), &viewer(false, false)).unwrap();
    let row = group(&page, "provisioning");
    assert!(row.contains("badge live"), "{row}");
    assert!(row.contains("<code>runner-a</code>"), "{row}");
    assert!(row.contains("beat 4s ago"), "{row}");
    assert!(!row.contains("stale"), "{row}");

    // Past the lease, by the store's clock: stale, and still PROVISIONING (what the store holds).
    let page = board(w.at(45_000), &BoardQuery::default(), &viewer(false, false)).unwrap();
    let row = group(&page, "provisioning");
    assert!(row.contains("badge stale"), "{row}");
    assert!(
        row.contains("its lease expired 14s ago by the store&#39;s clock"),
        "{row}"
    );
    assert!(!row.contains("badge live"), "{row}");
    let runners = &page[pos(&page, "<section class=\"runners\">")..];
    assert!(runners.contains("badge stale"), "{runners}");
    assert!(runners.contains("<small>(expired)</small>"), "{runners}");
    // The job's page says the same.
    let page = job(
        w.at(45_000),
        "job-00000001",
        &viewer(false, false),
        w.state_dir(),
    )
    .unwrap();
    assert!(page.contains("badge stale"));

    // A lease still live whose runner went silent past its own ttl is stale too.
    let mut k = w.add("job-00000002", "held", Risk::Medium, 50_000);
    beat(50_000, 5_000);
    w.claim(&mut k, "runner-a", 600_000, 50_000);
    let page = board(w.at(70_000), &BoardQuery::default(), &viewer(false, false)).unwrap();
    let row = group(&page, "provisioning");
    let k_row = &row[pos(row, "data-job=\"job-00000002\"")..];
    assert!(k_row.contains("badge stale"), "{k_row}");
    assert!(
        k_row.contains("silent for 20s, past its ttl of 5s"),
        "{k_row}"
    );
}

#[test]
fn what_the_store_cannot_say_reads_unknown() {
    let w = world();
    let mut j = w.add("job-00000001", "t", Risk::Medium, 10);
    w.claim(&mut j, "runner-a", TTL, 10);
    let blind = Fleet {
        now: Err("the database is gone".into()),
        runners: Err("the database is gone".into()),
    };
    let live = blind.of(w.at(20), "job-00000001", JobState::Provisioning);
    assert!(
        matches!(&live, Liveness::Unknown { why } if why.contains("the database is gone")),
        "{live:?}"
    );
    assert!(live.cell().contains("badge unknown"));
    let panel = super::runners::panel(&blind);
    assert!(panel.contains("badge unknown"), "{panel}");
    // A live lease whose runner keeps no heartbeat row: live, its heartbeat unknown.
    let seeing = Fleet::read(w.at(20));
    let live = seeing.of(&w.store, "job-00000001", JobState::Provisioning);
    assert!(
        matches!(
            live,
            Liveness::Live {
                beat_age_ms: None,
                ..
            }
        ),
        "{live:?}"
    );
    assert!(live.cell().contains("heartbeat unknown"));
    // A resting job is not judged at all.
    assert_eq!(
        seeing.of(&w.store, "job-00000001", JobState::Pending),
        Liveness::Resting
    );
}

#[test]
fn filters_and_search_narrow_the_board() {
    let w = world();
    w.add(
        "job-00000001",
        "Fix the parser\nit chokes on unicode",
        Risk::Low,
        10,
    );
    w.add("job-00000002", "Write the docs", Risk::High, 20);
    let mut third = w.add("job-00000003", "Refactor the lexer", Risk::Low, 30);
    w.claim(&mut third, "runner-b", TTL, 30);
    let ids = |q: BoardQuery| -> Vec<String> {
        let page = board(w.at(40), &q, &viewer(false, false)).unwrap();
        (1..=3)
            .map(|n| format!("job-0000000{n}"))
            .filter(|id| page.contains(&format!("data-job=\"{id}\"")))
            .collect()
    };
    let q = |state: &str, risk: &str, runner: &str, text: &str| BoardQuery {
        state: Some(state.into()),
        risk: Some(risk.into()),
        runner: Some(runner.into()),
        q: Some(text.into()),
    };
    assert_eq!(ids(BoardQuery::default()).len(), 3);
    assert_eq!(
        ids(q("", "", "", "")).len(),
        3,
        "blank fields filter nothing"
    );
    assert_eq!(
        ids(q("pending", "", "", "")),
        ["job-00000001", "job-00000002"]
    );
    assert_eq!(ids(q("", "LOW", "", "")), ["job-00000001", "job-00000003"]);
    assert_eq!(ids(q("", "low", "runner-b", "")), ["job-00000003"]);
    assert_eq!(ids(q("", "", "runner-z", "")), Vec::<String>::new());
    // The title, any case; and a line of the task past the title.
    assert_eq!(ids(q("", "", "", "DOCS")), ["job-00000002"]);
    assert_eq!(ids(q("", "", "", "unicode")), ["job-00000001"]);
    // A filter that names nothing is said, not applied silently.
    let page = board(w.at(40), &q("sideways", "", "", ""), &viewer(false, false)).unwrap();
    assert!(
        page.contains("state filter ignored: unknown job state"),
        "{page}"
    );
    assert_eq!(ids(q("sideways", "", "", "")).len(), 3);
    // The form shows what was asked.
    let page = board(
        w.at(40),
        &q("pending", "low", "", "pars"),
        &viewer(false, false),
    )
    .unwrap();
    assert!(
        page.contains("<option value=\"PENDING\" selected>"),
        "{page}"
    );
    assert!(page.contains("<option value=\"low\" selected>"));
    assert!(page.contains("name=\"q\" value=\"pars\""));
}

#[test]
fn text_from_the_store_is_escaped_and_no_script_runs_but_the_pages_own() {
    let w = world();
    let evil = "<script>alert('x')</script> & \"quoted\"";
    let mut j = w.add("job-00000001", evil, Risk::Low, 10);
    w.to_approval(&mut j, "s-<b>", "sha256:\"><script>", 20);
    let said = Record::Activity(Activity {
        ts: 20,
        role: Role::Worker,
        iteration: 1,
        executor: "command".into(),
        stream: Stream::Stdout,
        partial: false,
        data: json!("<img src=x onerror=alert(1)>"),
    });
    let q = BoardQuery {
        q: Some("<script>".into()),
        ..BoardQuery::default()
    };
    for page in [
        board(w.at(30), &q, &viewer(true, true)).unwrap(),
        inbox(w.at(30), &viewer(true, true)).unwrap(),
        job(w.at(30), "job-00000001", &viewer(true, true), w.state_dir()).unwrap(),
    ] {
        // The one script is the pages' own, from this server (the policy allows no other).
        let own = format!("<script src=\"{LIVE_JS_PATH}\" defer></script>");
        assert_eq!(page.matches("<script").count(), 1, "{page}");
        assert!(page.contains(&own), "{page}");
        assert!(
            page.contains(
                "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quoted&quot;"
            ),
            "{page}"
        );
    }
    // The agent's words too (a command's output, shipped as the session's log).
    let mut k = w.add("job-00000002", "t", Risk::Low, 40);
    let lease = w.claim(&mut k, "runner-a", TTL, 40);
    let entry = SessionEntry {
        seq: 0,
        session: "s-1".into(),
        record: serde_json::to_value(&said).unwrap(),
        log_end: 10,
    };
    w.at(40)
        .add_session_entries(&lease, &[sealed(&entry)])
        .unwrap();
    let page = job(
        w.at(50),
        "job-00000002",
        &viewer(false, false),
        w.state_dir(),
    )
    .unwrap();
    assert!(
        page.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{page}"
    );
    assert!(!page.contains("<img"), "{page}");
}

#[test]
fn a_viewer_without_the_scope_sees_no_form() {
    let w = world();
    let mut j = w.add("job-00000001", "t", Risk::Low, 10);
    w.to_approval(&mut j, "s-1", "sha256:aa", 20);
    let post = |v: Viewer| {
        let page = job(w.at(30), "job-00000001", &v, w.state_dir()).unwrap();
        [
            "approve", "reject", "cancel", "resubmit", "suspend", "resume",
        ]
        .into_iter()
        .filter(|verb| page.contains(&format!("action=\"/jobs/job-00000001/{verb}\"")))
        .collect::<Vec<_>>()
    };
    let read = job(
        w.at(30),
        "job-00000001",
        &viewer(false, false),
        w.state_dir(),
    )
    .unwrap();
    let read = main_of(&read);
    assert!(!read.contains("method=\"post\""), "{read}");
    assert!(!read.contains("<button"), "{read}");
    assert_eq!(post(viewer(false, false)), Vec::<&str>::new());
    assert_eq!(post(viewer(false, true)), ["approve", "reject"]);
    assert_eq!(post(viewer(true, false)), ["cancel"]);
    assert_eq!(post(viewer(true, true)), ["approve", "reject", "cancel"]);
    // The board is read-only whatever the scopes: its one form is the filter GET.
    let b = board(w.at(30), &BoardQuery::default(), &viewer(true, true)).unwrap();
    assert!(!main_of(&b).contains("method=\"post\""));
}

#[test]
fn every_form_carries_what_the_page_showed() {
    let w = world();
    let mut j = w.add("job-00000001", "t", Risk::Low, 10);
    w.to_approval(&mut j, "s-1", "sha256:0123456789abcdef", 20);
    let page = job(w.at(30), "job-00000001", &viewer(true, true), w.state_dir()).unwrap();
    // Saying something to the worker is bound to nothing the page showed: every other form is.
    let forms: Vec<&str> = main_of(&page)
        .split("<form")
        .skip(1)
        .filter(|f| !f.contains("verb-say"))
        .collect();
    assert_eq!(forms.len(), 3, "{page}");
    assert!(
        main_of(&page).contains("action=\"/jobs/job-00000001/say\""),
        "{page}"
    );
    for f in &forms {
        assert!(
            f.contains("<input type=\"hidden\" name=\"state\" value=\"APPROVAL_REQUIRED\">"),
            "{f}"
        );
        assert!(
            f.contains("<input type=\"hidden\" name=\"attempt\" value=\"1\">"),
            "{f}"
        );
        assert!(
            f.contains(
                "<input type=\"hidden\" name=\"diff_hash\" value=\"sha256:0123456789abcdef\">"
            ),
            "{f}"
        );
    }
    let reject = forms.iter().find(|f| f.contains("/reject\"")).unwrap();
    assert!(reject.contains("<textarea name=\"feedback\""), "{reject}");
    assert!(reject.contains("<textarea name=\"comments\""), "{reject}");
    let approve = forms.iter().find(|f| f.contains("/approve\"")).unwrap();
    assert!(!approve.contains("textarea"));

    // No artifact yet: an empty diff hash; a suspended job offers resume and cancel.
    let mut k = w.add("job-00000002", "t", Risk::Low, 40);
    let suspended = AuditEntry::job(&k.id, AuditAction::Suspend, "ann", 41, Default::default());
    let before = k.clone();
    k.phase = JobPhase::of(JobState::Suspended, None, None);
    k.updated_ms = 41;
    let t = Transition {
        from: before.state(),
        to: JobState::Suspended,
        trigger: JobTrigger::Suspend,
        reason: None,
        at_ms: 41,
        by: "ann".into(),
    };
    w.at(41)
        .decide(&crate::job::Decision {
            job: &sealed(&k),
            expected: JobState::Pending,
            transition: Some(&sealed(&t)),
            audit: &sealed(&suspended),
            revoke: false,
        })
        .unwrap();
    let page = job(w.at(50), "job-00000002", &viewer(true, true), w.state_dir()).unwrap();
    let forms: Vec<&str> = main_of(&page)
        .split("<form")
        .skip(1)
        .filter(|f| !f.contains("verb-say"))
        .collect();
    let actions: Vec<bool> = ["resume", "cancel"]
        .iter()
        .map(|v| forms.iter().any(|f| f.contains(&format!("/{v}\""))))
        .collect();
    assert_eq!(forms.len(), 2, "{page}");
    assert_eq!(actions, [true, true]);
    for f in &forms {
        assert!(f.contains("name=\"state\" value=\"SUSPENDED\""), "{f}");
        assert!(f.contains("name=\"attempt\" value=\"0\""), "{f}");
        assert!(f.contains("name=\"diff_hash\" value=\"\""), "{f}");
    }
}

#[test]
fn the_inbox_lists_what_waits_for_a_human_longest_wait_first() {
    let w = world();
    let mut late = w.add("job-00000001", "approve me later", Risk::Low, 10);
    let mut early = w.add("job-00000002", "approve me first", Risk::Low, 20);
    let mut fix = w.add("job-00000003", "fix me", Risk::Low, 30);
    w.add("job-00000004", "not waiting", Risk::Low, 40);
    w.to_approval(&mut early, "s-2", "sha256:22", 1_000);
    let lease = w.claim(&mut fix, "runner-a", TTL, 2_000);
    w.moved(
        &mut fix,
        &lease,
        JobState::InterventionRequired,
        JobTrigger::ProvisionFailed,
        2_000,
    );
    w.to_approval(&mut late, "s-1", "sha256:11", 3_000);

    let page = inbox(w.at(63_000), &viewer(false, false)).unwrap();
    let order = [
        pos(&page, "data-job=\"job-00000002\""),
        pos(&page, "data-job=\"job-00000003\""),
        pos(&page, "data-job=\"job-00000001\""),
    ];
    assert!(order.is_sorted(), "{page}");
    assert!(!page.contains("job-00000004"));
    assert!(
        page.contains("<h1>Inbox <span class=\"count\">3</span></h1>"),
        "{page}"
    );
    // The wait, by the store's clock.
    let first = &page[order[0]..order[1]];
    assert!(first.contains("1m ago"), "{first}");
    assert!(
        first.contains("INTERVENTION_REQUIRED")
            || page[order[1]..order[2]].contains("INTERVENTION_REQUIRED")
    );
}

#[test]
fn a_job_that_does_not_exist_is_the_stores_error() {
    let w = world();
    let err = job(w.at(1), "job-404", &viewer(false, false), w.state_dir()).unwrap_err();
    assert!(
        matches!(err, crate::job::JobStoreError::NotFound { .. }),
        "{err:?}"
    );
}

/// A page's own content, without the header every page has (its sign-out form).
fn main_of(page: &str) -> &str {
    page.split_once("<main>").map_or(page, |(_, main)| main)
}
