//! A disk that fills up while a job is harvested (issue 20, defect 5), on a real small tmpfs
//! through the real binary: `job run` exits 1 naming the job and "No space left on device", the
//! job waits where it was, and once there is room again the next runner harvests it.
//!
//! Mounting needs root (CAP_SYS_ADMIN). Without it the tests say they were skipped — and fail
//! when `CI` is set, where they must run.

use crate::job_env;
use crate::tmpfs;
use job_env::{DONE, git};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use tmpfs::{Tmpfs, fill};

struct Case {
    /// A normal directory: the markers the worker and the test exchange, the sessions.
    tmp: tempfile::TempDir,
    /// The full disk's mount: the repository and the state directory (its store, worktrees).
    disk: PathBuf,
    _mount: Tmpfs,
}

impl Case {
    fn new() -> Option<Case> {
        let tmp = tempfile::tempdir().unwrap();
        let disk = tmp.path().join("disk");
        let mount = Tmpfs::mount(&disk, "8m")?;
        let repo = disk.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README"), "x\n").unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "init"]);
        // The sessions' files live elsewhere: this is about the harvest, so the session ends
        // as it would on any disk, and the disk is full from its end on.
        let sessions = tmp.path().join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        std::fs::create_dir_all(tmp.path().join("markers")).unwrap();
        std::fs::create_dir_all(disk.join("state")).unwrap();
        std::os::unix::fs::symlink(&sessions, disk.join("state/sessions")).unwrap();
        Some(Case {
            tmp,
            disk,
            _mount: mount,
        })
    }

    fn oneshot(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_oneshot"));
        c.arg("--state-dir")
            .arg(self.disk.join("state"))
            .args(args)
            .current_dir(self.disk.join("repo"))
            .env("ONESHOT_ACTOR", "tester")
            .env("NO_COLOR", "1");
        c
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.oneshot(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8(out.stdout).unwrap()
    }

    fn show(&self, id: &str) -> serde_json::Value {
        serde_json::from_str(&self.ok(&["job", "show", id, "--json"])).unwrap()
    }

    fn state(&self, id: &str) -> String {
        self.show(id)["job"]["state"].as_str().unwrap().to_string()
    }

    /// In a directory of their own: the agents are confined away from the state dir, and a
    /// directory holding it takes no new entries from them.
    fn marker(&self, name: &str) -> PathBuf {
        self.tmp.path().join("markers").join(name)
    }

    /// A job whose worker writes 2 MiB that do not compress, says so, and ends when told.
    fn create(&self) -> String {
        let worker = format!(
            "sh -c 'head -c 2097152 /dev/urandom > big.bin; touch {s}; \
             while [ ! -e {g} ]; do sleep 0.05; done'",
            s = self.marker("started").display(),
            g = self.marker("go").display()
        );
        let id = self
            .ok(&[
                "job",
                "create",
                "--worker-cmd",
                &worker,
                "--auditor-cmd",
                DONE,
                "--activate",
                "write big.bin",
            ])
            .trim()
            .to_string();
        assert!(id.starts_with("job-"), "{id}");
        id
    }

    /// Runs `job run` until the worker has written its file, fills the disk up to `room`
    /// bytes, lets the worker end, and returns how the run ended and the filler.
    fn run_onto_a_full_disk(&self, room: u64) -> (Output, PathBuf) {
        let runner = self
            .oneshot(&["job", "run", "--lease", "1s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while !self.marker("started").exists() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "the worker never ran"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let filler = fill(&self.disk, room);
        std::fs::write(self.marker("go"), "").unwrap();
        (runner.wait_with_output().unwrap(), filler)
    }

    /// Frees the disk, waits out the failed runner's lease, and runs again: the job is
    /// harvested, its 2 MiB on its branch.
    fn recovers(&self, id: &str, filler: &Path) {
        std::fs::remove_file(filler).unwrap();
        std::thread::sleep(Duration::from_millis(1200));
        let out = self
            .oneshot(&["job", "run", "--lease", "1s"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(self.state(id), "APPROVAL_REQUIRED", "{}", text(&out));
        let branch = self.show(id)["job"]["spec"]["branch"].clone();
        let branch = branch.as_str().unwrap();
        let size = git(
            &self.disk.join("repo"),
            &["cat-file", "-s", &format!("{branch}:big.bin")],
        );
        assert_eq!(size, "2097152");
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_harvest_that_finds_the_disk_full_fails_the_run_and_the_job_waits_in_harvesting() {
    let Some(case) = Case::new() else { return };
    let id = case.create();
    // Room for the store's few pages, not for the harvest's 2 MiB object.
    let (out, filler) = case.run_onto_a_full_disk(256 * 1024);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(stderr.contains(&id), "{stderr}");
    assert!(stderr.contains("stays in HARVESTING"), "{stderr}");
    // Not a human's problem: the job waits for a runner, its session's end intact.
    assert_eq!(case.state(&id), "HARVESTING");
    case.recovers(&id, &filler);
}

#[test]
fn a_disk_too_full_even_for_the_store_fails_the_run_and_the_job_is_recovered_later() {
    let Some(case) = Case::new() else { return };
    let id = case.create();
    let (out, filler) = case.run_onto_a_full_disk(0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(stderr.contains(&id), "{stderr}");
    // Whatever it reached last is what the store could still write: mid-step either way.
    let state = case.state(&id);
    assert!(
        ["EXECUTING", "HARVESTING"].contains(&state.as_str()),
        "{state}"
    );
    assert!(stderr.contains(&format!("stays in {state}")), "{stderr}");
    case.recovers(&id, &filler);
}
