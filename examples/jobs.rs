//! Jobs from a program: two jobs made and run to where a human signs off, with no runtime of
//! the program's own. `cargo run --example jobs` (CI runs it). The workers are command lines
//! here; an agent (`claude`, `codex:MODEL`, …) is named the same way `oneshot job create
//! --worker` names it.

use oneshot::job::{Creating, JobSpec, JobState, SqliteStore, create, new_id, runner, verbs};

fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // A plain directory is copied for each job; a git repository gets a worktree per job.
    let source = dir.path().join("project");
    std::fs::create_dir_all(&source)?;
    std::fs::write(source.join("README"), "a project\n")?;
    let state = dir.path().join("state");
    let store = std::sync::Arc::new(SqliteStore::open(state.join("jobs.db"))?);

    for file in ["hello.txt", "world.txt"] {
        let spec = JobSpec::new(
            format!("write {file}"),
            &source,
            format!("cmd:sh -c 'echo hi > {file}'"),
            "cmd:echo VERDICT: DONE",
        );
        let how = Creating {
            actor: verbs::actor(),
            activate: true,
            now_ms: now_ms(),
        };
        let made = create(&*store, &new_id(), spec, &how)?;
        println!("{} made, {}", made.job.id, made.job.state());
    }

    let mut opts = runner::RunnerOptions::new(&state);
    opts.parallel = 2;
    opts.on_note = std::rc::Rc::new(|note| {
        if let runner::Note::Moved { job, transition } = note {
            println!("{job}: {} -> {}", transition.from, transition.to);
        }
    });
    let ends = runner::run_blocking(store, opts)?;
    for end in &ends {
        println!("{} rests in {}", end.job, end.state);
        // A human signs off by default (`oneshot job approve ID`, or `verbs::give`).
        anyhow::ensure!(end.state == JobState::ApprovalRequired, "{end:?}");
    }
    anyhow::ensure!(ends.len() == 2, "two steps ran: {ends:?}");
    Ok(())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
