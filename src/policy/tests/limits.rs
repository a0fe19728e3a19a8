//! `limits.retry` and `limits.budget`: parsing, defaults, typos, and the budget levels.

use super::super::{Budget, BudgetLevel as L, BudgetResource as R, BudgetUse, Limits, RetryLimits};
use super::{host, load_err};
use std::time::Duration;

#[test]
fn defaults() {
    let l = Limits::default();
    assert_eq!(
        l.retry,
        RetryLimits {
            attempts: 3,
            initial_delay: Duration::from_secs(2),
            factor: 2.0,
            max_delay: Duration::from_secs(60),
        }
    );
    assert_eq!(l.budget, Budget::default());
    assert!(!l.budget.is_set());
    assert_eq!(
        *host("return { limits = { retry = {}, budget = {} } }").limits(),
        l
    );
}

#[test]
fn retry_is_parsed() {
    let h = host(
        "return { limits = { retry = { attempts = 0, initial_delay = '500ms', factor = 1.5, max_delay = 10 } } }",
    );
    let r = h.limits().retry;
    assert_eq!(r.attempts, 0);
    assert_eq!(r.initial_delay, Duration::from_millis(500));
    assert_eq!(r.factor, 1.5);
    assert_eq!(r.max_delay, Duration::from_secs(10));
    // Keys left out keep their defaults.
    let r = host("return { limits = { retry = { attempts = 5 } } }")
        .limits()
        .retry;
    assert_eq!((r.attempts, r.factor), (5, 2.0));
    assert_eq!(r.max_delay, Duration::from_secs(60));
}

#[test]
fn retry_delay_grows_and_is_capped() {
    let r = RetryLimits::default();
    let secs: Vec<u64> = (0..=7).map(|a| r.delay(a).as_secs()).collect();
    assert_eq!(secs, [2, 2, 4, 8, 16, 32, 60, 60]);
    assert_eq!(r.delay(u32::MAX), Duration::from_secs(60));
    let flat = RetryLimits { factor: 1.0, ..r };
    assert_eq!(flat.delay(10), Duration::from_secs(2));
}

#[test]
fn budget_is_parsed() {
    let b = host("return { limits = { budget = { turns = 40, tokens = 2000000, usd = 2.5 } } }")
        .limits()
        .budget;
    assert_eq!(
        b,
        Budget {
            turns: Some(40),
            tokens: Some(2_000_000),
            usd: Some(2.5)
        }
    );
    let b = host("return { limits = { budget = { usd = 1, turns = false } } }")
        .limits()
        .budget;
    assert_eq!((b.turns, b.tokens, b.usd), (None, None, Some(1.0)));
}

#[test]
fn typos_and_bad_values_fail_with_a_line() {
    for (src, line, needle) in [
        (
            "return {\n  limits = {\n    retry = { atempts = 2 },\n  },\n}\n",
            3,
            "unknown key `atempts` in limits.retry; did you mean attempts?",
        ),
        (
            "return {\n  limits = {\n    budget = {\n      token = 5,\n    },\n  },\n}\n",
            4,
            "unknown key `token` in limits.budget; did you mean tokens?",
        ),
        (
            "return {\n  limits = {\n    retri = {},\n  },\n}\n",
            3,
            "did you mean retry?",
        ),
        (
            "return {\n  limits = {\n    retry = 3,\n  },\n}\n",
            3,
            "limits.retry must be a table, not number",
        ),
        (
            "return {\n  limits = {\n    retry = { factor = 0.5 },\n  },\n}\n",
            3,
            "limits.retry.factor must be a number of at least 1, not 0.5",
        ),
        (
            "return {\n  limits = {\n    retry = { attempts = -1 },\n  },\n}\n",
            3,
            "limits.retry.attempts must be a whole number of at least 0, not -1",
        ),
        (
            "return {\n  limits = {\n    retry = { max_delay = 'later' },\n  },\n}\n",
            3,
            "is not a duration",
        ),
        (
            "return {\n  limits = {\n    budget = { turns = 0 },\n  },\n}\n",
            3,
            "limits.budget.turns must be a whole number of at least 1, not 0",
        ),
        (
            "return {\n  limits = {\n    budget = { usd = -2 },\n  },\n}\n",
            3,
            "limits.budget.usd must be a positive number of dollars, not -2",
        ),
        (
            "return {\n  limits = {\n    budget = { tokens = 1.5 },\n  },\n}\n",
            3,
            "limits.budget.tokens must be a whole number",
        ),
    ] {
        let e = load_err(src);
        let text = e.to_string();
        assert!(text.contains(needle), "{src}\n{text}");
        assert_eq!(
            e.location(),
            Some(format!("test.lua:{line}")),
            "{src}\n{text}"
        );
    }
}

#[test]
fn budget_levels() {
    let b = Budget {
        turns: Some(100),
        tokens: Some(1000),
        usd: Some(2.0),
    };
    let used = |turns, tokens, usd| BudgetUse { turns, tokens, usd };
    assert_eq!(b.check(&used(0, 0, 0.0)), L::Ok);
    assert_eq!(b.check(&used(79, 799, 1.59)), L::Ok);
    assert_eq!(b.check(&used(80, 0, 0.0)), L::Warn80(R::Turns));
    assert_eq!(b.check(&used(0, 950, 0.0)), L::Warn95(R::Tokens));
    assert_eq!(b.check(&used(0, 0, 2.0)), L::Exceeded(R::Usd));
    assert_eq!(b.check(&used(0, 5000, 0.0)), L::Exceeded(R::Tokens));
    // The most severe level wins; a tie names the first resource.
    assert_eq!(b.check(&used(85, 960, 0.0)), L::Warn95(R::Tokens));
    assert_eq!(b.check(&used(100, 1000, 0.0)), L::Exceeded(R::Turns));
    assert_eq!(R::Usd.as_str(), "usd");
    // A run still going is stopped past the budget, not at it.
    assert!(!b.overrun(&used(100, 1000, 2.0)));
    assert!(b.overrun(&used(101, 0, 0.0)));
    assert!(b.overrun(&used(0, 0, 2.01)));
    assert!(!Budget::default().overrun(&used(u32::MAX, u64::MAX, 1e9)));
    // No budget: never anything but Ok.
    assert_eq!(
        Budget::default().check(&used(u32::MAX, u64::MAX, 1e9)),
        L::Ok
    );
}

#[test]
fn policy_check_shows_retry_budget_and_continue_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.lua");
    std::fs::write(
        &path,
        "return { limits = { retry = { attempts = 1 }, budget = { turns = 9 } }, continue_conversation = false }",
    )
    .unwrap();
    let report = super::super::check(&path, super::super::PolicyOptions::default()).unwrap();
    assert_eq!(report.limits.retry.attempts, 1);
    assert_eq!(report.limits.retry.max_delay, "1m");
    assert_eq!(report.limits.budget.turns, Some(9));
    assert!(!report.continue_conversation);
    let text = report.render();
    assert!(
        text.contains("retry:      attempts=1 initial_delay=2s factor=2 max_delay=1m\n"),
        "{text}"
    );
    assert!(
        text.contains("budget:     turns=9 tokens=none usd=none\n"),
        "{text}"
    );
    assert!(
        text.contains("options:    continue_conversation=false\n"),
        "{text}"
    );
}
