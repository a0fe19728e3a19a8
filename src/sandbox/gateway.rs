//! The proxy as an agent's gateway: what the executor serves on each agent's listener, the
//! environment that points the agent there, and a judge that asks whoever decides (the
//! session's decision core) over a channel.

use super::egress::EgressQuery;
use super::egress::{EgressAnswer, EgressJudge, EgressRequest};
use super::pointing::Pointing;
use super::proxy::{AgentLink, DEFAULT_JUDGE_TIMEOUT, ProxyEvent};
use super::{Gateway, Served};
use crate::process::Role;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// The hosts an agent reaches without the proxy: its own loopback (where the proxy and its
/// model API's base URL are).
const NO_PROXY: &str = "localhost,127.0.0.1,::1";

/// One question to the judge's owner: a connection, and where the answer goes.
#[derive(Debug)]
pub struct JudgeAsk {
    /// The connection asked for.
    pub query: EgressQuery,
    /// Where the answer goes (dropped unanswered: refused).
    pub reply: oneshot::Sender<EgressAnswer>,
}

/// A judge that asks over a channel (the session engine answers through its decision core).
#[derive(Debug, Clone)]
pub struct AskingJudge {
    asks: mpsc::UnboundedSender<JudgeAsk>,
}

impl AskingJudge {
    /// A judge whose questions arrive on the returned receiver.
    pub fn new() -> (AskingJudge, mpsc::UnboundedReceiver<JudgeAsk>) {
        let (asks, rx) = mpsc::unbounded_channel();
        (AskingJudge { asks }, rx)
    }
}

impl EgressJudge for AskingJudge {
    fn judge(&self, req: EgressRequest) -> Pin<Box<dyn Future<Output = EgressAnswer> + Send>> {
        let (reply, answer) = oneshot::channel();
        let query = EgressQuery {
            host: req.host,
            port: req.port,
            agent: req.agent,
            role: req.role,
        };
        let sent = self.asks.send(JudgeAsk { query, reply }).is_ok();
        Box::pin(async move {
            let gone = || EgressAnswer::Deny {
                rule: "the session that judges it has ended".into(),
            };
            if !sent {
                return gone();
            }
            answer.await.unwrap_or_else(|_| gone())
        })
    }
}

/// The egress proxy as the gateway of one agent.
#[derive(Clone)]
pub struct ProxyGateway {
    /// The agent's name (`claude`, a command's program).
    pub agent: String,
    /// Its role.
    pub role: Role,
    /// Who decides its connections.
    pub judge: Arc<dyn EgressJudge>,
    /// How it is pointed at its model API through the proxy, when oneshot holds the key.
    pub model: Option<Pointing>,
    /// Where the proxy tells what it did.
    pub events: mpsc::UnboundedSender<ProxyEvent>,
    /// Ports of the host's loopback the agent reaches at the same address: its model API on a
    /// local server ([`loopback_ports`]).
    pub forwards: Vec<u16>,
}

impl std::fmt::Debug for ProxyGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyGateway")
            .field("agent", &self.agent)
            .field("role", &self.role)
            .field("model", &self.model.as_ref().map(|p| p.route.provider))
            .finish()
    }
}

impl Gateway for ProxyGateway {
    fn env(&self, port: u16) -> Vec<(String, String)> {
        let proxy = format!("http://127.0.0.1:{port}");
        let mut env: Vec<(String, String)> = [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ]
        .into_iter()
        .map(|k| (k.to_string(), proxy.clone()))
        .collect();
        for k in ["NO_PROXY", "no_proxy"] {
            env.push((k.to_string(), NO_PROXY.to_string()));
        }
        if let Some(p) = &self.model {
            env.extend(p.env(&proxy));
        }
        env
    }

    fn argv(&self, argv: &mut Vec<String>, port: u16) {
        if let Some(p) = &self.model {
            p.argv(argv, &format!("http://127.0.0.1:{port}"));
        }
    }

    fn forwards(&self) -> Vec<u16> {
        self.forwards.clone()
    }

    fn serve(
        &self,
        listener: std::net::TcpListener,
        forwards: Vec<(u16, std::net::TcpListener)>,
    ) -> Served {
        let forwarded: Vec<_> = forwards
            .into_iter()
            .filter_map(|(port, l)| forward(port, l))
            .collect();
        let link = AgentLink {
            agent: self.agent.clone(),
            role: self.role,
            judge: Arc::clone(&self.judge),
            model: self.model.as_ref().map(|p| p.route.clone()),
            events: self.events.clone(),
            judge_timeout: DEFAULT_JUDGE_TIMEOUT,
        };
        match super::proxy::serve(listener, link) {
            Ok(handle) => Served(Box::new((handle, forwarded))),
            Err(e) => {
                // The listener is dropped with the error: the agent's connections are refused
                // at once, which is fail-closed.
                tracing::warn!(error = %e, "the egress proxy could not serve an agent");
                Served(Box::new(()))
            }
        }
    }
}

/// Forwards every connection on `listener` (inside an agent's network namespace) to `port` on
/// the host's loopback, until the returned task is dropped.
fn forward(port: u16, listener: std::net::TcpListener) -> Option<AbortOnDrop> {
    listener.set_nonblocking(true).ok()?;
    let listener = tokio::net::TcpListener::from_std(listener).ok()?;
    let task = tokio::spawn(async move {
        while let Ok((mut inside, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(mut host) =
                    tokio::net::TcpStream::connect((std::net::Ipv4Addr::LOCALHOST, port)).await
                {
                    let _ = tokio::io::copy_bidirectional(&mut inside, &mut host).await;
                }
            });
        }
    });
    Some(AbortOnDrop(task))
}

/// A task that ends when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The ports of the host's loopback that `values` (the agent's environment and command line)
/// name as a URL's (`http://127.0.0.1:8080/v1`, `localhost:11434`): where its model API is
/// when it runs on this machine. Only words that look like a base URL count: a variable named
/// `*_BASE_URL`, `*_API_BASE`, `*_BASE` or `*_HOST`, or an argument holding `base_url`.
pub fn loopback_ports<'a>(
    vars: impl IntoIterator<Item = (&'a str, &'a str)>,
    args: impl IntoIterator<Item = &'a str>,
) -> Vec<u16> {
    let named = |k: &str| {
        let k = k.to_ascii_uppercase();
        ["_BASE_URL", "_API_BASE", "_BASE", "_HOST", "_ENDPOINT"]
            .iter()
            .any(|s| k.ends_with(s))
    };
    let mut ports: Vec<u16> = vars
        .into_iter()
        .filter(|(k, _)| named(k))
        .map(|(_, v)| v)
        .chain(args.into_iter().filter(|a| a.contains("base_url")))
        .filter_map(loopback_port)
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// The port of a loopback URL or address in `text` (`http://127.0.0.1:4010/v1`,
/// `localhost:11434`), if it holds one.
pub fn loopback_port(text: &str) -> Option<u16> {
    for host in ["127.0.0.1:", "localhost:", "[::1]:"] {
        if let Some(at) = text.find(host) {
            let digits: String = text[at + host.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            return digits.parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_base_urls_on_loopback_are_forwarded() {
        let vars = [
            ("OPENAI_API_BASE", "http://127.0.0.1:4010/v1"),
            ("ANTHROPIC_BASE_URL", "http://localhost:4011"),
            ("DATABASE_URL", "postgres://localhost:5432/db"),
            (
                "GOOGLE_GEMINI_BASE_URL",
                "https://generativelanguage.googleapis.com",
            ),
        ];
        let args = [
            "model_providers.fake.base_url=\"http://127.0.0.1:4012/v1\"",
            "http://127.0.0.1:4013",
        ];
        assert_eq!(loopback_ports(vars, args), vec![4010, 4011, 4012]);
    }
}
