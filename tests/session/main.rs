//! The session loop through the real binary and the library: the loop, checks, recovery, signals, the executor and the pipeline, the sandbox and its limits, secrets, `say`.
//!
//! One test binary for the area (linking is what CI spends its time on); one module per file.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/job_env.rs"]
mod job_env;
#[path = "../common/tmpfs.rs"]
mod tmpfs;

mod chaos;
mod checks;
mod engine_timers;
mod executor_fence;
mod executor_process;
mod executor_snapshot;
mod limits_cli;
mod orphans;
mod pipeline_log;
mod pipeline_redact;
mod pipeline_run;
mod prompt_size;
mod recovery;
mod resume_settings;
mod sandbox;
mod sandbox_limits;
mod say;
mod secrets;
mod session_loop;
mod signals;
mod snapshots;
mod stop;
mod tamper;
mod task_input;
mod verdict_stream;
