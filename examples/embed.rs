//! Driving a oneshot session from Rust, as a library: the same loop the CLI runs, with a
//! policy given inline and progress read from the update stream. No async runtime to build:
//! `run_blocking` makes its own.
//!
//! Run: `cargo run --example embed`

use oneshot::{Policy, SessionBuilder, Store, Update};

fn main() -> anyhow::Result<()> {
    let scratch = std::env::temp_dir().join(format!("oneshot-embed-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    // Judgement calls live in Lua: here, two iterations at most and a verdict read from a
    // "score=N" line.
    let policy = Policy::from_source(
        "inline.lua",
        r#"return {
            limits = { max_iterations = 2 },
            verdict = function(output, ctx)
                local score = tonumber(string.match(output, "score=(%d+)"))
                if score and score >= 8 then return "done", "score " .. score end
                return "retry", "score too low: " .. tostring(score)
            end,
        }"#,
        Default::default(),
    )?;
    let store = Store::new(scratch.join(".oneshot"));
    let mut engine = SessionBuilder::new("count to three")
        .worker("sh -c 'for i in 1 2 3; do echo $i; done > count.txt; echo counted'")
        .auditor("sh -c 'test \"$(wc -l < count.txt)\" -eq 3 && echo score=9 || echo score=1'")
        .workdir(&scratch)
        .policy(policy)
        .create(&store)?;
    // A handle another thread (a Ctrl-C handler, a UI) could use to stop the session.
    let _stop = engine.interrupter();
    let outcome = engine.run_blocking(|update| match update {
        Update::Transition {
            from,
            to,
            iteration,
            reason,
            ..
        } => {
            let why = reason.map(|r| format!(" ({r})")).unwrap_or_default();
            println!("#{iteration} {from} -> {to}{why}");
        }
        Update::Output { role, line } => println!("  {role}: {}", line.text),
        _ => {}
    })?;
    println!("session {} ended {}", outcome.session_id, outcome.state);
    std::fs::remove_dir_all(&scratch)?;
    Ok(())
}
