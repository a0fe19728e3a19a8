//! The core stays pure: none of its files reaches for I/O, the clock, the environment, a
//! process or Lua. A name here is a door out of the core; each has its place outside it
//! (`job/api/`, `job/runner/`, the stores).

/// What the core must not name, with where such a thing goes instead.
const DOORS_OUT: &[(&str, &str)] = &[
    ("std::fs", "the stores and the workspace"),
    ("std::process", "the runner's hands"),
    ("std::env", "the front doors (api/)"),
    ("std::net", "the runner"),
    ("SystemTime", "now comes in an event or a verb's context"),
    ("Instant::now", "now comes in an event or a verb's context"),
    ("now_ms()", "now comes in an event or a verb's context"),
    ("tokio", "the runner's loop"),
    ("mlua", "the policy host"),
    (
        "PolicyHost",
        "api/policy_judge.rs (the judge behind JobJudge)",
    ),
    (
        "PolicyService",
        "api/policy_judge.rs (the judge behind JobJudge)",
    ),
    ("JobStore", "api/ and the runner, which carry effects out"),
    ("nix::", "the runner's hands"),
];

#[test]
fn the_core_does_no_io() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/job/core");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // The tests drive the core and may read files; this file names the doors.
        if name.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Only the code: a test module at the end of a file may do as tests do.
        let code = text.split("\n#[cfg(test)]").next().unwrap();
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap();
            for (door, instead) in DOORS_OUT {
                if line.contains(door) {
                    found.push(format!(
                        "src/job/core/{name}:{}: {door} (belongs in {instead})",
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the job core reaches out:\n{}",
        found.join("\n")
    );
}
