//! Agents are confined away from oneshot's own files: a worker that tries to read the sealing
//! key, write its own state file or another session's, or look into the trust store finds them
//! masked (namespaces: an empty, read-only directory) or gets EACCES (Landlock alone, where
//! namespaces are refused), while its workdir, temp dir and — with namespaces — its whole home
//! directory stay writable. With `--sandbox off` the same worker reads the key — what the
//! confinement is there to stop.

use crate::common;
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
  probe key grep -c . "$ONESHOT_KEY_FILE"
  probe own_read cat "$own"
  probe own_write sh -c 'echo x >> "$0"' "$own"
  probe other_write sh -c 'echo x >> "$0"' "$OTHER"
  probe sessions ls "$ONESHOT_STATE_DIR/sessions"
  probe trust sh -c 'cat "$0"/*' "$XDG_CONFIG_HOME/oneshot"
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
        self.run_env(other, extra, &[])
    }

    /// [`Probe::run`] with extra environment variables for oneshot.
    fn run_env(
        &self,
        other: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> (String, std::process::Output) {
        let before = self.w.session_ids();
        let worker = self.w.script("probe.sh", PROBE);
        let auditor = self.w.script("audit.sh", AUDIT_DONE);
        let out = self
            .cmd()
            .env("TMPDIR", self.w.tmp.path().join("tmp"))
            .env("OTHER", other)
            .envs(env.iter().copied())
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

    /// A session of `worker` under `policy` with `extra` flags, its auditor accepting.
    fn session(
        &self,
        policy: &str,
        worker: &str,
        extra: &[&str],
        task: &str,
    ) -> std::process::Output {
        let auditor = self.w.script("audit.sh", AUDIT_DONE);
        self.cmd()
            .args([
                "--policy",
                policy,
                "--worker-cmd",
                worker,
                "--auditor-cmd",
                &auditor,
            ])
            .args(extra)
            .arg(task)
            .output()
            .unwrap()
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

/// The probe run confined, with namespaces or (`fallback`) Landlock alone: every reach for
/// oneshot's files fails, the workdir and temp dir stay writable, and status and show say which
/// sandbox ran.
fn confined_probe(fallback: bool) {
    let p = Probe::new();
    // Another session, unconfined: its state file is there to be reached for.
    let (first, out) = p.run(Path::new("/nonexistent"), &["--sandbox", "off"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let other = p.w.session_dir(&first).join("oneshot.json");
    let other_before = std::fs::read(&other).unwrap();
    let key_before = std::fs::read(&p.key).unwrap();
    let refuse = if fallback { "1" } else { "" };
    let (id, out) = p.run_env(
        &other,
        &[],
        &[("ONESHOT_SANDBOX_REFUSE_NAMESPACES", refuse)],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let session = p.w.session(&id);
    let (denied, said): (&[&str], &str) = match session.sandbox {
        Some(oneshot::session::Sandbox::Namespaces { .. }) => {
            assert!(!fallback, "namespaces ran though refused");
            (&[], "sandbox   namespaces")
        }
        Some(oneshot::session::Sandbox::Landlock { .. }) => {
            assert!(
                fallback || std::env::var_os("CI").is_none(),
                "CI runs where user namespaces are allowed: {}",
                text(&out)
            );
            // The one warning names what the fallback loses and how to allow namespaces.
            let said = text(&out);
            assert!(said.contains("namespaces unavailable"), "{said}");
            assert!(said.contains("new entries in $HOME"), "{said}");
            // The trust store's directory unreadable: its glob matches nothing.
            (
                &["Permission denied", "No such file"],
                "sandbox   landlock (ABI ",
            )
        }
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
    };
    let probe = p.probe();
    for name in [
        "key",
        "own_read",
        "own_write",
        "other_write",
        "sessions",
        "trust",
    ] {
        let got = line(&probe, name);
        // Masked: an empty file or directory (the key reads as nothing), or EACCES.
        assert!(
            got != "ok" && (denied.is_empty() || denied.iter().any(|d| got.contains(d))),
            "{name} must be refused ({denied:?}):\n{probe}"
        );
    }
    assert_eq!(line(&probe, "workdir"), "ok", "{probe}");
    assert_eq!(line(&probe, "tmp"), "ok", "{probe}");
    // Nothing of oneshot's changed, and the session reads back whole.
    assert_eq!(std::fs::read(&p.key).unwrap(), key_before);
    assert_eq!(std::fs::read(&other).unwrap(), other_before);
    assert_eq!(session.state().as_str(), "COMPLETED");
    let status = p.status(&id);
    assert!(status.contains(said), "{status}");
    let show = text(&p.cmd().args(["show", &id]).output().unwrap());
    assert!(
        show.contains(&said.replace("sandbox   ", "sandbox  ")),
        "{show}"
    );
}

#[test]
fn a_confined_agent_cannot_reach_the_key_the_state_or_other_sessions() {
    confined_probe(false);
}

#[test]
fn where_namespaces_are_refused_landlock_alone_still_hides_them() {
    confined_probe(true);
}

/// What a real agent's work needs of a fresh home directory, tried by a worker with the default
/// state directory under it: each line `NAME: ok` or the error.
const HOME_WORK: &str = r#"
cat > /dev/null
probe() {
  name=$1; shift
  if err=$("$@" 2>&1 >/dev/null); then echo "$name: ok"; else echo "$name: $err"; fi
}
{
  probe go mkdir -p "$HOME/go/pkg"
  probe pip_user mkdir -p "$HOME/.local/lib/x"
  probe gitconfig git config --global user.name agent
  probe npm mkdir -p "$HOME/.npm/x"
  probe cache mkdir -p "$HOME/.cache/new/x"
  probe ls_home ls "$HOME"
  probe state ls "$HOME/.local/state/oneshot/projects"
  probe tmp_dir mkdir "/tmp/oneshot-home-probe-$$"
} > probe.txt
rmdir "/tmp/oneshot-home-probe-$$" 2>/dev/null
echo done
"#;

#[test]
fn a_fresh_home_is_the_agents_to_use_and_oneshots_state_in_it_is_not() {
    if no_namespaces() {
        return;
    }
    let p = Probe::new();
    let home = p.w.tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let worker = p.w.script("home.sh", HOME_WORK);
    let auditor = p.w.script("audit.sh", AUDIT_DONE);
    // A new user: a home with nothing in it, oneshot's directories where they go by default.
    let out = p
        .cmd()
        .env_remove("ONESHOT_STATE_DIR")
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", &home)
        .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor])
        .arg("use the home directory")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let probe = p.probe();
    for name in [
        "go",
        "pip_user",
        "gitconfig",
        "npm",
        "cache",
        "ls_home",
        "tmp_dir",
    ] {
        assert_eq!(line(&probe, name), "ok", "{name}:\n{probe}");
    }
    assert!(home.join("go/pkg").is_dir());
    assert!(
        std::fs::read_to_string(home.join(".gitconfig"))
            .unwrap()
            .contains("agent")
    );
    // The default state directory is under the home, and masked.
    assert!(
        home.join(".local/state/oneshot/projects").is_dir(),
        "{:?}",
        walk(&home)
    );
    assert!(line(&probe, "state").contains("No such file"), "{probe}");
    assert!(
        !text(&out).contains("namespaces unavailable"),
        "{}",
        text(&out)
    );
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
    let worker = p.w.script(
        "w.sh",
        "cat > /dev/null; echo made > new.txt; ls .oneshot/sessions > ../seen.txt 2>&1; true",
    );
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
    let said = text(&out);
    if oneshot::sandbox::available().is_ok() {
        // Masked in the agent's mount namespace: nothing to warn of, nothing to see.
        assert!(!said.contains("lies inside the workdir"), "{said}");
        let seen = std::fs::read_to_string(p.w.tmp.path().join("seen.txt")).unwrap();
        assert!(seen.contains("No such file"), "{seen}");
    } else if matches!(
        oneshot::executor::confine::available(),
        oneshot::session::Sandbox::Landlock { .. }
    ) {
        assert!(said.contains("lies inside the workdir"), "{said}");
        assert!(said.contains("keep it outside"), "{said}");
    }
}

/// Every path under `dir`, for a failure's message.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(e.path());
        if e.path().is_dir() && !e.path().is_symlink() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

/// A host server on 127.0.0.2 (loopback, but not the agent's: inside its network namespace
/// 127.0.0.2 is its own) answering every request `200 hello`, for as long as the test runs.
fn hello_server() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            std::thread::spawn(move || {
                use std::io::{BufRead, Write};
                let mut r = std::io::BufReader::new(&conn);
                let mut line = String::new();
                while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let _ = (&conn).write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
                );
            });
        }
    });
    port
}

/// A worker trying the network every way an agent could, each line `NAME: RESULT`.
const NETWORK_WORK: &str = r#"
cat > /dev/null
try() { curl -s -m 5 -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; echo " exit=$?"; }
{
  echo "allowed: $(try http://127.0.0.2:$PORT/)"
  echo "refused: $(try http://blocked.test/)"
  echo "https_refused: $(try https://example.com/)"
  start=$(date +%s%N)
  echo "direct: $(try --noproxy '*' http://127.0.0.2:$PORT/)"
  echo "direct_ms: $(( ($(date +%s%N) - start) / 1000000 ))"
  echo "outside: $(try --noproxy '*' http://10.1.2.3/)"
  echo "named_private: $(try -x "$HTTP_PROXY" --noproxy '' http://localhost:$PORT/)"
  echo "metadata: $(try -x "$HTTP_PROXY" --noproxy '' http://169.254.169.254/latest/)"
  # The policy is edited while this runs: the next connection is judged by the new one.
  touch ../edit-now
  n=0
  until [ "$(try http://later.test:$PORT/)" = "502 exit=0" ] || [ $n -ge 100 ]; do
    n=$((n+1)); sleep 0.1
  done
  echo "later: $(try http://later.test:$PORT/)"
  echo "env_token: ${GITHUB_TOKEN:-absent} ${AWS_SECRET_ACCESS_KEY:-absent} ${SSH_AUTH_SOCK:-absent}"
  echo "env_passed: ${PASSED_TOKEN:-absent}"
} > probe.txt
echo done
"#;

#[test]
fn the_network_is_the_policys_allowlist_and_every_refusal_is_a_record() {
    if no_namespaces() {
        return;
    }
    let p = Probe::new();
    let port = hello_server();
    // The hook allows any name, but not where it resolves to a private address; a listed
    // name may go there; a `deny` wins over both.
    let policy_text = r#"return {
  network = { allow = { "127.0.0.2" }, deny = { "later.test", "example.com", "blocked.test" } },
  egress = function(ctx, req) return "allow" end,
  env = { pass = { "PASSED_TOKEN" } },
}
"#;
    let policy = p.w.policy(policy_text);
    let worker = p.w.script("net.sh", NETWORK_WORK);
    let auditor = p.w.script("audit.sh", AUDIT_DONE);
    let edit = p.w.tmp.path().join("edit-now");
    let edited = policy_text.replace("\"later.test\", ", "");
    assert_ne!(edited, policy_text);
    let pol = policy.clone();
    let editor = std::thread::spawn(move || {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !edit.exists() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::fs::write(&pol, edited).unwrap();
    });
    let out = p
        .cmd()
        .env("PORT", port.to_string())
        .env("GITHUB_TOKEN", "ghp_secret")
        .env("AWS_SECRET_ACCESS_KEY", "aws-secret")
        .env("SSH_AUTH_SOCK", "/tmp/agent.sock")
        .env("PASSED_TOKEN", "passed")
        .args([
            "--policy",
            &policy,
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            &auditor,
        ])
        .arg("use the network")
        .output()
        .unwrap();
    editor.join().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let probe = p.probe();
    assert_eq!(line(&probe, "allowed"), "200 exit=0", "{probe}");
    assert_eq!(line(&probe, "refused"), "403 exit=0", "{probe}");
    // curl's CONNECT was refused by the proxy (it reports the 403 as its own failure).
    assert!(!line(&probe, "https_refused").contains("exit=0"), "{probe}");
    // No route but the proxy: refused at once, not after a timeout.
    assert!(line(&probe, "direct").ends_with("exit=7"), "{probe}");
    let ms: u64 = line(&probe, "direct_ms").parse().unwrap();
    assert!(ms < 1000, "{probe}");
    assert!(!line(&probe, "outside").contains("exit=0"), "{probe}");
    // Names and addresses that resolve inside: refused though `*` allows the name.
    assert_eq!(line(&probe, "named_private"), "403 exit=0", "{probe}");
    assert_eq!(line(&probe, "metadata"), "403 exit=0", "{probe}");
    // After the edit the name is allowed (and the proxy's attempt to reach it is a 502: it
    // resolves nowhere), without a restart.
    assert_eq!(line(&probe, "later"), "502 exit=0", "{probe}");
    assert_eq!(line(&probe, "env_token"), "absent absent absent", "{probe}");
    assert_eq!(line(&probe, "env_passed"), "passed", "{probe}");
    // What was left out is said, in the session's own records.
    // Every refusal is a record naming the host and the rule, with the line to add.
    let id = p.w.session_ids().pop().unwrap();
    let log = text(&p.cmd().args(["log", &id]).output().unwrap());
    for want in [
        "egress refused: worker (sh) → blocked.test:80 — network.deny \"blocked.test\"",
        "→ localhost:",
        "169.254.169.254:80",
        "→ later.test:",
    ] {
        assert!(log.contains(want), "{want} not in:\n{log}");
    }
    assert!(
        log.contains("network = { allow = { \"localhost\" } }"),
        "{log}"
    );
    let show = text(&p.cmd().args(["show", &id]).output().unwrap());
    assert!(show.contains("left out of the agents'"), "{show}");
    assert!(show.contains("GITHUB_TOKEN"), "{show}");
    assert!(!show.contains("PASSED_TOKEN,"), "{show}");
}

#[test]
fn a_worker_past_its_memory_limit_is_stopped_with_the_reason() {
    let p = Probe::new();
    // Holds 300 MiB once, then sleeps; the second iteration (its file is there, so the first
    // is salvaged as partial) does nothing.
    let worker = p.w.script(
        "hog.sh",
        "cat > /dev/null\nif [ -e hogged ]; then exit 0; fi\ntouch hogged\n\
         exec python3 -c 'import time; b = bytearray(300 * 1024 * 1024); time.sleep(30)'\n",
    );
    let policy = p.w.policy(r#"return { limits = { memory = "100M" } }"#);
    let started = std::time::Instant::now();
    let out = p.session(&policy, &worker, &[], "use too much memory");
    let said = text(&out);
    assert_eq!(code(&out), 0, "{said}");
    // Stopped well before its sleep ended, with who and which limit.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "{said}"
    );
    // Who, when the watch saw it before the kernel's kill; else "the agent's processes".
    assert!(said.contains("memory limit 100 MiB reached by "), "{said}");
    assert!(
        said.contains("RECOVERY_PENDING (the worker reached its memory or process limit)"),
        "{said}"
    );
}

/// A check's connections are judged as an agent's are, its `egress` hook included (the core
/// answers while the check runs), and its refusals are records of the session.
#[test]
fn a_checks_connections_reach_the_egress_hook() {
    if no_namespaces() {
        return;
    }
    let p = Probe::new();
    let policy = p.w.policy(
        r#"return {
  egress = function(ctx, req)
    if req.agent == "check" and req.host == "hooked.test" then return "allow", "checks may" end
    if req.host == "refused.test" then return "deny", "zq-check-hook-says-no" end
  end,
}
"#,
    );
    let worker = p.w.script("w.sh", "cat > /dev/null\necho worked\n");
    let check = "try() { curl -s -m 5 -o /dev/null -w '%{http_code}' \"$1\"; }; \
                 echo \"hooked: $(try http://hooked.test/)\" > check-probe.txt; \
                 echo \"refused: $(try http://refused.test/)\" >> check-probe.txt";
    let out = p.session(&policy, &worker, &["--check", check], "check the network");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let probe = std::fs::read_to_string(p.w.work().join("check-probe.txt")).unwrap();
    // Allowed by the hook: the proxy tried (the name resolves nowhere: 502).
    assert_eq!(line(&probe, "hooked"), "502", "{probe}");
    assert_eq!(line(&probe, "refused"), "403", "{probe}");
    let id = p.w.session_ids().pop().unwrap();
    let log = text(&p.cmd().args(["log", &id]).output().unwrap());
    assert!(
        log.contains("egress refused: auditor (check) → refused.test:80 — zq-check-hook-says-no"),
        "{log}"
    );
}

/// A check is bounded by the policy's limits as an agent is: past its memory it is stopped,
/// fails with who reached which limit, and the worker is told so.
#[test]
fn a_check_past_its_memory_limit_fails_with_the_reason() {
    let p = Probe::new();
    // The first run leaves the check's flag; the second removes it, so the check passes then.
    let worker = p.w.script(
        "w.sh",
        "cat > /dev/null\nif [ -e ran ]; then rm -f hog; else touch ran hog; fi\n",
    );
    let policy = p.w.policy(r#"return { limits = { memory = "100M" } }"#);
    let check = "if [ -e hog ]; then exec python3 -c 'import time; b = bytearray(300 * 1024 * 1024); time.sleep(30)'; fi";
    let started = std::time::Instant::now();
    let out = p.session(
        &policy,
        &worker,
        &["--check", check],
        "a check that uses too much memory",
    );
    let said = text(&out);
    assert_eq!(code(&out), 0, "{said}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "{said}"
    );
    assert!(
        said.contains("failed (stopped: memory limit 100 MiB reached by "),
        "{said}"
    );
}

/// `dir` and everything in it owned by `uid`.
fn chown_all(dir: &Path, uid: u32) {
    std::os::unix::fs::chown(dir, Some(uid), Some(uid)).unwrap();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() && !e.path().is_symlink() {
            chown_all(&e.path(), uid);
        } else {
            std::os::unix::fs::lchown(e.path(), Some(uid), Some(uid)).unwrap();
        }
    }
}

#[test]
fn an_unprivileged_user_gets_the_same_sandbox() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 || oneshot::sandbox::available().is_err() {
        eprintln!("skipped: needs root (to run oneshot as another uid) and user namespaces");
        return;
    }
    const UID: u32 = 4242;
    let p = Probe::new();
    let home = p.w.tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let worker =
        p.w.script("home.sh", &format!("{HOME_WORK}\nid -u > uid.txt\n"));
    let auditor = p.w.script("audit.sh", AUDIT_DONE);
    chown_all(p.w.tmp.path(), UID);
    let uid = UID.to_string();
    let mut c = std::process::Command::new("setpriv");
    c.args(["--reuid", &uid, "--regid", &uid, "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_oneshot"))
        .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor])
        .arg("use the home directory as someone else")
        .current_dir(p.w.work())
        .env("HOME", &home)
        .stdin(std::process::Stdio::null());
    for (k, _) in std::env::vars() {
        if k.starts_with("ONESHOT_") || k.starts_with("XDG_") {
            c.env_remove(k);
        }
    }
    let out = c.output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let probe = p.probe();
    for name in [
        "go",
        "pip_user",
        "gitconfig",
        "npm",
        "cache",
        "ls_home",
        "tmp_dir",
    ] {
        assert_eq!(line(&probe, name), "ok", "{name}:\n{probe}");
    }
    assert!(line(&probe, "state").contains("No such file"), "{probe}");
    // It sees its own uid, and what it made is its own.
    let seen = std::fs::read_to_string(p.w.work().join("uid.txt")).unwrap();
    assert_eq!(seen.trim(), uid);
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(home.join("go/pkg")).unwrap().uid(), UID);
    let said = text(&out);
    assert!(!said.contains("namespaces unavailable"), "{said}");
}

/// Whether this machine refuses user namespaces (said, and a failure in CI, which allows them):
/// the tests of what only namespaces give skip then.
fn no_namespaces() -> bool {
    if oneshot::sandbox::available().is_ok() {
        return false;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI allows user namespaces"
    );
    eprintln!("skipped: no user namespaces here");
    true
}
