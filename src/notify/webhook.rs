//! A webhook sink: the event POSTed as JSON over HTTP/1.1 (hyper's client, which the dashboard's
//! server already brings). `http://` only: oneshot carries no TLS client, so an `https://` URL
//! is refused when the config is read, with what to do instead.

use std::time::Duration;

/// Where a webhook POSTs: checked when the config is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookTarget {
    /// The host to connect to (an IPv6 address without its brackets).
    pub host: String,
    /// The port (80 when the URL names none).
    pub port: u16,
    /// `host[:port]`, as the `Host` header says it.
    pub authority: String,
    /// The path and query, `/` at least.
    pub path: String,
}

/// Checks a webhook URL: `http://host[:port]/path`. Why not, in words, when it is not.
pub fn webhook_target(url: &str) -> Result<WebhookTarget, String> {
    let url = url.trim();
    if url.len() >= 8 && url[..8].eq_ignore_ascii_case("https://") {
        return Err(format!(
            "notify.sink.webhook {url:?}: https is not supported — oneshot has no TLS client; \
             give an http:// URL (a relay on this machine, such as a local proxy that \
             forwards to the https endpoint)"
        ));
    }
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e| format!("notify.sink.webhook {url:?} is not a URL ({e})"))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!(
            "notify.sink.webhook {url:?} must be an http:// URL, like \
             \"http://127.0.0.1:9000/hook\""
        ));
    }
    let authority = uri
        .authority()
        .filter(|a| !a.host().is_empty())
        .ok_or_else(|| format!("notify.sink.webhook {url:?} names no host"))?;
    if authority.as_str().contains('@') {
        return Err(format!(
            "notify.sink.webhook {url:?}: a user or password in the URL is not supported"
        ));
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    Ok(WebhookTarget {
        host,
        port: authority.port_u16().unwrap_or(80),
        authority: authority.as_str().to_string(),
        path: uri
            .path_and_query()
            .map_or("/".to_string(), |p| p.as_str().to_string()),
    })
}

/// POSTs `body` (JSON) to `target`; within `timeout`, any 2xx answer is success. Why not, in
/// words.
pub(super) async fn post(
    target: &WebhookTarget,
    body: String,
    timeout: Duration,
) -> Result<(), String> {
    match tokio::time::timeout(timeout, send(target, body)).await {
        Ok(done) => done,
        Err(_) => Err(format!(
            "no answer from {} within {}",
            target.authority,
            humantime::format_duration(timeout)
        )),
    }
}

async fn send(target: &WebhookTarget, body: String) -> Result<(), String> {
    use http_body_util::BodyExt;
    let stream = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("cannot connect to {}: {e}", target.authority))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| format!("HTTP handshake with {} failed: {e}", target.authority))?;
    let driving = tokio::spawn(conn);
    let request = hyper::Request::post(target.path.as_str())
        .header(hyper::header::HOST, target.authority.as_str())
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(
            hyper::header::USER_AGENT,
            concat!("oneshot/", env!("CARGO_PKG_VERSION")),
        )
        .body(http_body_util::Full::new(bytes::Bytes::from(body)))
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let answered = sender.send_request(request).await;
    let out = match answered {
        Ok(response) => {
            let status = response.status();
            // Read (a little of) the answer, so that an error's words can be shown.
            let text = response
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            if status.is_success() {
                Ok(())
            } else {
                let text = String::from_utf8_lossy(&text[..text.len().min(200)]).into_owned();
                Err(format!(
                    "{} answered HTTP {status}{}",
                    target.authority,
                    if text.trim().is_empty() {
                        String::new()
                    } else {
                        format!(": {}", text.trim())
                    }
                ))
            }
        }
        Err(e) => Err(format!("POST to {} failed: {e}", target.authority)),
    };
    driving.abort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_urls_are_read_and_https_is_refused_with_what_to_do() {
        let t = webhook_target("http://127.0.0.1:9000/hook?x=1").unwrap();
        assert_eq!(
            (
                t.host.as_str(),
                t.port,
                t.authority.as_str(),
                t.path.as_str()
            ),
            ("127.0.0.1", 9000, "127.0.0.1:9000", "/hook?x=1")
        );
        let t = webhook_target("http://[::1]/").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 80));
        let e = webhook_target("https://hooks.example.com/x").unwrap_err();
        assert!(
            e.contains("https is not supported") && e.contains("http://"),
            "{e}"
        );
        let e = webhook_target("ftp://x/").unwrap_err();
        assert!(e.contains("must be an http:// URL"), "{e}");
        let e = webhook_target("http://ann:pw@host/").unwrap_err();
        assert!(e.contains("password"), "{e}");
    }
}
