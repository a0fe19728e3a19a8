//! Servers and clients on 127.0.0.1 for the proxy's tests.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::super::*;
use crate::sandbox::egress::{NetworkRules, StaticJudge};

pub(super) const PLACEHOLDER: &str = "placeholder-key";
pub(super) const REAL_KEY: &str = "sk-real-secret-123";

/// Anthropic's stream as the fake upstream sends it, chunk by chunk.
pub(super) const ANTHROPIC_SSE: &[&str] = &[
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-test\",\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":7,\"cache_read_input_tokens\":100,\"output_tokens\":1}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
];

/// A listening socket on 127.0.0.1.
pub(super) fn loopback() -> std::net::TcpListener {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap()
}

pub(super) fn link(
    judge: Arc<dyn EgressJudge>,
    model: Option<ModelRoute>,
    events: mpsc::UnboundedSender<ProxyEvent>,
) -> AgentLink {
    AgentLink {
        agent: "claude".into(),
        role: Role::Worker,
        judge,
        model,
        events,
        judge_timeout: DEFAULT_JUDGE_TIMEOUT,
    }
}

/// A proxy for one agent judged by `rules` alone.
pub(super) fn start(
    rules: NetworkRules,
    model: Option<ModelRoute>,
) -> (ServeHandle, mpsc::UnboundedReceiver<ProxyEvent>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let handle = serve(loopback(), link(Arc::new(StaticJudge(rules)), model, tx)).unwrap();
    (handle, rx)
}

pub(super) fn model_route(provider: Provider, upstream: &Server) -> ModelRoute {
    ModelRoute {
        provider,
        upstream: format!("http://127.0.0.1:{}/prefix/", upstream.port()),
        key: REAL_KEY.into(),
    }
}

pub(super) async fn next(events: &mut mpsc::UnboundedReceiver<ProxyEvent>) -> ProxyEvent {
    tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .expect("an event within 5 s")
        .expect("the proxy keeps its sender")
}

/// A server of the test's, stopped when dropped.
pub(super) struct Server {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    pub(super) fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Says `hello\n`, then echoes.
pub(super) async fn echo_server() -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                s.write_all(b"hello\n").await.unwrap();
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    Server { addr, task }
}

/// An HTTP/1 server answering every request with `handler`.
pub(super) async fn http_server(
    handler: impl Fn(Request<Incoming>) -> Response<ChanBody> + Send + Sync + 'static,
) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handler = Arc::new(handler);
    let task = tokio::spawn(async move {
        loop {
            let (s, _) = listener.accept().await.unwrap();
            let handler = Arc::clone(&handler);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let res = handler(req);
                    async move { Ok::<_, Infallible>(res) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(s), service)
                    .await;
            });
        }
    });
    Server { addr, task }
}

/// What an upstream received.
pub(super) struct Seen {
    pub(super) uri: String,
    headers: Vec<(String, String)>,
    /// The request line and every header, as one text.
    pub(super) all: String,
}

impl Seen {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub(super) fn seen_of(req: &Request<Incoming>) -> Seen {
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let all = std::iter::once(req.uri().to_string())
        .chain(headers.iter().map(|(n, v)| format!("{n}: {v}")))
        .collect::<Vec<_>>()
        .join("\n");
    Seen {
        uri: req.uri().to_string(),
        headers,
        all,
    }
}

/// A body fed through a channel: chunks arrive when the test sends them.
pub(super) struct ChanBody(mpsc::Receiver<Bytes>);

impl Body for ChanBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b))))
    }
}

pub(super) fn channel_body() -> (mpsc::Sender<Bytes>, ChanBody) {
    let (tx, rx) = mpsc::channel(16);
    (tx, ChanBody(rx))
}

/// A body of these chunks, all ready.
pub(super) fn body_of(chunks: &[&str]) -> ChanBody {
    let (tx, rx) = mpsc::channel(chunks.len().max(1));
    for c in chunks {
        tx.try_send(Bytes::from(c.to_string())).unwrap();
    }
    ChanBody(rx)
}

pub(super) fn response(content_type: &str, body: ChanBody) -> Response<ChanBody> {
    Response::builder()
        .header("content-type", content_type)
        .body(body)
        .unwrap()
}

/// Sends `CONNECT target` and reads the answer's head: its status and the stream after it.
pub(super) async fn connect(proxy: SocketAddr, target: &str) -> (u16, TcpStream) {
    let (status, _, stream) = connect_head(proxy, target).await;
    (status, stream)
}

/// A refused `CONNECT`: its status and body.
pub(super) async fn refused(proxy: SocketAddr, target: &str) -> (u16, String) {
    let (status, head, mut stream) = connect_head(proxy, target).await;
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .expect("a content-length");
    let mut body = vec![0; len];
    stream.read_exact(&mut body).await.unwrap();
    (status, String::from_utf8(body).unwrap())
}

async fn connect_head(proxy: SocketAddr, target: &str) -> (u16, String, TcpStream) {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut b))
            .await
            .expect("an answer to CONNECT")
            .unwrap();
        assert_eq!(n, 1, "the proxy closed before its answer: {head:?}");
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head, s)
}

/// Sends one request to the proxy; the response, its body still to read.
pub(super) async fn request(
    proxy: SocketAddr,
    mut req: Request<http_body_util::Full<Bytes>>,
) -> Response<Incoming> {
    let s = TcpStream::connect(proxy).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(s))
        .await
        .unwrap();
    tokio::spawn(conn);
    if !req.headers().contains_key("host") {
        let host = req
            .uri()
            .authority()
            .map_or(proxy.to_string(), |a| a.to_string());
        req.headers_mut().insert("host", host.parse().unwrap());
    }
    tokio::time::timeout(Duration::from_secs(10), sender.send_request(req))
        .await
        .expect("an answer within 10 s")
        .unwrap()
}

/// Sends one request to the proxy: the status and the whole body.
pub(super) async fn send(
    proxy: SocketAddr,
    req: Request<http_body_util::Full<Bytes>>,
) -> (u16, String) {
    let res = request(proxy, req).await;
    let status = res.status().as_u16();
    let body = tokio::time::timeout(Duration::from_secs(10), res.into_body().collect())
        .await
        .expect("the whole body within 10 s")
        .unwrap()
        .to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// The next data chunk of a response (`None` at its end).
pub(super) async fn frame(res: &mut Response<Incoming>) -> Option<Bytes> {
    loop {
        let frame = res.body_mut().frame().await?.unwrap();
        if let Ok(data) = frame.into_data() {
            return Some(data);
        }
    }
}
