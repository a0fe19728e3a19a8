//! The live status line's text, and fitting it to the terminal's width.

use super::term::short_id;
use oneshot::engine::Status;
use std::fmt::Write;
use std::time::Duration;
use unicode_width::UnicodeWidthChar;

/// `oneshot 1a2b3c4d · WORKER_EXECUTING · iteration 1/5 · worker 12s · last output 3s ago,
/// silent timeout in 4m57s · time left 9m48s · total 12s`; during a grace period the clocks
/// give way to `stopping…`.
pub fn status_line(s: &Status) -> String {
    let mut line = format!(
        "oneshot {} · {} · iteration {}/{}",
        short_id(&s.session_id),
        s.state,
        s.iteration,
        s.max_iterations,
    );
    if let Some(p) = &s.process {
        let _ = write!(line, " · {} {}", p.role, clock(p.running));
        match p.turn {
            Some(oneshot::agent::Owner::Autonomous) => line.push_str(" · its own turn"),
            // No turn, but a run still going: its background tasks keep it.
            Some(oneshot::agent::Owner::Idle) if !p.stopping => {
                line.push_str(" · background tasks running")
            }
            _ => {}
        }
        if p.stopping {
            line.push_str(" · stopping…");
        } else {
            let _ = write!(line, " · last output {} ago", clock(p.idle));
            if let Some(left) = p.inactivity_left {
                let _ = write!(line, ", silent timeout in {}", clock(left));
            }
            if let Some(left) = p.wall_left {
                let _ = write!(line, " · time left {}", clock(left));
            }
        }
    }
    let _ = write!(line, " · total {}", clock(s.elapsed));
    if let Some(problem) = &s.policy {
        // A load error can span lines (a traceback); the status line is one.
        line.push_str(" · policy: ");
        line.extend(
            problem
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c }),
        );
    }
    line
}

/// A duration as a person reads a clock: `7s`, `4m05s`, `1h02m`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s / 60 % 60),
    }
}

/// `line` cut to fit `width` terminal columns, by display width (a CJK character takes two)
/// and never inside a character, with `…` where it was cut. The last column stays free: a
/// line that fills it makes some terminals wrap, and the next `\r` would clear the wrong line.
pub fn fit(line: &str, width: usize) -> std::borrow::Cow<'_, str> {
    let room = width.saturating_sub(1);
    let mut used = 0;
    for (at, c) in line.char_indices() {
        // The status text has no control characters (see above); count any as one column.
        let w = c.width().unwrap_or(1);
        if used + w > room {
            // Make room for the ellipsis by dropping what overlaps it.
            let mut keep = at;
            while used + 1 > room && keep > 0 {
                let prev = line[..keep].chars().next_back().unwrap_or(' ');
                keep -= prev.len_utf8();
                used -= prev.width().unwrap_or(1);
            }
            return format!("{}…", &line[..keep]).into();
        }
        used += w;
    }
    line.into()
}

#[cfg(test)]
mod tests {
    use super::{clock, fit, status_line};
    use oneshot::engine::Status;
    use oneshot::machine::SessionState;
    use std::time::Duration;
    use unicode_width::UnicodeWidthStr;

    #[test]
    fn clocks_read_like_clocks() {
        assert_eq!(clock(Duration::from_secs(7)), "7s");
        assert_eq!(clock(Duration::from_secs(245)), "4m05s");
        assert_eq!(clock(Duration::from_secs(3720)), "1h02m");
    }

    #[test]
    fn fits_by_width_never_splitting_a_character() {
        assert_eq!(fit("short", 80), "short");
        assert_eq!(fit("abcdefghij", 6), "abcd…");
        let cut = fit("ab漢字漢字漢字", 8);
        assert!(cut.width() <= 7, "{cut}");
        assert!(cut.ends_with('…'));
        assert_eq!(fit("éééééé", 4), "éé…");
        assert_eq!(fit("anything", 0), "…");
    }

    #[test]
    fn a_multi_line_policy_problem_stays_on_one_line() {
        let s = Status {
            session_id: "1a2b3c4d-0000".into(),
            state: SessionState::WorkerExecuting,
            iteration: 1,
            max_iterations: 5,
            elapsed: Duration::from_secs(3),
            idle: Duration::ZERO,
            policy: Some("p.lua:2: bad\nstack traceback:\n\tp.lua:2".into()),
            process: None,
        };
        let line = status_line(&s);
        assert!(!line.contains(['\n', '\t']), "{line:?}");
        assert!(line.starts_with("oneshot 1a2b3c4d · WORKER_EXECUTING · iteration 1/5 · total 3s"));
    }

    #[test]
    fn an_agents_own_turn_and_its_background_wait_are_shown() {
        let status = |turn| Status {
            session_id: "1a2b3c4d-0000".into(),
            state: SessionState::WorkerExecuting,
            iteration: 1,
            max_iterations: 5,
            elapsed: Duration::from_secs(30),
            idle: Duration::ZERO,
            policy: None,
            process: Some(oneshot::engine::ProcessClock {
                role: oneshot::process::Role::Worker,
                running: Duration::from_secs(20),
                idle: Duration::from_secs(2),
                inactivity_left: None,
                wall_left: None,
                stopping: false,
                turn,
            }),
        };
        let own = status_line(&status(Some(oneshot::agent::Owner::Autonomous)));
        assert!(
            own.contains("worker 20s · its own turn · last output"),
            "{own}"
        );
        let waiting = status_line(&status(Some(oneshot::agent::Owner::Idle)));
        assert!(waiting.contains("· background tasks running"), "{waiting}");
        let ours = status_line(&status(Some(oneshot::agent::Owner::Foreground)));
        assert!(
            !ours.contains("turn") && !ours.contains("background"),
            "{ours}"
        );
    }
}
