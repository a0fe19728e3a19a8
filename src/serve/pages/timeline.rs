//! A job's attempts as a timeline: each session the job ran, in the order it ran — its state
//! and iteration from the journal its runner shipped, the artifact version its harvest wrote
//! (outcome, diff stat, verdict, confidence, panel), and its log read as the agents' account
//! ([`super::account`]).

use super::account::Account;
use super::forms::short;
use super::html::{Esc, w};
use super::policy::SessionPolicy;
use super::time::at;
use crate::job::Job;
use crate::job::record::ArtifactVersion;
use crate::job::store::{JobStore, JobStoreError, SessionEntry, SessionJournal};

/// Session entries read per store call.
const PAGE: usize = 1000;

/// The most session entries one page renders; past it the page says what was left out.
const MAX_ENTRIES: usize = 20_000;

/// What the job page takes from its attempts.
pub(crate) struct Timeline {
    /// The timeline's section.
    pub html: String,
    /// The latest artifact (its diff hash is what the forms bind to).
    pub latest: Option<ArtifactVersion>,
    /// Each session's policy, in the order the sessions ran.
    pub policies: Vec<SessionPolicy>,
    /// The last log entry rendered (0: none): where the page's live stream goes on.
    pub last_entry: u64,
    /// The sessions' journals it read (the spending section draws from them too).
    pub journals: Vec<SessionJournal>,
}

/// The timeline's section, the latest artifact, each session's policy, and the last entry.
pub(crate) fn render(store: &dyn JobStore, job: &Job) -> Result<Timeline, JobStoreError> {
    let artifacts = store.artifacts(&job.id)?;
    let journals = store.journals(&job.id)?;
    let (entries, cut) = entries(store, &job.id)?;
    let latest = artifacts.last().cloned();
    let mut policies = Vec::new();

    // Sessions in the order they first wrote, then those known only by a journal or an
    // artifact.
    let mut order: Vec<&str> = Vec::new();
    let known = entries
        .iter()
        .map(|e| e.session.as_str())
        .chain(journals.iter().map(|j| j.session.as_str()))
        .chain(artifacts.iter().filter_map(|a| a.session.as_deref()));
    for s in known {
        if !order.contains(&s) {
            order.push(s);
        }
    }

    let mut out = String::from("<section class=\"timeline\">\n<h2>Attempts</h2>\n");
    if order.is_empty() && artifacts.is_empty() {
        out.push_str("<p class=\"empty\">No attempt yet: no session has run.</p>\n");
    }
    if cut {
        w!(
            out,
            "<p class=\"notice\">Only the first {MAX_ENTRIES} log records are shown; \
             <code>oneshot job log {}</code> prints them all.</p>\n",
            Esc(&job.id)
        );
    }
    for session in &order {
        let journal = journals.iter().find(|j| j.session == *session);
        let mine: Vec<&ArtifactVersion> = artifacts
            .iter()
            .filter(|a| a.session.as_deref() == Some(*session))
            .collect();
        let step = mine
            .first()
            .map(|a| format!("step {} · ", a.step))
            .unwrap_or_default();
        w!(
            out,
            "<article class=\"attempt\" id=\"session-{0}\">\n<h3>{step}session <code>{0}</code></h3>\n",
            Esc(session)
        );
        if let Some(j) = journal {
            out.push_str(&journal_line(j));
        }
        for a in mine {
            out.push_str(&artifact(a));
        }
        let mut account = Account::of(session);
        for e in entries.iter().filter(|e| e.session == *session) {
            account.record(e.seq, &e.record);
        }
        policies.push(SessionPolicy {
            session: (*session).to_string(),
            policy: journal.map(|j| j.session().map(|s| s.policy)),
            as_of_ms: journal.map(|j| j.shipped_ms),
            reloads: account.reloads(),
        });
        out.push_str("<h4>Log</h4>\n");
        out.push_str(&account.finish());
        out.push_str("</article>\n");
    }
    for a in artifacts.iter().filter(|a| a.session.is_none()) {
        w!(
            out,
            "<article class=\"attempt\">\n<h3>step {} · no session recorded</h3>\n{}</article>\n",
            a.step,
            artifact(a)
        );
    }
    out.push_str("</section>\n");
    Ok(Timeline {
        html: out,
        latest,
        policies,
        last_entry: entries.last().map_or(0, |e| e.seq),
        journals,
    })
}

/// The job's session entries, oldest first, at most [`MAX_ENTRIES`]; whether more were left.
fn entries(store: &dyn JobStore, id: &str) -> Result<(Vec<SessionEntry>, bool), JobStoreError> {
    let mut all = Vec::new();
    let mut after = 0;
    loop {
        // One past the most, so a full store is told from one holding exactly the most.
        let want = (MAX_ENTRIES + 1 - all.len()).min(PAGE);
        let page = store.session_entries(id, after, want)?;
        let got = page.len();
        if let Some(last) = page.last() {
            after = last.seq;
        }
        all.extend(page);
        if all.len() > MAX_ENTRIES {
            all.truncate(MAX_ENTRIES);
            return Ok((all, true));
        }
        if got < want {
            return Ok((all, false));
        }
    }
}

/// A session's state as its journal says, or why the journal does not read.
fn journal_line(j: &SessionJournal) -> String {
    match j.session() {
        Ok(s) => format!(
            "<p class=\"journal\"><span class=\"badge session\">{}</span> iteration {}/{} on \
             <code>{}</code> <small>(as of {})</small></p>\n",
            s.state(),
            s.iteration,
            s.max_iterations,
            Esc(&j.runner),
            at(j.shipped_ms)
        ),
        Err(e) => format!(
            "<p class=\"journal\"><span class=\"badge unknown\">unknown</span> on <code>{}</code>: \
             its journal does not read: {}</p>\n",
            Esc(&j.runner),
            Esc(&e)
        ),
    }
}

/// One artifact version: what the attempt produced and how it was judged.
fn artifact(a: &ArtifactVersion) -> String {
    let mut out = format!(
        "<div class=\"artifact\" id=\"v{}\">\n<h4>Artifact v{} <small>{}</small></h4>\n<dl>\n\
         <dt>Outcome</dt><dd>{}</dd>\n",
        a.version,
        a.version,
        at(a.at_ms),
        Esc(&a.outcome)
    );
    let stat = a.diff_stat.trim();
    w!(
        out,
        "<dt>Diff</dt><dd><code title=\"{0}\">{1}</code>{2}</dd>\n",
        Esc(&a.diff_hash),
        Esc(short(&a.diff_hash)),
        if stat.is_empty() {
            " no changes".to_string()
        } else {
            format!("<pre class=\"stat\">{}</pre>", Esc(stat))
        }
    );
    if !a.files.is_empty() {
        out.push_str("<dt>Files</dt><dd><ul class=\"files\">");
        for f in &a.files {
            w!(out, "<li><code>{}</code></li>", Esc(f));
        }
        out.push_str("</ul></dd>\n");
    }
    if let Some(c) = &a.commit {
        w!(out, "<dt>Commit</dt><dd><code>{}</code></dd>\n", Esc(c));
    }
    w!(
        out,
        "<dt>Verdict</dt><dd>{}</dd>\n<dt>Confidence</dt><dd>{}</dd>\n",
        a.verdict
            .as_deref()
            .map_or("—".to_string(), |v| Esc(v).to_string()),
        a.confidence.map_or("—".to_string(), |c| format!("{c:.2}"))
    );
    if !a.panel.is_empty() {
        out.push_str("<dt>Panel</dt><dd><table class=\"panel\"><tbody>");
        for p in &a.panel {
            w!(
                out,
                "<tr><td><code>{}</code></td><td class=\"verdict-{1}\">{1}</td><td>{2}</td><td>{3}</td></tr>",
                Esc(&p.auditor),
                p.verdict.as_str(),
                p.confidence.map_or(String::new(), |c| format!("{c:.2}")),
                Esc(&p.reason)
            );
        }
        out.push_str("</tbody></table></dd>\n");
    }
    if !a.final_message.trim().is_empty() {
        w!(
            out,
            "<dt>Final message</dt><dd><details><summary>the worker's last words</summary>\
             <pre>{}</pre></details></dd>\n",
            Esc(&a.final_message)
        );
    }
    out.push_str("</dl>\n</div>\n");
    out
}
