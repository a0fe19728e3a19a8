//! The result of `policy test`: one entry per case or test function.

use serde::Serialize;

/// One test's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestCase {
    /// The case's `name`, its key in the tests table, or `FILE #N` for unnamed entries.
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// Why it failed (`None` when it passed).
    pub message: Option<String>,
    /// `file:line` of the failure, or of the test's definition when the failure has no line.
    pub location: Option<String>,
}

/// Every test of a policy, in the order they ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestReport {
    /// The tests, policy `tests` first, then the sibling `NAME_test.lua`.
    pub cases: Vec<TestCase>,
}

impl TestReport {
    /// How many passed.
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.passed).count()
    }

    /// How many failed.
    pub fn failed(&self) -> usize {
        self.cases.len() - self.passed()
    }

    /// Exactly `N passed, N failed` (the last line of `oneshot policy test`).
    pub fn summary(&self) -> String {
        format!("{} passed, {} failed", self.passed(), self.failed())
    }

    /// The human report: one line per test (`ok` / `FAIL` with location and message), then
    /// the summary line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for case in &self.cases {
            if case.passed {
                out.push_str(&format!("ok    {}\n", case.name));
            } else {
                let at = case
                    .location
                    .as_ref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default();
                let why = case.message.as_deref().unwrap_or("failed");
                out.push_str(&format!("FAIL  {}{at}: {why}\n", case.name));
            }
        }
        out.push_str(&self.summary());
        out.push('\n');
        out
    }

    /// Each failed test as `name (file:line): message`.
    pub(crate) fn failures(&self) -> Vec<String> {
        self.cases
            .iter()
            .filter(|c| !c.passed)
            .map(|c| {
                let at = c
                    .location
                    .as_ref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default();
                format!(
                    "{}{at}: {}",
                    c.name,
                    c.message.as_deref().unwrap_or("failed")
                )
            })
            .collect()
    }
}

/// `--json`: the counts, the summary line, and every case.
impl Serialize for TestReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            passed: usize,
            failed: usize,
            summary: String,
            cases: &'a [TestCase],
        }
        Json {
            passed: self.passed(),
            failed: self.failed(),
            summary: self.summary(),
            cases: &self.cases,
        }
        .serialize(s)
    }
}
