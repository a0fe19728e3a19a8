//! `oneshot serve` over HTTP, through the real binary on a free port, a real job store and a
//! job stepped by the real runner: every route behind the boundary (Host, Origin, token or
//! session, scope), the sign-in link used once, revocation ending a session, the verbs going
//! through the same library call as the CLI's with the token's name in the audit trail, and an
//! approval bound to what its page showed. (That no agent is given a token: tests/cli/token_cli.rs.)
//! (TLS and the Unix socket: tests/serve/serve_transport.rs; two servers on one PostgreSQL store:
//! tests/fleet/serve_pg.rs.)

use std::time::Duration;

use crate::job_env;
use crate::serve_http;
use crate::serve_process;
use job_env::{DONE, Env, GOOD_WORKER};
use serve_http::*;
use serve_process::serve;

#[test]
fn every_route_checks_its_scope_and_only_an_approve_token_approves_what_it_saw() {
    let env = Env::new();
    let id = waiting(&env, GOOD_WORKER);
    let reader = token(&env, "reader", "read");
    let operator = token(&env, "operator", "operate");
    let approver = token(&env, "approver", "approve");
    let s = serve(&env, &["--token-name", "reader"]);
    let origin = format!("http://{}", s.host);
    let job = format!("/jobs/{id}");
    let approve = format!("/jobs/{id}/approve");

    // Nothing without a token; a wrong one is refused too.
    let events = format!("/jobs/{id}/events");
    for path in [
        "/",
        "/inbox",
        "/spend",
        "/events",
        job.as_str(),
        events.as_str(),
    ] {
        assert_eq!(http(&s, "GET", path, &[], "").status, 401, "{path}");
        let fake = bearer(&format!("osk_{}", "A".repeat(43)));
        let r = http(&s, "GET", path, &[("Authorization", &fake)], "");
        assert_eq!(r.status, 401, "{path}");
    }
    for asset in ["/assets/style.css", "/assets/live.js"] {
        let r = http(&s, "GET", asset, &[], "");
        assert_eq!(r.status, 200, "static assets are public: {asset}");
    }

    // Read: the board, the inbox and the job; no approve button.
    let as_reader = [("Authorization", bearer(&reader))];
    let as_reader: Vec<(&str, &str)> = as_reader.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let board = http(&s, "GET", "/", &as_reader, "");
    assert_eq!(board.status, 200);
    assert!(board.body.contains(&id), "{}", board.body);
    let inbox = http(&s, "GET", "/inbox", &as_reader, "");
    assert!(inbox.body.contains(&id), "{}", inbox.body);
    let page = http(&s, "GET", &job, &as_reader, "");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("APPROVAL_REQUIRED"));
    assert!(
        !page.body.contains("/approve\""),
        "a read token is offered no approve"
    );
    assert!(!page.body.contains("/cancel\""), "nor cancel");
    assert_eq!(
        http(&s, "GET", "/jobs/job-nothere", &as_reader, "").status,
        404
    );
    let spend = http(&s, "GET", "/spend", &as_reader, "");
    assert_eq!(spend.status, 200);
    assert!(spend.body.contains("<h1>Spending</h1>"), "{}", spend.body);

    // What an approve token's page shows: the form carries it.
    let approver_auth = bearer(&approver);
    let page = http(&s, "GET", &job, &[("Authorization", &approver_auth)], "");
    assert!(page.body.contains("/approve\""), "{}", page.body);
    assert!(
        !page.body.contains("/cancel\""),
        "approve does not allow cancel"
    );
    let seen = [
        ("attempt", field(&page.body, "attempt")),
        ("diff_hash", field(&page.body, "diff_hash")),
        ("state", field(&page.body, "state")),
    ];
    assert_eq!(seen[2].1, "APPROVAL_REQUIRED");
    assert!(!seen[1].1.is_empty(), "the job has a diff");
    let body = form(
        &seen
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .collect::<Vec<_>>(),
    );

    let before = audit(&env, &id);
    // A read token's forged POST, from the right origin: 403, nothing written or audited.
    let r = http(
        &s,
        "POST",
        &approve,
        &[("Authorization", &bearer(&reader)), ("Origin", &origin)],
        &body,
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("needs the approve scope"), "{}", r.body);
    // An operate token may not approve either, but may reach the operate verbs (refused by
    // the job's state here: APPROVAL_REQUIRED allows no suspend).
    let op = bearer(&operator);
    let r = http(
        &s,
        "POST",
        &approve,
        &[("Authorization", &op), ("Origin", &origin)],
        &body,
    );
    assert_eq!(r.status, 403);
    let r = http(
        &s,
        "POST",
        &format!("/jobs/{id}/suspend"),
        &[
            ("Authorization", &op),
            ("Origin", &origin),
            ("Accept", "application/json"),
        ],
        "",
    );
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(
        r.body
            .contains("suspend is not allowed in APPROVAL_REQUIRED"),
        "{}",
        r.body
    );

    // The approve token, but from another site, or saying nothing of where from: 403.
    for from in [
        vec![("Origin", "http://evil.example")],
        vec![("Origin", "null")],
        vec![("Sec-Fetch-Site", "cross-site")],
        vec![],
    ] {
        let mut h = vec![("Authorization", approver_auth.as_str())];
        h.extend(from.iter().copied());
        let r = http(&s, "POST", &approve, &h, &body);
        assert_eq!(r.status, 403, "{from:?}: {}", r.body);
    }
    // Under a Host the server does not answer as (DNS rebinding): 421, even with a token.
    for host in ["evil.example", "evil.example:80", "127.0.0.1"] {
        let r = http(
            &s,
            "GET",
            "/",
            &[("Host", host), ("Authorization", &approver_auth)],
            "",
        );
        assert_eq!(r.status, 421, "{host}");
    }
    // A page older than the job (another diff, another step): 409, nothing written.
    let stale = form(&[
        ("attempt", seen[0].1.as_str()),
        ("diff_hash", "0000000000000000"),
        ("state", "APPROVAL_REQUIRED"),
    ]);
    let r = http(
        &s,
        "POST",
        &approve,
        &[("Authorization", &approver_auth), ("Origin", &origin)],
        &stale,
    );
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(r.body.contains("out of date"), "{}", r.body);
    let earlier = form(&[
        ("attempt", "0"),
        ("diff_hash", seen[1].1.as_str()),
        ("state", "APPROVAL_REQUIRED"),
    ]);
    let r = http(
        &s,
        "POST",
        &approve,
        &[("Authorization", &approver_auth), ("Origin", &origin)],
        &earlier,
    );
    assert_eq!(r.status, 409, "{}", r.body);
    let r = http(
        &s,
        "POST",
        &approve,
        &[("Authorization", &approver_auth), ("Origin", &origin)],
        "",
    );
    assert_eq!(
        r.status, 400,
        "an approval must say what it saw: {}",
        r.body
    );
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    assert_eq!(audit(&env, &id), before, "nothing refused was audited");

    // The approve token, from its own page: SUCCESS, the token's name as the actor.
    let r = http(
        &s,
        "POST",
        &approve,
        &[
            ("Authorization", &approver_auth),
            ("Origin", &origin),
            ("Accept", "application/json"),
        ],
        &body,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let said: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(said["to"], "SUCCESS");
    assert_eq!(said["actor"], "approver");
    assert_eq!(env.state(&id), "SUCCESS");
    let trail = audit(&env, &id);
    assert_eq!(trail.len(), before.len() + 1);
    let last = trail.last().unwrap();
    assert_eq!(last["action"], "approve");
    assert_eq!(last["actor"], "approver");
    assert_eq!(last["metadata"]["diff_hash"], seen[1].1.as_str());
}

#[test]
fn a_sign_in_link_works_once_and_revoking_its_token_ends_the_session() {
    let env = Env::new();
    token(&env, "ana", "approve");
    let s = serve(&env, &["--token-name", "ana"]);
    let path = s.link.split_once(&s.host).unwrap().1.to_string();
    assert!(path.starts_with("/login/osl_"), "{}", s.link);
    let r = http(&s, "GET", &path, &[], "");
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(r.header("location").as_deref(), Some("/"));
    let set = r.header("set-cookie").unwrap();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(part), "{set}");
    }
    assert!(!set.contains("Secure"), "plain http on loopback: {set}");
    let cookie = set.split(';').next().unwrap().to_string();
    let r = http(&s, "GET", "/", &[("Cookie", &cookie)], "");
    assert_eq!(r.status, 200);
    assert!(r.body.contains("signed in as <b>ana</b>"), "{}", r.body);
    // Once only.
    let again = http(&s, "GET", &path, &[], "");
    assert_eq!(again.status, 403);
    assert!(again.header("set-cookie").is_none());
    // The link under a foreign Host is refused before it is redeemed.
    let other = env.ok(&["token", "login", "ana"]);
    let other_path = other.trim().split_once("8719").unwrap().1.to_string();
    let r = http(&s, "GET", &other_path, &[("Host", "evil.example")], "");
    assert_eq!(r.status, 421);
    assert_eq!(
        http(&s, "GET", &other_path, &[], "").status,
        303,
        "still unused"
    );

    env.ok(&["token", "revoke", "ana"]);
    let r = http(&s, "GET", "/", &[("Cookie", &cookie)], "");
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.body.contains("revoked"), "{}", r.body);
}

#[test]
fn signing_out_ends_the_session_and_needs_the_servers_own_origin() {
    let env = Env::new();
    let s = serve(&env, &[]);
    let path = s.link.split_once(&s.host).unwrap().1.to_string();
    let r = http(&s, "GET", &path, &[], "");
    let cookie = r.header("set-cookie").unwrap();
    let cookie = cookie.split(';').next().unwrap();
    let board = http(&s, "GET", "/", &[("Cookie", cookie)], "");
    assert!(
        board.body.contains("signed in as <b>serve-"),
        "{}",
        board.body
    );
    let r = http(
        &s,
        "POST",
        "/logout",
        &[("Cookie", cookie), ("Origin", "http://evil.example")],
        "",
    );
    assert_eq!(r.status, 403, "a foreign page cannot sign you out");
    assert_eq!(http(&s, "GET", "/", &[("Cookie", cookie)], "").status, 200);
    let r = http(
        &s,
        "POST",
        "/logout",
        &[("Cookie", cookie), ("Sec-Fetch-Site", "same-origin")],
        "",
    );
    assert_eq!(r.status, 200);
    assert!(r.header("set-cookie").unwrap().contains("Max-Age=0"));
    assert_eq!(http(&s, "GET", "/", &[("Cookie", cookie)], "").status, 401);
    // The server's own admin token was made for the link, and its secret never printed.
    let tokens = env.ok(&["token", "list", "--json"]);
    assert!(tokens.contains("\"scopes\":[\"admin\"]"), "{tokens}");
}

#[test]
fn a_reject_from_the_page_with_line_comments_reaches_the_next_prompt() {
    let env = Env::new();
    let dump = env.dir.path().join("prompt.txt");
    let worker = format!(
        "sh -c 'cat \"$ONESHOT_PROMPT_FILE\" > {}; echo hi > f.txt'",
        dump.display()
    );
    let id = waiting(&env, &worker);
    token(&env, "ana", "approve");
    let s = serve(&env, &["--token-name", "ana"]);
    let path = s.link.split_once(&s.host).unwrap().1.to_string();
    let set = http(&s, "GET", &path, &[], "")
        .header("set-cookie")
        .unwrap();
    let cookie = set.split(';').next().unwrap();
    // A browser's POST: the cookie, and Sec-Fetch-Site instead of an Origin check.
    let page = http(&s, "GET", &format!("/jobs/{id}"), &[("Cookie", cookie)], "");
    // The page shows the diff the approval binds to, each line named as a comment names it.
    assert!(
        page.body.contains("what an approval on this page binds to"),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("<a href=\"#file-0\"><code>f.txt</code></a>"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("title=\"f.txt:1\">1</a>"),
        "{}",
        page.body
    );
    let body = form(&[
        ("attempt", field(&page.body, "attempt").as_str()),
        ("diff_hash", field(&page.body, "diff_hash").as_str()),
        ("state", field(&page.body, "state").as_str()),
        ("feedback", "also write bye"),
        ("comments", "f.txt:1: say hello, not hi\n"),
    ]);
    let bad = body.replace("f.txt%3A1", "f.txt");
    let browser = [("Cookie", cookie), ("Sec-Fetch-Site", "same-origin")];
    let r = http(&s, "POST", &format!("/jobs/{id}/reject"), &browser, &bad);
    assert_eq!(r.status, 400, "a comment without a line: {}", r.body);
    let r = http(&s, "POST", &format!("/jobs/{id}/reject"), &browser, &body);
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(r.header("location"), Some(format!("/jobs/{id}")));
    assert_eq!(env.state(&id), "PENDING");
    assert_eq!(audit(&env, &id).last().unwrap()["actor"], "ana");
    env.ok(&["job", "step", &id]);
    let prompt = std::fs::read_to_string(&dump).unwrap();
    assert!(prompt.contains("CRITIQUE: also write bye"), "{prompt}");
    assert!(prompt.contains("f.txt:1: say hello, not hi"), "{prompt}");
}

#[test]
fn an_approved_job_lands_from_its_page_bound_to_what_the_page_showed() {
    let env = Env::new();
    let id = waiting(&env, GOOD_WORKER);
    env.ok(&["job", "approve", &id]);
    assert_eq!(env.state(&id), "SUCCESS");
    let lander = token(&env, "lander", "approve");
    let reader = token(&env, "reader", "read");
    let s = serve(&env, &[]);
    let origin = format!("http://{}", s.host);
    let job = format!("/jobs/{id}");
    let auth = bearer(&lander);
    let page = http(&s, "GET", &job, &[("Authorization", &auth)], "");
    assert!(
        page.body.contains(&format!("{job}/land\"")),
        "{}",
        page.body
    );
    let read_page = http(&s, "GET", &job, &[("Authorization", &bearer(&reader))], "");
    assert!(
        !read_page.body.contains("/land\""),
        "a read token is offered no land"
    );
    let body = form(&[
        ("state", &field(&page.body, "state")),
        ("attempt", &field(&page.body, "attempt")),
        ("diff_hash", &field(&page.body, "diff_hash")),
    ]);
    let land = format!("{job}/land");
    let reader_auth = bearer(&reader);
    let json = "application/json";
    let as_lander = [
        ("Authorization", auth.as_str()),
        ("Origin", origin.as_str()),
        ("Accept", json),
    ];
    let as_reader = [
        ("Authorization", reader_auth.as_str()),
        ("Origin", origin.as_str()),
        ("Accept", json),
    ];
    // A read token may not land; a page older than the job may not either.
    let r = http(&s, "POST", &land, &as_reader, &body);
    assert_eq!(r.status, 403, "{}", r.body);
    let stale = form(&[("state", "SUCCESS"), ("attempt", "7"), ("diff_hash", "")]);
    let r = http(&s, "POST", &land, &as_lander, &stale);
    assert_eq!(r.status, 409, "{}", r.body);
    // Nor a page that showed another diff at the same step: the core's `Seen` compares it.
    let attempt = field(&page.body, "attempt");
    let other_diff = form(&[
        ("state", "SUCCESS"),
        ("attempt", &attempt),
        ("diff_hash", "sha256:0000"),
    ]);
    let r = http(&s, "POST", &land, &as_lander, &other_diff);
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(r.body.contains("it showed diff sha256:0000"), "{}", r.body);
    assert!(env.show(&id)["job"]["landed"].is_null());
    // From its page: landed in the source's main, the token's name in the trail.
    let r = http(&s, "POST", &land, &as_lander, &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let said: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(said["result"], "landed", "{said}");
    assert!(env.show(&id)["job"]["landed"].is_object());
    assert_eq!(
        std::fs::read_to_string(env.repo().join("f.txt")).unwrap(),
        "hi\n",
        "the work is in the source's checkout"
    );
    let last = audit(&env, &id).pop().unwrap();
    assert_eq!(last["action"], "land");
    assert_eq!(last["actor"], "lander");
    // Landed: no land offered again.
    let page = http(&s, "GET", &job, &[("Authorization", &auth)], "");
    assert!(!page.body.contains("/land\""), "{}", page.body);
}

#[test]
fn a_running_session_is_on_the_board_and_only_an_operate_token_stops_it_from_its_page() {
    let env = Env::new();
    let marker = env.dir.path().join("started");
    let worker = format!("sh -c 'touch {}; sleep 60'", marker.display());
    let mut session = env
        .command(&[
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            DONE,
            "sleep a while",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !marker.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the worker never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let ids: Vec<String> = std::fs::read_dir(env.state_dir().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let [id] = ids.as_slice() else {
        panic!("one session: {ids:?}")
    };
    let reader = bearer(&token(&env, "rita", "read"));
    let operator = bearer(&token(&env, "otto", "operate"));
    let s = serve(&env, &[]);
    let origin = format!("http://{}", s.host);
    let page = format!("/sessions/{id}");
    let stop = format!("/sessions/{id}/stop");

    // The board lists it, driven by a live oneshot.
    let board = http(&s, "GET", "/", &[("Authorization", &reader)], "");
    assert_eq!(board.status, 200);
    let row = &board.body[board
        .body
        .find(&format!("data-session=\"{id}\""))
        .expect("its row")..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(
        row.contains("badge live") && row.contains("sleep a while"),
        "{row}"
    );
    assert!(row.contains("WORKER_EXECUTING"), "{row}");
    // Its page: a read token is offered no stop, an operate token is.
    let r = http(&s, "GET", &page, &[("Authorization", &reader)], "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains("WORKER_EXECUTING") && !r.body.contains("/stop\""),
        "{}",
        r.body
    );
    let r = http(&s, "GET", &page, &[("Authorization", &operator)], "");
    assert!(r.body.contains(&format!("action=\"{stop}\"")), "{}", r.body);
    assert_eq!(
        http(
            &s,
            "GET",
            "/sessions/nothere",
            &[("Authorization", &reader)],
            ""
        )
        .status,
        404
    );

    // A read token's POST is refused, and the session runs on.
    let r = http(
        &s,
        "POST",
        &stop,
        &[("Authorization", &reader), ("Origin", &origin)],
        "",
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("needs the operate scope"), "{}", r.body);
    assert!(session.try_wait().unwrap().is_none(), "still running");
    // From another origin, refused too.
    let r = http(
        &s,
        "POST",
        &stop,
        &[
            ("Authorization", &operator),
            ("Origin", "http://evil.example"),
        ],
        "",
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(session.try_wait().unwrap().is_none(), "still running");

    // Operate: it pauses, as `oneshot stop` pauses it.
    let r = http(
        &s,
        "POST",
        &stop,
        &[("Authorization", &operator), ("Origin", &origin)],
        "",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains(&format!(
            "Session {id} paused in INTERRUPTED; continue it with oneshot resume {id}."
        )),
        "{}",
        r.body
    );
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = session.try_wait().unwrap() {
            break st;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "it did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    let board = http(&s, "GET", "/", &[("Authorization", &reader)], "");
    let row = &board.body[board.body.find(&format!("data-session=\"{id}\"")).unwrap()..];
    assert!(
        row[..row.find("</tr>").unwrap()].contains("badge paused"),
        "{row}"
    );

    // Not running any more: 409, saying so.
    let r = http(
        &s,
        "POST",
        &stop,
        &[
            ("Authorization", &operator),
            ("Origin", &origin),
            ("Accept", "application/json"),
        ],
        "",
    );
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(
        r.body.contains("it is not running (paused in INTERRUPTED)"),
        "{}",
        r.body
    );
}
