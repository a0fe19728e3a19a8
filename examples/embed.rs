//! Driving a oneshot session from Rust, as a library: the same loop the CLI runs, with a
//! policy given inline and progress reported through a custom [`Reporter`].
//!
//! Run: `cargo run --example embed`

use oneshot::engine::{Engine, EngineOptions, Reporter, SessionSpec, Status, interrupt_channel};
use oneshot::executor::Role;
use oneshot::machine::SessionState;
use oneshot::pipeline::Line;
use oneshot::policy::{PolicyHost, PolicyOptions};
use oneshot::store::Store;

/// Prints transitions and agent lines.
struct Printer;

impl Reporter for Printer {
    fn transition(&mut self, s: &Status, from: SessionState, to: SessionState, why: Option<&str>) {
        println!("#{} {from} -> {to} {}", s.iteration, why.unwrap_or(""));
    }
    fn line(&mut self, role: Role, line: &Line) {
        println!("  {role}: {}", line.text);
    }
}

fn main() -> anyhow::Result<()> {
    let scratch = tempfile_dir()?;
    // Judgement calls live in Lua: here, two iterations at most and a verdict read from a
    // "score=N" line.
    let policy = PolicyHost::from_source(
        "inline.lua",
        r#"return {
            limits = { max_iterations = 2 },
            verdict = function(output, ctx)
                local score = tonumber(string.match(output, "score=(%d+)"))
                if score and score >= 8 then return "done", "score " .. score end
                return "retry", "score too low: " .. tostring(score)
            end,
        }"#,
        PolicyOptions::default(),
    )?;
    let spec = SessionSpec {
        task: "count to three".into(),
        worker_cmd: "sh -c 'for i in 1 2 3; do echo $i; done > count.txt; echo counted'".into(),
        auditor_cmd: "sh -c 'test \"$(wc -l < count.txt)\" -eq 3 && echo score=9 || echo score=1'"
            .into(),
        workdir: scratch.clone(),
        policy,
    };
    let store = Store::new(scratch.join(".oneshot"));
    let (_interrupt, rx) = interrupt_channel();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = rt.block_on(async {
        let mut engine = Engine::create(&store, spec, EngineOptions::new(Box::new(Printer), rx))?;
        engine.run().await
    })?;
    println!(
        "session {} ended {} ({})",
        outcome.session_id,
        outcome.state,
        outcome.reason.unwrap_or_default()
    );
    std::fs::remove_dir_all(&scratch)?;
    Ok(())
}

fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("oneshot-embed-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
