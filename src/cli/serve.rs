//! `oneshot serve`: the dashboard (`oneshot::serve`), thin over the library: the flags, the
//! store, a sign-in link at start, and the server until Ctrl-C.

use super::config::Files;
use super::exit::{self, usage};
use super::store::StoreFlag;
use anyhow::{Context, Result};
use clap::Args;
use oneshot::serve::{Bound, DEFAULT_LISTEN, Listen, ServeError, ServeOptions, TlsFiles};
use oneshot::token::{self, Scope};
use std::path::{Path, PathBuf};

/// `oneshot serve --help`.
const EXAMPLES: &str = "\
Examples:
  oneshot serve                                   # http://127.0.0.1:8719, prints a sign-in link
  oneshot serve --token-name ana                  # the link signs in as token ana
  oneshot serve --listen 127.0.0.1:9000 --store postgres://oneshot@db/jobs
  oneshot serve --listen 0.0.0.0:8719 --tls-cert cert.pem --tls-key key.pem --host dash.example.com:8719
  oneshot serve --listen 0.0.0.0:8719 --behind-proxy --host dash.example.com
  oneshot serve --listen unix:/run/user/1000/oneshot.sock --behind-proxy --host dash.example.com

Every request needs a token (`oneshot token create`), as `Authorization: Bearer …` or the
cookie a sign-in link sets; its scopes say what it may do (read; operate: suspend, resume,
cancel, resubmit; approve: approve, reject; admin). A request under a Host this server does
not answer as is refused (421), a POST from another origin too (403). Only 127.0.0.1 unless
the server speaks TLS itself (--tls-cert, --tls-key) or a TLS-terminating proxy fronts it
(--behind-proxy). A Unix socket (made 0600: only you) is for a reverse proxy on this machine:
no browser reaches a socket; `curl --unix-socket PATH http://localhost/` does. docs/serve.md
says more.";

/// `oneshot serve`: the dashboard over the job store.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct ServeArgs {
    /// Where to listen: IP:PORT (port 0: a free one; a non-loopback address needs --tls-cert
    /// or --behind-proxy), or unix:PATH, a Unix socket made with mode 0600 for a reverse proxy
    /// on this machine (no browser reaches it; a stale one is replaced, removed at exit).
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    pub listen: Listen,
    /// A TLS-terminating proxy fronts this server: allow a non-loopback --listen, and mark
    /// the session cookie Secure.
    #[arg(long)]
    pub behind_proxy: bool,
    /// Another name browsers reach this server by (the Host a proxy forwards), besides
    /// 127.0.0.1, localhost and [::1] with the port (on a Unix socket: localhost) (repeatable).
    #[arg(long = "host", value_name = "NAME")]
    pub hosts: Vec<String>,
    /// The sign-in link printed at start signs in as this token [default: a new admin token
    /// named serve-…, whose secret is never shown].
    #[arg(long, value_name = "NAME")]
    pub token_name: Option<String>,
    /// Speak HTTPS with this certificate chain (PEM, the server's own first): only HTTPS on
    /// --listen, a non-loopback address allowed, the cookie Secure. Needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1). Needs --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    #[command(flatten)]
    pub flag: StoreFlag,
}

/// Runs `oneshot serve` until Ctrl-C.
pub fn run(args: ServeArgs, files: &Files, state_dir: &Path, quiet: bool) -> Result<i32> {
    let (at, _) = super::store::location(args.flag.store.as_deref(), files, state_dir)?;
    let store = oneshot::job::store::open(&at)
        .map_err(|e| anyhow::Error::new(e).context("open the job store"))?;
    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
        // clap insists on both or neither.
        _ => None,
    };
    let opts = ServeOptions {
        listen: args.listen,
        behind_proxy: args.behind_proxy,
        tls,
        state_dir: state_dir.to_path_buf(),
        hosts: args.hosts.clone(),
        notify: files.notify().cloned(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the server's runtime")?;
    let bound = rt
        .block_on(Bound::bind(&opts, store.clone()))
        .map_err(|e| match e {
            e @ (ServeError::NotLoopback { .. }
            | ServeError::BadHost { .. }
            | ServeError::Tls(_)
            | ServeError::TlsOnUnix
            | ServeError::NotASocket { .. }) => usage(format!("serve: {e}")),
            e => anyhow::Error::new(e).context("serve"),
        })?;
    // The link a browser opens: through the proxy's name when one fronts the server, under
    // the first --host name when the server speaks TLS itself (its certificate's name).
    let base = match args.hosts.first() {
        Some(name) if args.behind_proxy || bound.tls() => format!("https://{name}"),
        Some(name) if bound.unix_socket().is_some() => format!("http://{name}"),
        _ => bound.url(),
    };
    let code = match &args.token_name {
        Some(name) => token::login_code(&*store, name)
            .map_err(|e| anyhow::Error::new(e).context(format!("sign-in link for {name}")))?,
        None => {
            let name = format!("serve-{}", &token::secret::fresh("")?[..8]);
            let made = token::create(
                &*store,
                &name,
                &[Scope::Admin],
                &oneshot::job::verbs::actor(),
            )
            .context("make the serve's admin token")?;
            // Its secret is dropped here: only the link signs in with it.
            token::login_code(&*store, &made.record.name).context("make the sign-in link")?
        }
    };
    outln!("listening on {} (store {at})", bound.listening());
    // The link is its own credential: shown as it is (the redactor masks it everywhere else).
    // No browser reaches a socket: without a proxy's name, the line says how to use the link.
    let link = match bound.unix_socket() {
        Some(path) if args.hosts.is_empty() => format!(
            "curl --unix-socket {} {}",
            shell_words::quote(&path.to_string_lossy()),
            code.link(&base)
        ),
        _ => code.link(&base),
    };
    crate::cli::out::secret_line(&format!("sign in: {link}"));
    if let (Some(path), false) = (bound.unix_socket(), quiet) {
        errln!(
            "no browser reaches a Unix socket: put a reverse proxy on this machine in front of \
             it (with --host NAME, the name it forwards; --behind-proxy when it speaks \
             HTTPS). Through the socket: curl --unix-socket {} -H 'Authorization: Bearer \
             TOKEN' http://localhost/",
            shell_words::quote(&path.to_string_lossy())
        );
    }
    if !quiet {
        errln!(
            "the link works once, within 10 minutes; `oneshot token login NAME` makes another. \
             Ctrl-C stops the server."
        );
    }
    rt.block_on(bound.run(async {
        let _ = tokio::signal::ctrl_c().await;
    }))
    .context("serve")?;
    Ok(exit::OK)
}
