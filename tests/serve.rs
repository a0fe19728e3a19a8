//! `oneshot serve` over HTTP, through the real binary on a free port, a real job store and a
//! job stepped by the real runner: every route behind the boundary (Host, Origin, token or
//! session, scope), the sign-in link used once, revocation ending a session, the verbs going
//! through the same library call as the CLI's with the token's name in the audit trail, and an
//! approval bound to what its page showed. (That no agent is given a token: tests/token_cli.rs.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

#[path = "common/job_env.rs"]
mod job_env;
#[path = "common/pg_server.rs"]
mod pg_server;
#[path = "common/serve_process.rs"]
mod serve_process;
use job_env::{DONE, Env, GOOD_WORKER};
use serve_process::{Server, serve};

/// An HTTP response, read whole.
#[derive(Debug)]
struct Resp {
    status: u16,
    head: String,
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

/// One request to the server at `s.host`, with `headers` as given (a `Host` among them
/// replaces the right one).
fn http(s: &Server, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
    let mut conn = TcpStream::connect(&s.host).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    exchange(&mut conn, &s.host, method, path, headers, body)
}

/// Sends a request over `conn` (`Host: host` unless `headers` say otherwise) and reads the
/// response whole.
fn exchange(
    conn: &mut (impl Read + Write),
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Resp {
    conn.write_all(request(host, method, path, headers, body).as_bytes())
        .unwrap();
    let mut raw = Vec::new();
    if let Err(e) = conn.read_to_end(&mut raw) {
        // A TLS stream may end without close_notify once the response is in.
        assert!(!raw.is_empty(), "no response: {e}");
    }
    response(&String::from_utf8_lossy(&raw))
}

/// An HTTP/1.1 request's text.
fn request(host: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {host}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if method == "POST" {
        req.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);
    req
}

/// A response's text, parsed.
fn response(raw: &str) -> Resp {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head}"));
    Resp {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The value of hidden input `name` in the first form of a page.
fn field(page: &str, name: &str) -> String {
    let at = page
        .find(&format!("name=\"{name}\" value=\""))
        .unwrap_or_else(|| panic!("no {name} in {page}"));
    let rest = &page[at + name.len() + 15..];
    rest[..rest.find('"').unwrap()].to_string()
}

/// A form body from pairs, urlencoded the way a browser does it.
fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            let enc: String = v
                .bytes()
                .map(|b| match b {
                    b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                        (b as char).to_string()
                    }
                    b' ' => "+".to_string(),
                    b => format!("%{b:02X}"),
                })
                .collect();
            format!("{k}={enc}")
        })
        .collect::<Vec<_>>()
        .join("&")
}

fn token(env: &Env, name: &str, scope: &str) -> String {
    env.ok(&["token", "create", "--name", name, "--scope", scope])
        .trim()
        .to_string()
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
fn a_non_loopback_address_needs_tls_or_a_proxy() {
    let env = Env::new();
    let out = env.oneshot(&["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("not a loopback address")
            && e.contains("--tls-cert FILE --tls-key FILE")
            && e.contains("--behind-proxy"),
        "{e}"
    );
    // Both TLS files or neither.
    let out = env.oneshot(&["serve", "--tls-cert", "c.pem"]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--tls-key <FILE>"), "{e}");
    // Behind a proxy: its name is answered as, and the cookie is Secure.
    let s = serve(&env, &["--behind-proxy", "--host", "dash.example"]);
    assert!(
        s.link.starts_with("https://dash.example/login/osl_"),
        "{}",
        s.link
    );
    let path = s.link.split_once("dash.example").unwrap().1.to_string();
    let r = http(&s, "GET", &path, &[("Host", "dash.example")], "");
    assert_eq!(r.status, 303, "{}", r.body);
    assert!(r.header("set-cookie").unwrap().contains("; Secure"));
}

/// `oneshot serve` with `args`, its first two lines (where it listens, the sign-in line) read
/// as it prints them; `None` for either when it exited first (its stderr is then the reason).
fn start(env: &Env, args: &[&str]) -> (std::process::Child, Vec<String>) {
    let mut child = env
        .command(&[&["serve"], args].concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .take(2)
        .map(Result::unwrap)
        .collect();
    (child, lines)
}

/// A self-signed certificate for 127.0.0.1 and localhost, written as `NAME.pem` and
/// `NAME.key` in `dir`; the certificate, for a client to trust.
fn certificate(dir: &Path, name: &str) -> rustls::pki_types::CertificateDer<'static> {
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    std::fs::write(dir.join(format!("{name}.pem")), made.cert.pem()).unwrap();
    std::fs::write(
        dir.join(format!("{name}.key")),
        made.signing_key.serialize_pem(),
    )
    .unwrap();
    made.cert.der().clone()
}

/// A TLS client trusting `cert` only.
fn tls_client(cert: rustls::pki_types::CertificateDer<'static>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// One HTTPS request to `s.host` (127.0.0.1:PORT), the certificate checked for 127.0.0.1.
fn https(
    s: &Server,
    client: &Arc<rustls::ClientConfig>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Resp {
    let tcp = TcpStream::connect(&s.host).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(client.clone(), name).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    exchange(&mut tls, &s.host, method, path, headers, body)
}

#[test]
fn with_a_certificate_it_speaks_only_https_anywhere_and_the_cookie_is_secure() {
    let env = Env::new();
    let dir = env.dir.path();
    let cert = certificate(dir, "cert");
    let client = tls_client(cert);
    let reader = token(&env, "rita", "read");
    token(&env, "ana", "approve");
    let (cert_file, key_file) = (dir.join("cert.pem"), dir.join("cert.key"));
    let (child, lines) = start(
        &env,
        &[
            "--listen",
            "0.0.0.0:0",
            "--tls-cert",
            cert_file.to_str().unwrap(),
            "--tls-key",
            key_file.to_str().unwrap(),
            "--token-name",
            "ana",
        ],
    );
    // A non-loopback address with TLS is allowed; reached here through loopback.
    let [listening, signin] = lines.as_slice() else {
        panic!("{lines:?}")
    };
    let host = listening
        .strip_prefix("listening on https://")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{listening}"))
        .to_string();
    assert!(host.starts_with("127.0.0.1:"), "{listening}");
    let link = signin.strip_prefix("sign in: ").unwrap().to_string();
    assert!(
        link.starts_with(&format!("https://{host}/login/osl_")),
        "{link}"
    );
    let s = Server { child, host, link };

    let as_reader = bearer(&reader);
    let board = https(
        &s,
        &client,
        "GET",
        "/",
        &[("Authorization", &as_reader)],
        "",
    );
    assert_eq!(board.status, 200, "{}", board.body);
    assert!(
        board.body.contains("signed in as <b>rita</b>"),
        "{}",
        board.body
    );

    // Plain HTTP to the TLS port: no page, and the server goes on.
    let mut plain = TcpStream::connect(&s.host).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    plain
        .write_all(request(&s.host, "GET", "/", &[("Authorization", &as_reader)], "").as_bytes())
        .unwrap();
    let mut raw = Vec::new();
    let _ = plain.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw);
    assert!(
        !raw.contains("HTTP/1.1") && !raw.contains("rita"),
        "plain HTTP got: {raw}"
    );
    // A client that connects and says nothing does not hold up anyone else.
    let _silent = TcpStream::connect(&s.host).unwrap();
    let started = std::time::Instant::now();
    let r = https(
        &s,
        &client,
        "GET",
        "/inbox",
        &[("Authorization", &as_reader)],
        "",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(started.elapsed() < Duration::from_secs(5));

    // The sign-in link over HTTPS sets a Secure cookie; the https:// origin is its own.
    let path = s.link.split_once(&s.host).unwrap().1.to_string();
    let r = https(&s, &client, "GET", &path, &[], "");
    assert_eq!(r.status, 303, "{}", r.body);
    let set = r.header("set-cookie").unwrap();
    assert!(
        set.contains("; Secure") && set.contains("HttpOnly"),
        "{set}"
    );
    let cookie = set.split(';').next().unwrap().to_string();
    let board = https(&s, &client, "GET", "/", &[("Cookie", &cookie)], "");
    assert!(
        board.body.contains("signed in as <b>ana</b>"),
        "{}",
        board.body
    );
    let r = https(
        &s,
        &client,
        "POST",
        "/logout",
        &[("Cookie", &cookie), ("Origin", "https://evil.example")],
        "",
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        r.body.contains(&format!("https://{}", s.host)),
        "{}",
        r.body
    );
    let origin = format!("https://{}", s.host);
    let r = https(
        &s,
        &client,
        "POST",
        "/logout",
        &[("Cookie", &cookie), ("Origin", &origin)],
        "",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.header("set-cookie").unwrap().contains("Max-Age=0"));
    let r = https(&s, &client, "GET", "/", &[("Cookie", &cookie)], "");
    assert_eq!(r.status, 401, "{}", r.body);
}

#[test]
fn a_certificate_or_key_that_cannot_be_used_is_refused_naming_the_file() {
    let env = Env::new();
    let dir = env.dir.path();
    certificate(dir, "one");
    certificate(dir, "two");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let refused = |cert: &str, key: &str| {
        let out = env.oneshot(&[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            &path(cert),
            "--tls-key",
            &path(key),
        ]);
        assert_eq!(out.status.code(), Some(2), "{cert} {key}");
        assert!(out.stdout.is_empty(), "nothing listened");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = refused("missing.pem", "one.key");
    assert!(
        e.contains(&format!(
            "cannot read the TLS certificate {}",
            path("missing.pem")
        )),
        "{e}"
    );
    let e = refused("one.pem", "missing.key");
    assert!(
        e.contains(&format!(
            "cannot read the TLS private key {}",
            path("missing.key")
        )),
        "{e}"
    );
    let e = refused("one.key", "one.key");
    assert!(
        e.contains(&format!("{} holds no certificate", path("one.key"))),
        "{e}"
    );
    let e = refused("one.pem", "one.pem");
    assert!(
        e.contains(&format!("{} holds no private key", path("one.pem"))),
        "{e}"
    );
    let e = refused("one.pem", "two.key");
    assert!(
        e.contains(&format!(
            "the private key {} does not match the certificate {}",
            path("two.key"),
            path("one.pem")
        )),
        "{e}"
    );
    // TLS belongs to a socket's proxy, not to the socket.
    let out = env.oneshot(&[
        "serve",
        "--listen",
        &format!("unix:{}", path("s.sock")),
        "--tls-cert",
        &path("one.pem"),
        "--tls-key",
        &path("one.key"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("a Unix socket"), "{e}");
    assert!(!dir.join("s.sock").exists());
}

/// One request over the Unix socket at `path`.
fn over(path: &Path, method: &str, target: &str, headers: &[(&str, &str)]) -> Resp {
    let mut conn = UnixStream::connect(path).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    exchange(&mut conn, "localhost", method, target, headers, "")
}

/// `oneshot serve --listen unix:PATH`, its lines checked: where it listens, and the sign-in
/// link — as curl sends it through the socket, or under `name` (`--host NAME`, the proxy's
/// name); the link's path.
fn serve_unix(env: &Env, sock: &Path, name: Option<&str>) -> (Server, String) {
    let extra = match name {
        Some(name) => vec!["--host", name],
        None => vec![],
    };
    let listen = format!("unix:{}", sock.display());
    let (child, lines) = start(env, &[&["--listen", listen.as_str()], &extra[..]].concat());
    let [listening, signin] = lines.as_slice() else {
        panic!("{lines:?}")
    };
    assert!(
        listening.starts_with(&format!("listening on {listen} (store ")),
        "{listening}"
    );
    let want = match name {
        Some(name) => format!("sign in: http://{name}/login/osl_"),
        None => format!(
            "sign in: curl --unix-socket {} http://localhost/login/osl_",
            sock.display()
        ),
    };
    assert!(signin.starts_with(&want), "{signin}");
    let path = format!("/login/{}", signin.split_once("/login/").unwrap().1);
    let s = Server {
        child,
        host: "localhost".into(),
        link: signin.clone(),
    };
    (s, path)
}

#[test]
fn a_unix_socket_is_only_its_users_answers_as_localhost_and_its_names_and_is_one_servers() {
    let env = Env::new();
    let sock = env.dir.path().join("serve.sock");
    let reader = bearer(&token(&env, "rita", "read"));
    let (mut s, login) = serve_unix(&env, &sock, Some("dash.example"));
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "only its user: {mode:o}");

    let auth = [("Authorization", reader.as_str())];
    let board = over(&sock, "GET", "/", &auth);
    assert_eq!(board.status, 200, "{}", board.body);
    assert!(
        board.body.contains("signed in as <b>rita</b>"),
        "{}",
        board.body
    );
    let as_named = over(&sock, "GET", "/", &[auth[0], ("Host", "dash.example")]);
    assert_eq!(as_named.status, 200, "a --host name: {}", as_named.body);
    for foreign in ["evil.example", "127.0.0.1:8719", "localhost:8719"] {
        let r = over(&sock, "GET", "/", &[auth[0], ("Host", foreign)]);
        assert_eq!(r.status, 421, "{foreign}: {}", r.body);
    }
    assert_eq!(
        over(&sock, "GET", "/", &[]).status,
        401,
        "auth on even here"
    );
    // The sign-in link through the socket; plain HTTP, so no Secure.
    let r = over(&sock, "GET", &login, &[]);
    assert_eq!(r.status, 303, "{}", r.body);
    assert!(!r.header("set-cookie").unwrap().contains("Secure"));

    // A second server on the live socket is refused, and the first answers on.
    let listen = format!("unix:{}", sock.display());
    let out = env.oneshot(&["serve", "--listen", &listen]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("another server (another oneshot serve?) answers on it"),
        "{e}"
    );
    assert_eq!(over(&sock, "GET", "/", &auth).status, 200);

    // Killed, it leaves a stale socket behind: the next server replaces it.
    s.child.kill().unwrap();
    s.child.wait().unwrap();
    assert!(sock.exists(), "a killed server cannot remove its socket");
    assert!(UnixStream::connect(&sock).is_err(), "nobody answers");
    let (mut s, login) = serve_unix(&env, &sock, None);
    assert_eq!(over(&sock, "GET", "/", &auth).status, 200);
    assert_eq!(over(&sock, "GET", &login, &[]).status, 303, "curl's link");
    let r = over(&sock, "GET", "/", &[auth[0], ("Host", "dash.example")]);
    assert_eq!(r.status, 421, "its names are this server's: {}", r.body);

    // Ctrl-C: it stops, and the socket goes with it.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(s.child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    assert!(s.child.wait().unwrap().success());
    assert!(!sock.exists(), "removed at a clean exit");

    // Anything but a socket at the path is left alone.
    std::fs::write(&sock, "mine").unwrap();
    let out = env.oneshot(&["serve", "--listen", &listen]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("it exists and is not a socket"), "{e}");
    assert_eq!(std::fs::read_to_string(&sock).unwrap(), "mine");
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

/// Reads a server-sent-event stream until an event named `name` whose data holds `needle`.
fn await_event(conn: TcpStream, name: &str, needle: &str) -> String {
    use std::io::BufRead;
    let mut r = std::io::BufReader::new(conn);
    let (mut event, mut l) = (String::new(), String::new());
    loop {
        l.clear();
        assert!(
            r.read_line(&mut l).unwrap() > 0,
            "the stream ended before {name} {needle}"
        );
        if let Some(v) = l.trim_end().strip_prefix("event: ") {
            event = v.to_string();
        } else if let Some(v) = l.trim_end().strip_prefix("data: ")
            && event == name
            && v.contains(needle)
        {
            return v.to_string();
        }
    }
}

/// An open stream at `path` of the server at `host`.
fn stream(host: &str, path: &str, auth: &str) -> TcpStream {
    let mut conn = TcpStream::connect(host).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        conn,
        "GET {path} HTTP/1.0\r\nHost: {host}\r\nAuthorization: {auth}\r\n\r\n"
    )
    .unwrap();
    conn
}

#[test]
fn two_servers_on_one_postgresql_store_agree_on_sign_ins_verbs_and_live_streams() {
    let Some(url) = pg_server::fresh_database() else {
        return;
    };
    let env = Env::new();
    env.ok(&["store", "migrate", "--store", &url]);
    let store = ["--store", url.as_str()];
    let approver = env
        .ok(&[
            "token", "create", "--name", "ana", "--scope", "approve", "--store", &url,
        ])
        .trim()
        .to_string();
    let id = env.create(GOOD_WORKER, DONE, &["--activate", "--store", &url]);
    env.ok(&["job", "run", "--store", &url]);
    let a = serve(&env, &store);
    let b = serve(&env, &store);
    let auth = bearer(&approver);

    // A sign-in link printed by one server signs a browser in at the other; its cookie is
    // good at both (the session lives in the store), and the link is used up at both.
    let code = a.link.rsplit('/').next().unwrap().to_string();
    let r = http(&b, "GET", &format!("/login/{code}"), &[], "");
    assert_eq!(r.status, 303, "{}", r.body);
    let cookie = r.header("set-cookie").unwrap();
    let cookie = cookie.split(';').next().unwrap().to_string();
    for s in [&a, &b] {
        assert_eq!(http(s, "GET", "/", &[("Cookie", &cookie)], "").status, 200);
    }
    assert_eq!(
        http(&a, "GET", &format!("/login/{code}"), &[], "").status,
        403
    );

    // Both servers' streams are open; the approval goes through the first; the second's
    // job stream and the first's board stream both carry it.
    let job_on_b = stream(&b.host, &format!("/jobs/{id}/events"), &auth);
    let board_on_a = stream(&a.host, "/events", &auth);
    let page = http(
        &a,
        "GET",
        &format!("/jobs/{id}"),
        &[("Authorization", &auth)],
        "",
    );
    let body = form(&[
        ("attempt", field(&page.body, "attempt").as_str()),
        ("diff_hash", field(&page.body, "diff_hash").as_str()),
        ("state", field(&page.body, "state").as_str()),
    ]);
    std::thread::sleep(Duration::from_millis(300));
    let origin = format!("http://{}", a.host);
    let r = http(
        &a,
        "POST",
        &format!("/jobs/{id}/approve"),
        &[("Authorization", &auth), ("Origin", &origin)],
        &body,
    );
    assert_eq!(r.status, 303, "{}", r.body);
    let seen = await_event(job_on_b, "job", "SUCCESS");
    assert!(seen.contains("\"state\":\"SUCCESS\""), "{seen}");
    await_event(board_on_a, "board", &id);
    // The same page's form, sent to the other server: the job moved on (409), not approved twice.
    let origin = format!("http://{}", b.host);
    let r = http(
        &b,
        "POST",
        &format!("/jobs/{id}/approve"),
        &[("Authorization", &auth), ("Origin", &origin)],
        &body,
    );
    assert_eq!(r.status, 409, "{}", r.body);
    let approvals = env
        .ok(&["job", "audit", &id, "--json", "--store", &url])
        .lines()
        .filter(|l| l.contains("\"approve\""))
        .count();
    assert_eq!(approvals, 1, "approved once");
}
