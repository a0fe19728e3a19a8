//! Past the divergence: the runs the new path asks for that the recording never made are the
//! recorded ones, as they were — the `k`-th start of a role in an iteration gets that
//! iteration's `k`-th recorded run, an iteration the recording never reached gets the last run
//! before it. Each such choice is an assumption the report prints. What the core decides with
//! them is still the core's: the replay answers where the session would have ended.

use super::simulate::Sim;
use crate::process::Role;
use crate::session::{Effect, Event};
use std::collections::HashMap;

/// How many events the replay gives past the divergence at most: the core's own limits end a
/// session long before; this only bounds a policy that never ends one.
const MAX_EVENTS: usize = 100_000;

impl Sim<'_, '_> {
    /// Drives the core from the divergence to its end, recorded runs standing in.
    pub(super) fn stand_in(&mut self) {
        let mut stood: Vec<(Role, u32, u32)> = Vec::new();
        self.drive_standing_in(&mut stood);
        for role in [Role::Worker, Role::Auditor] {
            let of_role: Vec<(u32, u32)> = stood
                .iter()
                .filter(|(r, _, _)| *r == role)
                .map(|&(_, asked, used)| (asked, used))
                .collect();
            if let Some(a) = assumption(role, &of_role) {
                self.out.assumptions.push(a);
            }
        }
    }

    /// Gives the core what it asks for, noting each stand-in as (role, its iteration, the
    /// recorded iteration standing in).
    fn drive_standing_in(&mut self, stood: &mut Vec<(Role, u32, u32)>) {
        let mut starts: HashMap<(Role, u32), usize> = HashMap::new();
        // The run the core is in, by its facts still to give.
        let mut queue: Vec<usize> = Vec::new();
        let mut inspection: Option<usize> = None;
        let mut base = (self.now, self.now);
        for _ in 0..MAX_EVENTS {
            if self.finished {
                return;
            }
            if let Some(i) = queue.first().copied() {
                queue.remove(0);
                let fact = &self.rec.facts[i];
                let ts = base.1 + fact.ts.saturating_sub(base.0);
                if matches!(fact.event, Event::Inspected(_)) {
                    // Given when the core asks for it.
                    inspection = Some(i);
                    continue;
                }
                self.give(ts, fact.event.clone());
                continue;
            }
            match self.pending.clone() {
                Some(Effect::Spawn(spawn)) => {
                    let k = starts.entry((spawn.role, spawn.iteration)).or_default();
                    let Some(run) = self.rec.stand_in(spawn.role, spawn.iteration, *k) else {
                        self.out.stopped = Some(format!(
                            "the {} never ran to an end in the recording: no run stands in for \
                             it in iteration {}",
                            spawn.role, spawn.iteration
                        ));
                        return;
                    };
                    *k += 1;
                    let this = (spawn.role, spawn.iteration, run.iteration);
                    if !stood.contains(&this) {
                        stood.push(this);
                    }
                    let first = &self.rec.facts[run.facts[0]];
                    base = (first.ts, self.now);
                    queue = run.facts.clone();
                    inspection = None;
                }
                Some(Effect::Check { iteration, .. }) => {
                    // The recorded checks of that iteration, else of the last one before it.
                    let found = self
                        .rec
                        .facts
                        .iter()
                        .filter(|f| f.checks_of.is_some_and(|i| i <= iteration))
                        .max_by_key(|f| f.checks_of);
                    let Some(fact) = found else {
                        self.out.stopped = Some(format!(
                            "the checks of iteration {iteration} never ran in the recording: \
                             their results are unknown"
                        ));
                        return;
                    };
                    let event = fact.event.clone();
                    self.give(self.now, event);
                }
                Some(Effect::Inspect { .. }) => {
                    let Some(i) = inspection.take() else {
                        self.out.stopped = Some(format!(
                            "the worker run standing in for iteration {} was never inspected in \
                             the recording: its evidence is unknown",
                            self.session.iteration
                        ));
                        return;
                    };
                    let fact = &self.rec.facts[i];
                    self.give(self.now, fact.event.clone());
                }
                // The core waits for a run's events (they are queued) or nothing: it is done.
                _ => {
                    if !self.finished {
                        self.explain_stop();
                    }
                    return;
                }
            }
        }
        self.out.stopped = Some(format!(
            "the replay gave {MAX_EVENTS} events past the divergence and the session had not \
             ended"
        ));
    }
}

/// The assumption made for `role`, whose iterations (asked, standing in) the recorded runs
/// stood in for: from which iteration its output is taken as recorded, and which recorded run
/// stood in for iterations the recording never reached.
fn assumption(role: Role, stood: &[(u32, u32)]) -> Option<String> {
    let from = stood.iter().map(|&(asked, _)| asked).min()?;
    let mut text = format!("from iteration {from} on, the {role}'s output is taken as recorded");
    let mut others: Vec<String> = Vec::new();
    let mut used: Vec<u32> = stood.iter().map(|&(_, u)| u).collect();
    used.sort_unstable();
    used.dedup();
    for u in used {
        let mut asked: Vec<u32> = stood
            .iter()
            .filter(|&&(a, s)| s == u && a != u)
            .map(|&(a, _)| a)
            .collect();
        if asked.is_empty() {
            continue;
        }
        asked.sort_unstable();
        let span = match (asked.first(), asked.last()) {
            (Some(a), Some(b)) if a == b => format!("iteration {a}"),
            (Some(a), Some(b)) => format!("iterations {a} to {b}"),
            _ => continue,
        };
        others.push(format!(
            "iteration {u}'s run stands in for {span}, never recorded"
        ));
    }
    if others.is_empty() {
        text.push_str(" (each iteration's recorded run, though its prompt now differs)");
    } else {
        text.push_str(": ");
        text.push_str(&others.join("; "));
    }
    Some(text)
}
