//! Admission by memory (`job run --reserve`, [`crate::sandbox::admission`]): whether the
//! runner may claim another step now, and the notes that say when it holds back and resumes.

use super::{Note, RunnerOptions, drive};
use crate::job::store::{JobStore, RunnerBeat, RunnerWait};
use std::sync::Arc;

/// Whether the runner may claim now under its reserve; says when it starts holding back (with
/// the jobs held) and when it resumes, to the runner's notes and in its row of the store
/// (`beat.waiting`, written at once when it starts or stops waiting; the heartbeat keeps the
/// figures fresh). `holding` is whether it held back at the last look; it stays true while
/// jobs wait, and false once none does (so a run with nothing left ends).
pub(super) async fn admit(
    store: &Arc<dyn JobStore>,
    opts: &RunnerOptions,
    holding: &mut bool,
    beat: &mut RunnerBeat,
) -> bool {
    use crate::sandbox::admission::Admission;
    let Some(reserve) = opts.reserve else {
        return true;
    };
    match reserve.admits() {
        Admission::Go => {
            if beat.waiting.take().is_some() {
                super::say_alive(store, beat).await;
            }
            if std::mem::take(holding)
                && let Some(available) = crate::sandbox::admission::available_memory()
            {
                (opts.on_note)(&Note::MemoryFreed {
                    available,
                    reserve: reserve.0,
                });
            }
            true
        }
        Admission::Wait { available, reserve } => {
            let filter = crate::job::store::ListFilter {
                state: Some(crate::job::JobState::Pending),
            };
            let held = drive::off_loop(store, move |s| s.list(&filter).map(|l| l.len()))
                .await
                .unwrap_or(1);
            if held > 0 && !*holding {
                (opts.on_note)(&Note::MemoryLow {
                    available,
                    reserve,
                    held,
                });
            }
            *holding = held > 0;
            let was = beat.waiting.is_some();
            beat.waiting = (held > 0).then_some(RunnerWait::Memory { available, reserve });
            if was != beat.waiting.is_some() {
                super::say_alive(store, beat).await;
            }
            false
        }
    }
}
