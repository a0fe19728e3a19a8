//! `oneshot serve`'s transports through the real binary: TLS in the binary (a certificate the
//! test makes with rcgen, a rustls client trusting only it) and a Unix socket — who may reach
//! each, under which names, and what is refused.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use crate::job_env;
use crate::serve_http;
use crate::serve_process;
use job_env::Env;
use serve_http::*;
use serve_process::{Server, serve};

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
