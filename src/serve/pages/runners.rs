//! The board's runners panel: every runner the store knows, *live* or *stale* by the store's
//! clock as `oneshot job runners` says, its last heartbeat's age and the leases it holds.

use super::html::{Esc, job_link, w};
use super::liveness::Fleet;
use super::time::{ago, span};

/// The panel's HTML.
pub(crate) fn panel(fleet: &Fleet) -> String {
    let mut out = String::from("<section class=\"runners\">\n<h2>Runners</h2>\n");
    let rows = match &fleet.runners {
        Ok(rows) => rows,
        Err(e) => {
            w!(
                out,
                "<p><span class=\"badge unknown\">unknown</span> the store did not list its \
                 runners: {}</p>\n</section>\n",
                Esc(e)
            );
            return out;
        }
    };
    if rows.is_empty() {
        out.push_str(
            "<p class=\"empty\">No runners. <code>oneshot job run</code> starts one; it shows \
             here while it runs.</p>\n</section>\n",
        );
        return out;
    }
    let now = match &fleet.now {
        Ok(now) => Some(*now),
        Err(e) => {
            w!(
                out,
                "<p><span class=\"badge unknown\">unknown</span> the store's clock did not \
                 answer ({}): no runner can be judged live or stale.</p>\n",
                Esc(e)
            );
            None
        }
    };
    out.push_str(
        "<table>\n<thead><tr><th>Runner</th><th>Host</th><th>PID</th><th>State</th>\
         <th>Last beat</th><th>Leases</th></tr></thead>\n<tbody>\n",
    );
    for r in rows {
        let (state, beat) = match now {
            Some(now) if r.stale(now) => (
                "<span class=\"badge stale\">stale</span>".to_string(),
                ago(r.beat_ms, now),
            ),
            Some(now) => (
                match &r.waiting {
                    Some(w) => format!(
                        "<span class=\"badge live\">live</span> <small>{}</small>",
                        Esc(&w.to_string())
                    ),
                    None => "<span class=\"badge live\">live</span>".to_string(),
                },
                ago(r.beat_ms, now),
            ),
            None => (
                "<span class=\"badge unknown\">unknown</span>".to_string(),
                super::time::at(r.beat_ms),
            ),
        };
        let leases: Vec<String> = r
            .leases
            .iter()
            .map(|l| {
                let expired = match now {
                    Some(now) if !l.live_at(now) => " <small>(expired)</small>",
                    _ => "",
                };
                format!("{}{expired}", job_link(&l.job))
            })
            .collect();
        w!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{state}</td>\
             <td>{beat} <small>(ttl {})</small></td><td>{}</td></tr>\n",
            Esc(&r.runner),
            Esc(&r.host),
            r.pid,
            span(r.ttl_ms),
            if leases.is_empty() {
                "—".to_string()
            } else {
                leases.join(", ")
            }
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
    out
}
