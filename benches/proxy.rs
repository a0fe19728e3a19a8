//! The egress proxy's cost (issue 34's figures), on 127.0.0.1 only:
//! * `first byte`: a streamed model response's first chunk, from the request sent to the chunk
//!   read, straight from a loopback upstream vs through the proxy's model route (the target:
//!   p99 ≤ 1 ms added);
//! * `per chunk`: 200 SSE chunks 1 ms apart, each stamped by the upstream when sent; its latency
//!   is the client's clock at the read minus the stamp (same process, same clock), direct vs
//!   through the proxy;
//! * `CPU per MB`: the proxy thread's own CPU (`getrusage(RUSAGE_THREAD)` on the thread that runs
//!   the proxy's runtime, which runs all of its tasks) over a large transfer through a `CONNECT`
//!   tunnel and through the model route (usage read on the side included).
//!
//! Upstream, proxy and client each run on a thread of their own (a current-thread runtime
//! each), as oneshot's runtime is apart from the agent and the API.
//!
//! Run: `cargo bench --bench proxy` (`-- quick` for fewer samples). It prints its own figures.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use oneshot::process::Role;
use oneshot::sandbox::egress::{NetworkRules, StaticJudge};
use oneshot::sandbox::proxy::{AgentLink, DEFAULT_JUDGE_TIMEOUT, ModelRoute, Provider, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

const CHUNKS: usize = 200;
const MB: usize = 1 << 20;

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let (first_samples, streams, tunnel_mb, route_mb) = if quick {
        (50, 3, 64, 32)
    } else {
        (300, 10, 512, 256)
    };
    epoch();
    let (http, raw) = start_upstream();
    let proxy = start_proxy(http);
    let rt = runtime();
    rt.block_on(async {
        // Warm: the proxy's pooled connection to the upstream exists before anything is timed.
        first_byte(http).await;
        first_byte(proxy.addr).await;

        let mut direct = Vec::new();
        let mut via = Vec::new();
        for _ in 0..first_samples {
            direct.push(first_byte(http).await);
            via.push(first_byte(proxy.addr).await);
        }
        report("first byte", &mut direct, &mut via);

        let (mut direct, mut via) = (Vec::new(), Vec::new());
        for _ in 0..streams {
            direct.extend(chunk_latencies(http).await);
            via.extend(chunk_latencies(proxy.addr).await);
        }
        report(
            &format!("per chunk ({} chunks)", direct.len()),
            &mut direct,
            &mut via,
        );

        let before = proxy.cpu().await;
        let started = Instant::now();
        let got = tunnel(proxy.addr, raw, tunnel_mb).await;
        let wall = started.elapsed();
        let cpu = proxy.cpu().await - before;
        assert_eq!(got, tunnel_mb * MB);
        cpu_report("CONNECT tunnel", tunnel_mb, cpu, wall);

        let before = proxy.cpu().await;
        let started = Instant::now();
        let got = big_stream(proxy.addr, route_mb).await;
        let wall = started.elapsed();
        let cpu = proxy.cpu().await - before;
        assert!(got >= route_mb * MB);
        cpu_report("model route (SSE)", route_mb, cpu, wall);
    });
}

fn report(what: &str, direct: &mut [Duration], via: &mut [Duration]) {
    let (d50, d99) = percentiles(direct);
    let (v50, v99) = percentiles(via);
    println!(
        "{what:<28} direct p50 {:>7.1} µs p99 {:>7.1} µs | proxy p50 {:>7.1} µs p99 {:>7.1} µs | \
         added p50 {:>6.1} µs p99 {:>6.1} µs",
        us(d50),
        us(d99),
        us(v50),
        us(v99),
        us(v50) - us(d50),
        us(v99) - us(d99),
    );
}

fn cpu_report(what: &str, mb: usize, cpu: Duration, wall: Duration) {
    println!(
        "{what:<28} {mb} MiB in {:.2} s ({:.0} MiB/s): proxy CPU {:.1} µs per MiB",
        wall.as_secs_f64(),
        mb as f64 / wall.as_secs_f64(),
        us(cpu) / mb as f64
    );
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn percentiles(v: &mut [Duration]) -> (Duration, Duration) {
    v.sort();
    let at = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)];
    (at(0.50), at(0.99))
}

/// Time from a request sent (on a fresh connection) to its first body chunk.
async fn first_byte(to: SocketAddr) -> Duration {
    let mut sender = client(to).await;
    let started = Instant::now();
    let mut res = sender
        .send_request(post("/sse?n=1&gap=0"))
        .await
        .expect("answer");
    next_data(&mut res).await.expect("a chunk");
    let took = started.elapsed();
    while next_data(&mut res).await.is_some() {}
    took
}

/// Each chunk's latency: read time minus the upstream's stamp.
async fn chunk_latencies(to: SocketAddr) -> Vec<Duration> {
    let mut sender = client(to).await;
    let path = format!("/sse?n={CHUNKS}&gap=1");
    let mut res = sender.send_request(post(&path)).await.expect("answer");
    let mut out = Vec::new();
    while let Some(data) = next_data(&mut res).await {
        let now = epoch().elapsed().as_nanos() as u64;
        for stamp in std::str::from_utf8(&data)
            .expect("utf-8")
            .split("\"t\":")
            .skip(1)
            .filter_map(|s| s.split('}').next()?.parse::<u64>().ok())
        {
            out.push(Duration::from_nanos(now.saturating_sub(stamp)));
        }
    }
    assert_eq!(out.len(), CHUNKS);
    out
}

async fn tunnel(proxy: SocketAddr, raw: SocketAddr, mb: usize) -> usize {
    let mut s = tokio::net::TcpStream::connect(proxy).await.expect("proxy");
    s.write_all(format!("CONNECT {raw} HTTP/1.1\r\nHost: {raw}\r\n\r\n").as_bytes())
        .await
        .expect("write");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(s.read_u8().await.expect("head"));
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    s.write_all(format!("{mb}\n").as_bytes())
        .await
        .expect("ask");
    let mut buf = vec![0u8; 256 * 1024];
    let mut got = 0;
    loop {
        match s.read(&mut buf).await.expect("read") {
            0 => break got,
            n => got += n,
        }
    }
}

async fn big_stream(proxy: SocketAddr, mb: usize) -> usize {
    let mut sender = client(proxy).await;
    let mut res = sender
        .send_request(post(&format!("/big?mb={mb}")))
        .await
        .expect("answer");
    let mut got = 0;
    while let Some(d) = next_data(&mut res).await {
        got += d.len();
    }
    got
}

async fn client(
    to: SocketAddr,
) -> hyper::client::conn::http1::SendRequest<http_body_util::Full<Bytes>> {
    let s = tokio::net::TcpStream::connect(to).await.expect("connect");
    s.set_nodelay(true).expect("nodelay");
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(s))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    sender
}

fn post(path: &str) -> Request<http_body_util::Full<Bytes>> {
    Request::post(path)
        .header("host", "127.0.0.1")
        .header("x-api-key", "placeholder")
        .body(Bytes::from_static(b"{\"stream\":true}").into())
        .expect("request")
}

async fn next_data(res: &mut Response<Incoming>) -> Option<Bytes> {
    loop {
        if let Ok(d) = res.body_mut().frame().await?.expect("frame").into_data() {
            return Some(d);
        }
    }
}

/// The proxy on a thread (and runtime) of its own; its CPU asked of that thread.
struct Proxy {
    addr: SocketAddr,
    ask: mpsc::UnboundedSender<tokio::sync::oneshot::Sender<Duration>>,
}

impl Proxy {
    async fn cpu(&self) -> Duration {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.ask.send(tx).expect("proxy thread");
        rx.await.expect("cpu")
    }
}

fn start_proxy(upstream: SocketAddr) -> Proxy {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (ask, mut asks) = mpsc::unbounded_channel::<tokio::sync::oneshot::Sender<Duration>>();
    std::thread::spawn(move || {
        runtime().block_on(async move {
            let (events, mut rx) = mpsc::unbounded_channel();
            // Events are drained, as the session would.
            tokio::spawn(async move { while rx.recv().await.is_some() {} });
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let link = AgentLink {
                agent: "bench".into(),
                role: Role::Worker,
                judge: Arc::new(StaticJudge(NetworkRules {
                    allow: vec!["127.0.0.1".into()],
                    deny: vec![],
                })),
                model: Some(ModelRoute {
                    provider: Provider::Anthropic,
                    upstream: format!("http://{upstream}"),
                    key: "sk-bench".into(),
                }),
                events,
                judge_timeout: DEFAULT_JUDGE_TIMEOUT,
            };
            let handle = serve(listener, link).expect("serve");
            addr_tx.send(handle.local_addr()).expect("addr");
            while let Some(reply) = asks.recv().await {
                let _ = reply.send(thread_cpu());
            }
        });
    });
    Proxy {
        addr: addr_rx.recv().expect("proxy address"),
        ask,
    }
}

fn thread_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The fake model API (HTTP) and a raw byte source (`N\n` asks for N MiB), on their own thread.
fn start_upstream() -> (SocketAddr, SocketAddr) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        runtime().block_on(async move {
            let http = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let raw = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            tx.send((
                http.local_addr().expect("addr"),
                raw.local_addr().expect("addr"),
            ))
            .expect("send");
            tokio::spawn(async move {
                loop {
                    let (mut s, _) = raw.accept().await.expect("accept");
                    tokio::spawn(async move {
                        let mut line = Vec::new();
                        while !line.ends_with(b"\n") {
                            line.push(s.read_u8().await.expect("ask"));
                        }
                        let mb: usize = String::from_utf8_lossy(&line).trim().parse().expect("n");
                        let block = vec![b'x'; 256 * 1024];
                        for _ in 0..mb * 4 {
                            s.write_all(&block).await.expect("write");
                        }
                    });
                }
            });
            loop {
                let (s, _) = http.accept().await.expect("accept");
                let _ = s.set_nodelay(true);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(|req: Request<Incoming>| async move {
                        Ok::<_, Infallible>(answer(req.uri()))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(s), service)
                        .await;
                });
            }
        });
    });
    rx.recv().expect("upstream addresses")
}

fn answer(uri: &hyper::Uri) -> Response<Chunks> {
    let q = |k: &str| {
        uri.query()
            .unwrap_or("")
            .split('&')
            .find_map(|p| p.strip_prefix(k)?.strip_prefix('=')?.parse::<usize>().ok())
            .unwrap_or(0)
    };
    let (tx, rx) = mpsc::channel::<Bytes>(8);
    if uri.path() == "/big" {
        let mb = q("mb");
        tokio::spawn(async move {
            // SSE events of ~16 KiB: text deltas, as a long answer would be, then the usage.
            let line = format!(
                "data: {{\"type\":\"content_block_delta\",\"text\":\"{}\"}}\n\n",
                "y".repeat(16 * 1024 - 64)
            );
            let block = Bytes::from(line);
            let mut sent = 0;
            while sent < mb * MB {
                sent += block.len();
                if tx.send(block.clone()).await.is_err() {
                    return;
                }
            }
            let _ = tx
                .send(Bytes::from_static(
                    b"data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\n\n",
                ))
                .await;
        });
    } else {
        let (n, gap) = (q("n"), q("gap"));
        tokio::spawn(async move {
            for _ in 0..n {
                let t = epoch().elapsed().as_nanos() as u64;
                if tx
                    .send(Bytes::from(format!("data: {{\"t\":{t}}}\n\n")))
                    .await
                    .is_err()
                {
                    return;
                }
                if gap > 0 {
                    tokio::time::sleep(Duration::from_millis(gap as u64)).await;
                }
            }
        });
    }
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Chunks(rx))
        .expect("response")
}

struct Chunks(mpsc::Receiver<Bytes>);

impl Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b))))
    }
}
