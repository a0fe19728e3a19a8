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
mod say;
mod sessions;
mod tls;
mod unix;
mod views;

pub use tls::{TlsError, TlsFiles};

use crate::job::store::JobStore;
use axum::Router;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where `oneshot serve` listens unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8719";

/// Where `oneshot serve` listens.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Listen {
    /// A TCP address; port 0 takes a free one.
    Tcp(SocketAddr),
    /// A Unix socket's path (`unix:PATH`), for a reverse proxy on this machine.
    Unix(PathBuf),
}

impl std::str::FromStr for Listen {
    type Err = String;

    /// `IP:PORT`, or `unix:PATH`.
    fn from_str(s: &str) -> Result<Listen, String> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(
                    "unix: needs the socket's path, as in unix:/run/user/1000/oneshot.sock".into(),
                );
            }
            return Ok(Listen::Unix(PathBuf::from(path)));
        }
        s.parse().map(Listen::Tcp).map_err(|_| {
            format!(
                "{s:?} is neither an address (IP:PORT, as in 127.0.0.1:8719 or [::1]:8719) nor a \
                 Unix socket (unix:PATH)"
            )
        })
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Tcp(addr) => write!(f, "{addr}"),
            Listen::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// How `oneshot serve` is set up.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen.
    pub listen: Listen,
    /// A TLS-terminating proxy fronts the server: a non-loopback address is allowed and the
    /// session cookie is `Secure`.
    pub behind_proxy: bool,
    /// The server speaks HTTPS itself, with this certificate and key: a non-loopback address
    /// is allowed and the session cookie is `Secure`.
    pub tls: Option<TlsFiles>,
    /// This machine's state directory: where a land from the page rebases (its `worktrees/`,
    /// and for a job whose source is a remote its `mirrors/`), as `job land` does here.
    pub state_dir: std::path::PathBuf,
    /// The names (a host, or `host:port`) the server is reached by besides its own address
    /// and `localhost`: what a proxy forwards as `Host`.
    pub hosts: Vec<String>,
    /// `[notify]`: a verb from a page that leaves a job needing a human again (a failed
    /// land) is told as the runner tells its transitions (`crate::notify`).
    pub notify: Option<crate::config::NotifyDef>,
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A non-loopback address without TLS.
    #[error(
        "refusing to listen on {addr}: it is not a loopback address, and without TLS the \
         sign-in cookie and the tokens would cross the network in the clear; listen on \
         127.0.0.1 (the default), give the server a certificate (--tls-cert FILE --tls-key \
         FILE), or put a TLS-terminating proxy in front and pass --behind-proxy (with --host \
         NAME, the name the proxy forwards)"
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
    /// The TLS certificate or key cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// TLS asked for on a Unix socket.
    #[error(
        "--tls-cert/--tls-key and a Unix socket: the socket is reached only through this \
         machine, by a reverse proxy that terminates TLS itself; drop --tls-cert/--tls-key \
         (and pass --behind-proxy when the proxy speaks HTTPS)"
    )]
    TlsOnUnix,
    /// Another server answers on the socket.
    #[error(
        "cannot listen on unix:{path}: another server (another oneshot serve?) answers on it; \
         stop it, or pick another path"
    )]
    SocketInUse {
        /// The socket's path.
        path: PathBuf,
    },
    /// Something other than a socket is at the socket's path.
    #[error(
        "cannot listen on unix:{path}: it exists and is not a socket; it was left alone: \
         pick another path, or remove it if it is yours"
    )]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// The socket could not be made (or a stale one removed).
    #[error("cannot listen on unix:{path}: {source}; pick another path with --listen unix:PATH")]
    Socket {
        /// The socket's path.
        path: PathBuf,
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
    /// Who tells of the needs-a-human moves a verb from a page makes.
    pub notifier: Option<Arc<crate::notify::Notifier>>,
}

/// What a server accepts connections on.
enum Listener {
    /// Plain HTTP.
    Tcp(tokio::net::TcpListener),
    /// HTTPS only.
    Tls(tls::TlsListener),
    /// A Unix socket, and its file (removed when dropped).
    Unix(tokio::net::UnixListener, unix::SocketFile),
}

/// A server bound to its address, not serving yet.
pub struct Bound {
    listener: Listener,
    /// The TCP address it listens on; `None` on a Unix socket.
    addr: Option<SocketAddr>,
    /// The Unix socket's path.
    socket: Option<PathBuf>,
    app: Router,
}

impl Bound {
    /// Binds `opts.listen`, refusing a non-loopback address unless the server speaks TLS
    /// (`opts.tls`) or a TLS proxy fronts it. Must run on a tokio runtime.
    pub async fn bind(opts: &ServeOptions, store: Arc<dyn JobStore>) -> Result<Bound, ServeError> {
        for name in &opts.hosts {
            let ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
            if !ok {
                return Err(ServeError::BadHost { name: name.clone() });
            }
        }
        // Read before binding: a bad file is refused with nothing listening yet.
        let tls = opts.tls.as_ref().map(tls::config).transpose()?;
        let (listener, addr, socket, hosts) = match &opts.listen {
            Listen::Unix(path) => {
                if tls.is_some() {
                    return Err(ServeError::TlsOnUnix);
                }
                let (listener, file) = unix::bind(path)?;
                // Over a socket the Host is whatever the client says; the proxy's (or
                // curl's) `localhost`, and the names it was told to forward.
                let mut hosts = vec!["localhost".to_string()];
                hosts.extend(opts.hosts.iter().map(|n| n.to_ascii_lowercase()));
                hosts.sort();
                hosts.dedup();
                let listener = Listener::Unix(listener, file);
                (listener, None, Some(path.clone()), hosts)
            }
            Listen::Tcp(at) => {
                let at = *at;
                if !loopback(at.ip()) && !opts.behind_proxy && tls.is_none() {
                    return Err(ServeError::NotLoopback { addr: at });
                }
                let bind_failed = |source| ServeError::Bind { addr: at, source };
                let tcp = tokio::net::TcpListener::bind(at)
                    .await
                    .map_err(bind_failed)?;
                let addr = tcp.local_addr().map_err(bind_failed)?;
                let listener = match tls {
                    Some(config) => {
                        Listener::Tls(tls::TlsListener::new(tcp, config).map_err(bind_failed)?)
                    }
                    None => Listener::Tcp(tcp),
                };
                (listener, Some(addr), None, answers_as(addr, &opts.hosts))
            }
        };
        let notifier = opts
            .notify
            .as_ref()
            .and_then(|def| crate::notify::Notifier::new(def, "oneshot serve", store.clone()));
        let app = App {
            notifier,
            hub: live::hub::Hub::start(store.clone()),
            store,
            hosts: Arc::new(hosts),
            secure: opts.behind_proxy || matches!(listener, Listener::Tls(_)),
            state_dir: Arc::new(opts.state_dir.clone()),
        };
        Ok(Bound {
            listener,
            addr,
            socket,
            app: routes::router(app),
        })
    }

    /// The TCP address it listens on (with the port taken when 0 was asked for); `None` on a
    /// Unix socket.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The Unix socket it listens on, if it does.
    pub fn unix_socket(&self) -> Option<&Path> {
        self.socket.as_deref()
    }

    /// Whether it speaks HTTPS.
    pub fn tls(&self) -> bool {
        matches!(self.listener, Listener::Tls(_))
    }

    /// The URL a client on this machine opens: `http://127.0.0.1:PORT`, `https://…` with
    /// TLS (a wildcard address is reached through loopback); on a Unix socket
    /// `http://localhost`, the URL a client sends through the socket (`curl --unix-socket`).
    pub fn url(&self) -> String {
        let Some(addr) = self.addr else {
            return "http://localhost".to_string();
        };
        let ip = match addr.ip() {
            ip if ip.is_unspecified() => IpAddr::from([127, 0, 0, 1]),
            ip => ip,
        };
        let scheme = if self.tls() { "https" } else { "http" };
        format!("{scheme}://{}", SocketAddr::new(ip, addr.port()))
    }

    /// Where it listens, as `oneshot serve` says it: the URL, or `unix:PATH`.
    pub fn listening(&self) -> String {
        match &self.socket {
            Some(path) => format!("unix:{}", path.display()),
            None => self.url(),
        }
    }

    /// Serves until `shutdown` completes; a Unix socket's file is removed then.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        match self.listener {
            Listener::Tcp(l) => {
                axum::serve(l, self.app)
                    .with_graceful_shutdown(shutdown)
                    .await
            }
            Listener::Tls(l) => {
                axum::serve(l, self.app)
                    .with_graceful_shutdown(shutdown)
                    .await
            }
            Listener::Unix(l, file) => {
                let served = axum::serve(l, self.app)
                    .with_graceful_shutdown(shutdown)
                    .await;
                drop(file);
                served
            }
        }
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

    #[test]
    fn listen_takes_an_address_or_a_unix_socket() {
        assert_eq!(
            "127.0.0.1:0".parse::<Listen>().unwrap(),
            Listen::Tcp("127.0.0.1:0".parse().unwrap())
        );
        let unix: Listen = "unix:/run/o.sock".parse().unwrap();
        assert_eq!(unix, Listen::Unix("/run/o.sock".into()));
        assert_eq!(unix.to_string(), "unix:/run/o.sock");
        assert!("unix:".parse::<Listen>().unwrap_err().contains("path"));
        let e = "localhost:80".parse::<Listen>().unwrap_err();
        assert!(e.contains("IP:PORT") && e.contains("unix:PATH"), "{e}");
    }
}
