//! A policy cannot bloat the state file or the log: hook errors, reasons, vetoes, log lines and
//! prompts are capped, whatever size the policy returns.

use super::script::{Driver, Run, policy};
use crate::machine::SessionState;
use crate::session::decide::{MAX_HOOK_ERROR, MAX_HOOK_TEXT, cap};

/// The session's state file and the records of its log, in bytes.
fn written(d: &Driver) -> (usize, usize) {
    let state = serde_json::to_vec(&d.session).unwrap().len();
    let records = d
        .records
        .iter()
        .map(|r| serde_json::to_vec(r).unwrap().len())
        .sum();
    (state, records)
}

#[test]
fn a_ten_megabyte_error_is_cut() {
    // Building ten megabytes takes longer than the default 100 ms budget on a loaded machine:
    // the test is about the cap, not the budget.
    let p = crate::policy::PolicyHost::from_source(
        "test.lua",
        "return { verdict = function() error(string.rep('x', 10 * 1024 * 1024)) end }",
        crate::policy::PolicyOptions {
            hook_budget: std::time::Duration::from_secs(10),
            ..Default::default()
        },
    )
    .unwrap();
    let mut d = Driver::new(p, "t", [Run::Exit(0, "w"), Run::Exit(0, "VERDICT: DONE")]);
    assert_eq!(d.run().unwrap().state, SessionState::Failed);
    let (state, records) = written(&d);
    assert!(state < 64 * 1024, "state file {state} bytes");
    assert!(records < 64 * 1024, "log records {records} bytes");
    let reason = d.session.last_reason().unwrap().to_string();
    assert!(
        reason.contains("more bytes cut"),
        "{}",
        reason.chars().take(200).collect::<String>()
    );
}

#[test]
fn huge_reasons_vetoes_and_log_lines_are_cut() {
    let p = policy(
        r#"local big = string.rep("y", 10 * 1024 * 1024)
        return {
          verdict = function(output, ctx)
            oneshot.log("info", big)
            if ctx.iteration < 2 then return "retry", big end
            return "done", big
          end,
          guards = { ["REITERATION_PENDING -> WORKER_EXECUTING"] = function() return true end },
        }"#,
    );
    let runs = [
        Run::Exit(0, "w"),
        Run::Exit(0, "a"),
        Run::Exit(0, "w"),
        Run::Exit(0, "a"),
    ];
    let mut d = Driver::new(p, "t", runs);
    assert_eq!(d.run().unwrap().state, SessionState::Completed);
    let (state, records) = written(&d);
    // The critique is kept up to the cap (it goes into the next prompt and the history).
    assert!(state < 6 * MAX_HOOK_TEXT, "state file {state} bytes");
    assert!(records < 40 * MAX_HOOK_TEXT, "log records {records} bytes");

    let veto = policy(&format!(
        r#"return {{ guards = {{ ["WORKER_EXECUTING -> AUDIT_PENDING"] = function()
             return false, string.rep("z", {}) end }} }}"#,
        10 * 1024 * 1024
    ));
    let mut d = Driver::new(veto, "t", [Run::Exit(0, "w")]);
    assert_eq!(d.run().unwrap().state, SessionState::Failed);
    assert!(written(&d).0 < 2 * MAX_HOOK_TEXT);
}

#[test]
fn cap_cuts_at_a_character_boundary_and_says_so() {
    assert_eq!(cap("short".into(), 10), "short");
    let cut = cap("é".repeat(10), 5);
    assert!(cut.starts_with("éé") && !cut.starts_with("ééé"), "{cut}");
    assert!(cut.ends_with("[16 more bytes cut]"), "{cut}");
    assert!(cap("x".repeat(MAX_HOOK_ERROR * 3), MAX_HOOK_ERROR).len() < MAX_HOOK_ERROR + 40);
}

/// Every hook failure names a file and line: where Lua could not place the error (a bad return
/// value, a budget, an error raised without a position), the hook's own definition stands in.
#[test]
fn every_hook_error_names_a_file_and_line() {
    use crate::session::{Decide, PolicyJudge};
    let source = "return {\n\
        verdict = function() return 42 end,\n\
        next_prompt = function() error({}) end,\n\
        audit_prompt = function() error('no position', 0) end,\n\
        salvage = function() while true do end end,\n\
        on_transition = function() error('placed by lua') end,\n\
      }";
    let host = crate::policy::PolicyHost::from_source(
        "p.lua",
        source,
        crate::policy::PolicyOptions {
            hook_budget: std::time::Duration::from_millis(20),
            ..Default::default()
        },
    )
    .unwrap();
    let redactor = crate::pipeline::Redactor::new(&[], Vec::new()).unwrap();
    let mut judge = PolicyJudge::new(&host, 1, &redactor);
    let ctx = host_ctx();
    let evidence = crate::process::Evidence::default();
    let errors = [
        judge.verdict("out", &ctx).result.unwrap_err(),
        judge.next_prompt(&ctx).result.unwrap_err(),
        judge.audit_prompt(&ctx).result.unwrap_err(),
        judge.salvage(&evidence, &ctx).result.unwrap_err(),
        judge
            .on_transition(SessionState::Created, SessionState::WorkerExecuting, &ctx)
            .result
            .unwrap_err(),
    ];
    let want = ["p.lua:2", "p.lua:3", "p.lua:4", "p.lua:5", "p.lua:6"];
    for (e, line) in errors.iter().zip(want) {
        assert!(e.message.contains(line), "{line}: {}", e.message);
    }
    // Lua's own position is not doubled by the definition site.
    assert!(
        !errors[4].message.contains("defined at"),
        "{}",
        errors[4].message
    );
}

fn host_ctx() -> crate::policy::HookCtx {
    let p = crate::policy::PolicyHost::builtin();
    super::script::new_session(&p, "t").hook_ctx(0)
}
