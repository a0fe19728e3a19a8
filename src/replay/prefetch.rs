//! Asking the memory system for a recorded question's context before it is needed.
//!
//! A recorded session's contexts are 100,000 small allocations scattered over the heap, and
//! replay compares each one with the simulated core's context once, in order: nearly every
//! string is a cache miss, and the misses were a quarter of a replay's time. Requesting the
//! next questions' lines while the current one is being answered (a hook call, a step) hides
//! most of that wait. A hint only: it changes no result, and does nothing off x86-64.

use super::facts::Recording;
use crate::policy::HookCtx;
use crate::session::Event;
use crate::store::DecisionResult;

/// How many questions ahead each step of the chain is requested: the recorded decision
/// (which holds the pointer to the context), then the context (which holds the pointers to
/// its strings), then the strings. Each step reads pointers the one before brought in.
const DECISION_AHEAD: usize = 6;
const CTX_AHEAD: usize = 4;
const STRINGS_AHEAD: usize = 2;
/// Lines of one string requested at most: the comparison stops at the first difference
/// anyway, and a long prompt's tail is not worth evicting anything for.
const STRING_LINES: usize = 4;
const LINE: usize = 64;

/// Requests the memory the recorded questions after `i` will be compared with (their
/// contexts, their recorded answers).
pub(crate) fn ahead_of(rec: &Recording, i: usize) {
    if let Some(d) = rec.decisions.get(i + DECISION_AHEAD) {
        lines(std::ptr::from_ref(d).cast(), size_of_val(d));
    }
    if let Some(d) = rec.decisions.get(i + CTX_AHEAD) {
        let ctx: &HookCtx = d.input.ctx();
        lines(std::ptr::from_ref(ctx).cast(), size_of::<HookCtx>());
    }
    if let Some(d) = rec.decisions.get(i + STRINGS_AHEAD) {
        let ctx = d.input.ctx();
        let strings = [
            ctx.session_id.as_str(),
            &ctx.task,
            &ctx.worker_prompt,
            &ctx.worker_output,
            &ctx.auditor_output,
            &ctx.workdir,
            ctx.reason.as_deref().unwrap_or_default(),
            ctx.critique.as_deref().unwrap_or_default(),
        ];
        for s in strings {
            string(s);
        }
        // The recorded answer the new one is compared with.
        match &d.result {
            DecisionResult::Prompt(p) => string(p),
            DecisionResult::Verdict(v) => string(v.reason.as_deref().unwrap_or_default()),
            _ => {}
        }
    }
}

/// Requests the memory recorded fact `j` + [`STRINGS_AHEAD`] will be given to the core from
/// (its outputs are copied, its prompt compared), and the fact after it.
pub(crate) fn fact_ahead_of(rec: &Recording, j: usize) {
    if let Some(f) = rec.facts.get(j + CTX_AHEAD) {
        lines(std::ptr::from_ref(f).cast(), size_of_val(f));
    }
    let Some(f) = rec.facts.get(j + STRINGS_AHEAD) else {
        return;
    };
    if let Some((_, _, prompt)) = &f.started {
        string(prompt);
    }
    match &f.event {
        Event::Exited { tail, stdout, .. } => {
            string(tail);
            string(stdout);
        }
        Event::Inspected(evidence) => string(&evidence.output_tail),
        _ => {}
    }
}

/// Requests the first [`STRING_LINES`] lines of `s`.
fn string(s: &str) {
    lines(s.as_ptr(), s.len().min(STRING_LINES * LINE));
}

/// Requests the cache lines of `len` bytes from `at`.
fn lines(at: *const u8, len: usize) {
    for line in 0..len.div_ceil(LINE) {
        hint(at.wrapping_add(line * LINE));
    }
}

#[cfg(target_arch = "x86_64")]
fn hint(p: *const u8) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: SSE is part of x86-64 itself, and a prefetch never faults and reads nothing
    // the program sees, whatever the address.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) };
}

#[cfg(not(target_arch = "x86_64"))]
fn hint(_: *const u8) {}
