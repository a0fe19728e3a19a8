//! The result of an eval: each case judged from its k answers (pass^k: every one must say what
//! is expected), the summary table people read, and the object `--json` prints.

use super::EvalError;
use super::expect::{Expect, same};
use super::manifest::Case;
use crate::ask::{Answer, AskError};
use serde::Serialize;
use serde_json::Value;
use unicode_width::UnicodeWidthStr;

/// The result of an eval, in the manifest's order.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The manifest, as it was named.
    pub manifest: String,
    /// Runs per case.
    pub k: u32,
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Each case.
    pub cases: Vec<CaseReport>,
}

/// One case's result.
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    /// Its id (`case_id` in `--json`: ids are named for what they are, docs/json.md).
    #[serde(rename = "case_id")]
    pub id: String,
    /// The captured file it read, as the manifest names it.
    pub input: Option<String>,
    /// The schema's label or file.
    pub schema: String,
    /// What was expected, as the table shows it.
    pub want: String,
    /// What was expected: the `want` fields, or the golden file's object (`null` when there
    /// was none yet).
    pub expected: Value,
    /// The golden file, when the case has one.
    pub golden: Option<String>,
    /// Every run's answer, counted: same key (the checked fields), one entry, first seen first.
    pub got: Vec<Count>,
    /// `pass` when all k answers said what was expected (with `--update`: agreed, and the
    /// golden file was written), else `fail`.
    pub status: Status,
    /// Whether `--update` wrote its golden file.
    pub updated: bool,
    /// Each run, in order.
    pub runs: Vec<RunReport>,
}

/// A case's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// All k runs answered as expected.
    Pass,
    /// At least one did not.
    Fail,
}

/// How many runs gave one answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Count {
    /// The answer as the table shows it (`Completed`), or `error` for runs with no answer.
    pub answer: String,
    /// How many runs gave it.
    pub count: usize,
}

/// One run of a case.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Whether its answer said what was expected.
    pub pass: bool,
    /// The answer, when one fit the schema.
    pub answer: Option<Value>,
    /// Why there was none (the target failed, timed out, or never fit the schema).
    pub error: Option<String>,
}

impl CaseReport {
    /// Judges `case` from its runs' results. With `update`, a golden case passes when its k
    /// answers agree, and its file is then written; answers that disagree write nothing.
    pub fn judge(
        case: &Case,
        results: Vec<Result<Answer, AskError>>,
        update: bool,
    ) -> Result<CaseReport, EvalError> {
        let mut expect = case.expect.clone();
        let mut updated = false;
        if update && let Expect::Golden { path, value } = &mut expect {
            let answers: Vec<&Value> = results
                .iter()
                .filter_map(|r| r.as_ref().ok())
                .map(|a| &a.value)
                .collect();
            if answers.len() == results.len() && answers.windows(2).all(|w| same(w[0], w[1])) {
                let new = answers[0].clone();
                let mut text = serde_json::to_string_pretty(&new).unwrap_or_default();
                text.push('\n');
                std::fs::write(&*path, text).map_err(|source| EvalError::Write {
                    path: path.clone(),
                    source,
                })?;
                *value = Some(new);
                updated = true;
            }
        }
        let runs: Vec<RunReport> = results
            .into_iter()
            .map(|r| match r {
                Ok(a) => RunReport {
                    pass: expect.matches(&a.value),
                    answer: Some(a.value),
                    error: None,
                },
                Err(e) => RunReport {
                    pass: false,
                    answer: None,
                    error: Some(e.to_string()),
                },
            })
            .collect();
        let mut got: Vec<(Option<Value>, Count)> = Vec::new();
        for run in &runs {
            let key = run.answer.as_ref().map(|a| expect.key(a));
            match got.iter_mut().find(|(k, _)| match (k, &key) {
                (Some(a), Some(b)) => same(a, b),
                (None, None) => true,
                _ => false,
            }) {
                Some((_, c)) => c.count += 1,
                None => {
                    let answer = key
                        .as_ref()
                        .map(|k| expect.show(&case.schema, k))
                        .unwrap_or_else(|| "error".into());
                    got.push((key, Count { answer, count: 1 }));
                }
            }
        }
        // Under --update a golden case that agreed was written: it passes by agreeing.
        let pass = !runs.is_empty() && runs.iter().all(|r| r.pass);
        let (expected, golden) = match &expect {
            Expect::Fields(f) => (Value::Object(f.clone()), None),
            Expect::Golden { path, value } => (
                value.clone().unwrap_or(Value::Null),
                Some(path.display().to_string()),
            ),
        };
        Ok(CaseReport {
            id: case.id.clone(),
            input: case.input.clone(),
            schema: case.schema.name.clone(),
            want: expect.show_want(&case.schema),
            expected,
            golden,
            got: got.into_iter().map(|(_, c)| c).collect(),
            status: if pass { Status::Pass } else { Status::Fail },
            updated,
            runs,
        })
    }

    /// `Completed x2, Waiting x1`.
    pub fn got_line(&self) -> String {
        self.got
            .iter()
            .map(|c| format!("{} x{}", c.answer, c.count))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Report {
    /// Whether every case passed.
    pub fn all_passed(&self) -> bool {
        self.failed == 0
    }

    /// The seed's summary table (FILE — the captured file a case reads, else its id —, WANT,
    /// GOT, STATUS) and the `N passed, N failed` line.
    pub fn table(&self) -> String {
        let mut rows = vec![[
            "FILE".to_string(),
            "WANT".into(),
            "GOT".into(),
            "STATUS".into(),
        ]];
        for c in &self.cases {
            let status = match c.status {
                Status::Pass if c.updated => "PASS (updated)",
                Status::Pass => "PASS",
                Status::Fail => "FAIL",
            };
            let file = c.input.clone().unwrap_or_else(|| c.id.clone());
            rows.push([file, c.want.clone(), c.got_line(), status.into()]);
        }
        let mut widths = [0usize; 3];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row.iter()) {
                *w = (*w).max(cell.width());
            }
        }
        let mut out = String::new();
        for row in &rows {
            for (cell, w) in row.iter().zip(widths) {
                out.push_str(cell);
                out.push_str(&" ".repeat(w - cell.width() + 2));
            }
            out.push_str(&row[3]);
            out.push('\n');
        }
        out.push_str(&format!("{} passed, {} failed\n", self.passed, self.failed));
        out
    }
}
