//! The dashboard (`oneshot serve`) over HTTP: pages, verbs, `say`, its transports, the live stream.
//!
//! One test binary for the area (linking is what CI spends its time on); one module per file.

#[path = "../common/job_env.rs"]
mod job_env;
#[path = "../common/serve_http.rs"]
mod serve_http;
#[path = "../common/serve_process.rs"]
mod serve_process;

mod live;
mod serve;
mod serve_say;
mod serve_transport;
