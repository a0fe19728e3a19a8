//! Jobs through the real binary: create, run, land, leases, logs, names, panels, recovery, replay, runners, secrets, shutdown, chaos, notifications, `say` to a job.
//!
//! One test binary for the area (linking is what CI spends its time on); one module per file.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/job_env.rs"]
mod job_env;
#[path = "../common/json_doc.rs"]
mod json_doc;
#[path = "../common/pg_server.rs"]
mod pg_server;
#[path = "../common/tmpfs.rs"]
mod tmpfs;

mod chaos_jobs;
mod job_cli;
mod job_create;
mod job_disk_full;
mod job_land;
mod job_lease;
mod job_log;
mod job_names;
mod job_panel;
mod job_recovery;
mod job_replay;
mod job_runner;
mod job_runners;
mod job_secrets;
mod job_shutdown;
mod notify;
mod say_job;
