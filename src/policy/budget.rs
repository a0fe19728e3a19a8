//! `limits.budget`: per-session budgets read from the agents' own usage reports (turns,
//! tokens, dollars). The engine adds the usage up and enforces the levels; this file parses the
//! table and says which level a usage has reached.

use super::limits::{number, shown, table_keys};
use super::retry::whole;
use super::schema::SchemaError;
use mlua::{Table, Value};

/// The keys a `limits.budget` table may contain.
pub const BUDGET_KEYS: [&str; 3] = ["turns", "tokens", "usd"];

/// Per-session budgets; `None` means no budget for that resource (the default for all three).
/// Recorded with the policy in the session's state ([`crate::session::PolicyRef`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Budget {
    /// Agent turns (model round trips) the whole session may use.
    pub turns: Option<u32>,
    /// Tokens (input plus output, as the agents report them) the whole session may use.
    pub tokens: Option<u64>,
    /// Dollars the whole session may cost, as the agents report it.
    pub usd: Option<f64>,
}

/// What a session has used so far, summed over every agent run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetUse {
    /// Agent turns used.
    pub turns: u32,
    /// Tokens used.
    pub tokens: u64,
    /// Dollars spent.
    pub usd: f64,
}

/// One budgeted resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BudgetResource {
    /// [`Budget::turns`].
    Turns,
    /// [`Budget::tokens`].
    Tokens,
    /// [`Budget::usd`].
    Usd,
}

impl Budget {
    /// `budget` unless it budgets nothing.
    pub fn set(budget: Budget) -> Option<Budget> {
        (budget != Budget::default()).then_some(budget)
    }
}

impl BudgetResource {
    /// `"turns"`, `"tokens"` or `"usd"`, as the policy key is spelt.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetResource::Turns => "turns",
            BudgetResource::Tokens => "tokens",
            BudgetResource::Usd => "usd",
        }
    }
}

/// How close a usage is to its budget: the most severe level over all resources, naming the
/// resource that reached it (the first in turns, tokens, usd order on a tie).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetLevel {
    /// Under 80 % of every budget (or no budget at all).
    Ok,
    /// At least 80 % of this resource's budget: warn.
    Warn80(BudgetResource),
    /// At least 95 % of this resource's budget: warn again.
    Warn95(BudgetResource),
    /// The budget is spent (100 % or more): the session fails with `budget_exceeded`.
    Exceeded(BudgetResource),
}

impl BudgetLevel {
    /// Orders the levels so the most severe one can be picked.
    fn severity(self) -> u8 {
        match self {
            BudgetLevel::Ok => 0,
            BudgetLevel::Warn80(_) => 1,
            BudgetLevel::Warn95(_) => 2,
            BudgetLevel::Exceeded(_) => 3,
        }
    }
}

impl Budget {
    /// Whether any budget is set.
    pub fn is_set(&self) -> bool {
        self.turns.is_some() || self.tokens.is_some() || self.usd.is_some()
    }

    /// The level `used` has reached (see [`BudgetLevel`]).
    pub fn check(&self, used: &BudgetUse) -> BudgetLevel {
        let shares = [
            (
                BudgetResource::Turns,
                self.turns.map(|b| f64::from(used.turns) / f64::from(b)),
            ),
            (
                BudgetResource::Tokens,
                self.tokens.map(|b| used.tokens as f64 / b as f64),
            ),
            (BudgetResource::Usd, self.usd.map(|b| used.usd / b)),
        ];
        let mut worst = BudgetLevel::Ok;
        for (resource, share) in shares {
            let level = match share {
                Some(s) if s >= 1.0 => BudgetLevel::Exceeded(resource),
                Some(s) if s >= 0.95 => BudgetLevel::Warn95(resource),
                Some(s) if s >= 0.8 => BudgetLevel::Warn80(resource),
                _ => BudgetLevel::Ok,
            };
            if level.severity() > worst.severity() {
                worst = level;
            }
        }
        worst
    }

    /// Whether `used` went past a budget (not merely reached it): a run still going is stopped
    /// only then — reaching the budget lets it finish the turn it was allowed, and no run
    /// follows.
    pub fn overrun(&self, used: &BudgetUse) -> bool {
        self.turns.is_some_and(|b| used.turns > b)
            || self.tokens.is_some_and(|b| used.tokens > b)
            || self.usd.is_some_and(|b| used.usd > b)
    }

    /// Reads a `limits.budget` table; unknown keys fail, `false` means no budget.
    pub(crate) fn from_table(table: &Table) -> Result<Budget, SchemaError> {
        let mut budget = Budget::default();
        for (key, value) in table_keys(table, "limits.budget", &BUDGET_KEYS)? {
            let name = format!("limits.budget.{key}");
            if matches!(value, Value::Nil | Value::Boolean(false)) {
                continue;
            }
            match key.as_str() {
                "turns" => budget.turns = Some(whole(&name, &value, 1.0)? as u32),
                "tokens" => budget.tokens = Some(tokens(&name, &value)?),
                _ => budget.usd = Some(usd(&name, &value)?),
            }
        }
        Ok(budget)
    }
}

/// Up to 2^53, where f64 (Lua's number) stops counting exactly.
fn tokens(name: &str, value: &Value) -> Result<u64, SchemaError> {
    const MAX: f64 = 9_007_199_254_740_992.0;
    match number(value) {
        Some(n) if n.fract() == 0.0 && (1.0..=MAX).contains(&n) => Ok(n as u64),
        _ => Err(SchemaError::keyed(
            name,
            format!(
                "{name} must be a whole number of at least 1, not {}",
                shown(value)
            ),
        )),
    }
}

fn usd(name: &str, value: &Value) -> Result<f64, SchemaError> {
    match number(value) {
        Some(n) if n.is_finite() && n > 0.0 => Ok(n),
        _ => Err(SchemaError::keyed(
            name,
            format!(
                "{name} must be a positive number of dollars, not {}",
                shown(value)
            ),
        )),
    }
}
