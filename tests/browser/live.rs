//! The dashboard's live stream in a real browser (headless chromium over WebDriver, see
//! tests/common/browser.rs) against the real `oneshot serve` and a real runner: the board
//! moves a job from column to column as it runs, without a reload; a job page keeps its log
//! growing while a worker prints, and after `serve` is killed and started again on its port
//! the page resumes — every line the store holds shown once, none missing, none doubled. The
//! connection badge says so. Skipped, saying so, without chromedriver outside CI.

use fantoccini::Locator;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::browser;
use crate::job_env;
use crate::serve_process;
use browser::Browser;
use job_env::{DONE, Env};
use serve_process::{serve, serve_at};

/// Waits (up to `secs`) until `css` matches an element on the page shown, without reloading.
async fn appears(b: &Browser, css: &str, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while b.client.find(Locator::Css(css)).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "{css} never appeared: {}",
            b.text().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What the connection badge says.
async fn badge(b: &Browser) -> String {
    let e = b.client.find(Locator::Css("#live-badge")).await.unwrap();
    e.attr("data-state").await.unwrap().unwrap_or_default()
}

/// Waits until the badge says `state`.
async fn badge_becomes(b: &Browser, state: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while badge(b).await != state {
        assert!(
            Instant::now() < deadline,
            "the badge never said {state} (it says {})",
            badge(b).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The entries of the log lines the page shows, in order.
async fn shown_entries(b: &Browser) -> Vec<u64> {
    let v = b
        .client
        .execute(
            "return Array.from(document.querySelectorAll('ol.account li[data-entry]'))\
             .map(function (e) { return Number(e.getAttribute('data-entry')); });",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(v).unwrap()
}

/// A marker the page's document carries until it is replaced by a navigation (not by the
/// live script, which replaces only `<main>`).
async fn mark(b: &Browser) {
    b.client
        .execute("window.__notReloaded = true; return null;", vec![])
        .await
        .unwrap();
}

async fn still_marked(b: &Browser) -> bool {
    b.client
        .execute("return window.__notReloaded === true;", vec![])
        .await
        .unwrap()
        == serde_json::Value::Bool(true)
}

#[tokio::test]
async fn the_board_moves_a_running_job_between_states_without_a_reload() {
    let Some(b) = browser::start().await else {
        return;
    };
    let env = Env::new();
    let s = serve(&env, &[]);
    b.client.goto(&s.link).await.unwrap();
    badge_becomes(&b, "live").await;
    mark(&b).await;

    // Made after the board was rendered: it must come by the stream.
    let gate = env.dir.path().join("gate");
    let worker = format!(
        "sh -c 'while [ ! -e {} ]; do sleep 0.05; done; echo hi > f.txt'",
        gate.display()
    );
    let id = env.create(&worker, DONE, &["--activate"]);
    appears(
        &b,
        &format!("section#state-pending tr.job[data-job=\"{id}\"]"),
        15,
    )
    .await;

    let mut runner = env
        .command(&["job", "run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    appears(
        &b,
        &format!("section#state-executing tr.job[data-job=\"{id}\"]"),
        30,
    )
    .await;
    b.screenshot("the_board_moves_a_running_job_between_states_without_a_reload-executing")
        .await;
    std::fs::write(&gate, "").unwrap();
    appears(
        &b,
        &format!("section#state-approval_required tr.job[data-job=\"{id}\"]"),
        30,
    )
    .await;
    assert!(runner.wait().unwrap().success());
    assert!(
        still_marked(&b).await,
        "the board was reloaded, not updated"
    );
    assert_eq!(badge(&b).await, "live");
    b.close().await;
}

#[tokio::test]
async fn a_job_page_resumes_after_serve_restarts_with_no_line_missing_or_doubled() {
    let Some(b) = browser::start().await else {
        return;
    };
    let env = Env::new();
    let gate = env.dir.path().join("gate");
    // The page opens before the first line, then the worker prints for a few seconds.
    let worker = format!(
        "sh -c 'while [ ! -e {} ]; do sleep 0.05; done; \
         for i in $(seq 1 80); do echo line $i; sleep 0.05; done; echo hi > f.txt'",
        gate.display()
    );
    let id = env.create(&worker, DONE, &["--activate"]);
    let mut runner = env
        .command(&["job", "run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while env.state(&id) != "EXECUTING" {
        assert!(t.elapsed() < Duration::from_secs(30), "never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    let s = serve(&env, &[]);
    b.client.goto(&s.link).await.unwrap();
    b.client
        .goto(&format!("{}/jobs/{id}", s.url()))
        .await
        .unwrap();
    appears(&b, "ol.account[data-session]", 30).await;
    badge_becomes(&b, "live").await;
    mark(&b).await;
    std::fs::write(&gate, "").unwrap();

    // Some lines arrive live; then the server dies mid-stream.
    let t = Instant::now();
    while shown_entries(&b).await.len() < 15 {
        assert!(t.elapsed() < Duration::from_secs(30), "no lines came live");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let host = s.host.clone();
    drop(s);
    // Down: `reconnecting` (the browser retries by itself) or `offline` (the page's script
    // retries) — never `live`.
    let t = Instant::now();
    while badge(&b).await == "live" {
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "still live with no server"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    let s = serve_at(&env, &host, &[]);
    badge_becomes(&b, "live").await;

    // The job rests; the page says so by itself.
    appears(&b, "h1 .state-approval_required", 60).await;
    assert!(runner.wait().unwrap().success());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let live = shown_entries(&b).await;
    assert!(
        still_marked(&b).await,
        "the page was reloaded, not kept live"
    );
    b.screenshot("a_job_page_resumes_after_serve_restarts_with_no_line_missing_or_doubled")
        .await;

    // The page as the store renders it now: the same lines, in the same order.
    b.client
        .goto(&format!("{}/jobs/{id}", s.url()))
        .await
        .unwrap();
    let stored = shown_entries(&b).await;
    assert!(stored.len() >= 80, "{stored:?}");
    assert_eq!(live, stored, "live: {live:?}\nstore: {stored:?}");
    b.close().await;
}

#[tokio::test]
async fn a_page_left_open_shows_the_new_diff_by_itself_and_holds_its_buttons_a_moment() {
    let Some(b) = browser::start().await else {
        return;
    };
    let env = Env::new();
    // Each attempt writes the next number: every attempt a different diff.
    let count = env.dir.path().join("count");
    let worker = format!(
        "sh -c 'n=$(( $(cat {0} 2>/dev/null || echo 0) + 1 )); echo $n > {0}; echo $n > f.txt'",
        count.display()
    );
    let id = env.create(&worker, DONE, &["--activate"]);
    env.ok(&["job", "step", &id]);
    env.ok(&["token", "create", "--name", "ana", "--scope", "approve"]);
    let s = serve(&env, &[]);
    let link = env.ok(&["token", "login", "ana", "--url", &s.url()]);
    b.client.goto(link.trim()).await.unwrap();
    b.client
        .goto(&format!("{}/jobs/{id}", s.url()))
        .await
        .unwrap();
    badge_becomes(&b, "live").await;
    mark(&b).await;
    let diff = |b: &Browser| {
        let client = b.client.clone();
        async move {
            let e = client
                .find(Locator::Css("form.verb-approve input[name=diff_hash]"))
                .await
                .unwrap();
            e.attr("value").await.unwrap().unwrap_or_default()
        }
    };
    let old = diff(&b).await;

    env.ok(&["job", "reject", &id, "--feedback", "count again"]);
    env.ok(&["job", "step", &id]);
    let t = Instant::now();
    while b
        .client
        .find(Locator::XPath("//p[contains(., 'This job moved on')]"))
        .await
        .is_err()
    {
        assert!(t.elapsed() < Duration::from_secs(20), "{}", b.text().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(still_marked(&b).await, "updated in place, not reloaded");
    let new = diff(&b).await;
    assert_ne!(new, old, "the page shows the new diff");
    let button = b
        .client
        .find(Locator::Css("form.verb-approve button[type=submit]"))
        .await
        .unwrap();
    assert_eq!(
        button.attr("disabled").await.unwrap().as_deref(),
        Some("true"),
        "held a moment after the change"
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let button = b
        .client
        .find(Locator::Css("form.verb-approve button[type=submit]"))
        .await
        .unwrap();
    assert_eq!(button.attr("disabled").await.unwrap(), None, "then usable");
    b.close().await;
}
