//! Agents are confined (Landlock) away from oneshot's own files: a worker that tries to read
//! the sealing key, write its own state file or another session's, or look into the trust
//! store gets EACCES ("Permission denied"), while its workdir and temp dir stay writable. With
//! `--sandbox off` the same worker reads the key — what the confinement is there to stop.

mod common;
use common::*;
use std::path::Path;

/// A worker that tries each thing and writes what happened to `probe.txt` in its workdir: the
/// name, then `ok` or the error the shell printed.
const PROBE: &str = r#"
cat > /dev/null
probe() {
  name=$1; shift
  if err=$("$@" 2>&1 >/dev/null); then echo "$name: ok"; else echo "$name: $err"; fi
}
own="$ONESHOT_STATE_DIR/sessions/$ONESHOT_SESSION_ID/oneshot.json"
{
  probe key cat "$ONESHOT_KEY_FILE"
  probe own_read cat "$own"
  probe own_write sh -c 'echo x >> "$0"' "$own"
  probe other_write sh -c 'echo x >> "$0"' "$OTHER"
  probe sessions ls "$ONESHOT_STATE_DIR/sessions"
  probe trust ls "$XDG_CONFIG_HOME/oneshot"
  probe workdir sh -c 'echo made > made.txt'
  probe tmp sh -c 'echo made > "$TMPDIR/made.txt"'
} > probe.txt
echo done
"#;

struct Probe {
    w: World,
    key: std::path::PathBuf,
}

impl Probe {
    fn new() -> Probe {
        let w = World::new();
        std::fs::create_dir_all(w.tmp.path().join("tmp")).unwrap();
        let key = w.private.path().join("keys/key");
        Probe { w, key }
    }

    /// The binary, with this world's key.
    fn cmd(&self) -> std::process::Command {
        let mut c = self.w.cmd();
        c.env("ONESHOT_KEY_FILE", &self.key);
        c
    }

    /// Runs a session of the probing worker with `extra` flags; returns its id and output.
    fn run(&self, other: &Path, extra: &[&str]) -> (String, std::process::Output) {
        let before = self.w.session_ids();
        let worker = self.w.script("probe.sh", PROBE);
        let auditor = self.w.script("audit.sh", AUDIT_DONE);
        let out = self
            .cmd()
            .env("TMPDIR", self.w.tmp.path().join("tmp"))
            .env("OTHER", other)
            .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor])
            .args(extra)
            .arg("probe the sandbox")
            .output()
            .unwrap();
        let id = self
            .w
            .session_ids()
            .into_iter()
            .find(|id| !before.contains(id))
            .expect("a new session");
        (id, out)
    }

    fn probe(&self) -> String {
        std::fs::read_to_string(self.w.work().join("probe.txt")).unwrap()
    }

    fn status(&self, id: &str) -> String {
        let out = self.cmd().args(["status", id]).output().unwrap();
        text(&out)
    }
}

/// The line of `probe` for `name`.
fn line<'a>(probe: &'a str, name: &str) -> &'a str {
    let prefix = format!("{name}: ");
    probe
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {name} in {probe}"))
}

#[test]
fn a_confined_agent_cannot_reach_the_key_the_state_or_other_sessions() {
    let p = Probe::new();
    // Another session, unconfined: its state file is there to be reached for.
    let (first, out) = p.run(Path::new("/nonexistent"), &["--sandbox", "off"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let other = p.w.session_dir(&first).join("oneshot.json");
    let other_before = std::fs::read(&other).unwrap();
    let key_before = std::fs::read(&p.key).unwrap();

    let (id, out) = p.run(&other, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let session = p.w.session(&id);
    match session.sandbox {
        Some(oneshot::session::Sandbox::Landlock { .. }) => {}
        Some(oneshot::session::Sandbox::Unavailable { why }) => {
            // The one warning, and nothing to check beyond it on this kernel.
            assert!(
                text(&out).contains("agents run unconfined"),
                "{}",
                text(&out)
            );
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs on a kernel with Landlock: {why}"
            );
            return;
        }
        other => panic!("sandbox {other:?}"),
    }
    let probe = p.probe();
    for name in [
        "key",
        "own_read",
        "own_write",
        "other_write",
        "sessions",
        "trust",
    ] {
        assert!(
            line(&probe, name).contains("Permission denied"),
            "{name} must be denied (EACCES):\n{probe}"
        );
    }
    assert_eq!(line(&probe, "workdir"), "ok", "{probe}");
    assert_eq!(line(&probe, "tmp"), "ok", "{probe}");
    // Nothing of oneshot's changed, and the session reads back whole.
    assert_eq!(std::fs::read(&p.key).unwrap(), key_before);
    assert_eq!(std::fs::read(&other).unwrap(), other_before);
    assert_eq!(session.state().as_str(), "COMPLETED");
    let status = p.status(&id);
    assert!(status.contains("sandbox   landlock (ABI "), "{status}");
    let show = text(&p.cmd().args(["show", &id]).output().unwrap());
    assert!(show.contains("sandbox  landlock (ABI "), "{show}");
}

#[test]
fn sandbox_off_is_recorded_and_the_agent_reaches_what_it_otherwise_could_not() {
    let p = Probe::new();
    let (id, out) = p.run(Path::new("/nonexistent"), &["--sandbox", "off"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(line(&p.probe(), "key"), "ok", "{}", p.probe());
    assert!(p.status(&id).contains("sandbox   off (--sandbox off)"));
    // Recorded in the session: what a resume keeps unless told otherwise.
    let state = p.w.state(&id);
    assert_eq!(state["settings"]["sandbox"], false, "{state}");
}

#[test]
fn sandbox_false_in_oneshot_toml_turns_it_off() {
    let p = Probe::new();
    std::fs::write(p.w.work().join("oneshot.toml"), "sandbox = false\n").unwrap();
    let (id, out) = p.run(Path::new("/nonexistent"), &[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(line(&p.probe(), "key"), "ok", "{}", p.probe());
    assert!(p.status(&id).contains("sandbox   off"));
}

#[test]
fn a_state_dir_inside_the_workdir_is_named_and_the_workdir_stays_whole() {
    let p = Probe::new();
    // `--state-dir .oneshot` in the workdir: hiding it would leave the agent unable to create
    // anything at the workdir's top (Landlock cannot take a right back below a grant), so the
    // workdir wins and the user is told.
    let state = p.w.work().join(".oneshot");
    let worker = p.w.script("w.sh", "cat > /dev/null; echo made > new.txt");
    let auditor = p.w.script("audit.sh", AUDIT_DONE);
    let out = p
        .cmd()
        .env("ONESHOT_STATE_DIR", &state)
        .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor])
        .arg("make a file")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(p.w.work().join("new.txt")).unwrap(),
        "made\n"
    );
    if matches!(
        oneshot::executor::confine::available(),
        oneshot::session::Sandbox::Landlock { .. }
    ) {
        let said = text(&out);
        assert!(said.contains("lies inside the workdir"), "{said}");
        assert!(said.contains("keep it outside"), "{said}");
    }
}
