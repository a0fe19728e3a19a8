//! `CONNECT` tunnels and plain-HTTP forwarding to the hosts the judge allows: judged, resolved,
//! every resolved address checked, and the connection made to a checked address (never a second
//! resolution, which a rebinding name could answer differently).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{CONNECTION, HOST, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::{Ctx, ProxyBody, ProxyEvent, strip_hop_by_hop, text};
use crate::sandbox::egress::{EgressAnswer, EgressRequest, forbidden};

/// How long opening a connection to an allowed host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// `CONNECT host:port`: a tunnel, once the host is allowed and reached.
pub(super) async fn tunnel(mut req: Request<Incoming>, ctx: Arc<Ctx>) -> Response<ProxyBody> {
    let Some((host, port)) = req
        .uri()
        .authority()
        .and_then(|a| Some((unbracket(a.host()), a.port_u16()?)))
    else {
        return text(
            StatusCode::BAD_REQUEST,
            format!(
                "oneshot's proxy: CONNECT needs host:port, got {:?}\n",
                req.uri().to_string()
            ),
        );
    };
    let mut upstream = match reach(&ctx, &host, port).await {
        Ok(stream) => stream,
        Err(res) => return res,
    };
    let upgrade = hyper::upgrade::on(&mut req);
    ctx.spawn(async move {
        match upgrade.await {
            Ok(upgraded) => {
                let mut agent = TokioIo::new(upgraded);
                // Either side closing or failing ends the tunnel; nothing to tell.
                let _ = tokio::io::copy_bidirectional(&mut agent, &mut upstream).await;
            }
            Err(e) => tracing::debug!("egress proxy: CONNECT upgrade failed: {e}"),
        }
    });
    Response::new(
        http_body_util::Empty::new()
            .map_err(|never| match never {})
            .boxed(),
    )
}

/// `GET http://host:port/path`: forwarded in origin-form on a connection of its own.
pub(super) async fn forward(req: Request<Incoming>, ctx: Arc<Ctx>) -> Response<ProxyBody> {
    let uri = req.uri().clone();
    if uri.scheme_str() != Some("http") {
        return text(
            StatusCode::BAD_REQUEST,
            format!(
                "oneshot's proxy forwards plain http:// URLs; for {uri} use CONNECT (set \
                 HTTPS_PROXY)\n"
            ),
        );
    }
    let Some(auth) = uri.authority().cloned() else {
        return text(
            StatusCode::BAD_REQUEST,
            format!("oneshot's proxy: {uri} names no host\n"),
        );
    };
    let (host, port) = (unbracket(auth.host()), auth.port_u16().unwrap_or(80));
    let stream = match reach(&ctx, &host, port).await {
        Ok(stream) => stream,
        Err(res) => return res,
    };
    let (mut sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
    {
        Ok(pair) => pair,
        Err(e) => return bad_gateway(&host, port, &e.to_string()),
    };
    ctx.spawn(async move {
        let _ = conn.await;
    });
    let (mut parts, body) = req.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.remove(HOST);
    if let Ok(v) = HeaderValue::from_str(auth.as_str()) {
        parts.headers.insert(HOST, v);
    }
    // One request per connection: each is judged on its own.
    parts
        .headers
        .insert(CONNECTION, HeaderValue::from_static("close"));
    parts.uri = match uri.path_and_query() {
        Some(pq) => pq
            .as_str()
            .parse()
            .unwrap_or_else(|_| hyper::Uri::from_static("/")),
        None => hyper::Uri::from_static("/"),
    };
    match sender.send_request(Request::from_parts(parts, body)).await {
        Ok(res) => {
            let (mut parts, body) = res.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, body.map_err(Into::into).boxed())
        }
        Err(e) => bad_gateway(&host, port, &e.to_string()),
    }
}

/// Judges, resolves, checks and connects; the answer to send back when any step says no.
#[allow(clippy::result_large_err)] // The refusal is the response itself, built once.
async fn reach(ctx: &Ctx, host: &str, port: u16) -> Result<TcpStream, Response<ProxyBody>> {
    let (rule, private_ok) = match ask(ctx, host, port).await {
        EgressAnswer::Allow { rule, private_ok } => (rule, private_ok),
        EgressAnswer::Deny { rule } => return Err(refuse(ctx, host, port, rule, None)),
    };
    let addrs: Vec<SocketAddr> = match tokio::net::lookup_host((host, port)).await {
        Ok(addrs) => addrs.collect(),
        Err(e) => {
            return Err(bad_gateway(
                host,
                port,
                &format!("cannot resolve {host}: {e}"),
            ));
        }
    };
    if addrs.is_empty() {
        return Err(bad_gateway(
            host,
            port,
            &format!("{host} resolves to no address"),
        ));
    }
    if !private_ok {
        // Any forbidden address refuses the name: the answer could be rotated to it next time.
        if let Some((addr, why)) = addrs
            .iter()
            .find_map(|a| Some((a.ip(), forbidden(a.ip())?)))
        {
            let rule = format!(
                "{host} resolves to {why} ({addr}), allowed only by a rule naming the host \
                 itself (it was allowed by {rule})"
            );
            return Err(refuse(ctx, host, port, rule, Some(addr)));
        }
    }
    let mut last = String::from("no address");
    for addr in &addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                ctx.tell(ProxyEvent::Connected {
                    host: host.to_string(),
                    port,
                    agent: ctx.link.agent.clone(),
                    role: ctx.link.role,
                    rule,
                });
                return Ok(stream);
            }
            Ok(Err(e)) => last = format!("{addr}: {e}"),
            Err(_) => last = format!("{addr}: no answer within {}s", CONNECT_TIMEOUT.as_secs()),
        }
    }
    Err(bad_gateway(host, port, &format!("cannot connect ({last})")))
}

/// The judge's answer, fail-closed: a judge that panics or does not answer in time refuses.
async fn ask(ctx: &Ctx, host: &str, port: u16) -> EgressAnswer {
    let req = EgressRequest {
        host: host.to_string(),
        port,
        agent: ctx.link.agent.clone(),
        role: ctx.link.role,
    };
    let judge = Arc::clone(&ctx.link.judge);
    // Its own task, so that a panic (even while making the future) is caught as a JoinError.
    let mut asked = tokio::spawn(async move { judge.judge(req).await });
    let timeout = ctx.link.judge_timeout;
    match tokio::time::timeout(timeout, &mut asked).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => EgressAnswer::Deny {
            rule: format!(
                "the egress judge failed ({}), so the connection is refused",
                if e.is_panic() {
                    "it panicked"
                } else {
                    "it was cancelled"
                }
            ),
        },
        Err(_) => {
            asked.abort();
            EgressAnswer::Deny {
                rule: format!(
                    "the egress judge did not answer within {}, so the connection is refused",
                    humantime::format_duration(timeout)
                ),
            }
        }
    }
}

/// A refusal: the event, and a 403 that says what refused and the line that would allow it.
fn refuse(
    ctx: &Ctx,
    host: &str,
    port: u16,
    rule: String,
    address: Option<std::net::IpAddr>,
) -> Response<ProxyBody> {
    let body = format!(
        "oneshot refused the connection to {host}:{port} for agent {agent} ({role}): {rule}.\n\
         To allow it, add the host to the policy:\n    network = {{ allow = {{ {host:?} }} }}\n",
        agent = ctx.link.agent,
        role = ctx.link.role.as_str(),
    );
    ctx.tell(ProxyEvent::Refused {
        host: host.to_string(),
        port,
        agent: ctx.link.agent.clone(),
        role: ctx.link.role,
        rule,
        address,
    });
    text(StatusCode::FORBIDDEN, body)
}

fn bad_gateway(host: &str, port: u16, why: &str) -> Response<ProxyBody> {
    text(
        StatusCode::BAD_GATEWAY,
        format!("oneshot's proxy cannot reach {host}:{port}: {why}\n"),
    )
}

/// An IPv6 literal without its brackets.
fn unbracket(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_string()
}
