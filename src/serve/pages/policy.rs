//! The policy a job's sessions ran under, as they recorded it: its file and content hash and
//! its generation from each session's state (the journal its runner shipped: a policy swapped
//! by a hot reload, or changed between two runs of the session, is a new generation), and the
//! last reload that was refused — or waits for trust — from the session's log, with whether a
//! later reload replaced the generation that kept deciding meanwhile.

use super::html::{Esc, w};
use super::time::at;
use crate::session::PolicyRef;
use crate::store::Record;

/// The policy's news in one session's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Reloads {
    /// The last generation swapped in: when, the generation, its hash.
    pub last_swap: Option<(u64, u32, String)>,
    /// The last edit not activated: when, the generation that kept deciding, why.
    pub last_error: Option<(u64, u32, String)>,
}

impl Reloads {
    /// Takes in one record of the log, in order.
    pub(crate) fn record(&mut self, r: &Record) {
        match r {
            Record::PolicyReload(p) => {
                self.last_swap = Some((p.ts, p.generation, p.policy_hash.clone()));
            }
            Record::PolicyReloadFailed(p) => {
                self.last_error = Some((p.ts, p.generation, p.message.clone()));
            }
            Record::PolicyUntrusted(p) => {
                let why = format!("{} changed and waits for trust: {}", p.file, p.message);
                self.last_error = Some((p.ts, 0, why));
            }
            _ => {}
        }
    }
}

/// One session's policy: `policy` from its state (or why that does not read) and its log's
/// reloads.
pub(crate) struct SessionPolicy {
    /// The session.
    pub session: String,
    /// Its state's policy, `None` when no state of it was shipped.
    pub policy: Option<Result<PolicyRef, String>>,
    /// When that state was written (the journal's shipping time).
    pub as_of_ms: Option<u64>,
    /// What its log says of reloads.
    pub reloads: Reloads,
}

/// The job page's policy section: one row per session, the latest first.
pub(crate) fn section(sessions: &[SessionPolicy]) -> String {
    let mut out = String::from("<section class=\"policy\" id=\"policy\">\n<h2>Policy</h2>\n");
    if sessions.is_empty() {
        out.push_str(
            "<p class=\"empty\">No session has run: each session records the policy that \
             decides it.</p>\n</section>\n",
        );
        return out;
    }
    out.push_str(
        "<table class=\"policies\">\n<thead><tr><th>Session</th><th>File</th><th>Hash</th>\
         <th>Generation</th><th>Last reload error</th></tr></thead>\n<tbody>\n",
    );
    for s in sessions.iter().rev() {
        w!(
            out,
            "<tr class=\"session-policy\"><td><a href=\"#session-{0}\"><code>{0}</code></a></td>{1}</tr>\n",
            Esc(&s.session),
            cells(s.policy.as_ref(), s.as_of_ms, &s.reloads)
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
    out
}

/// The file, hash, generation and last-reload-error cells of one session.
pub(crate) fn cells(
    policy: Option<&Result<PolicyRef, String>>,
    as_of_ms: Option<u64>,
    reloads: &Reloads,
) -> String {
    let mut out = String::new();
    match policy {
        Some(Ok(p)) => {
            let as_of = as_of_ms
                .map(|t| format!(" <small>(as of {})</small>", at(t)))
                .unwrap_or_default();
            w!(
                out,
                "<td>{}</td><td><code title=\"{}\">{}</code></td><td class=\"num\">{}{as_of}</td>",
                p.path
                    .as_ref()
                    .map_or("(built-in)".to_string(), |f| format!(
                        "<code>{}</code>",
                        Esc(&f.display().to_string())
                    )),
                Esc(&p.hash),
                Esc(super::forms::short(&p.hash)),
                p.generation
            );
        }
        Some(Err(e)) => w!(
            out,
            "<td colspan=\"3\"><span class=\"badge unknown\">unknown</span> <small>its state \
             does not read: {}</small></td>",
            Esc(e)
        ),
        None => out.push_str(
            "<td colspan=\"3\"><span class=\"badge unknown\">unknown</span> <small>no state \
             of it was shipped yet</small></td>",
        ),
    }
    match &reloads.last_error {
        None => out.push_str("<td><span class=\"none\">none</span></td>"),
        Some((ts, kept, why)) => {
            let kept = if *kept > 0 {
                format!("generation {kept} kept deciding: ")
            } else {
                String::new()
            };
            let since = match &reloads.last_swap {
                Some((t, g, _)) if t >= ts => {
                    format!(
                        " <small>(since replaced: generation {g} at {})</small>",
                        at(*t)
                    )
                }
                _ => String::new(),
            };
            w!(
                out,
                "<td class=\"reload-error\">{} {kept}{}{since}</td>",
                at(*ts),
                Esc(why)
            );
        }
    }
    out
}
