//! The boundary every request crosses before any route sees it, in this order:
//!
//! 1. **Host**: the `Host` header must be one the server answers as (its address, the
//!    loopback names with its port, the `--host` names; on a Unix socket `localhost` and the
//!    `--host` names) — else 421. A page on another site
//!    whose name was rebound to 127.0.0.1 (DNS rebinding) sends its own name, and is refused.
//! 2. **Origin**: a request with an unsafe method (POST, …) must say it comes from this
//!    server's own origin: an `Origin` header equal to `http(s)://HOST`, or, without one,
//!    `Sec-Fetch-Site: same-origin` — else 403. A form on another site cannot act here even
//!    though the browser would send the cookie with it (it would not: `SameSite=Strict`;
//!    this is the second lock).
//! 3. **Who**: every route but a sign-in link (`/login/CODE`) and the static assets needs a
//!    token (`Authorization: Bearer osk_…`) or a browser session's cookie — else 401.
//! 4. **Scope**: what the route does ([`needed`]) must be allowed by the token's scopes —
//!    else 403, before the route runs: nothing is written, nothing audited.

use super::App;
use crate::token::{self, Grant, Scope};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The browser session's cookie.
pub(crate) const COOKIE: &str = "oneshot_session";

/// Who a request is, once the boundary let it in: the grant, and the browser session's
/// secret when it came with one (what `/logout` ends).
#[derive(Debug, Clone)]
pub(crate) struct Signed {
    /// The token's name and scopes.
    pub grant: Grant,
    /// The session cookie's value, when signed in by cookie.
    pub cookie: Option<String>,
    /// The bearer token, when signed in by one (a live stream checks it again as it runs).
    pub bearer: Option<String>,
}

/// Whether the client asked for JSON (`Accept: application/json`).
pub(crate) fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json"))
}

/// A refusal: JSON `{"error": …}` for an API client, a small page for a browser.
pub(crate) fn refuse(status: StatusCode, json: bool, message: &str) -> Response {
    if json {
        let body = serde_json::json!({ "error": message, "status": status.as_u16() });
        return (status, axum::Json(body)).into_response();
    }
    let title = status.canonical_reason().unwrap_or("Refused");
    let body = format!(
        "<h1>{}</h1><p>{}</p><p><a href=\"/\">the board</a></p>",
        super::views::esc(title),
        super::views::esc(message)
    );
    (
        status,
        axum::response::Html(super::views::page(title, &body)),
    )
        .into_response()
}

/// The scope a request needs: reading needs `read`; approve and reject (and land) need
/// `approve`; the other verbs (a session's stop among them) `operate`; anything else unsafe,
/// `admin`.
pub(crate) fn needed(method: &Method, path: &str) -> Scope {
    if matches!(*method, Method::GET | Method::HEAD) || path == "/logout" {
        return Scope::Read;
    }
    // A session's verbs: `POST /sessions/{id}/stop` and `…/say`.
    if path
        .strip_prefix("/sessions/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(_, verb)| verb == "stop" || verb == "say")
    {
        return Scope::Operate;
    }
    let verb = path
        .strip_prefix("/jobs/")
        .and_then(|rest| rest.split_once('/'))
        .map(|(_, verb)| verb);
    match verb {
        Some("approve" | "reject" | "land") => Scope::Approve,
        Some("suspend" | "resume" | "cancel" | "resubmit" | "stop" | "say") => Scope::Operate,
        _ => Scope::Admin,
    }
}

/// Routes anyone may reach (the sign-in link is its own credential).
fn public(path: &str) -> bool {
    path.starts_with("/login/") || path.starts_with("/assets/")
}

/// Whether an unsafe request comes from the server's own origin (`host` already checked).
fn same_origin(headers: &HeaderMap, host: &str) -> bool {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("").to_ascii_lowercase();
        return origin == format!("http://{host}") || origin == format!("https://{host}");
    }
    headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes() == b"same-origin")
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub(crate) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// The bearer token of an `Authorization` header, if it has one.
fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim().to_string())
}

/// The boundary (see the module's documentation).
pub(crate) async fn boundary(State(app): State<App>, mut req: Request, next: Next) -> Response {
    let json = wants_json(req.headers());
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    if !app.hosts.contains(&host) {
        let message = format!(
            "this server does not answer as {host:?} (it answers as {}); a page reaching it \
             under another name is refused (DNS rebinding). Open it by one of those names, or \
             start it with --host NAME",
            app.hosts.join(", ")
        );
        return harden(refuse(StatusCode::MISDIRECTED_REQUEST, json, &message));
    }
    let unsafe_method = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if unsafe_method && !same_origin(req.headers(), &host) {
        // What browsers say: https when the server (or its proxy) speaks TLS.
        let scheme = if app.secure { "https" } else { "http" };
        let message = format!(
            "a {} must come from this server's own pages: its Origin must be \
             {scheme}://{host} (or Sec-Fetch-Site: same-origin); a request from another site \
             is refused. An API client sends `Origin: {scheme}://{host}` with its token",
            req.method()
        );
        return harden(refuse(StatusCode::FORBIDDEN, json, &message));
    }
    let path = req.uri().path().to_string();
    if public(&path) {
        return harden(next.run(req).await);
    }
    let bearer = bearer(req.headers());
    let cookie = cookie(req.headers(), COOKIE);
    let store = app.store.clone();
    let (by_bearer, by_cookie) = (bearer.clone(), cookie.clone());
    let found = tokio::task::spawn_blocking(move || match (by_bearer, by_cookie) {
        (Some(b), _) => token::check(&*store, &b),
        (None, Some(c)) => token::session(&*store, &c),
        (None, None) => Ok(None),
    })
    .await;
    let grant = match found {
        Ok(Ok(Some(grant))) => grant,
        Ok(Ok(None)) => {
            let message = if bearer.is_some() {
                "the bearer token is unknown or revoked; `oneshot token list` shows the tokens"
            } else if cookie.is_some() {
                "your sign-in has ended (signed out, expired, or its token was revoked); run \
                 `oneshot token login NAME` and open the link it prints"
            } else {
                "not signed in: run `oneshot token login NAME` and open the link it prints, or \
                 send `Authorization: Bearer TOKEN`"
            };
            return harden(refuse(StatusCode::UNAUTHORIZED, json, message));
        }
        Ok(Err(e)) => {
            let message = format!("the job store could not say who you are: {e}");
            return harden(refuse(StatusCode::SERVICE_UNAVAILABLE, json, &message));
        }
        Err(e) => {
            let message = format!("checking the token failed: {e}");
            return harden(refuse(StatusCode::INTERNAL_SERVER_ERROR, json, &message));
        }
    };
    let need = needed(req.method(), &path);
    if !grant.allows(need) {
        let scopes: Vec<&str> = grant.scopes.iter().map(|s| s.as_str()).collect();
        let message = format!(
            "token {} may {}; this needs the {need} scope; nothing was done",
            grant.name,
            if scopes.is_empty() {
                "do nothing".to_string()
            } else {
                scopes.join(", ")
            }
        );
        return harden(refuse(StatusCode::FORBIDDEN, json, &message));
    }
    req.extensions_mut().insert(Signed {
        grant,
        cookie: if bearer.is_some() { None } else { cookie },
        bearer,
    });
    harden(next.run(req).await)
}

/// Headers every response carries: never framed (clickjacking), never cached (a page shows
/// what a token may see), no referrer to another site (a sign-in link's code is in its URL),
/// no sniffing. The referrer policy is `same-origin`, not `no-referrer`: under `no-referrer` a
/// browser sends `Origin: null` with a form's POST, and the server's own forms would be
/// refused as coming from nowhere (tests/browser/pages.rs found it).
fn harden(mut response: Response) -> Response {
    let h = response.headers_mut();
    for (name, value) in [
        (header::X_FRAME_OPTIONS, "DENY"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; frame-ancestors 'none'; form-action 'self'",
        ),
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_needs_its_scope() {
        let get = Method::GET;
        let post = Method::POST;
        assert_eq!(needed(&get, "/"), Scope::Read);
        assert_eq!(needed(&get, "/jobs/job-1"), Scope::Read);
        assert_eq!(needed(&post, "/jobs/job-1/approve"), Scope::Approve);
        assert_eq!(needed(&post, "/jobs/job-1/reject"), Scope::Approve);
        for verb in ["suspend", "resume", "cancel", "resubmit"] {
            assert_eq!(needed(&post, &format!("/jobs/j/{verb}")), Scope::Operate);
        }
        assert_eq!(needed(&post, "/logout"), Scope::Read);
        assert_eq!(needed(&post, "/sessions/s-1/stop"), Scope::Operate);
        assert_eq!(needed(&post, "/sessions/s-1/say"), Scope::Operate);
        assert_eq!(needed(&post, "/jobs/job-1/say"), Scope::Operate);
        assert_eq!(needed(&post, "/sessions/s-1/approve"), Scope::Admin);
        assert_eq!(needed(&post, "/jobs/j/unknown"), Scope::Admin);
        assert_eq!(needed(&Method::DELETE, "/"), Scope::Admin);
    }

    #[test]
    fn the_origin_must_be_the_servers_own() {
        let mut h = HeaderMap::new();
        assert!(!same_origin(&h, "127.0.0.1:1"), "neither header");
        h.insert("sec-fetch-site", HeaderValue::from_static("same-origin"));
        assert!(same_origin(&h, "127.0.0.1:1"));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(!same_origin(&h, "127.0.0.1:1"), "a foreign Origin wins");
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:1"),
        );
        assert!(same_origin(&h, "127.0.0.1:1"));
        // Served with TLS (or through a TLS proxy), the browser says https.
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("https://127.0.0.1:1"),
        );
        assert!(same_origin(&h, "127.0.0.1:1"));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("https://127.0.0.1:2"),
        );
        assert!(
            !same_origin(&h, "127.0.0.1:1"),
            "another port is another origin"
        );
        h.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(!same_origin(&h, "127.0.0.1:1"));
    }
}
