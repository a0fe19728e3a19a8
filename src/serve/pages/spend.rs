//! What the agents spent — turns, tokens and dollars, as they reported them — per attempt
//! and per job on a job's page, each drawn against the budget its policy set (a bar a
//! resource), and per day across the store on `/spend`. Dollars are the agents' own
//! estimates and say so. Read from the sessions' journals (their state files as the runners
//! shipped them), the only place the store keeps a session's usage and its policy's budget.

use super::Viewer;
use super::html::{Esc, document, job_link, w};
use super::time::at;
use crate::job::store::{JobStore, JobStoreError, ListFilter, SessionJournal};
use crate::policy::Budget;
use crate::session::Spent;

/// How many days `/spend` shows.
const DAYS: u64 = 14;
const DAY_MS: u64 = 24 * 3600 * 1000;

/// The most jobs `/spend` reads the journals of (the most recently changed first).
const MAX_JOBS: usize = 500;

/// One session's usage and budget, as its journal says.
struct Use {
    session: String,
    spent: Spent,
    budget: Option<Budget>,
    as_of_ms: u64,
}

fn uses(journals: &[SessionJournal]) -> Vec<Use> {
    journals
        .iter()
        .filter_map(|j| {
            let s = j.session().ok()?;
            Some(Use {
                session: j.session.clone(),
                spent: s.agents.spent,
                budget: s.policy.budget,
                as_of_ms: j.shipped_ms,
            })
        })
        .collect()
}

fn add(total: &mut Spent, s: &Spent) {
    total.turns += s.turns;
    total.tokens += s.tokens;
    total.usd += s.usd;
}

/// `$0.1234 (estimate)`, or a dash when no agent reported a cost.
fn dollars(usd: f64) -> String {
    if usd > 0.0 {
        format!("${usd:.4} <small>(estimate)</small>")
    } else {
        "—".into()
    }
}

/// A bar of `used` against `limit`, with the numbers as its text (a `<meter>`: no script).
fn bar(name: &str, used: f64, limit: Option<f64>) -> String {
    match limit {
        Some(l) if l > 0.0 => {
            let pct = used / l * 100.0;
            format!(
                "<label class=\"budget\">{name} <meter min=\"0\" max=\"{l}\" low=\"{}\" high=\"{}\" \
                 optimum=\"0\" value=\"{}\">{pct:.0}%</meter> {pct:.0}%</label>",
                l * 0.8,
                l * 0.95,
                used.min(l)
            )
        }
        _ => String::new(),
    }
}

/// The bars of one session's use against its budget (empty when it has none).
fn bars(spent: &Spent, budget: Option<&Budget>) -> String {
    let Some(b) = budget else {
        return String::new();
    };
    [
        bar("turns", f64::from(spent.turns), b.turns.map(f64::from)),
        bar("tokens", spent.tokens as f64, b.tokens.map(|t| t as f64)),
        bar("dollars (estimate)", spent.usd, b.usd),
    ]
    .concat()
}

/// The job page's section: each attempt's use with its budget bars, and the job's total.
pub(crate) fn section(journals: &[SessionJournal]) -> String {
    let uses = uses(journals);
    let mut out = String::from("<section class=\"spend\">\n<h2>Spending</h2>\n");
    if uses.is_empty() {
        out.push_str("<p class=\"empty\">No session has reported any use yet.</p>\n</section>\n");
        return out;
    }
    out.push_str(
        "<table class=\"spend\">\n<thead><tr><th>Attempt (session)</th><th>Turns</th>\
         <th>Tokens</th><th>Dollars</th><th>Against its budget</th></tr></thead>\n<tbody>\n",
    );
    let mut total = Spent::default();
    for u in &uses {
        add(&mut total, &u.spent);
        let against = bars(&u.spent, u.budget.as_ref());
        w!(
            out,
            "<tr><td><code>{}</code> <small>as of {}</small></td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
            Esc(&u.session),
            at(u.as_of_ms),
            u.spent.turns,
            u.spent.tokens,
            dollars(u.spent.usd),
            if against.is_empty() {
                "<small>no budget set</small>".to_string()
            } else {
                against
            }
        );
    }
    w!(
        out,
        "</tbody>\n<tfoot><tr><th>The job</th><td class=\"num\">{}</td><td class=\"num\">{}</td>\
         <td class=\"num\">{}</td><td><small>budgets are per session (limits.budget)</small></td>\
         </tr></tfoot>\n</table>\n</section>\n",
        total.turns,
        total.tokens,
        dollars(total.usd)
    );
    out
}

/// `/spend`: the agents' use per day over the last [`DAYS`] days, and per job, from the
/// journals of the jobs changed in that time (at most [`MAX_JOBS`] of them, said when cut).
/// A session's use counts on the day of its journal's last shipment.
pub(crate) fn render(store: &dyn JobStore, viewer: &Viewer) -> Result<String, JobStoreError> {
    let now = store.now_ms()?;
    let since = (now / DAY_MS).saturating_sub(DAYS - 1) * DAY_MS;
    let mut jobs: Vec<_> = store
        .list(&ListFilter::default())?
        .into_iter()
        .filter(|j| j.updated_ms >= since)
        .collect();
    jobs.sort_by_key(|j| std::cmp::Reverse(j.updated_ms));
    let cut = jobs.len() > MAX_JOBS;
    jobs.truncate(MAX_JOBS);
    let mut days = vec![(Spent::default(), 0usize); DAYS as usize];
    let mut per_job = Vec::new();
    for j in &jobs {
        let mut total = Spent::default();
        for u in uses(&store.journals(&j.id)?) {
            if u.as_of_ms < since {
                continue;
            }
            let day = ((u.as_of_ms - since) / DAY_MS) as usize;
            if let Some(d) = days.get_mut(day) {
                add(&mut d.0, &u.spent);
                d.1 += 1;
            }
            add(&mut total, &u.spent);
        }
        if total != Spent::default() {
            per_job.push((j.id.clone(), total));
        }
    }
    let mut body = format!(
        "<h1>Spending</h1>\n<p>What the agents reported using over the last {DAYS} days, by the \
         day of each session's last report. Dollars are the agents' own estimates.</p>\n"
    );
    if cut {
        w!(
            body,
            "<p class=\"notice\">Only the {MAX_JOBS} most recently changed jobs are counted.</p>\n"
        );
    }
    body.push_str(
        "<table class=\"spend\">\n<thead><tr><th>Day (UTC)</th><th>Sessions</th><th>Turns</th>\
         <th>Tokens</th><th>Dollars</th></tr></thead>\n<tbody>\n",
    );
    for (i, (s, n)) in days.iter().enumerate().rev() {
        let day = since + i as u64 * DAY_MS;
        w!(
            body,
            "<tr><td>{}</td><td class=\"num\">{n}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
            super::time::rfc3339(day).get(..10).unwrap_or_default(),
            s.turns,
            s.tokens,
            dollars(s.usd)
        );
    }
    body.push_str("</tbody>\n</table>\n<h2>By job</h2>\n");
    if per_job.is_empty() {
        body.push_str("<p class=\"empty\">No agent reported any use in that time.</p>\n");
    } else {
        per_job.sort_by_key(|j| std::cmp::Reverse(j.1.tokens));
        body.push_str(
            "<table class=\"spend\">\n<thead><tr><th>Job</th><th>Turns</th><th>Tokens</th>\
             <th>Dollars</th></tr></thead>\n<tbody>\n",
        );
        for (id, s) in &per_job {
            w!(
                body,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td></tr>\n",
                job_link(id),
                s.turns,
                s.tokens,
                dollars(s.usd)
            );
        }
        body.push_str("</tbody>\n</table>\n");
    }
    Ok(document("Spending", viewer, &body))
}
