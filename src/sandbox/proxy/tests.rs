//! The proxy on real sockets on 127.0.0.1: tunnels, refusals, forwarding, the model route.

mod support;

use std::time::Duration;

use bytes::Bytes;
use hyper::header::HeaderValue;
use hyper::{Request, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

use super::*;
use crate::sandbox::egress::{EgressAnswer, EgressRequest, NetworkRules};
use support::*;

#[tokio::test]
async fn connect_tunnels_bytes_both_ways_to_a_host_the_rule_names() {
    let echo = echo_server().await;
    let (proxy, mut events) = start(rules(&["127.0.0.1"]), None);
    let (status, mut tunnel) =
        connect(proxy.local_addr(), &format!("127.0.0.1:{}", echo.port())).await;
    assert_eq!(status, 200);
    // The upstream speaks first, then echoes: both directions cross the tunnel.
    let mut hello = [0u8; 6];
    tunnel.read_exact(&mut hello).await.unwrap();
    assert_eq!(&hello, b"hello\n");
    tunnel.write_all(b"ping").await.unwrap();
    let mut back = [0u8; 4];
    tunnel.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"ping");
    assert_eq!(
        next(&mut events).await,
        ProxyEvent::Connected {
            host: "127.0.0.1".into(),
            port: echo.port(),
            agent: "claude".into(),
            role: Role::Worker,
            rule: "network.allow \"127.0.0.1\"".into(),
        }
    );
}

#[tokio::test]
async fn connect_to_a_host_not_allowed_is_403_with_the_rule_and_the_line_to_add() {
    let (proxy, mut events) = start(rules(&["pypi.org"]), None);
    let (status, body) = refused(proxy.local_addr(), "example.com:443").await;
    assert_eq!(status, 403);
    assert!(body.contains("example.com:443"), "{body}");
    assert!(body.contains("not on the policy's allowlist"), "{body}");
    assert!(
        body.contains(r#"network = { allow = { "example.com" } }"#),
        "{body}"
    );
    assert_eq!(
        next(&mut events).await,
        ProxyEvent::Refused {
            host: "example.com".into(),
            port: 443,
            agent: "claude".into(),
            role: Role::Worker,
            rule: "not on the policy's allowlist".into(),
            address: None,
        }
    );
}

#[tokio::test]
async fn a_name_or_literal_resolving_to_a_private_address_is_refused_unless_named() {
    let echo = echo_server().await;
    let target = format!("localhost:{}", echo.port());
    // A wildcard allows the name but does not name it: its loopback address is refused.
    let (proxy, mut events) = start(rules(&["*"]), None);
    let (status, _) = connect(proxy.local_addr(), &target).await;
    assert_eq!(status, 403);
    match next(&mut events).await {
        ProxyEvent::Refused {
            host,
            rule,
            address,
            ..
        } => {
            assert_eq!(host, "localhost");
            assert!(address.is_some_and(|a| a.is_loopback()), "{address:?}");
            assert!(rule.contains("a loopback address"), "{rule}");
        }
        other => panic!("{other:?}"),
    }
    let (status, _) = connect(proxy.local_addr(), &format!("127.0.0.1:{}", echo.port())).await;
    assert_eq!(status, 403);
    // Naming the host itself allows it.
    let (named, _events) = start(rules(&["localhost"]), None);
    let (status, mut tunnel) = connect(named.local_addr(), &target).await;
    assert_eq!(status, 200);
    let mut hello = [0u8; 6];
    tunnel.read_exact(&mut hello).await.unwrap();
}

#[tokio::test]
async fn a_judge_that_panics_or_never_answers_refuses() {
    for (judge, words) in [
        (Arc::new(Panics) as Arc<dyn EgressJudge>, "panicked"),
        (Arc::new(Silent), "did not answer within 200ms"),
    ] {
        let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
        let proxy = serve(
            loopback(),
            AgentLink {
                judge_timeout: Duration::from_millis(200),
                ..link(judge, None, tx)
            },
        )
        .unwrap();
        let (status, _) = connect(proxy.local_addr(), "example.com:443").await;
        assert_eq!(status, 403);
        match next(&mut events).await {
            ProxyEvent::Refused { rule, .. } => assert!(rule.contains(words), "{rule}"),
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn plain_http_is_forwarded_in_origin_form_and_refused_like_connect() {
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let upstream = http_server(move |req| {
        let _ = seen_tx.send(seen_of(&req));
        response("text/plain", body_of(&["hello ", "there"]))
    })
    .await;
    let (proxy, _events) = start(rules(&["127.0.0.1"]), None);
    let url = format!("http://127.0.0.1:{}/hello?x=1", upstream.port());
    let (status, body) = send(proxy.local_addr(), get(&url)).await;
    assert_eq!((status, body.as_str()), (200, "hello there"));
    let s = seen.recv().await.unwrap();
    assert_eq!(s.uri, "/hello?x=1");
    assert_eq!(s.header("connection"), Some("close"));
    assert_eq!(
        s.header("host"),
        Some(format!("127.0.0.1:{}", upstream.port()).as_str())
    );
    let (status, body) = send(proxy.local_addr(), get("http://example.com/")).await;
    assert_eq!(status, 403);
    assert!(body.contains("example.com:80"), "{body}");
    let (status, body) = send(proxy.local_addr(), get("https://example.com/")).await;
    assert_eq!(status, 400);
    assert!(body.contains("CONNECT"), "{body}");
}

#[tokio::test]
async fn an_anthropic_stream_reaches_the_upstream_with_the_real_key_and_its_usage_is_told() {
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let upstream = http_server(move |req| {
        let _ = seen_tx.send(seen_of(&req));
        response("text/event-stream", body_of(ANTHROPIC_SSE))
    })
    .await;
    let (proxy, mut events) = start(
        rules(&[]),
        Some(model_route(Provider::Anthropic, &upstream)),
    );
    let mut req = post("/v1/messages?beta=true");
    req.headers_mut()
        .insert("x-api-key", HeaderValue::from_static(PLACEHOLDER));
    req.headers_mut().insert(
        "authorization",
        HeaderValue::from_static("Bearer placeholder-key"),
    );
    let (status, body) = send(proxy.local_addr(), req).await;
    assert_eq!(status, 200);
    assert_eq!(body, ANTHROPIC_SSE.concat());
    let s = seen.recv().await.unwrap();
    assert_eq!(s.uri, "/prefix/v1/messages?beta=true");
    assert_eq!(s.header("x-api-key"), Some(REAL_KEY));
    assert_eq!(s.header("authorization"), None);
    assert!(!s.all.contains("placeholder"), "{}", s.all);
    assert_eq!(
        next(&mut events).await,
        ProxyEvent::Usage {
            provider: Provider::Anthropic,
            model: Some("claude-test".into()),
            input_tokens: 25,
            output_tokens: 15,
            cache_read_tokens: 100,
            cache_write_tokens: 7,
        }
    );
}

#[tokio::test]
async fn gemini_json_through_an_absolute_url_to_the_proxy_itself_with_the_key_param_dropped() {
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let upstream = http_server(move |req| {
        let _ = seen_tx.send(seen_of(&req));
        response(
            "application/json",
            body_of(&[
                r#"{"candidates":[],"usageMetadata":{"promptTokenCount":8,"#,
                r#""candidatesTokenCount":21},"modelVersion":"gemini-t"}"#,
            ]),
        )
    })
    .await;
    let (proxy, mut events) = start(rules(&[]), Some(model_route(Provider::Gemini, &upstream)));
    let url = format!(
        "http://127.0.0.1:{}/v1beta/models/m:generateContent?key={PLACEHOLDER}&alt=json",
        proxy.local_addr().port()
    );
    let mut req = post(&url);
    req.headers_mut()
        .insert("x-goog-api-key", HeaderValue::from_static(PLACEHOLDER));
    let (status, _) = send(proxy.local_addr(), req).await;
    assert_eq!(status, 200);
    let s = seen.recv().await.unwrap();
    assert_eq!(s.uri, "/prefix/v1beta/models/m:generateContent?alt=json");
    assert_eq!(s.header("x-goog-api-key"), Some(REAL_KEY));
    assert!(!s.all.contains("placeholder"), "{}", s.all);
    assert_eq!(
        next(&mut events).await,
        ProxyEvent::Usage {
            provider: Provider::Gemini,
            model: Some("gemini-t".into()),
            input_tokens: 8,
            output_tokens: 21,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        }
    );
}

#[tokio::test]
async fn openai_gets_a_bearer_key_and_an_error_is_told() {
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let upstream = http_server(move |req| {
        let _ = seen_tx.send(seen_of(&req));
        let echoed = format!(r#"{{"error":"slow down","key":"{REAL_KEY}"}}"#);
        let mut res = response("application/json", body_of(&[&echoed]));
        *res.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        res
    })
    .await;
    let (proxy, mut events) = start(rules(&[]), Some(model_route(Provider::OpenAi, &upstream)));
    let mut req = post("/v1/responses");
    req.headers_mut().insert(
        "authorization",
        HeaderValue::from_static("Bearer placeholder-key"),
    );
    let (status, body) = send(proxy.local_addr(), req).await;
    assert_eq!(status, 429);
    assert!(body.contains("slow down"), "{body}");
    let s = seen.recv().await.unwrap();
    assert_eq!(
        s.header("authorization"),
        Some(format!("Bearer {REAL_KEY}").as_str())
    );
    assert_eq!(
        next(&mut events).await,
        ProxyEvent::ModelError {
            provider: Provider::OpenAi,
            status: 429,
            message: r#"{"error":"slow down","key":"[REDACTED]"}"#.into()
        }
    );
}

#[tokio::test]
async fn a_streamed_answer_is_passed_on_before_the_upstream_finishes() {
    let (release_tx, release) = oneshot::channel::<()>();
    let release = std::sync::Mutex::new(Some(release));
    let upstream = http_server(move |_| {
        let (tx, body) = channel_body();
        let release = release.lock().unwrap().take().expect("one request");
        tokio::spawn(async move {
            tx.send(Bytes::from_static(b"data: {\"n\":1}\n\n"))
                .await
                .unwrap();
            let _ = release.await;
            tx.send(Bytes::from_static(b"data: {\"n\":2}\n\n"))
                .await
                .unwrap();
        });
        response("text/event-stream", body)
    })
    .await;
    let (proxy, _events) = start(
        rules(&[]),
        Some(model_route(Provider::Anthropic, &upstream)),
    );
    let mut res = request(proxy.local_addr(), post("/v1/messages")).await;
    let first = tokio::time::timeout(Duration::from_secs(5), frame(&mut res))
        .await
        .expect("the first chunk arrives while the upstream holds back the rest");
    assert_eq!(first.as_deref(), Some(&b"data: {\"n\":1}\n\n"[..]));
    release_tx.send(()).unwrap();
    let second = tokio::time::timeout(Duration::from_secs(5), frame(&mut res))
        .await
        .unwrap();
    assert_eq!(second.as_deref(), Some(&b"data: {\"n\":2}\n\n"[..]));
}

#[tokio::test]
async fn without_a_model_route_the_proxy_itself_is_403_and_dropping_the_handle_closes_it() {
    let (proxy, _events) = start(rules(&[]), None);
    let (status, body) = send(proxy.local_addr(), post("/v1/messages")).await;
    assert_eq!(status, 403);
    assert!(
        body.contains("no model API is configured for this agent"),
        "{body}"
    );
    let addr = proxy.local_addr();
    drop(proxy);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn dropping_the_handle_ends_an_open_tunnel() {
    let echo = echo_server().await;
    let (proxy, _events) = start(rules(&["127.0.0.1"]), None);
    let (status, mut tunnel) =
        connect(proxy.local_addr(), &format!("127.0.0.1:{}", echo.port())).await;
    assert_eq!(status, 200);
    let mut hello = [0u8; 6];
    tunnel.read_exact(&mut hello).await.unwrap();
    drop(proxy);
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), tunnel.read_to_end(&mut rest)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the tunnel stays open: {read:?}"
    );
}

struct Panics;
impl EgressJudge for Panics {
    fn judge(
        &self,
        _: EgressRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = EgressAnswer> + Send>> {
        panic!("a judge that fails")
    }
}

struct Silent;
impl EgressJudge for Silent {
    fn judge(
        &self,
        _: EgressRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = EgressAnswer> + Send>> {
        Box::pin(std::future::pending())
    }
}

fn rules(allow: &[&str]) -> NetworkRules {
    NetworkRules {
        allow: allow.iter().map(|s| s.to_string()).collect(),
        deny: vec![],
    }
}

fn get(url: &str) -> Request<http_body_util::Full<Bytes>> {
    Request::get(url).body(Default::default()).unwrap()
}

fn post(url: &str) -> Request<http_body_util::Full<Bytes>> {
    Request::post(url)
        .header("content-type", "application/json")
        .body(Bytes::from_static(b"{\"stream\":true}").into())
        .unwrap()
}

#[tokio::test]
async fn an_unreachable_model_api_is_502_and_told() {
    // A port that was just free: nothing listens there.
    let closed = loopback().local_addr().unwrap();
    let route = ModelRoute {
        provider: Provider::Anthropic,
        upstream: format!("http://{closed}"),
        key: REAL_KEY.into(),
    };
    let (proxy, mut events) = start(rules(&[]), Some(route));
    let (status, body) = send(proxy.local_addr(), post("/v1/messages")).await;
    assert_eq!(status, 502);
    assert!(
        body.contains(&closed.to_string()) && !body.contains(REAL_KEY),
        "{body}"
    );
    match next(&mut events).await {
        ProxyEvent::ModelError {
            status: 502,
            message,
            ..
        } => {
            assert!(message.contains("refused"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}
