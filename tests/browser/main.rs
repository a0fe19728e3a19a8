//! The dashboard in a real headless chromium through chromedriver (tests/common/browser.rs).
//!
//! One test binary for the area (linking is what CI spends its time on); one module per file.

#[path = "../common/browser.rs"]
mod browser;
#[path = "../common/job_env.rs"]
mod job_env;
#[path = "../common/serve_process.rs"]
mod serve_process;

mod live;
mod pages;
