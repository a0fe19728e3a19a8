//! The egress proxy: one listener per agent (every connection accepted on it comes from that
//! agent), serving HTTP `CONNECT` and plain HTTP to the hosts the agent's judge allows, and the
//! agent's model API with the real key added on the way out (the agent holds a placeholder).
//!
//! ```text
//! agent ──CONNECT host:443──▶ judge ─▶ resolve ─▶ forbidden address? ─▶ tunnel
//! agent ──GET http://h/p────▶ judge ─▶ resolve ─▶ forbidden address? ─▶ forward (origin-form)
//! agent ──POST /v1/messages─▶ real key in, placeholder out ─▶ model API (TLS) ─▶ streamed back,
//!                                                              usage read on the side
//! ```

mod model;
mod net;
mod usage;

#[cfg(test)]
mod tests;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::{mpsc, watch};

use super::egress::EgressJudge;
use crate::process::Role;

/// How long a judge may take before its silence is a refusal.
pub const DEFAULT_JUDGE_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything the proxy knows about the one agent a listener serves.
pub struct AgentLink {
    /// The agent's name, as records and the judge see it.
    pub agent: String,
    /// The side of the loop it plays.
    pub role: Role,
    /// Who decides which connections it may open.
    pub judge: Arc<dyn EgressJudge>,
    /// Its model API, when oneshot holds the key for it.
    pub model: Option<ModelRoute>,
    /// Where refusals, connections, token usage and model errors are told.
    pub events: mpsc::UnboundedSender<ProxyEvent>,
    /// How long the judge may take ([`DEFAULT_JUDGE_TIMEOUT`] in production).
    pub judge_timeout: Duration,
}

/// The model API an agent's requests to the proxy itself go to.
#[derive(Clone)]
pub struct ModelRoute {
    /// Whose API: how the key is added and how usage is read.
    pub provider: Provider,
    /// The base URL, `https://api.anthropic.com` or `http://127.0.0.1:PORT/prefix`.
    pub upstream: String,
    /// The real key. Never logged, never echoed.
    pub key: String,
}

impl std::fmt::Debug for ModelRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelRoute")
            .field("provider", &self.provider)
            .field("upstream", &self.upstream)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// A model API oneshot knows how to hold the key for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// Anthropic's Messages API (Claude Code): the key in `x-api-key`.
    Anthropic,
    /// OpenAI's Responses and Chat Completions APIs (Codex): `Authorization: Bearer`.
    OpenAi,
    /// Google's Gemini API (Gemini CLI): the key in `x-goog-api-key`.
    Gemini,
}

impl Provider {
    /// `"anthropic"`, `"openai"` or `"gemini"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
            Provider::Gemini => "gemini",
        }
    }
}

/// What the proxy tells its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyEvent {
    /// A connection was refused (by the judge, or because the host resolves to a forbidden
    /// address the rule does not name).
    Refused {
        /// The host as the agent named it.
        host: String,
        /// The port.
        port: u16,
        /// The agent.
        agent: String,
        /// Its role.
        role: Role,
        /// The rule that refused it, in words.
        rule: String,
        /// The resolved address that was refused, when the refusal was for an address.
        address: Option<IpAddr>,
    },
    /// A connection was opened.
    Connected {
        /// The host as the agent named it.
        host: String,
        /// The port.
        port: u16,
        /// The agent.
        agent: String,
        /// Its role.
        role: Role,
        /// The rule that allowed it.
        rule: String,
    },
    /// One model response's token usage, from the API's own `usage`. Counts are the API's:
    /// Anthropic's `input_tokens` exclude cache reads, OpenAI's and Gemini's include them.
    Usage {
        /// Whose API.
        provider: Provider,
        /// The model the response names, when it names one.
        model: Option<String>,
        /// Input (prompt) tokens.
        input_tokens: u64,
        /// Output tokens (Gemini: candidates and thoughts).
        output_tokens: u64,
        /// Input tokens read from the cache.
        cache_read_tokens: u64,
        /// Input tokens written to the cache (Anthropic).
        cache_write_tokens: u64,
    },
    /// The model API answered an error, or could not be reached (status 502).
    ModelError {
        /// Whose API.
        provider: Provider,
        /// The HTTP status.
        status: u16,
        /// The start of the error's body, or why it could not be reached.
        message: String,
    },
}

/// Why the proxy cannot serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The listener cannot be used.
    #[error("the proxy's listener: {0}")]
    Listener(#[source] std::io::Error),
    /// The model route's base URL cannot be read.
    #[error("the model API's base URL {url:?}: {why}")]
    Upstream {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
}

/// The proxy serving one listener; dropping it closes the listener and every connection.
pub struct ServeHandle {
    addr: SocketAddr,
    // Dropped with the handle: every connection's task sees its receiver close and ends.
    _stop: watch::Sender<()>,
    accept: tokio::task::JoinHandle<()>,
}

impl ServeHandle {
    /// The listener's address (`127.0.0.1:PORT`).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ServeHandle {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Serves `listener` (already listening) until the handle is dropped. Must be called within a
/// tokio runtime.
pub fn serve(listener: std::net::TcpListener, link: AgentLink) -> Result<ServeHandle, ProxyError> {
    listener
        .set_nonblocking(true)
        .map_err(ProxyError::Listener)?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(ProxyError::Listener)?;
    serve_tokio(listener, link)
}

/// [`serve`] for a tokio listener.
pub fn serve_tokio(
    listener: tokio::net::TcpListener,
    link: AgentLink,
) -> Result<ServeHandle, ProxyError> {
    let addr = listener.local_addr().map_err(ProxyError::Listener)?;
    let model = link.model.clone().map(model::Upstream::new).transpose()?;
    let (stop, stopped) = watch::channel(());
    let ctx = Arc::new(Ctx {
        link,
        addr,
        model,
        stopped,
    });
    let accept = tokio::spawn(accept_loop(listener, ctx));
    Ok(ServeHandle {
        addr,
        _stop: stop,
        accept,
    })
}

/// What every connection of one listener shares.
struct Ctx {
    link: AgentLink,
    addr: SocketAddr,
    model: Option<model::Upstream>,
    stopped: watch::Receiver<()>,
}

impl Ctx {
    /// Runs `work` until it ends or the listener's handle is dropped.
    fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        let mut stopped = self.stopped.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = work => {}
                _ = stopped.changed() => {}
            }
        });
    }

    fn tell(&self, event: ProxyEvent) {
        // The owner gone means nobody records; the agent's traffic is still judged.
        let _ = self.link.events.send(event);
    }
}

async fn accept_loop(listener: tokio::net::TcpListener, ctx: Arc<Ctx>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors and the like: wait a moment rather than spin.
                tracing::warn!("egress proxy for {}: accept failed: {e}", ctx.link.agent);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Streamed chunks are small and latency is the point.
        let _ = stream.set_nodelay(true);
        let conn_ctx = Arc::clone(&ctx);
        ctx.spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let ctx = Arc::clone(&conn_ctx);
                async move { Ok::<_, Infallible>(route(req, ctx).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            if let Err(e) = conn.await {
                tracing::debug!("egress proxy connection: {e}");
            }
        });
    }
}

/// The body every answer has: streamed from upstream, or a few words of the proxy's own.
pub(crate) type ProxyBody = BoxBody<Bytes, BoxError>;
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn route(req: Request<Incoming>, ctx: Arc<Ctx>) -> Response<ProxyBody> {
    if req.method() == Method::CONNECT {
        return net::tunnel(req, ctx).await;
    }
    if req.uri().authority().is_some() && !is_self(&req, ctx.addr) {
        return net::forward(req, ctx).await;
    }
    model::forward(req, ctx).await
}

/// An absolute-form request to the listener's own address is for the model API too (a client
/// that sends everything to its proxy, even the proxy itself).
fn is_self(req: &Request<Incoming>, addr: SocketAddr) -> bool {
    let Some(auth) = req.uri().authority() else {
        return true;
    };
    let host = auth.host().trim_start_matches('[').trim_end_matches(']');
    let port = auth.port_u16().unwrap_or(80);
    let same_host = match host.parse::<IpAddr>() {
        Ok(ip) => ip == addr.ip(),
        Err(_) => host.eq_ignore_ascii_case("localhost") && addr.ip().is_loopback(),
    };
    same_host && port == addr.port()
}

/// An answer of the proxy's own: plain text.
pub(crate) fn text(status: StatusCode, body: String) -> Response<ProxyBody> {
    let mut res = Response::new(
        http_body_util::Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *res.status_mut() = status;
    res.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}

/// Headers that describe one hop, not the message: never forwarded.
pub(crate) const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
];

/// Removes the hop-by-hop headers, and those the `Connection` header names.
pub(crate) fn strip_hop_by_hop(headers: &mut hyper::HeaderMap) {
    let named: Vec<String> = headers
        .get_all(hyper::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    for name in HOP_BY_HOP
        .iter()
        .copied()
        .chain(named.iter().map(String::as_str))
    {
        headers.remove(name);
    }
}
