//! The state directory's sessions on the board and a session's page, over real session
//! directories made through the session store's own calls: a session a live oneshot drives
//! (this test process, holding its lock), one whose driver is gone mid-step (stale), and one
//! whose state file does not read (unknown).

use super::tests::{pos, sealed, viewer, world};
use super::*;
use crate::engine::Stream;
use crate::process::Role;
use crate::session::{NewSession, PolicyRef, Session};
use crate::store::{Activity, PolicyReloadFailed, Record, SessionDir, SessionLock, Store};

fn made(store: &Store, task: &str, at: u64) -> SessionDir {
    let dir = store.create_session().unwrap();
    let s = Session::new(
        NewSession {
            id: dir.id().into(),
            task: task.into(),
            workdir: "/w".into(),
            worker_cmd: "sh -c 'sleep 60'".into(),
            auditor_cmd: "true".into(),
        },
        PolicyRef {
            path: None,
            hash: "sha256:abababababababab".into(),
            generation: 2,
            budget: None,
        },
        5,
        at,
    );
    dir.write_state(&sealed(&s)).unwrap();
    dir
}

#[test]
fn the_board_lists_the_state_dirs_sessions_live_stale_or_unknown_and_never_guesses() {
    let w = world();
    let state = tempfile::tempdir().unwrap();
    let store = Store::new(state.path());
    let live = made(&store, "Live <task>\nsecond line", 1_000);
    let _held = SessionLock::acquire(&live.lock_path()).unwrap();
    let stale = made(&store, "Stale task", 2_000);
    let broken = made(&store, "Broken", 3_000);
    std::fs::write(broken.state_path(), "{ not json").unwrap();

    let page = board_with_sessions(
        w.at(10),
        &BoardQuery::default(),
        &viewer(false, false),
        state.path(),
    )
    .unwrap();
    let section = &page[pos(&page, "<section class=\"sessions\" id=\"sessions\">")..];
    let section = &section[..pos(section, "</section>")];
    let row = |d: &SessionDir| {
        let at = pos(section, &format!("data-session=\"{}\"", d.id()));
        let end = section[at..].find("</tr>").unwrap() + at;
        section[at..end].to_string()
    };
    let l = row(&live);
    assert!(l.contains("<span class=\"badge live\">live</span>"), "{l}");
    assert!(
        l.contains(&format!("oneshot pid {}", std::process::id())),
        "{l}"
    );
    assert!(
        l.contains("Live &lt;task&gt;") && !l.contains("second line"),
        "{l}"
    );
    assert!(l.contains("CREATED") && l.contains("0/5"), "{l}");
    assert!(
        l.contains(&format!("href=\"/sessions/{}\"", live.id())),
        "{l}"
    );
    let s = row(&stale);
    assert!(
        s.contains("<span class=\"badge stale\">stale</span>"),
        "{s}"
    );
    assert!(s.contains("CREATED"), "{s}");
    let b = row(&broken);
    assert!(
        b.contains("<span class=\"badge unknown\">unknown</span>"),
        "{b}"
    );
    assert!(!b.contains("CREATED"), "{b}");
    // The newest first, as `oneshot list` orders them; one that does not read last.
    assert!(pos(section, stale.id()) < pos(section, live.id()));
    assert!(pos(section, live.id()) < pos(section, broken.id()));

    // The plain board has no sessions section; an empty state dir says so.
    let plain = board(w.at(10), &BoardQuery::default(), &viewer(false, false)).unwrap();
    assert!(!plain.contains("id=\"sessions\""));
    let empty = tempfile::tempdir().unwrap();
    let page = board_with_sessions(
        w.at(10),
        &BoardQuery::default(),
        &viewer(false, false),
        empty.path(),
    )
    .unwrap();
    assert!(page.contains("No sessions under"), "{page}");
}

#[test]
fn a_sessions_page_shows_its_log_policy_and_a_stop_only_while_a_live_oneshot_drives_it() {
    let state = tempfile::tempdir().unwrap();
    let store = Store::new(state.path());
    let dir = made(&store, "Sleep a while", 1_000);
    let records = [
        Record::Activity(Activity {
            ts: 1_100,
            role: Role::Worker,
            iteration: 1,
            executor: "command".into(),
            stream: Stream::Stdout,
            partial: false,
            data: serde_json::Value::String("working on <it>".into()),
        }),
        Record::PolicyReloadFailed(PolicyReloadFailed {
            ts: 1_200,
            message: "policy.lua:2: bad".into(),
            generation: 2,
            files: vec![],
        }),
    ];
    let log: String = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(dir.log_path(), log).unwrap();

    let held = SessionLock::acquire(&dir.lock_path()).unwrap();
    let page = session(state.path(), &dir.id()[..8], &viewer(true, false)).unwrap();
    assert!(
        page.contains(&format!("<h1>Session <code>{}</code>", dir.id())),
        "{page}"
    );
    assert!(page.contains("badge live"), "{page}");
    assert!(
        page.contains(&format!("action=\"/sessions/{}/stop\"", dir.id())),
        "{page}"
    );
    assert!(page.contains("working on &lt;it&gt;"), "{page}");
    let policy = &page[pos(&page, "<section class=\"policy\"")..];
    assert!(
        policy.contains("(built-in)") && policy.contains("<td class=\"num\">2</td>"),
        "{policy}"
    );
    assert!(
        policy.contains("generation 2 kept deciding: policy.lua:2: bad"),
        "{policy}"
    );
    // A read-only viewer gets no stop.
    let read = session(state.path(), dir.id(), &viewer(false, false)).unwrap();
    assert!(!read.contains("/stop\""), "{read}");
    // Nobody drives it any more: stale, and no stop.
    drop(held);
    let page = session(state.path(), dir.id(), &viewer(true, false)).unwrap();
    assert!(
        page.contains("badge stale") && !page.contains("/stop\""),
        "{page}"
    );

    let missing = session(state.path(), "nope", &viewer(false, false)).unwrap_err();
    assert!(
        matches!(missing, crate::store::StoreError::NotFound { .. }),
        "{missing:?}"
    );
}
