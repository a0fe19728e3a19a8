//! The job page's diff, policy and spending sections (and `/spend`) on a real SQLite store: the diff read from a real
//! git workspace and checked against the artifact's hash, and each session's policy as its
//! journal and its log (shipped through the store's own calls) recorded it.

use super::tests::{TTL, pos, sealed, viewer, world};
use super::*;
use crate::job::record::{Risk, Workspace};
use crate::job::store::prelude::*;
use crate::job::store::{SessionEntry, SessionJournal};
use crate::session::{NewSession, PolicyRef, Session};
use crate::store::{PolicyReload, PolicyReloadFailed, PolicyUntrusted, Record};
use std::process::Command;

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@e"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

fn session_state(id: &str, hash: &str, generation: u32) -> serde_json::Value {
    let s = Session::new(
        NewSession {
            id: id.into(),
            task: "t".into(),
            workdir: "/w".into(),
            worker_cmd: "claude".into(),
            auditor_cmd: "codex".into(),
        },
        PolicyRef {
            path: Some("/p/policy.lua".into()),
            hash: hash.into(),
            generation,
            budget: None,
        },
        5,
        100,
    );
    serde_json::to_value(&s).unwrap()
}

fn entry(session: &str, r: Record) -> SessionEntry {
    SessionEntry {
        seq: 0,
        session: session.into(),
        record: serde_json::to_value(&r).unwrap(),
        log_end: 1,
    }
}

#[test]
fn the_policy_of_each_session_shows_its_hash_generation_and_last_reload_error_latest_first() {
    let w = world();
    let mut j = w.add("job-00000001", "Fix the parser", Risk::Low, 10);
    let lease = w.claim(&mut j, "runner-a", TTL, 100);
    let failed = |ts, generation, message: &str| {
        Record::PolicyReloadFailed(PolicyReloadFailed {
            ts,
            message: message.into(),
            generation,
            files: vec!["/p/policy.lua".into()],
        })
    };
    let entries = [
        entry(
            "s-1",
            failed(110, 1, "policy.lua:3: syntax error near <eof>"),
        ),
        entry("s-2", failed(130, 2, "policy.lua:9: tests failed")),
        entry(
            "s-2",
            Record::PolicyReload(PolicyReload {
                ts: 135,
                generation: 3,
                policy_hash: "sha256:3333333333333333".into(),
                files: vec![],
            }),
        ),
        entry(
            "s-3",
            Record::PolicyUntrusted(PolicyUntrusted {
                ts: 140,
                file: "/w/policy.lua".into(),
                hash: "h".into(),
                message: "run oneshot policy trust /w/policy.lua".into(),
            }),
        ),
    ];
    let sealed_entries: Vec<_> = entries.iter().map(sealed).collect();
    w.at(140)
        .add_session_entries(&lease, &sealed_entries)
        .unwrap();
    for (s, hash, generation) in [
        ("s-1", "sha256:1111111111111111", 1),
        ("s-2", "sha256:3333333333333333", 3),
    ] {
        w.at(140)
            .put_journal(
                &lease,
                &sealed(&SessionJournal {
                    session: s.into(),
                    runner: "runner-a".into(),
                    shipped_ms: 0,
                    state: session_state(s, hash, generation),
                }),
            )
            .unwrap();
    }
    let page = job(w.at(150), &j.id, &viewer(false, false), w.state_dir()).unwrap();
    let policy = &page[pos(&page, "<section class=\"policy\" id=\"policy\">")..];
    let policy = &policy[..pos(policy, "</section>")];
    // Latest first: s-3 (known only by its log), s-2, s-1.
    let (p3, p2, p1) = (
        pos(policy, "<code>s-3</code>"),
        pos(policy, "<code>s-2</code>"),
        pos(policy, "<code>s-1</code>"),
    );
    assert!(p3 < p2 && p2 < p1, "{policy}");
    let row1 = &policy[p1..];
    assert!(row1.contains("<code>/p/policy.lua</code>"), "{row1}");
    assert!(
        row1.contains("<code title=\"sha256:1111111111111111\">sha256:111111111111</code>"),
        "{row1}"
    );
    assert!(row1.contains("<td class=\"num\">1 <small>"), "{row1}");
    assert!(
        row1.contains("generation 1 kept deciding: policy.lua:3: syntax error near &lt;eof&gt;"),
        "{row1}"
    );
    assert!(!row1.contains("since replaced"), "{row1}");
    let row2 = &policy[p2..p1];
    assert!(row2.contains("<td class=\"num\">3 <small>"), "{row2}");
    assert!(row2.contains("generation 2 kept deciding: policy.lua:9: tests failed"));
    assert!(row2.contains("since replaced: generation 3"), "{row2}");
    let row3 = &policy[p3..p2];
    assert!(row3.contains("no state of it was shipped yet"), "{row3}");
    assert!(
        row3.contains("/w/policy.lua changed and waits for trust"),
        "{row3}"
    );

    // A job no session ran says so.
    let k = w.add("job-00000002", "Nothing yet", Risk::Low, 10);
    let page = job(w.at(150), &k.id, &viewer(false, false), w.state_dir()).unwrap();
    assert!(page.contains("No session has run: each session records the policy"));
}

#[test]
fn the_diff_is_read_from_the_workspace_and_said_to_be_what_the_approval_binds_to_or_not() {
    let w = world();
    let repo = tempfile::tempdir().unwrap();
    let d = repo.path();
    git(d, &["init", "-q"]);
    std::fs::write(d.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(d.join("b.txt"), "bee\n").unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "base"]);
    let base = git(d, &["rev-parse", "HEAD"]).trim().to_string();
    std::fs::write(d.join("a.txt"), "one\n2\n").unwrap();
    std::fs::remove_file(d.join("b.txt")).unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "work"]);
    let ws = Workspace {
        path: d.to_path_buf(),
        branch: None,
        base_commit: Some(base),
        base_branch: None,
    };
    let patch = crate::job::workspace::diff(&ws).unwrap();
    let hash: String = {
        use sha2::Digest;
        sha2::Sha256::digest(patch.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };

    let mut j = w.add("job-00000001", "Fix a", Risk::Low, 10);
    j.workspace = Some(ws);
    w.to_approval(&mut j, "s-1", &hash, 100);
    let page = job(w.at(150), &j.id, &viewer(false, true), w.state_dir()).unwrap();
    let diff = &page[pos(&page, "<section class=\"diff\" id=\"diff\">")..];
    assert!(
        diff.contains("The diff of artifact v1 (<code title=\""),
        "{diff}"
    );
    assert!(diff.contains("2 files changed"), "{diff}");
    let list = &diff[pos(diff, "<ol class=\"diff-files\">")..];
    assert!(list.contains("<a href=\"#file-0\"><code>a.txt</code></a> <span class=\"status status-modified\">modified</span>"), "{list}");
    assert!(list.contains("<a href=\"#file-1\"><code>b.txt</code></a> <span class=\"status status-deleted\">deleted</span>"), "{list}");
    assert!(diff.contains("title=\"a.txt:2\">2</a>"), "{diff}");
    // The form binds the same hash the diff was checked against.
    assert!(page.contains(&format!("name=\"diff_hash\" value=\"{hash}\"")));

    // The workspace moved on: the page says the shown diff is not what an approval binds to.
    std::fs::write(d.join("c.txt"), "new\n").unwrap();
    let page = job(w.at(160), &j.id, &viewer(false, true), w.state_dir()).unwrap();
    assert!(
        page.contains("The workspace has changed since artifact v1 was harvested"),
        "{page}"
    );
    assert!(page.contains("<code>c.txt</code>"));

    // A workspace not on this machine is not read.
    let mut k = w.add("job-00000002", "Elsewhere", Risk::Low, 10);
    k.workspace = Some(Workspace {
        path: "/nonexistent/oneshot-ws".into(),
        branch: None,
        base_commit: Some("abc".into()),
        base_branch: None,
    });
    w.to_approval(&mut k, "s-9", "sha256:x", 100);
    let page = job(w.at(170), &k.id, &viewer(false, false), w.state_dir()).unwrap();
    assert!(
        page.contains(
            "The workspace is not on this machine; <code>oneshot job diff job-00000002</code>"
        ),
        "{page}"
    );
}

/// A session's state with what its agents spent, under a policy with `budget`.
fn spent_state(
    id: &str,
    spent: crate::session::Spent,
    budget: Option<crate::policy::Budget>,
) -> serde_json::Value {
    let mut s: Session =
        serde_json::from_value(session_state(id, "sha256:1111111111111111", 1)).unwrap();
    s.agents.spent = spent;
    s.policy.budget = budget;
    serde_json::to_value(&s).unwrap()
}

#[test]
fn spending_is_shown_per_attempt_against_its_budget_per_job_and_per_day() {
    use crate::session::Spent;
    let w = world();
    let day = 20 * 24 * 3600 * 1000_u64;
    let mut j = w.add("job-00000001", "Fix the parser", Risk::Low, day);
    let lease = w.claim(&mut j, "runner-a", TTL, day + 100);
    let budget = crate::policy::Budget {
        turns: Some(10),
        tokens: None,
        usd: Some(2.0),
    };
    for (s, spent, budget) in [
        (
            "s-1",
            Spent {
                turns: 9,
                tokens: 12_000,
                usd: 1.5,
            },
            Some(budget),
        ),
        (
            "s-2",
            Spent {
                turns: 2,
                tokens: 3_000,
                usd: 0.0,
            },
            None,
        ),
    ] {
        w.at(day + 200)
            .put_journal(
                &lease,
                &sealed(&SessionJournal {
                    session: s.into(),
                    runner: "runner-a".into(),
                    shipped_ms: 0,
                    state: spent_state(s, spent, budget),
                }),
            )
            .unwrap();
    }
    let page = job(w.at(day + 300), &j.id, &viewer(false, false), w.state_dir()).unwrap();
    let spend = &page[pos(&page, "<section class=\"spend\">")..];
    let spend = &spend[..pos(spend, "</section>")];
    let s1 = &spend[pos(spend, "<code>s-1</code>")..pos(spend, "<code>s-2</code>")];
    assert!(s1.contains("<td class=\"num\">9</td>"), "{s1}");
    assert!(s1.contains("$1.5000 <small>(estimate)</small>"), "{s1}");
    // Drawn against its budget: turns 90 %, dollars 75 %; no bar for the unbudgeted tokens.
    assert!(s1.contains("turns <meter min=\"0\" max=\"10\""), "{s1}");
    assert!(s1.contains("90%"), "{s1}");
    assert!(
        s1.contains("dollars (estimate) <meter min=\"0\" max=\"2\""),
        "{s1}"
    );
    assert!(s1.contains("75%"), "{s1}");
    assert!(!s1.contains("tokens <meter"), "{s1}");
    let s2 = &spend[pos(spend, "<code>s-2</code>")..];
    assert!(s2.contains("no budget set"), "{s2}");
    // The job's total.
    let total = &spend[pos(spend, "<tfoot>")..];
    assert!(
        total.contains("<td class=\"num\">11</td><td class=\"num\">15000</td>"),
        "{total}"
    );

    // Per day: both sessions on the day of their journals; another job, other day, apart.
    let page = super::spend(w.at(day + 300), &viewer(false, false)).unwrap();
    let today = super::time::rfc3339(day);
    let row = &page[pos(&page, &format!("<td>{}</td>", &today[..10]))..];
    let row = &row[..pos(row, "</tr>")];
    assert!(
        row.contains(
            "<td class=\"num\">2</td><td class=\"num\">11</td><td class=\"num\">15000</td>"
        ),
        "{row}"
    );
    assert!(page.contains(&format!("href=\"/jobs/{}\"", j.id)), "{page}");
}
