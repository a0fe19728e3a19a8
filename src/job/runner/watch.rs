//! What a runner decides while an effect of a step is in flight, in nextest's shape: the
//! `select!` of [`super::drive`] only turns what it hears — the heartbeat's tick, a renewal's
//! answer, the lease about to lapse, the shutdown switch — into an [`Input`], and
//! [`Watch::on`] decides, synchronously, what to do about it. No clock, no runtime, no store:
//! the instants are given, so every rule here is tested without either.
//!
//! The rules: renew at each beat, one renewal at a time; a renewal refused because another
//! runner holds the job (or it is gone) ends the step as lost, killing the session's agent —
//! unless the effect in flight puts the job to rest, whose save hands the lease back itself;
//! no renewal through for a ttl less a margin ends the step as failed, killing the agent (the
//! runner cannot know whether it was fenced); the shutdown switch is passed on to the session.
//! A backoff wait ends at once; any other effect is let finish (a killed session ends in
//! moments) and nothing more is written.

use super::Halt;
use crate::job::store::JobStoreError;
use std::time::Duration;
use tokio::time::Instant;

/// Why a step stopped before its job rested.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Stop {
    /// The job is no longer this runner's: a human canceled it, another runner took it over.
    Lost(String),
    /// This runner could not go on (see [`super::Ended::Failed`]).
    Failed(String),
    /// The runner was asked to stop (see [`super::Ended::Paused`]).
    Halted,
}

impl Stop {
    /// What a store error that refused one of this runner's writes means for the step.
    pub(super) fn from_store(e: &JobStoreError) -> Stop {
        match e {
            JobStoreError::Fenced { .. } | JobStoreError::NotFound { .. } => {
                Stop::Lost(e.to_string())
            }
            // The disk is full, the store is locked or broken: the lease is still this
            // runner's, and the job is as it last saved it. Said with its cause (SQLite's or
            // the OS's words).
            _ => Stop::Failed(crate::error::chain(e)),
        }
    }
}

/// What the step's loop heard while an effect was in flight.
#[derive(Debug)]
pub(super) enum Input {
    /// The heartbeat's interval ticked.
    Beat,
    /// The renewal sent at the last [`Response::Renew`] came back.
    Renewed(Result<(), JobStoreError>),
    /// The renewal's task panicked: it said nothing about the lease.
    RenewalPanicked(String),
    /// The instant [`Watch::lapse_at`] named came.
    Lapsing,
    /// The runner's shutdown switch moved.
    Halt(Halt),
}

/// What the loop does about an [`Input`].
#[derive(Debug, PartialEq)]
pub(super) enum Response {
    /// Nothing.
    Nothing,
    /// Send a renewal of the lease now.
    Renew,
    /// Say this (a warning) and carry on: the next beat tries again.
    Warn(String),
    /// Tell the running session: [`Halt::Stop`] pauses it, [`Halt::Kill`] kills its agent.
    Tell(Halt),
    /// The step ends with `stop`. `tell` goes to the running session first; `now` ends the
    /// effect in flight at once (a wait), else it is let finish and nothing more is written.
    End {
        /// Why the step ends.
        stop: Stop,
        /// What the running session is told.
        tell: Option<Halt>,
        /// Cut the effect in flight short.
        now: bool,
    },
}

/// The lease and the switch as one step's loop sees them.
#[derive(Debug)]
pub(super) struct Watch {
    /// The job, for what is said.
    job: String,
    /// The lease's time to live.
    ttl: Duration,
    /// How long before the lease's end (from the last renewal through) the step gives up.
    margin: Duration,
    /// When the last renewal that went through was sent (the claim's, at first): the lease
    /// lasts a ttl from then at least.
    renewed_from: Instant,
    /// When the renewal in flight was sent, if one is.
    renewing: Option<Instant>,
    /// The lease may have lapsed: said once.
    lapsed: bool,
    /// The effect in flight puts the job to rest (its save hands the lease back).
    resting: bool,
    /// The effect in flight is a backoff wait.
    waiting: bool,
}

impl Watch {
    /// A watch over job `job`'s lease of `ttl`, claimed at `now`.
    pub fn new(job: &str, ttl: Duration, now: Instant) -> Watch {
        Watch {
            job: job.to_owned(),
            ttl,
            margin: (ttl / 10).min(Duration::from_secs(1)),
            renewed_from: now,
            renewing: None,
            lapsed: false,
            resting: false,
            waiting: false,
        }
    }

    /// A new effect is in flight: a save that puts the job to rest (`resting`), a backoff
    /// wait (`waiting`), or neither.
    pub fn flight(&mut self, resting: bool, waiting: bool) {
        self.resting = resting;
        self.waiting = waiting;
    }

    /// Whether a renewal is in flight (the heartbeat does not tick meanwhile).
    pub fn renewing(&self) -> bool {
        self.renewing.is_some()
    }

    /// When to hear [`Input::Lapsing`]: a ttl less the margin after the last renewal through;
    /// `None` once said, or while the effect in flight puts the job to rest.
    pub fn lapse_at(&self) -> Option<Instant> {
        (!self.lapsed && !self.resting).then(|| self.renewed_from + self.ttl - self.margin)
    }

    /// Decides what to do about `input`, heard at `now`.
    pub fn on(&mut self, now: Instant, input: Input) -> Response {
        match input {
            Input::Beat if self.renewing() => Response::Nothing,
            Input::Beat => {
                self.renewing = Some(now);
                Response::Renew
            }
            Input::Renewed(answer) => {
                let sent = self.renewing.take();
                match answer {
                    Ok(()) => {
                        if let Some(sent) = sent {
                            self.renewed_from = sent;
                        }
                        Response::Nothing
                    }
                    Err(JobStoreError::Fenced { .. }) if self.resting => Response::Nothing,
                    Err(JobStoreError::Fenced { .. } | JobStoreError::NotFound { .. }) => {
                        self.end(Stop::Lost(format!(
                            "lost the lease on job {}: a human canceled it or another runner \
                             took it over; its session was stopped",
                            self.job
                        )))
                    }
                    // A busy or briefly unreadable store: try again at the next beat, while
                    // the lease still has two thirds of its life.
                    Err(e) => Response::Warn(format!("heartbeat of job {}: {e}", self.job)),
                }
            }
            Input::RenewalPanicked(e) => {
                self.renewing = None;
                Response::Warn(format!("heartbeat of job {}: {e}", self.job))
            }
            Input::Lapsing => {
                self.lapsed = true;
                self.end(Stop::Failed(format!(
                    "could not renew the lease on job {} for {} (the store did not answer in \
                     time, or this runner was stopped): its lease may have lapsed and another \
                     runner may hold the job, so its agents were stopped and nothing more is \
                     written; once the lease expires the next runner's claim recovers the job",
                    self.job,
                    humantime::format_duration(self.ttl)
                )))
            }
            Input::Halt(Halt::Run) => Response::Nothing,
            Input::Halt(halt) if self.waiting => Response::End {
                stop: Stop::Halted,
                tell: Some(halt),
                now: true,
            },
            Input::Halt(halt) => Response::Tell(halt),
        }
    }

    /// The step ends with `stop`, killing the session's agent.
    fn end(&self, stop: Stop) -> Response {
        Response::End {
            stop,
            tell: Some(Halt::Kill),
            now: self.waiting,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(30);

    fn watch() -> (Watch, Instant) {
        let t0 = Instant::now();
        (Watch::new("job-a", TTL, t0), t0)
    }

    fn fenced() -> JobStoreError {
        JobStoreError::Fenced {
            id: "job-a".into(),
            fence: 3,
        }
    }

    #[test]
    fn a_beat_renews_once_until_the_renewal_answers() {
        let (mut w, t0) = watch();
        assert_eq!(w.on(t0, Input::Beat), Response::Renew);
        assert!(w.renewing());
        assert_eq!(w.on(t0, Input::Beat), Response::Nothing);
        assert_eq!(w.on(t0, Input::Renewed(Ok(()))), Response::Nothing);
        assert!(!w.renewing());
        assert_eq!(w.on(t0, Input::Beat), Response::Renew);
    }

    #[test]
    fn the_lease_lapses_a_ttl_less_the_margin_after_the_last_renewal_sent_that_went_through() {
        let (mut w, t0) = watch();
        assert_eq!(w.lapse_at(), Some(t0 + TTL - Duration::from_secs(1)));
        let sent = t0 + Duration::from_secs(10);
        w.on(sent, Input::Beat);
        // Answered late: the lease runs from when it was sent, not from the answer.
        w.on(sent + Duration::from_secs(5), Input::Renewed(Ok(())));
        assert_eq!(w.lapse_at(), Some(sent + TTL - Duration::from_secs(1)));
        // A short lease keeps a tenth of itself.
        let w = Watch::new("job-a", Duration::from_secs(2), t0);
        assert_eq!(w.lapse_at(), Some(t0 + Duration::from_millis(1800)));
    }

    #[test]
    fn a_refused_renewal_loses_the_job_and_kills_its_session() {
        let (mut w, t0) = watch();
        w.on(t0, Input::Beat);
        let Response::End { stop, tell, now } = w.on(t0, Input::Renewed(Err(fenced()))) else {
            panic!("the step goes on");
        };
        assert!(matches!(&stop, Stop::Lost(why) if why.contains("lost the lease on job job-a")));
        assert_eq!(tell, Some(Halt::Kill));
        assert!(!now, "a session is let finish: killed, it ends in moments");
        // A wait is cut short.
        w.flight(false, true);
        w.on(t0, Input::Beat);
        let gone = JobStoreError::NotFound { id: "job-a".into() };
        assert!(matches!(
            w.on(t0, Input::Renewed(Err(gone))),
            Response::End {
                stop: Stop::Lost(_),
                now: true,
                ..
            }
        ));
    }

    #[test]
    fn a_refused_renewal_while_the_job_is_put_to_rest_is_the_save_handing_the_lease_back() {
        let (mut w, t0) = watch();
        w.flight(true, false);
        w.on(t0, Input::Beat);
        assert_eq!(w.on(t0, Input::Renewed(Err(fenced()))), Response::Nothing);
        assert_eq!(w.lapse_at(), None, "a resting save does not lapse");
    }

    #[test]
    fn a_busy_store_is_a_warning_and_the_next_beat_tries_again() {
        let (mut w, t0) = watch();
        w.on(t0, Input::Beat);
        let busy = JobStoreError::Db {
            path: "jobs.db".into(),
            message: "database is locked".into(),
            source: None,
        };
        assert!(
            matches!(w.on(t0, Input::Renewed(Err(busy))), Response::Warn(w) if w.contains("job-a"))
        );
        assert_eq!(w.lapse_at(), Some(t0 + TTL - Duration::from_secs(1)));
        assert_eq!(w.on(t0, Input::Beat), Response::Renew);
        assert!(matches!(
            w.on(t0, Input::RenewalPanicked("boom".into())),
            Response::Warn(_)
        ));
        assert_eq!(w.on(t0, Input::Beat), Response::Renew);
    }

    #[test]
    fn lapsing_fails_the_step_once_and_kills_the_session() {
        let (mut w, _) = watch();
        let at = w.lapse_at().unwrap();
        let Response::End { stop, tell, .. } = w.on(at, Input::Lapsing) else {
            panic!("the step goes on");
        };
        assert!(
            matches!(&stop, Stop::Failed(why) if why.contains("could not renew the lease on job job-a for 30s"))
        );
        assert_eq!(tell, Some(Halt::Kill));
        assert_eq!(w.lapse_at(), None, "said once");
    }

    #[test]
    fn the_switch_is_passed_to_the_session_and_cuts_a_wait_short() {
        let (mut w, t0) = watch();
        assert_eq!(w.on(t0, Input::Halt(Halt::Run)), Response::Nothing);
        assert_eq!(
            w.on(t0, Input::Halt(Halt::Stop)),
            Response::Tell(Halt::Stop)
        );
        assert_eq!(
            w.on(t0, Input::Halt(Halt::Kill)),
            Response::Tell(Halt::Kill)
        );
        w.flight(false, true);
        assert!(matches!(
            w.on(t0, Input::Halt(Halt::Stop)),
            Response::End {
                stop: Stop::Halted,
                tell: Some(Halt::Stop),
                now: true
            }
        ));
    }
}
