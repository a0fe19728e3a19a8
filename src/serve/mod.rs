//! `oneshot serve`: the dashboard over the job store, served by the binary.
//!
//! Every request passes [`boundary`] first: the `Host` must be one this server answers as
//! (DNS rebinding), an unsafe method must come from this server's own origin (cross-site
//! requests), and every route but a sign-in link needs a token or a browser session whose
//! scopes allow it (`crate::token`). The verbs are POSTs that go through the same library
//! call as the CLI's (`crate::job::verbs::give_seen`), audited with the token's name as the
//! actor, and bound to what the page showed.
//!
//! The store is synchronous; every call to it runs on tokio's blocking pool.

mod boundary;
pub(crate) mod live;
pub mod pages;
mod routes;
mod sessions;
mod views;

use crate::job::store::JobStore;
use axum::Router;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// Where `oneshot serve` listens unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8719";

/// How `oneshot serve` is set up.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen; port 0 takes a free one.
    pub listen: SocketAddr,
    /// A TLS-terminating proxy fronts the server: a non-loopback address is allowed and the
    /// session cookie is `Secure`.
    pub behind_proxy: bool,
    /// This machine's state directory: where a land from the page rebases (its `worktrees/`,
    /// and for a job whose source is a remote its `mirrors/`), as `job land` does here.
    pub state_dir: std::path::PathBuf,
    /// The names (a host, or `host:port`) the server is reached by besides its own address
    /// and `localhost`: what a proxy forwards as `Host`.
    pub hosts: Vec<String>,
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A non-loopback address without TLS in front.
    #[error(
        "refusing to listen on {addr}: it is not a loopback address, and without TLS the \
         sign-in cookie and the tokens would cross the network in the clear; listen on \
         127.0.0.1 (the default), or put a TLS-terminating proxy in front and pass \
         --behind-proxy (with --host NAME, the name the proxy forwards)"
    )]
    NotLoopback {
        /// The address given.
        addr: SocketAddr,
    },
    /// The address could not be bound.
    #[error(
        "cannot listen on {addr}: {source}; is another program (or another oneshot serve) using it? Pick another with --listen"
    )]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS's words.
        source: std::io::Error,
    },
    /// A `--host` that is no host name.
    #[error(
        "--host {name:?} is not a host name (or host:port); give the name browsers use to \
         reach this server, as the proxy forwards it"
    )]
    BadHost {
        /// The name given.
        name: String,
    },
}

/// Whether `ip` is a loopback address (127.0.0.0/8, ::1).
fn loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v| v.is_loopback()),
    }
}

/// What every request is served with.
#[derive(Clone)]
pub(crate) struct App {
    /// The job store.
    pub store: Arc<dyn JobStore>,
    /// Every `Host` the server answers as, lower-case.
    pub hosts: Arc<Vec<String>>,
    /// The session cookie carries `Secure`.
    pub secure: bool,
    /// This machine's state directory ([`ServeOptions::state_dir`]).
    pub state_dir: Arc<std::path::PathBuf>,
    /// The live streams' hub.
    pub hub: Arc<live::hub::Hub>,
}

/// A server bound to its address, not serving yet.
pub struct Bound {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    app: Router,
}

impl Bound {
    /// Binds `opts.listen`, refusing a non-loopback address unless a TLS proxy fronts it.
    /// Must run on a tokio runtime.
    pub async fn bind(opts: &ServeOptions, store: Arc<dyn JobStore>) -> Result<Bound, ServeError> {
        if !loopback(opts.listen.ip()) && !opts.behind_proxy {
            return Err(ServeError::NotLoopback { addr: opts.listen });
        }
        for name in &opts.hosts {
            let ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
            if !ok {
                return Err(ServeError::BadHost { name: name.clone() });
            }
        }
        let listener = tokio::net::TcpListener::bind(opts.listen)
            .await
            .map_err(|source| ServeError::Bind {
                addr: opts.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ServeError::Bind {
            addr: opts.listen,
            source,
        })?;
        let hosts = answers_as(addr, &opts.hosts);
        let app = App {
            hub: live::hub::Hub::start(store.clone()),
            store,
            hosts: Arc::new(hosts),
            secure: opts.behind_proxy,
            state_dir: Arc::new(opts.state_dir.clone()),
        };
        Ok(Bound {
            listener,
            addr,
            app: routes::router(app),
        })
    }

    /// The address it listens on (with the port taken when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL a browser on this machine opens: `http://127.0.0.1:PORT` (a wildcard address
    /// is reached through loopback).
    pub fn url(&self) -> String {
        let ip = match self.addr.ip() {
            ip if ip.is_unspecified() => IpAddr::from([127, 0, 0, 1]),
            ip => ip,
        };
        format!("http://{}", SocketAddr::new(ip, self.addr.port()))
    }

    /// Serves until `shutdown` completes.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        axum::serve(self.listener, self.app)
            .with_graceful_shutdown(shutdown)
            .await
    }
}

/// Every `Host` a server bound to `addr` answers as: its own address, the loopback names
/// with its port (when it listens on loopback or everywhere), and the configured names.
fn answers_as(addr: SocketAddr, names: &[String]) -> Vec<String> {
    let port = addr.port();
    let mut hosts = vec![addr.to_string()];
    if loopback(addr.ip()) || addr.ip().is_unspecified() {
        hosts.extend([
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ]);
    }
    hosts.extend(names.iter().map(|n| n.to_ascii_lowercase()));
    hosts.sort();
    hosts.dedup();
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_server_answers_as_its_loopback_names_and_the_configured_ones() {
        let hosts = answers_as("127.0.0.1:8719".parse().unwrap(), &["Dash.example".into()]);
        for h in [
            "127.0.0.1:8719",
            "localhost:8719",
            "[::1]:8719",
            "dash.example",
        ] {
            assert!(hosts.iter().any(|x| x == h), "{h} in {hosts:?}");
        }
        assert!(
            !hosts.iter().any(|x| x == "localhost"),
            "the port is part of it"
        );
        let far = answers_as("10.0.0.5:80".parse().unwrap(), &[]);
        assert_eq!(far, ["10.0.0.5:80"]);
        assert!(loopback("::1".parse().unwrap()));
        assert!(!loopback("0.0.0.0".parse().unwrap()));
    }
}
