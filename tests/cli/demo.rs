//! The demo (`sh examples/demo/run.sh`) runs the binary wherever cargo put it.
//!
//! Building oneshot again inside the tests would cost minutes, so `cargo` here is a stand-in on
//! PATH that answers as cargo does — progress on stderr, JSON messages on stdout — and names a
//! binary in a target directory of its own, as `CARGO_TARGET_DIR` would.

use crate::common;

use common::{World, code, text};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

#[test]
fn the_demo_finds_the_binary_outside_target_and_completes() {
    let w = World::new();
    let target = w.tmp.path().join("elsewhere/debug");
    std::fs::create_dir_all(&target).unwrap();
    let bin = target.join("oneshot");
    std::fs::copy(env!("CARGO_BIN_EXE_oneshot"), &bin).unwrap();
    let fake = w.tmp.path().join("bin");
    std::fs::create_dir_all(&fake).unwrap();
    let cargo = fake.join("cargo");
    std::fs::write(
        &cargo,
        format!(
            "#!/bin/sh\n\
             case \"$*\" in *--message-format=json*) ;; *) echo \"fake cargo: $*\" >&2; exit 9;; esac\n\
             echo '   Compiling oneshot v0.1.0' >&2\n\
             echo '{{\"reason\":\"compiler-artifact\",\"target\":{{\"name\":\"oneshot\"}},\"executable\":\"{bin}\",\"fresh\":false}}'\n\
             echo '{{\"reason\":\"build-finished\",\"success\":true}}'\n",
            bin = bin.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
    let out = Command::new("sh")
        .arg(root.join("examples/demo/run.sh"))
        .env("PATH", path)
        .env("TMPDIR", w.tmp.path())
        .env_remove("ONESHOT_STATE_DIR")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("demo: building oneshot"), "{stdout}");
    assert!(
        stdout.contains(&format!("demo: running {}", bin.display())),
        "{stdout}"
    );
    assert!(stdout.contains("14 FizzBuzz"), "{stdout}");
    // Cargo's progress is passed through, not hidden.
    assert!(String::from_utf8_lossy(&out.stderr).contains("Compiling oneshot"));
}
