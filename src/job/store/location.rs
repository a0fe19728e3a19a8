//! Where a job store is: a SQLite file (one machine), or a PostgreSQL database (a fleet),
//! chosen by what `--store`, `store = "…"` in oneshot.toml or `ONESHOT_STORE` says. A
//! database URL's password is a secret: it is never shown (`postgres://ann:[REDACTED]@db/jobs`),
//! and when the URL has none it is read as libpq reads it — `PGPASSWORD`, then the password
//! file (`PGPASSFILE`, else `~/.pgpass`). A build without the `postgres` feature knows a URL
//! when it sees one, and refuses it ([`NO_POSTGRES`]).

use std::fmt;
use std::path::{Path, PathBuf};

/// What a build without the `postgres` feature says of a PostgreSQL store.
pub const NO_POSTGRES: &str = "this build has no PostgreSQL support (built without the \
     `postgres` feature); use a SQLite file, or a oneshot built with it";

/// A job store's location.
#[derive(Clone)]
#[non_exhaustive]
pub enum StoreLocation {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database.
    Postgres(Box<PgUrl>),
}

impl StoreLocation {
    /// Reads `text`: a `postgres://` or `postgresql://` URL, else a file path (relative paths
    /// against `base`).
    pub fn parse(text: &str, base: &Path) -> Result<StoreLocation, String> {
        let t = text.trim();
        if t.starts_with("postgres://") || t.starts_with("postgresql://") {
            return PgUrl::parse(t).map(|u| StoreLocation::Postgres(Box::new(u)));
        }
        if t.contains("://") {
            let scheme = t.split("://").next().unwrap_or_default();
            return Err(format!(
                "store {scheme}://…: oneshot keeps jobs in a SQLite file (give its path) or in \
                 PostgreSQL (postgres://USER@HOST/DB)"
            ));
        }
        if t.is_empty() {
            return Err("the store is empty: give a file path or a postgres:// URL".into());
        }
        Ok(StoreLocation::File(base.join(t)))
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::File(p) => write!(f, "{}", p.display()),
            StoreLocation::Postgres(u) => u.fmt(f),
        }
    }
}

impl fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A PostgreSQL URL: the client's configuration (password included) and the URL as it may be
/// shown (password masked).
#[derive(Clone)]
pub struct PgUrl {
    #[cfg(feature = "postgres")]
    pub(crate) config: postgres::Config,
    shown: String,
}

impl PgUrl {
    /// Parses `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?host=/socket/dir&…]`),
    /// filling in a password the URL lacks from `PGPASSWORD` or the password file. Without
    /// the `postgres` feature, every URL is refused with [`NO_POSTGRES`].
    #[cfg(not(feature = "postgres"))]
    pub fn parse(url: &str) -> Result<PgUrl, String> {
        Err(format!("store {}: {NO_POSTGRES}", mask(url)))
    }

    /// Parses `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?host=/socket/dir&…]`),
    /// filling in a password the URL lacks from `PGPASSWORD` or the password file.
    #[cfg(feature = "postgres")]
    pub fn parse(url: &str) -> Result<PgUrl, String> {
        let shown = mask(url);
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| format!("store {shown}: not a PostgreSQL URL ({e})"))?;
        if config.get_dbname().is_none() {
            return Err(format!(
                "store {shown}: name the database (postgres://USER@HOST/DB)"
            ));
        }
        if config.get_password().is_none()
            && let Some(p) = password_for(&config, |k| std::env::var_os(k))
        {
            config.password(p);
        }
        Ok(PgUrl { config, shown })
    }

    /// The URL as shown: its password masked.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

impl fmt::Display for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

/// `url` with the password between `user:` and `@` replaced, and a `password=` parameter's
/// value too.
fn mask(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://") {
        let rest = scheme_end + 3;
        let authority_end = out[rest..].find(['/', '?']).map_or(out.len(), |i| rest + i);
        if let Some(at) = out[rest..authority_end].rfind('@').map(|i| rest + i)
            && let Some(colon) = out[rest..at].find(':').map(|i| rest + i)
        {
            out.replace_range(colon + 1..at, crate::pipeline::REDACTED);
        }
    }
    if let Some(i) = out.find("password=") {
        let start = i + "password=".len();
        let end = out[start..].find('&').map_or(out.len(), |j| start + j);
        out.replace_range(start..end, crate::pipeline::REDACTED);
    }
    out
}

/// The password libpq would use for `config` when the URL has none: `PGPASSWORD`, else the
/// first matching line of the password file (`PGPASSFILE`, else `~/.pgpass`).
#[cfg(feature = "postgres")]
fn password_for(
    config: &postgres::Config,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Option<String> {
    if let Some(p) = env("PGPASSWORD").and_then(|p| p.into_string().ok()) {
        return Some(p);
    }
    let file = env("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let text = std::fs::read_to_string(file).ok()?;
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        // libpq matches a Unix socket against `localhost`.
        _ => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let db = config.get_dbname().unwrap_or_default().to_string();
    let user = config.get_user().unwrap_or_default().to_string();
    pgpass_lookup(&text, [&host, &port, &db, &user])
}

/// The password of the first line of a `.pgpass` text whose four fields match `want` (`*`
/// matches anything; `\:` and `\\` are escapes).
#[cfg(feature = "postgres")]
fn pgpass_lookup(text: &str, want: [&str; 4]) -> Option<String> {
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() != 5 {
            continue;
        }
        if fields[..4]
            .iter()
            .zip(want)
            .all(|(f, w)| f == "*" || f == w)
        {
            return Some(fields[4].clone());
        }
    }
    None
}

#[cfg(feature = "postgres")]
fn split_pgpass(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(n), Some(s)) = (chars.next(), out.last_mut()) {
                    s.push(n);
                }
            }
            ':' if out.len() < 5 => out.push(String::new()),
            c => {
                if let Some(s) = out.last_mut() {
                    s.push(c);
                }
            }
        }
    }
    out
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            mask("postgres://ann:s3cret-pw@db.example:5432/jobs"),
            "postgres://ann:[REDACTED]@db.example:5432/jobs"
        );
        assert_eq!(
            mask("postgresql://ann@db/jobs?password=hunter22&sslmode=disable"),
            "postgresql://ann@db/jobs?password=[REDACTED]&sslmode=disable"
        );
        assert_eq!(mask("postgres://ann@db/jobs"), "postgres://ann@db/jobs");
        let u = PgUrl::parse("postgres://ann:s3cret-pw@db.example/jobs").unwrap();
        assert!(!u.to_string().contains("s3cret"));
        assert_eq!(u.config.get_password(), Some(&b"s3cret-pw"[..]));
    }

    #[test]
    fn files_and_urls_are_told_apart() {
        let base = Path::new("/p");
        assert!(matches!(
            StoreLocation::parse("jobs.db", base).unwrap(),
            StoreLocation::File(p) if p == Path::new("/p/jobs.db")
        ));
        assert!(matches!(
            StoreLocation::parse("postgres://u@h/d", base).unwrap(),
            StoreLocation::Postgres(_)
        ));
        let e = StoreLocation::parse("mysql://u@h/d", base).unwrap_err();
        assert!(
            e.contains("SQLite file") && e.contains("postgres://"),
            "{e}"
        );
        let e = StoreLocation::parse("postgres://u@h", base).unwrap_err();
        assert!(e.contains("name the database"), "{e}");
    }

    #[test]
    fn the_password_file_is_read_as_libpq_reads_it() {
        let text = "# comment\nother:5432:*:ann:nope\n*:5432:jobs:ann:pa\\:ss\n";
        assert_eq!(
            pgpass_lookup(text, ["db", "5432", "jobs", "ann"]).as_deref(),
            Some("pa:ss")
        );
        assert_eq!(pgpass_lookup(text, ["db", "5433", "jobs", "ann"]), None);
        let config: postgres::Config = "postgres://ann@db/jobs".parse().unwrap();
        let env = |k: &str| (k == "PGPASSWORD").then(|| "from-env".into());
        assert_eq!(password_for(&config, env).as_deref(), Some("from-env"));
    }
}
