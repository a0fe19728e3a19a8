//! `oneshot token …`: the dashboard's tokens (`oneshot::token`), thin over the library. Who
//! may run these is whoever may open the job store: the store is the authority, as for every
//! `oneshot job` verb.

use super::config::Files;
use super::exit::{self, usage};
use super::store::StoreFlag;
use anyhow::Result;
use clap::{Args, Subcommand};
use oneshot::job::store::{JobStore, TokenRecord};
use oneshot::token::{self, Scope, TokenError};
use std::path::Path;

/// `oneshot token --help`.
const EXAMPLES: &str = "\
Examples:
  oneshot token create --name ana --scope approve     # prints the token once: keep it
  oneshot token create --name ci --scope read --scope operate
  oneshot token list
  oneshot token login ana                              # a one-time sign-in link for a browser
  oneshot token revoke ana                             # it, its links and its sessions end now

Scopes: read (the board, jobs, inbox); operate (suspend, resume, cancel, resubmit; and read);
approve (approve, reject; and read); admin (everything). The store keeps only each token's
SHA-256; an API client sends it as `Authorization: Bearer osk_…`. docs/serve.md says more.";

/// `oneshot token`: the tokens of `oneshot serve`, kept in the job store.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct TokenArgs {
    /// The verb.
    #[command(subcommand)]
    pub command: TokenCommand,
    #[command(flatten)]
    pub flag: StoreFlag,
}

/// The verbs of `oneshot token`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a token and print it, once (only its hash is stored).
    Create(CreateArgs),
    /// List the tokens: name, scopes, when made and by whom, revoked or not.
    List(ListArgs),
    /// Revoke a token: it, its sign-in links and its browser sessions stop working at once.
    Revoke(NameArg),
    /// Print a one-time sign-in link for a token (valid 10 minutes, used once).
    Login(LoginArgs),
}

/// Options of `token create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Its name: the actor the audit trail names for what it does (letters, digits, . _ -).
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// What it may do: read, operate, approve, admin (repeatable or comma-separated).
    #[arg(
        long = "scope",
        value_name = "S",
        value_delimiter = ',',
        required = true
    )]
    pub scopes: Vec<String>,
}

/// Options of `token list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print one JSON object per token.
    #[arg(long)]
    pub json: bool,
}

/// A token's name.
#[derive(Debug, Args)]
pub struct NameArg {
    /// The token's name.
    pub name: String,
}

/// Options of `token login`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The token's name.
    pub name: String,
    /// Where `oneshot serve` is reached, as the browser will open it.
    #[arg(long, value_name = "URL", default_value = token::DEFAULT_URL)]
    pub url: String,
}

/// Runs `oneshot token …`.
pub fn run(args: TokenArgs, files: &Files, state_dir: &Path, quiet: bool) -> Result<i32> {
    let (at, _) = super::store::location(args.flag.store.as_deref(), files, state_dir)?;
    let store = oneshot::job::store::open(&at)
        .map_err(|e| anyhow::Error::new(e).context("open the job store"))?;
    match args.command {
        TokenCommand::Create(a) => create(&*store, a, quiet),
        TokenCommand::List(a) => list(&*store, a),
        TokenCommand::Revoke(a) => revoke(&*store, &a.name, quiet),
        TokenCommand::Login(a) => login(&*store, &a, quiet),
    }
}

/// A library error as the CLI says it: the user's mistakes are usage errors (exit 2).
fn said(doing: &str, e: TokenError) -> anyhow::Error {
    match e {
        TokenError::Store(e) => anyhow::Error::new(e).context(doing.to_string()),
        TokenError::BadName { .. }
        | TokenError::UnknownScope { .. }
        | TokenError::NoScope
        | TokenError::Masked { .. } => usage(format!("{doing}: {e}")),
        e => anyhow::Error::new(e).context(doing.to_string()),
    }
}

fn create(store: &dyn JobStore, a: CreateArgs, quiet: bool) -> Result<i32> {
    let doing = format!("create token {}", a.name);
    let scopes = a
        .scopes
        .iter()
        .map(|w| Scope::parse(w))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| said(&doing, e))?;
    let made = token::create(store, &a.name, &scopes, &oneshot::job::verbs::actor())
        .map_err(|e| said(&doing, e))?;
    // Shown this once, as it is (the redactor masks it everywhere else).
    crate::cli::out::secret_line(&made.token);
    if !quiet {
        errln!(
            "token {} ({}): shown this once; only its hash is kept. Send it as \
             `Authorization: Bearer …`, or sign a browser in with `oneshot token login {}`. \
             Keep it out of agents' reach (oneshot never passes ONESHOT_TOKEN, nor any \
             variable holding a token, to an agent).",
            made.record.name,
            made.record.scopes.join(", "),
            made.record.name
        );
    }
    Ok(exit::OK)
}

/// One token as `token list --json` prints it.
#[derive(serde::Serialize)]
struct Row<'a> {
    name: &'a str,
    scopes: &'a [String],
    created_at: String,
    created_by: &'a str,
    revoked_at: Option<String>,
}

fn list(store: &dyn JobStore, a: ListArgs) -> Result<i32> {
    let tokens: Vec<TokenRecord> = token::list(store).map_err(|e| said("list the tokens", e))?;
    let at = crate::cli::show::rfc3339;
    if a.json {
        for t in &tokens {
            let row = Row {
                name: &t.name,
                scopes: &t.scopes,
                created_at: at(t.created_ms),
                created_by: &t.created_by,
                revoked_at: t.revoked_ms.map(at),
            };
            outln!("{}", serde_json::to_string(&row)?);
        }
        return Ok(exit::OK);
    }
    if tokens.is_empty() {
        errln!("no tokens; `oneshot token create --name NAME --scope read` makes one");
        return Ok(exit::OK);
    }
    outln!(
        "{:<24}  {:<24}  {:<24}  {:<12}  REVOKED",
        "NAME",
        "SCOPES",
        "CREATED",
        "BY"
    );
    for t in &tokens {
        outln!(
            "{:<24}  {:<24}  {:<24}  {:<12}  {}",
            t.name,
            t.scopes.join(","),
            at(t.created_ms),
            t.created_by,
            t.revoked_ms.map_or_else(|| "-".to_string(), at)
        );
    }
    Ok(exit::OK)
}

fn revoke(store: &dyn JobStore, name: &str, quiet: bool) -> Result<i32> {
    let t = token::revoke(store, name).map_err(|e| said(&format!("revoke token {name}"), e))?;
    if !quiet {
        outln!(
            "token {}: revoked at {}; its sign-in links and browser sessions ended with it",
            t.name,
            crate::cli::show::rfc3339(t.revoked_ms.unwrap_or_default())
        );
    }
    Ok(exit::OK)
}

fn login(store: &dyn JobStore, a: &LoginArgs, quiet: bool) -> Result<i32> {
    let url = a.url.trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(usage(format!(
            "token login {}: --url {url:?} is not an http:// or https:// URL; give where \
             `oneshot serve` is reached, e.g. {}",
            a.name,
            token::DEFAULT_URL
        )));
    }
    let code = token::login_code(store, &a.name)
        .map_err(|e| said(&format!("make a sign-in link for token {}", a.name), e))?;
    crate::cli::out::secret_line(&code.link(url));
    if !quiet {
        errln!(
            "open it in a browser within 10 minutes; it works once, and signs the browser in \
             as token {}",
            a.name
        );
    }
    Ok(exit::OK)
}
