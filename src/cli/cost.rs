//! What the agents used — turns, tokens, dollars — as people read it: in `status`, `show`, a
//! `list` column and the last line of a run.

use oneshot::session::Spent;

/// `3 turns, 12.4k tokens, $0.0312`: only what was reported; `None` when nothing was (command
/// agents report nothing).
pub fn long(s: &Spent) -> Option<String> {
    if s.is_zero() {
        return None;
    }
    let mut parts = vec![format!(
        "{} turn{}",
        s.turns,
        if s.turns == 1 { "" } else { "s" }
    )];
    if s.tokens > 0 {
        parts.push(format!("{} tokens", count(s.tokens)));
    }
    if s.usd > 0.0 {
        parts.push(dollars(s.usd));
    }
    Some(parts.join(", "))
}

/// The most telling figure, for a column: dollars, else tokens, else turns, else `-`.
pub fn short(s: &Spent) -> String {
    if s.usd > 0.0 {
        dollars(s.usd)
    } else if s.tokens > 0 {
        format!("{} tok", count(s.tokens))
    } else if s.turns > 0 {
        format!("{} turn{}", s.turns, if s.turns == 1 { "" } else { "s" })
    } else {
        "-".to_string()
    }
}

/// `$0.0312` below a dollar (agents bill in fractions of a cent), `$12.40` above.
fn dollars(usd: f64) -> String {
    if usd < 1.0 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

/// `950`, `12.4k`, `3.1M`.
fn count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spent(turns: u32, tokens: u64, usd: f64) -> Spent {
        Spent { turns, tokens, usd }
    }

    #[test]
    fn only_what_was_reported_is_said() {
        assert_eq!(long(&Spent::default()), None);
        assert_eq!(long(&spent(1, 0, 0.0)).unwrap(), "1 turn");
        assert_eq!(
            long(&spent(3, 12_400, 0.03125)).unwrap(),
            "3 turns, 12.4k tokens, $0.0312"
        );
        assert_eq!(short(&spent(3, 12_400, 0.0)), "12.4k tok");
        assert_eq!(short(&spent(3, 12_400, 14.2)), "$14.20");
        assert_eq!(short(&spent(2, 0, 0.0)), "2 turns");
        assert_eq!(short(&Spent::default()), "-");
        assert_eq!(count(3_100_000), "3.1M");
    }
}
