//! Saying something to a worker from the dashboard: `POST /sessions/{id}/say` and
//! `POST /jobs/{id}/say` (the `operate` scope), through the same library calls as
//! `oneshot say`, the token's name as who said it.

use std::time::Duration;

use crate::job_env;
use crate::serve_http;
use crate::serve_process;
use job_env::{Env, GOOD_WORKER};
use serve_http::*;
use serve_process::serve;

#[test]
fn an_operate_token_says_something_to_a_running_session_from_its_page() {
    let env = Env::new();
    let dir = env.dir.path().to_path_buf();
    // The first worker run waits for `go`; each run saves its prompt; the auditor asks for
    // one more iteration, then approves.
    let worker = format!(
        "sh -c 'n=$(ls {d} | grep -c ^prompt-); n=$((n + 1)); cat > {d}/prompt-$n.txt; \
         if [ $n = 1 ]; then while [ ! -f {d}/go ]; do sleep 0.05; done; fi; echo worked'",
        d = dir.display()
    );
    let auditor = format!(
        "sh -c 'if [ -f {d}/audited ]; then echo VERDICT: DONE; else touch {d}/audited; \
         echo VERDICT: RETRY once more; fi'",
        d = dir.display()
    );
    let mut session = env
        .command(&[
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            &auditor,
            "write it",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !dir.join("prompt-1.txt").exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "no worker");
        std::thread::sleep(Duration::from_millis(20));
    }
    let id: String = std::fs::read_dir(env.state_dir().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .next()
        .unwrap();
    let reader = bearer(&token(&env, "rita", "read"));
    let operator = bearer(&token(&env, "otto", "operate"));
    let s = serve(&env, &[]);
    let origin = format!("http://{}", s.host);
    let say = format!("/sessions/{id}/say");
    let inbox = env.state_dir().join("sessions").join(&id).join("inbox");

    // Offered to an operate token only.
    let page = http(
        &s,
        "GET",
        &format!("/sessions/{id}"),
        &[("Authorization", &reader)],
        "",
    );
    assert!(!page.body.contains("/say\""), "{}", page.body);
    let page = http(
        &s,
        "GET",
        &format!("/sessions/{id}"),
        &[("Authorization", &operator)],
        "",
    );
    assert!(
        page.body.contains(&format!("action=\"{say}\"")),
        "{}",
        page.body
    );

    // A read token's message is refused; nothing reaches the session.
    let body = form(&[("text", "from a reader")]);
    let headers = [
        ("Authorization", reader.as_str()),
        ("Origin", origin.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    let r = http(&s, "POST", &say, &headers, &body);
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        std::fs::read_dir(&inbox).map_or(0, |d| d.count()) == 0,
        "nothing posted"
    );
    // An empty one is a clear 400.
    let headers = [
        ("Authorization", operator.as_str()),
        ("Origin", origin.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    let r = http(&s, "POST", &say, &headers, &form(&[("text", "  ")]));
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("the message is empty"), "{}", r.body);
    // The operator's is said, as otto.
    let r = http(
        &s,
        "POST",
        &say,
        &headers,
        &form(&[("text", "the fixture lives in tests/data zq91")]),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains(&format!("Said to session {id}")),
        "{}",
        r.body
    );

    std::fs::write(dir.join("go"), "").unwrap();
    let status = session.wait().unwrap();
    assert!(status.success());
    let second = std::fs::read_to_string(dir.join("prompt-2.txt")).unwrap();
    assert!(
        second.contains("otto: the fixture lives in tests/data zq91"),
        "{second}"
    );
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            env.state_dir()
                .join("sessions")
                .join(&id)
                .join("oneshot.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(state["messages"][0]["actor"], "otto");
    assert_eq!(state["messages"][0]["status"], "in_prompt");
    // Ended: the page offers no say, and a POST is a conflict.
    let page = http(
        &s,
        "GET",
        &format!("/sessions/{id}"),
        &[("Authorization", &operator)],
        "",
    );
    assert!(!page.body.contains("/say\""), "{}", page.body);
    let r = http(&s, "POST", &say, &headers, &form(&[("text", "too late")]));
    assert_eq!(r.status, 409, "{}", r.body);
}

#[test]
fn an_operate_token_says_something_to_a_job_and_its_audit_trail_names_it() {
    let env = Env::new();
    let id = waiting(&env, GOOD_WORKER);
    let reader = bearer(&token(&env, "rita", "read"));
    let operator = bearer(&token(&env, "otto", "operate"));
    let s = serve(&env, &[]);
    let origin = format!("http://{}", s.host);
    let say = format!("/jobs/{id}/say");
    let page = http(
        &s,
        "GET",
        &format!("/jobs/{id}"),
        &[("Authorization", &operator)],
        "",
    );
    assert!(
        page.body.contains(&format!("action=\"{say}\"")),
        "{}",
        page.body
    );
    let page = http(
        &s,
        "GET",
        &format!("/jobs/{id}"),
        &[("Authorization", &reader)],
        "",
    );
    assert!(!page.body.contains("/say\""), "{}", page.body);

    let r = http(
        &s,
        "POST",
        &say,
        &[
            ("Authorization", &reader),
            ("Origin", &origin),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &form(&[("text", "from a reader")]),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let r = http(
        &s,
        "POST",
        &say,
        &[
            ("Authorization", &operator),
            ("Origin", &origin),
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Accept", "application/json"),
        ],
        &form(&[("text", "rename the flag to --dry-run zq92"), ("now", "1")]),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let answer: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert!(
        answer["said"]
            .as_str()
            .unwrap()
            .contains("no runner holds it now"),
        "{answer}"
    );
    let said: Vec<serde_json::Value> = audit(&env, &id)
        .into_iter()
        .filter(|e| e["action"] == "message")
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0]["actor"], "otto");
    assert_eq!(said[0]["metadata"]["message_id"], answer["message"]);
    assert!(
        said[0]
            .to_string()
            .contains("rename the flag to --dry-run zq92"),
        "{said:?}"
    );
    // An ended job refuses.
    env.ok(&["job", "cancel", &id]);
    let r = http(
        &s,
        "POST",
        &say,
        &[
            ("Authorization", &operator),
            ("Origin", &origin),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &form(&[("text", "too late")]),
    );
    assert_eq!(r.status, 409, "{}", r.body);
}
