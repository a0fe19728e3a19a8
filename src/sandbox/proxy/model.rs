//! The agent's model API: its requests to the proxy itself go to the real API with the real key
//! (the placeholder it holds dropped), and the answer streams back chunk by chunk while a task
//! beside it reads the token usage.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{ACCEPT_ENCODING, AUTHORIZATION, CONTENT_TYPE, HOST, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::mpsc;

use super::usage::UsageReader;
use super::{Ctx, ModelRoute, Provider, ProxyBody, ProxyError, ProxyEvent, strip_hop_by_hop, text};

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// A model route, read: where requests go and the pooled client that takes them there.
pub(super) struct Upstream {
    route: ModelRoute,
    /// `scheme://authority`.
    origin: String,
    /// The base URL's path without its trailing `/` (`""` for none).
    prefix: String,
    key: HeaderValue,
    client: Client<Https, ProxyBody>,
}

impl Upstream {
    pub(super) fn new(route: ModelRoute) -> Result<Upstream, ProxyError> {
        let bad = |why: &str| ProxyError::Upstream {
            url: route.upstream.clone(),
            why: why.to_string(),
        };
        let uri: Uri = route.upstream.parse().map_err(|_| bad("not a URL"))?;
        let scheme = match uri.scheme_str() {
            Some(s @ ("http" | "https")) => s,
            _ => return Err(bad("must start with http:// or https://")),
        };
        let authority = uri.authority().ok_or_else(|| bad("names no host"))?;
        if uri.query().is_some() {
            return Err(bad("a base URL takes no query"));
        }
        let value = match route.provider {
            Provider::OpenAi => format!("Bearer {}", route.key),
            Provider::Anthropic | Provider::Gemini => route.key.clone(),
        };
        let mut key = HeaderValue::from_str(&value)
            .map_err(|_| bad("the key holds characters a header cannot carry"))?;
        // Kept out of hyper's debug output and compressed header tables.
        key.set_sensitive(true);
        Ok(Upstream {
            origin: format!("{scheme}://{authority}"),
            prefix: uri.path().trim_end_matches('/').to_string(),
            key,
            client: client(),
            route,
        })
    }
}

/// A pooled client (per agent: its pool's connection tasks live on the runtime that serves it).
fn client() -> Client<Https, ProxyBody> {
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config())
        .https_or_http()
        .enable_http1()
        .build();
    Client::builder(TokioExecutor::new()).build(https)
}

/// rustls with ring, trusting Mozilla's roots; built once.
fn tls_config() -> rustls::ClientConfig {
    static CONFIG: OnceLock<rustls::ClientConfig> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                // ring's provider supports the default versions: this cannot fail.
                .unwrap_or_else(|e| panic!("rustls with ring: {e}"))
                .with_root_certificates(roots)
                .with_no_client_auth()
        })
        .clone()
}

/// Headers that carry a key: the placeholder the agent sends is never forwarded.
const KEY_HEADERS: &[&str] = &["x-api-key", "authorization", "x-goog-api-key", "api-key"];

pub(super) async fn forward(req: Request<Incoming>, ctx: Arc<Ctx>) -> Response<ProxyBody> {
    let Some(up) = ctx.model.as_ref() else {
        return text(
            StatusCode::FORBIDDEN,
            format!(
                "oneshot's proxy: no model API is configured for this agent ({}); {} is not \
                 forwarded\n",
                ctx.link.agent,
                req.uri()
            ),
        );
    };
    let provider = up.route.provider;
    let path = req.uri().path();
    let query = req.uri().query().map(drop_key_param).unwrap_or_default();
    let target = format!("{}{}{}{}", up.origin, up.prefix, path, query);
    let Ok(target) = target.parse::<Uri>() else {
        return text(
            StatusCode::BAD_REQUEST,
            "oneshot's proxy: a bad path\n".to_string(),
        );
    };
    let (mut parts, body) = req.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    for name in KEY_HEADERS.iter().copied().chain(["host"]) {
        parts.headers.remove(name);
    }
    // Usage is read from the body as it passes: it must not be compressed.
    parts
        .headers
        .insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
    let key_header = match provider {
        Provider::Anthropic => HeaderName::from_static("x-api-key"),
        Provider::OpenAi => AUTHORIZATION,
        Provider::Gemini => HeaderName::from_static("x-goog-api-key"),
    };
    parts.headers.insert(key_header, up.key.clone());
    if let Some(auth) = target.authority()
        && let Ok(v) = HeaderValue::from_str(auth.as_str())
    {
        parts.headers.insert(HOST, v);
    }
    parts.uri = target;
    let request = Request::from_parts(parts, body.map_err(Into::into).boxed());
    let res = match up.client.request(request).await {
        Ok(res) => res,
        Err(e) => {
            // The error names the connection, never the request's headers.
            // hyper-util's error says "client error (Connect)"; the cause is in its sources.
            let mut why = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                why = format!("{why}: {cause}");
                source = cause.source();
            }
            let message = format!("cannot reach the model API at {}: {why}", up.origin);
            ctx.tell(ProxyEvent::ModelError {
                provider,
                status: 502,
                message: message.clone(),
            });
            return text(
                StatusCode::BAD_GATEWAY,
                format!("oneshot's proxy: {message}\n"),
            );
        }
    };
    let (mut parts, body) = res.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let sse = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
    let reader = UsageReader::new(provider, sse, parts.status.as_u16());
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(read_usage(
        reader,
        rx,
        ctx.link.events.clone(),
        up.route.key.clone(),
    ));
    let tapped = Tap {
        inner: body,
        tx: Some(tx),
    };
    Response::from_parts(parts, tapped.boxed())
}

/// The query without a `key=` parameter (Gemini's other way to send a key), `?` included.
fn drop_key_param(query: &str) -> String {
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && p.split('=').next() != Some("key"))
        .collect();
    if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    }
}

/// Reads what the tap hands over, then tells the usage (or the error) once the body ends.
async fn read_usage(
    mut reader: UsageReader,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    events: mpsc::UnboundedSender<ProxyEvent>,
    key: String,
) {
    while let Some(chunk) = rx.recv().await {
        reader.feed(&chunk);
    }
    match reader.finish() {
        // An API that echoes the key in its error must not put it in the record.
        Some(ProxyEvent::ModelError {
            provider,
            status,
            message,
        }) if !key.is_empty() => {
            let _ = events.send(ProxyEvent::ModelError {
                provider,
                status,
                message: message.replace(&key, "[REDACTED]"),
            });
        }
        Some(event) => {
            let _ = events.send(event);
        }
        None => {}
    }
}

/// The upstream body, passed on frame by frame; each data chunk also goes (a reference-counted
/// copy, no bytes copied) to the usage reader, which never holds the stream up.
struct Tap {
    inner: Incoming,
    tx: Option<mpsc::UnboundedSender<Bytes>>,
}

impl Body for Tap {
    type Data = Bytes;
    type Error = super::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(tx)) = (frame.data_ref(), &self.tx) {
                    let _ = tx.send(data.clone());
                }
            }
            // The end, or a failure: the reader tells what it has.
            Poll::Ready(_) => self.tx = None,
            Poll::Pending => {}
        }
        polled.map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}
