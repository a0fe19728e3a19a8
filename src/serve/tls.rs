//! TLS in the binary (`--tls-cert FILE --tls-key FILE`): the certificate and key read from
//! PEM files, and a listener that hands axum only connections whose handshake completed.
//!
//! Handshakes run off the accept path, each in its own task with a deadline: a client that
//! connects and says nothing (or speaks plain HTTP) costs one task until the deadline, never
//! the accept loop, so it cannot keep anyone else out.

use rustls::ServerConfig;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long a client has to finish its handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// At most this many handshakes at once; a connection beyond them is closed at once (a
/// flood of silent connections costs bounded memory).
const PENDING: usize = 512;

/// The files `--tls-cert` and `--tls-key` name.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain (PEM, the server's own certificate first).
    pub cert: PathBuf,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// Why the certificate or key cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read the TLS {what} {path}: {source}; check --tls-{flag} names the file")]
    Unreadable {
        /// `certificate` or `private key`.
        what: &'static str,
        /// `cert` or `key`: the flag that named it.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS's words.
        source: std::io::Error,
    },
    /// A file's PEM does not parse.
    #[error("the TLS {what} {path} is not valid PEM: {source}")]
    BadPem {
        /// `certificate` or `private key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What the parser said.
        source: pem::Error,
    },
    /// The certificate file holds no certificate.
    #[error(
        "{path} holds no certificate (no -----BEGIN CERTIFICATE----- block); --tls-cert takes \
         the certificate chain in PEM, the server's own certificate first"
    )]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The key file holds no private key.
    #[error(
        "{path} holds no private key (no -----BEGIN PRIVATE KEY----- block, nor an RSA or EC \
         one); --tls-key takes the certificate's private key in PEM"
    )]
    NoKey {
        /// The file.
        path: PathBuf,
    },
    /// The key is not the certificate's.
    #[error(
        "the private key {key} does not match the certificate {cert}: give the key the \
         certificate was issued for"
    )]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// rustls refused the pair for another reason (an unsupported key type, …).
    #[error("the TLS certificate {cert} and key {key} cannot be used: {source}")]
    Refused {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// rustls's words.
        source: rustls::Error,
    },
}

/// Reads a file for `--tls-{flag}`.
fn read(path: &Path, what: &'static str, flag: &'static str) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Unreadable {
        what,
        flag,
        path: path.to_path_buf(),
        source,
    })
}

/// The server's TLS setup from `files`: HTTP/1.1 only (as the server), ring's ciphers.
pub(crate) fn config(files: &TlsFiles) -> Result<Arc<ServerConfig>, TlsError> {
    let certificate = "certificate";
    let cert_pem = read(&files.cert, certificate, "cert")?;
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::BadPem {
            what: certificate,
            path: files.cert.clone(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: files.cert.clone(),
        });
    }
    let key_pem = read(&files.key, "private key", "key")?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|source| match source {
        pem::Error::NoItemsFound => TlsError::NoKey {
            path: files.key.clone(),
        },
        source => TlsError::BadPem {
            what: "private key",
            path: files.key.clone(),
            source,
        },
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let refused = |source| TlsError::Refused {
        cert: files.cert.clone(),
        key: files.key.clone(),
        source,
    };
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(refused)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => TlsError::KeyMismatch {
                cert: files.cert.clone(),
                key: files.key.clone(),
            },
            e => refused(e),
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A TCP listener that yields only connections whose TLS handshake completed.
pub(crate) struct TlsListener {
    incoming: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    addr: SocketAddr,
    /// The accept loop; it ends when the listener is dropped.
    acceptor: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Starts accepting on `tcp`, each handshake in a task of its own. Must run on a tokio
    /// runtime.
    pub fn new(tcp: TcpListener, config: Arc<ServerConfig>) -> std::io::Result<TlsListener> {
        let addr = tcp.local_addr()?;
        let (done, incoming) = mpsc::channel(64);
        let acceptor = tokio::spawn(accept_loop(tcp, TlsAcceptor::from(config), done));
        Ok(TlsListener {
            incoming,
            addr,
            acceptor,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

/// Accepts TCP connections and hands each to a handshake task; never waits on a client.
async fn accept_loop(
    mut tcp: TcpListener,
    acceptor: TlsAcceptor,
    done: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    let pending = Arc::new(Semaphore::new(PENDING));
    loop {
        // axum's own accept: it retries on a failed accept (and sleeps when out of files).
        let (stream, peer) = axum::serve::Listener::accept(&mut tcp).await;
        let Ok(permit) = pending.clone().try_acquire_owned() else {
            tracing::warn!("{PENDING} TLS handshakes under way; closing the connection of {peer}");
            continue;
        };
        let (acceptor, done) = (acceptor.clone(), done.clone());
        tokio::spawn(async move {
            let shaken = tokio::time::timeout(HANDSHAKE, acceptor.accept(stream)).await;
            drop(permit);
            match shaken {
                Ok(Ok(tls)) => {
                    // The server has stopped accepting when this fails: the connection closes.
                    let _ = done.send((tls, peer)).await;
                }
                Ok(Err(e)) => tracing::debug!("TLS handshake with {peer} failed: {e}"),
                Err(_) => tracing::debug!("TLS handshake with {peer} timed out"),
            }
        });
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(conn) => conn,
            // The accept loop ended (it does not, but while it is aborted): nothing comes.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}
