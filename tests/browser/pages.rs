//! The dashboard in a real browser: headless chromium driven over WebDriver
//! (tests/common/browser.rs), against the real `oneshot serve` on a free port of 127.0.0.1, a
//! real job store and jobs stepped by the real runner with `cmd:` workers. What a person does —
//! sign in through the printed link, read the board, approve or reject from a job's page —
//! and what the browser must not manage: reuse a link, approve with a `read` session, approve
//! a newer diff from an older page. Screenshots of the board and a job page are written under
//! the target directory's `browser-artifacts/`.
//!
//! (Every route and scope over plain HTTP, cross-origin POSTs and foreign `Host`s:
//! tests/serve/serve.rs.) Skipped, saying so, without chromedriver outside CI.

use fantoccini::Locator;
use std::time::{Duration, Instant};

use crate::browser;
use crate::job_env;
use crate::serve_process;
use browser::Browser;
use job_env::{DONE, Env, GOOD_WORKER};
use serve_process::Server;

/// `oneshot serve` on a free port, with `extra` flags; its link signs in with a code.
fn serve(env: &Env, extra: &[&str]) -> Server {
    let s = serve_process::serve(env, extra);
    assert!(
        s.link.starts_with(&format!("{}/login/osl_", s.url())),
        "{}",
        s.link
    );
    s
}

/// A token named `name` with one scope, and a sign-in link for it to the server at `url`.
fn login_link(env: &Env, name: &str, scope: &str, url: &str) -> String {
    env.ok(&["token", "create", "--name", name, "--scope", scope]);
    let link = env.ok(&["token", "login", name, "--url", url]);
    let link = link.trim().to_string();
    assert!(link.starts_with(&format!("{url}/login/osl_")), "{link}");
    link
}

/// A job resting in APPROVAL_REQUIRED, stepped by the real runner.
fn waiting(env: &Env, worker: &str) -> String {
    let id = env.create(worker, DONE, &["--activate"]);
    env.ok(&["job", "step", &id]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    id
}

fn audit(env: &Env, id: &str) -> Vec<serde_json::Value> {
    env.ok(&["job", "audit", id, "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The latest artifact's diff hash, from the store.
fn latest_diff(env: &Env, id: &str) -> String {
    let v = env.show(id);
    let last = v["artifacts"].as_array().and_then(|a| a.last());
    last.and_then(|a| a["diff_hash"].as_str())
        .unwrap_or_else(|| panic!("{id} has no artifact: {v}"))
        .to_string()
}

/// The browser, or `None` when the tests skip (see tests/common/browser.rs).
async fn browser() -> Option<Browser> {
    browser::start().await
}

/// Opens `url` and insists the response was `status`.
async fn open(b: &Browser, url: &str, status: u16) {
    b.client.goto(url).await.unwrap();
    let got = b.status().await;
    assert_eq!(got, status, "{url}: {}", b.text().await);
}

/// Waits (up to 15 s) until the job page's state badge says `state`, after a form's submit.
async fn page_state_becomes(b: &Browser, state: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(e) = b.client.find(Locator::Css("h1 .state")).await
            && e.text().await.ok().as_deref() == Some(state)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the page never showed {state}: {}",
            b.text().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits (up to 15 s) until the page shown holds `needle`, after a click.
async fn wait_for_text(b: &Browser, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        // Mid-navigation there may be no body yet: not yet, then.
        let text = match b.client.find(Locator::Css("body")).await {
            Ok(body) => body.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if text.contains(needle) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the page never showed {needle:?}: {text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The value of the hidden input `name` in the form of `verb` on the page shown.
async fn bound(b: &Browser, verb: &str, name: &str) -> String {
    let css = format!("form.verb-{verb} input[name={name}]");
    let e = b.client.find(Locator::Css(&css)).await.unwrap();
    e.attr("value").await.unwrap().unwrap_or_default()
}

/// Clicks the submit button of the form of `verb`.
async fn submit(b: &Browser, verb: &str) {
    let css = format!("form.verb-{verb} button[type=submit]");
    b.client
        .find(Locator::Css(&css))
        .await
        .unwrap_or_else(|e| panic!("no {verb} button: {e}"))
        .click()
        .await
        .unwrap();
}

#[tokio::test]
async fn the_printed_link_signs_in_once_and_the_board_groups_the_jobs_by_state() {
    let Some(b) = browser().await else { return };
    let env = Env::new();
    let waiting_id = waiting(&env, GOOD_WORKER);
    let pending_id = env.job_in("PENDING");
    let draft_id = env.job_in("DRAFT");
    let s = serve(&env, &[]);

    // The link signs the browser in and lands on the board.
    open(&b, &s.link, 200).await;
    assert_eq!(
        b.client.current_url().await.unwrap().as_str(),
        format!("{}/", s.url())
    );
    let text = b.text().await;
    assert!(text.contains("signed in as serve-"), "{text}");
    for (id, group) in [
        (&waiting_id, "approval_required"),
        (&pending_id, "pending"),
        (&draft_id, "draft"),
    ] {
        let row = format!("section#state-{group} tr.job[data-job=\"{id}\"]");
        b.client
            .find(Locator::Css(&row))
            .await
            .unwrap_or_else(|e| panic!("{id} is not under {group}: {e}\n{text}"));
    }
    let groups = b
        .client
        .find_all(Locator::Css("section.group"))
        .await
        .unwrap();
    assert_eq!(groups.len(), 3, "one group a state held: {text}");
    let shot = b
        .screenshot("the_printed_link_signs_in_once_and_the_board_groups_the_jobs_by_state-board")
        .await;
    assert!(shot.is_file());

    // The same link again: refused, and the cookie the first one set still works.
    open(&b, &s.link, 403).await;
    let text = b.text().await;
    assert!(text.contains("used already"), "{text}");
    open(&b, &format!("{}/inbox", s.url()), 200).await;
    let text = b.text().await;
    assert!(text.contains(&waiting_id), "{text}");
    assert!(
        !text.contains(&draft_id),
        "a draft waits for no human: {text}"
    );

    // The header's sign-out button (a form POST, like the verbs): the session ends.
    b.client
        .find(Locator::Css("form.signout button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for_text(&b, "Signed out").await;
    assert_eq!(b.status().await, 200);
    open(&b, &format!("{}/", s.url()), 401).await;
    b.close().await;
}

#[tokio::test]
async fn approving_from_a_job_page_makes_it_success_with_the_token_named_in_the_trail() {
    let Some(b) = browser().await else { return };
    let env = Env::new();
    let id = waiting(&env, GOOD_WORKER);
    let s = serve(&env, &[]);
    let link = login_link(&env, "ana", "approve", &s.url());
    open(&b, &link, 200).await;
    open(&b, &format!("{}/jobs/{id}", s.url()), 200).await;
    page_state_becomes(&b, "APPROVAL_REQUIRED").await;
    let seen = bound(&b, "approve", "diff_hash").await;
    assert_eq!(
        seen,
        latest_diff(&env, &id),
        "the page shows the latest diff"
    );
    b.screenshot(
        "approving_from_a_job_page_makes_it_success_with_the_token_named_in_the_trail-job",
    )
    .await;
    let before = audit(&env, &id).len();

    submit(&b, "approve").await;
    page_state_becomes(&b, "SUCCESS").await;
    assert_eq!(
        b.client.current_url().await.unwrap().path(),
        format!("/jobs/{id}"),
        "back on the job's page"
    );
    assert_eq!(env.state(&id), "SUCCESS");
    let trail = audit(&env, &id);
    assert_eq!(trail.len(), before + 1, "{trail:?}");
    let last = trail.last().unwrap();
    assert_eq!(last["action"], "approve");
    assert_eq!(last["actor"], "ana");
    assert_eq!(last["metadata"]["diff_hash"], seen.as_str());
    assert!(
        b.client
            .find_all(Locator::Css("form.verb-approve"))
            .await
            .unwrap()
            .is_empty(),
        "nothing left to approve"
    );
    b.close().await;
}

#[tokio::test]
async fn a_reject_with_a_line_comment_from_the_page_reaches_the_next_prompt() {
    let Some(b) = browser().await else { return };
    let env = Env::new();
    let dump = env.dir.path().join("prompt.txt");
    let worker = format!(
        "sh -c 'cat \"$ONESHOT_PROMPT_FILE\" > {}; echo hi > f.txt'",
        dump.display()
    );
    let id = waiting(&env, &worker);
    let s = serve(&env, &[]);
    let link = login_link(&env, "ana", "approve", &s.url());
    open(&b, &link, 200).await;
    open(&b, &format!("{}/jobs/{id}", s.url()), 200).await;

    let feedback = b
        .client
        .find(Locator::Css("form.verb-reject textarea[name=feedback]"))
        .await
        .unwrap();
    feedback.send_keys("also write bye").await.unwrap();
    let comments = b
        .client
        .find(Locator::Css("form.verb-reject textarea[name=comments]"))
        .await
        .unwrap();
    comments
        .send_keys("f.txt:1: say hello, not hi\na.txt:1: keep this line")
        .await
        .unwrap();
    submit(&b, "reject").await;
    page_state_becomes(&b, "PENDING").await;
    assert_eq!(env.state(&id), "PENDING");
    let last = audit(&env, &id).pop().unwrap();
    assert_eq!(
        (&last["action"], &last["actor"]),
        (&"reject".into(), &"ana".into())
    );

    env.ok(&["job", "step", &id]);
    let prompt = std::fs::read_to_string(&dump).unwrap();
    assert!(prompt.contains("also write bye"), "{prompt}");
    assert!(prompt.contains("Comments on the diff:"), "{prompt}");
    assert!(prompt.contains("f.txt:1: say hello, not hi"), "{prompt}");
    assert!(prompt.contains("a.txt:1: keep this line"), "{prompt}");
    b.close().await;
}

#[tokio::test]
async fn a_read_sessions_page_offers_no_approve_and_its_forged_post_is_refused_unaudited() {
    let Some(b) = browser().await else { return };
    let env = Env::new();
    let id = waiting(&env, GOOD_WORKER);
    let s = serve(&env, &[]);
    let link = login_link(&env, "reader", "read", &s.url());
    open(&b, &link, 200).await;
    open(&b, &format!("{}/jobs/{id}", s.url()), 200).await;
    page_state_becomes(&b, "APPROVAL_REQUIRED").await;
    let text = b.text().await;
    assert!(text.contains("signed in as reader"), "{text}");
    for css in ["form.verb-approve", "form.verb-reject", "section.actions"] {
        let found = b.client.find_all(Locator::Css(css)).await.unwrap();
        assert!(found.is_empty(), "a read session's page has no {css}");
    }

    // The page's own script forges the approval the server would take from an approver: what
    // the store says the job is, sent with the session's cookie from the server's own origin.
    let v = env.show(&id);
    let body = format!(
        "state=APPROVAL_REQUIRED&attempt={}&diff_hash={}",
        v["job"]["steps"],
        latest_diff(&env, &id)
    );
    let before = audit(&env, &id);
    let said = b
        .client
        .execute_async(
            "const [path, body, done] = arguments;
             fetch(path, {method: 'POST', body,
                          headers: {'Content-Type': 'application/x-www-form-urlencoded'}})
               .then(r => r.text().then(t => done([r.status, t])))
               .catch(e => done([0, String(e)]));",
            vec![format!("/jobs/{id}/approve").into(), body.into()],
        )
        .await
        .unwrap();
    assert_eq!(said[0], 403, "{said}");
    assert!(
        said[1]
            .as_str()
            .unwrap()
            .contains("needs the approve scope"),
        "{said}"
    );
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    assert_eq!(
        audit(&env, &id),
        before,
        "a refused POST is audited nowhere"
    );
    b.close().await;
}

#[tokio::test]
async fn a_page_showing_an_older_diff_cannot_approve_the_newer_one() {
    let Some(b) = browser().await else { return };
    let env = Env::new();
    // Each attempt writes the next number: every attempt a different diff.
    let count = env.dir.path().join("count");
    let worker = format!(
        "sh -c 'n=$(( $(cat {0} 2>/dev/null || echo 0) + 1 )); echo $n > {0}; echo $n > f.txt'",
        count.display()
    );
    let id = waiting(&env, &worker);
    let s = serve(&env, &[]);
    let link = login_link(&env, "ana", "approve", &s.url());
    open(&b, &link, 200).await;
    open(&b, &format!("{}/jobs/{id}", s.url()), 200).await;
    let old = bound(&b, "approve", "diff_hash").await;
    assert_eq!(old, latest_diff(&env, &id));
    // The page is live: left alone it would show the new diff by itself. Someone typing a
    // rejection keeps it as it is (it says so) — the page that shows an older diff.
    b.client
        .find(Locator::Css("form.verb-reject textarea[name=feedback]"))
        .await
        .unwrap()
        .send_keys("the count is off")
        .await
        .unwrap();

    // Meanwhile, away from this page: rejected, and stepped again to a new diff.
    env.ok(&["job", "reject", &id, "--feedback", "count again"]);
    env.ok(&["job", "step", &id]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    let new = latest_diff(&env, &id);
    assert_ne!(new, old, "the second attempt made another diff");
    let before = audit(&env, &id);
    wait_for_text(
        &b,
        "This job changed since the page was shown; your text is kept.",
    )
    .await;
    assert_eq!(
        bound(&b, "approve", "diff_hash").await,
        old,
        "the page still shows the old diff"
    );

    // The old page's approve: 409, and nothing written.
    submit(&b, "approve").await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while b.client.find(Locator::Css("h1 .state")).await.is_ok() {
        assert!(
            Instant::now() < deadline,
            "the old page stayed: {}",
            b.text().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(b.status().await, 409, "{}", b.text().await);
    let text = b.text().await;
    assert!(text.contains("out of date"), "{text}");
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    assert_eq!(audit(&env, &id), before, "nothing written");

    // Reloaded, the page shows the new diff, and approves it.
    open(&b, &format!("{}/jobs/{id}", s.url()), 200).await;
    assert_eq!(bound(&b, "approve", "diff_hash").await, new);
    submit(&b, "approve").await;
    page_state_becomes(&b, "SUCCESS").await;
    let last = audit(&env, &id).pop().unwrap();
    assert_eq!(last["metadata"]["diff_hash"], new.as_str());
    b.close().await;
}

/// A page of another site: a one-page HTTP server on a free loopback port serving `html` to
/// every request, until the test ends.
fn other_site(html: String) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
                html.len()
            );
        }
    });
    format!("http://{addr}/")
}

#[tokio::test]
async fn a_form_on_another_site_and_a_rebound_name_reach_nothing() {
    // `rebind.test` resolves to this machine, as an attacker's DNS name would after rebinding.
    let Some(b) = browser::start_with(&["--host-resolver-rules=MAP rebind.test 127.0.0.1"]).await
    else {
        return;
    };
    let env = Env::new();
    let id = waiting(&env, GOOD_WORKER);
    let s = serve(&env, &[]);
    let link = login_link(&env, "ana", "approve", &s.url());
    open(&b, &link, 200).await;
    let v = env.show(&id);
    let before = audit(&env, &id);

    // Another site's page posts the approval the signed-in approver could make, with every
    // field right; the browser even sends the cookie (the same host, so the same site) — the
    // server refuses it for its origin.
    let evil = other_site(format!(
        "<!doctype html><form id=f method=post action=\"{}/jobs/{id}/approve\">\
         <input name=state value=APPROVAL_REQUIRED><input name=attempt value={}>\
         <input name=diff_hash value={}></form><script>document.getElementById('f').submit()\
         </script>",
        s.url(),
        v["job"]["steps"],
        latest_diff(&env, &id)
    ));
    b.client.goto(&evil).await.unwrap();
    wait_for_text(&b, "must come from this server's own pages").await;
    assert_eq!(b.status().await, 403);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    assert_eq!(
        audit(&env, &id),
        before,
        "a refused POST is audited nowhere"
    );

    // The server under a name it does not answer as: refused before anything is read.
    let port = s.host.rsplit(':').next().unwrap();
    b.client
        .goto(&format!("http://rebind.test:{port}/jobs/{id}"))
        .await
        .unwrap();
    assert_eq!(b.status().await, 421);
    let text = b.text().await;
    assert!(text.contains("does not answer as"), "{text}");
    assert!(
        !text.contains("APPROVAL_REQUIRED"),
        "nothing of the job shown: {text}"
    );
    b.close().await;
}
