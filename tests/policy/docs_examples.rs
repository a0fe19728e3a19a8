//! Every Lua example in docs/policy.md runs as printed.
//!
//! A block that opens with `-- NAME.lua` is a file: the files are written side by side (so a
//! `require("common")` finds the `common.lua` the page shows) and each policy is checked with
//! `oneshot policy check`; a `NAME_test.lua` is run with `oneshot policy test` against the
//! shipped `policies/NAME.lua` it describes. A block without a name is a fragment — table
//! fields (`verdict = function … end,`) or the body of a hook (`ctx` in scope) — and is checked
//! inside the smallest policy that holds it.

use crate::common;

use common::{World, code, text};
use std::path::Path;

/// The ```lua blocks of a markdown page.
fn lua_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_start()) {
            (None, "```lua") => current = Some(String::new()),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(current.is_none(), "an unclosed ```lua block");
    blocks
}

fn check(w: &World, file: &Path) {
    let out = w
        .cmd()
        .args(["policy", "check"])
        .arg(file)
        .output()
        .unwrap();
    assert_eq!(
        code(&out),
        0,
        "{} does not check:\n{}\n{}",
        file.display(),
        std::fs::read_to_string(file).unwrap(),
        text(&out)
    );
}

#[test]
fn every_lua_example_in_the_policy_reference_checks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/policy.md")).unwrap();
    let blocks = lua_blocks(&page);
    assert!(blocks.len() >= 5, "found only {} lua blocks", blocks.len());
    let w = World::new();
    let dir = w.tmp.path().join("examples");
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    let mut fragments = 0;
    for block in &blocks {
        let name = block
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("-- "))
            .filter(|n| n.ends_with(".lua") && !n.contains(' '));
        match name {
            Some(name) => {
                std::fs::write(dir.join(name), block).unwrap();
                files.push(name.to_string());
            }
            None => {
                let first = block.trim_start();
                let fields = first.split_once('=').is_some_and(|(key, _)| {
                    key.trim().chars().all(|c| c.is_alphanumeric() || c == '_')
                });
                let policy = if fields {
                    format!("return {{\n{block}}}\n")
                } else {
                    format!(
                        "return {{\n  on_transition = function(from, to, ctx)\n{block}  end,\n}}\n"
                    )
                };
                let file = dir.join(format!("fragment{fragments}.lua"));
                std::fs::write(&file, policy).unwrap();
                check(&w, &file);
                fragments += 1;
            }
        }
    }
    assert!(fragments >= 3, "{fragments} fragments");
    assert!(
        files.contains(&"common.lua".to_string()),
        "the page never shows common.lua"
    );
    for name in &files {
        if name == "common.lua" {
            continue;
        }
        if let Some(policy) = name.strip_suffix("_test.lua") {
            let shipped = root.join(format!("policies/{policy}.lua"));
            std::fs::copy(&shipped, dir.join(format!("{policy}.lua"))).unwrap();
            let out = w
                .cmd()
                .args(["policy", "test"])
                .arg(dir.join(format!("{policy}.lua")))
                .output()
                .unwrap();
            assert_eq!(code(&out), 0, "{name}:\n{}", text(&out));
            assert!(String::from_utf8_lossy(&out.stdout).contains(", 0 failed"));
        } else {
            check(&w, &dir.join(name));
        }
    }
}
