//! The docs cannot drift from the binary: every `oneshot …` command README.md and docs/*.md
//! show — on a line of a fenced block (```sh, ```console, ``` …; also `$ oneshot …`) or in
//! inline code — must name subcommands that exist and flags the matching `oneshot … --help`
//! lists; so must every example in the binary's own `--help`. A flag mentioned on its own in
//! inline code (`--max-loops N`), or in a synopsis' description, must be an option of some
//! oneshot command, unless it is listed below as another tool's.
//!
//! The commands' shape is read from the real binary's `--help`, walked from the top, so a flag
//! added, renamed or removed in the code shows here as soon as a page still says otherwise.
//!
//! Synopses are read the way README's CLI block writes them: `[--flag V]`, `(A|--b C)`,
//! `list|show` (either subcommand), `job list … | show ID` (a sibling), `[run]`, placeholders
//! in capitals; a lone `|` followed by neither a flag nor a sibling is a shell pipe.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Flags of other tools the docs mention in inline code, each with the tool: they are not
/// oneshot's, and a page may name them on their own.
const FOREIGN: &[(&str, &str)] = &[
    ("--input-format", "claude"),
    ("--output-format", "claude, gemini"),
    ("--permission-prompt-tool", "claude"),
    ("--replay-user-messages", "claude"),
    ("--json-schema", "claude"),
    ("--allowedTools", "claude"),
    ("--permission-mode", "claude"),
    ("--session-id", "claude"),
    ("--include-partial-messages", "claude"),
    ("--skip-git-repo-check", "codex exec"),
    ("--output-schema", "codex exec"),
    ("--sandbox", "codex"),
    ("--acp", "gemini, cline"),
    ("--experimental-acp", "gemini (older releases)"),
    ("--skip-trust", "gemini"),
    ("--yolo", "gemini"),
    ("--message-file", "aider"),
    ("--yes-always", "aider"),
    ("--no-pretty", "aider"),
    ("--no-stream", "aider"),
    ("--no-auto-commits", "aider"),
    ("--no-detect-urls", "aider"),
    ("--chat-mode", "aider"),
    ("--edit-format", "aider"),
    ("--data-dir", "cline"),
    ("--port", "chromedriver (the browser tests)"),
    ("--no-sandbox", "chromium (the browser tests)"),
    (
        "--host-resolver-rules",
        "chromium (the browser tests' DNS rebinding)",
    ),
    ("--auto-approve", "cline"),
    ("--plan", "cline"),
    ("--id", "cline"),
    ("--quick", "criterion, after `cargo bench … --`"),
];

/// Programs whose command lines the docs show in inline code (`cargo bench --bench x`): their
/// flags are theirs.
const PROGRAMS: &[&str] = &[
    "cargo", "claude", "codex", "gemini", "aider", "cline", "git", "npm", "npx", "pip", "uv",
    "man", "sh", "jq",
];

/// Commands a page shows as the mistake an error message answers (docs/errors.md): wrong on
/// purpose, each with why it is there.
const DELIBERATE: &[(&str, &str)] = &[
    (
        "oneshot job aprove",
        "docs/errors.md: the error a mistyped job verb gets, and the message quoting it",
    ),
    (
        "not a oneshot job store",
        "docs/errors.md: the job store's refusal of a file, in its own words, not a command",
    ),
    (
        "written by a newer oneshot (schema version",
        "docs/errors.md: the job store's refusal of a newer store, in its own words",
    ),
];

/// One command's `--help`, as far as this check needs it.
#[derive(Debug, Default)]
struct Help {
    /// Long flags, each with whether it takes a value (`--policy <FILE>`).
    flags: BTreeMap<String, bool>,
    /// Subcommands (without `help`).
    commands: Vec<String>,
    /// Whether it takes positional arguments (an `Arguments:` section).
    positionals: bool,
    /// The lines of its `Examples:` section that are commands.
    examples: Vec<String>,
}

/// Every command's help, by path (`[]` is `oneshot`, `["job", "create"]` …).
struct Cli {
    helps: BTreeMap<Vec<String>, Help>,
    /// Every long flag of every command.
    all_flags: BTreeSet<String>,
}

fn help_text(path: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_oneshot"))
        .args(path)
        .arg("--help")
        .env("NO_COLOR", "1")
        .env_remove("ONESHOT_WORKER")
        .env_remove("ONESHOT_AUDITOR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "oneshot {} --help failed: {}",
        path.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Reads clap's long help: option lines are indented 2 (`  -q, --quiet`) or 6 (`      --json`)
/// columns, descriptions 10; a section is a line ending in `:` at column 0.
fn parse_help(text: &str) -> Help {
    let mut help = Help::default();
    let mut section = "";
    for line in text.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            section = line;
            continue;
        }
        if !line.starts_with(' ') && !line.is_empty() {
            section = "";
        }
        let option = line
            .strip_prefix("      --")
            .or_else(|| {
                let l = line.strip_prefix("  -")?;
                let mut c = l.chars();
                (c.next()?.is_ascii_alphanumeric() && c.as_str().starts_with(", --"))
                    .then(|| &c.as_str()[4..])
            })
            .filter(|_| section.ends_with("ptions:"));
        if let Some(rest) = option {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            let after = &rest[name.len()..];
            let value = after.starts_with(" <") || after.starts_with("=<");
            help.flags.insert(name, value);
            continue;
        }
        match section {
            "Commands:" => {
                if let Some(l) = line.strip_prefix("  ") {
                    let name: String = l
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                        .collect();
                    if !name.is_empty() && name != "help" {
                        help.commands.push(name);
                    }
                }
            }
            "Arguments:" => help.positionals = true,
            "Examples:" => {
                let l = line.trim_start();
                let l = l.strip_prefix("$ ").unwrap_or(l);
                let at = l
                    .find("oneshot ")
                    .filter(|&k| k == 0 || l[..k].ends_with("$("));
                match (at, help.examples.last_mut()) {
                    (Some(k), _) => help.examples.push(l[k..].to_string()),
                    // clap wraps a long example: a line that leaves a quote open goes on.
                    (None, Some(last)) if shell_words::split(last).is_err() && !l.is_empty() => {
                        last.push(' ');
                        last.push_str(l);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    help
}

impl Cli {
    /// Walks every subcommand's `--help` from the top.
    fn read() -> Cli {
        let mut helps = BTreeMap::new();
        let mut todo = vec![Vec::<String>::new()];
        while let Some(path) = todo.pop() {
            let help = parse_help(&help_text(&path));
            for c in &help.commands {
                let mut sub = path.clone();
                sub.push(c.clone());
                todo.push(sub);
            }
            helps.insert(path, help);
        }
        let all_flags = helps
            .values()
            .flat_map(|h| h.flags.keys().cloned())
            .collect();
        Cli { helps, all_flags }
    }

    fn help(&self, path: &[String]) -> &Help {
        &self.helps[path]
    }
}

/// `oneshot job create` for a path.
fn name(path: &[String]) -> String {
    std::iter::once("oneshot")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The long flags a token names: `--policy`, `[--json]`, `(--worker`, `A|--worker-cmd`,
/// `--worker-arg/--auditor-arg,`, `'--timeout`, `--worker-arg=--no-git` (only the first: what
/// follows `=` is a value).
fn flags_in(token: &str) -> Vec<String> {
    let token = token.split('=').next().unwrap_or("");
    token
        .split(['|', '/'])
        .filter_map(|alt| {
            let alt = alt.trim_start_matches(['[', '(', '{', '\'', '"', '`']);
            let rest = alt.strip_prefix("--")?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            // `--FLAG` is a placeholder, not a flag.
            let placeholder = !name.chars().any(|c| c.is_ascii_lowercase());
            (name.starts_with(|c: char| c.is_ascii_alphanumeric()) && !placeholder).then_some(name)
        })
        .collect()
}

/// A word as a synopsis writes it, without its brackets and punctuation.
fn bare(token: &str) -> &str {
    token.trim_matches([
        '[', ']', '(', ')', '{', '}', '…', ',', ';', ':', '`', '\'', '"', '.',
    ])
}

/// Words of a command line: split like a shell would (so a quoted task's `--json` is not a
/// flag), or on whitespace when the line is not shell (a synopsis with an apostrophe).
fn words(line: &str) -> Vec<String> {
    shell_words::split(line)
        .unwrap_or_else(|_| line.split_whitespace().map(str::to_string).collect())
}

/// Where a command was found, for the failure message.
#[derive(Clone)]
struct Place {
    file: String,
    line: usize,
    text: String,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: `{}`", self.file, self.line, self.text.trim())
    }
}

/// Checks the command in `tokens`, which starts at `start` (its `oneshot` already read), and
/// says what is wrong with it.
fn walk(cli: &Cli, tokens: &[String], start: Vec<String>) -> Vec<String> {
    let mut problems = Vec::new();
    let root: Vec<String> = Vec::new();
    let mut cur = vec![start.clone()];
    let mut parent = vec![start];
    let mut value_next = false;
    // After `&&`, a pipe, a redirection or a comment, only a later `oneshot` is ours again.
    let mut elsewhere = false;
    for (i, raw) in tokens.iter().enumerate() {
        if raw.starts_with('#')
            || ["&&", "||", ";", "2>&1"].contains(&raw.as_str())
            || raw.starts_with('>')
            || raw.starts_with('<')
        {
            elsewhere = true;
            continue;
        }
        if elsewhere && bare(raw) != "oneshot" {
            continue;
        }
        elsewhere = false;
        // A quoted task or command line is one value, whatever it mentions.
        if raw.contains(char::is_whitespace) {
            value_next = false;
            continue;
        }
        let word = bare(raw);
        if word == "oneshot" {
            cur = vec![root.clone()];
            parent = cur.clone();
            value_next = false;
            continue;
        }
        if raw == "|" {
            let next = tokens.get(i + 1).map(|t| bare(t)).unwrap_or("");
            let sibling = |p: &Vec<String>| cli.help(p).commands.iter().any(|c| c == next);
            if next.starts_with('-') {
                continue;
            }
            if !next.is_empty() && parent.iter().all(sibling) {
                cur = parent.clone();
                continue;
            }
            elsewhere = true;
            continue;
        }
        let flags = flags_in(raw);
        if !flags.is_empty() {
            for f in &flags {
                for p in &cur {
                    let h = cli.help(p);
                    if !h.flags.contains_key(f) {
                        let offers: Vec<String> =
                            h.flags.keys().map(|k| format!("--{k}")).collect();
                        problems.push(format!(
                            "--{f} is not an option of `{}` (its --help offers {})",
                            name(p),
                            offers.join(", ")
                        ));
                    }
                }
            }
            let last = flags.last().unwrap();
            value_next = !raw.contains('=')
                && !raw.ends_with(']')
                && !raw.ends_with(')')
                && cli.help(&cur[0]).flags.get(last) == Some(&true);
            continue;
        }
        if raw.starts_with('-') || std::mem::take(&mut value_next) {
            continue;
        }
        if cur.len() != 1 {
            continue;
        }
        let h = cli.help(&cur[0]);
        if h.commands.is_empty() {
            continue;
        }
        let alts: Vec<&str> = word.split('|').collect();
        if alts.iter().all(|a| h.commands.iter().any(|c| c == a)) {
            parent = cur.clone();
            cur = alts
                .iter()
                .map(|a| {
                    let mut p = parent[0].clone();
                    p.push(a.to_string());
                    p
                })
                .collect();
            continue;
        }
        // Where only a subcommand may come, a lowercase word is one that does not exist;
        // capitals, `…` and `-` are placeholders.
        let looks_like_one = word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '|')
            && word.starts_with(|c: char| c.is_ascii_lowercase());
        if !h.positionals && looks_like_one {
            problems.push(format!(
                "`{}` has no subcommand `{word}` (its --help offers {})",
                name(&cur[0]),
                h.commands.join(", ")
            ));
            elsewhere = true;
        }
    }
    problems
}

/// The flags in `text` (prose, a description, a message) that are no option of any oneshot
/// command and not another tool's.
fn unknown_flags(cli: &Cli, text: &str) -> Vec<String> {
    text.replace("\\|", "|")
        .split_whitespace()
        .flat_map(flags_in)
        .filter(|f| !cli.all_flags.contains(f))
        .filter(|f| {
            !FOREIGN
                .iter()
                .any(|(flag, _)| flag.strip_prefix("--") == Some(f))
        })
        .map(|f| {
            format!(
                "--{f} is no option of any oneshot command (no --help lists it); if it is \
                 another tool's, add it to FOREIGN in tests/cli/docs_cli.rs with the tool"
            )
        })
        .collect()
}

/// What the check found in one place.
struct Finding {
    place: Place,
    problems: Vec<String>,
}

/// Checks one command line (from its first `oneshot`) and, when it is a synopsis, the
/// description lines under it (their flags must be oneshot's, not necessarily this command's).
fn check_line(cli: &Cli, place: &Place, command: &str, description: &str) -> Option<Finding> {
    let mut problems = walk(
        cli,
        &words(command.replace("\\|", "|").as_str()),
        Vec::new(),
    );
    problems.extend(unknown_flags(cli, description));
    (!problems.is_empty()).then(|| Finding {
        place: place.clone(),
        problems,
    })
}

/// Languages of fenced blocks whose `oneshot` lines are commands.
fn shell_block(lang: &str) -> bool {
    matches!(lang, "" | "sh" | "bash" | "shell" | "console" | "text")
}

/// The fenced command lines of a page: (line number, command, description lines under it),
/// and the page with every fenced line blanked (for the inline code).
fn fenced(page: &str) -> (Vec<(usize, String, String)>, String) {
    let mut commands: Vec<(usize, String, String)> = Vec::new();
    let mut prose = String::new();
    let mut fence: Option<String> = None;
    // The synopsis the next indented lines continue: none after a `$ ` line (its output).
    let mut open: Option<usize> = None;
    let mut continued: Option<usize> = None;
    for (n, line) in page.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(t.trim_start_matches('`').trim().to_string()),
            };
            open = None;
            prose.push('\n');
            continue;
        }
        let Some(lang) = &fence else {
            prose.push_str(line);
            prose.push('\n');
            continue;
        };
        prose.push('\n');
        if !shell_block(lang) {
            continue;
        }
        let prompt = t.strip_prefix("$ ");
        let t = prompt.unwrap_or(t);
        // A shell line continued with `\`.
        if let Some(i) = continued.take() {
            commands[i].1.push(' ');
            commands[i].1.push_str(t.trim_end_matches('\\'));
            continued = t.ends_with('\\').then_some(i);
            continue;
        }
        if t == "oneshot" || t.starts_with("oneshot ") {
            commands.push((n + 1, t.trim_end_matches('\\').to_string(), String::new()));
            let i = commands.len() - 1;
            continued = t.ends_with('\\').then_some(i);
            open = prompt.is_none().then_some(i);
            continue;
        }
        match open {
            // A synopsis continues at a small indent; its description at a wide one.
            Some(i) if line.starts_with(' ') => {
                let (to, text) = if line.len() - t.len() <= 8 {
                    (&mut commands[i].1, t)
                } else {
                    (&mut commands[i].2, t)
                };
                to.push(' ');
                to.push_str(text);
            }
            _ => open = None,
        }
    }
    (commands, prose)
}

/// The inline code spans of prose: (line number, content). A span is a run of N backticks up
/// to the next run of exactly N, within a paragraph.
fn spans(prose: &str) -> Vec<(usize, String)> {
    let b = prose.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = b[i..].iter().take_while(|&&c| c == b'`').count();
        let body = i + n;
        let mut j = body;
        let mut end = None;
        while j < b.len() {
            if b[j] == b'\n' && b.get(j + 1) == Some(&b'\n') {
                break;
            }
            if b[j] == b'`' {
                let m = b[j..].iter().take_while(|&&c| c == b'`').count();
                if m == n {
                    end = Some(j);
                    break;
                }
                j += m;
                continue;
            }
            j += 1;
        }
        match end {
            Some(e) => {
                let line = prose[..i].matches('\n').count() + 1;
                out.push((line, prose[body..e].replace('\n', " ").trim().to_string()));
                i = e + n;
            }
            None => i = body,
        }
    }
    out
}

/// Checks one inline span: a command from each `oneshot` in it; a span that starts with a
/// subcommand (`job run --parallel N`, `reject --feedback TEXT` in the job verbs' table) as
/// that subcommand of `oneshot` or of `oneshot job`, whichever has it; other flags as prose.
fn check_span(cli: &Cli, place: &Place, span: &str) -> Option<Finding> {
    let span = span.replace("\\|", "|");
    let tokens = words(&span);
    let first = tokens.first().map(|t| bare(t)).unwrap_or("");
    if PROGRAMS.contains(&first) && !tokens.iter().any(|t| t == "oneshot") {
        return None;
    }
    let at = tokens
        .iter()
        .position(|t| bare(t) == "oneshot" && !t.ends_with(':'));
    let mut problems = Vec::new();
    let before = match at {
        Some(k) => {
            problems.extend(walk(cli, &tokens[k..], Vec::new()));
            &tokens[..k]
        }
        None => &tokens[..],
    };
    let root: &[String] = &[];
    let parents: Vec<Vec<String>> = [root.to_vec(), vec!["job".to_string()]]
        .into_iter()
        .filter(|p| cli.help(p).commands.iter().any(|c| c == first))
        .collect();
    if !before.is_empty() && !parents.is_empty() && at.is_none() {
        // Some reading must fit: `run --parallel N` is `oneshot job run`'s.
        let tries: Vec<Vec<String>> = parents
            .iter()
            .map(|p| {
                let mut path = p.clone();
                path.push(first.to_string());
                walk(cli, &tokens[1..], path)
            })
            .collect();
        if !tries.iter().any(Vec::is_empty) {
            problems.extend(tries.into_iter().flatten());
        }
    } else {
        problems.extend(unknown_flags(cli, &before.join(" ")));
    }
    (!problems.is_empty()).then(|| Finding {
        place: place.clone(),
        problems,
    })
}

fn pages() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut names = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    names.extend(docs);
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(root.join(&n)).unwrap();
            (n, text)
        })
        .collect()
}

fn report(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| format!("{}\n    {}", f.place, f.problems.join("\n    ")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_documented_command_and_flag_is_in_the_binarys_help() {
    let cli = Cli::read();
    assert!(cli.helps.len() > 20, "read only {} helps", cli.helps.len());
    let mut findings = Vec::new();
    let (mut commands, mut flagged) = (0, 0);
    for (file, page) in pages() {
        let (lines, prose) = fenced(&page);
        for (line, command, description) in lines {
            commands += 1;
            let place = Place {
                file: file.clone(),
                line,
                text: command.clone(),
            };
            findings.extend(check_line(&cli, &place, &command, &description));
        }
        for (line, span) in spans(&prose) {
            if !span.contains("--") && !span.split_whitespace().any(|w| w == "oneshot") {
                continue;
            }
            if DELIBERATE.iter().any(|(wrong, _)| span.contains(wrong)) {
                continue;
            }
            flagged += 1;
            let place = Place {
                file: file.clone(),
                line,
                text: span.clone(),
            };
            findings.extend(check_span(&cli, &place, &span));
        }
    }
    // The binary's own examples are documentation too.
    for (path, help) in &cli.helps {
        for example in &help.examples {
            commands += 1;
            let place = Place {
                file: format!("{} --help", name(path)),
                line: 0,
                text: example.clone(),
            };
            findings.extend(check_line(&cli, &place, example, ""));
        }
    }
    assert!(
        commands > 80 && flagged > 100,
        "found only {commands} commands and {flagged} spans with flags: is the parser broken?"
    );
    assert!(
        findings.is_empty(),
        "{} place(s) in the docs disagree with the binary's --help:\n{}",
        findings.len(),
        report(&findings)
    );
}

/// The check itself: what it must let through, and what it must catch, with the words it
/// says it in.
#[test]
fn the_check_tells_drift_from_what_is_documented() {
    let cli = Cli::read();
    let place = |t: &str| Place {
        file: "docs/x.md".into(),
        line: 7,
        text: t.into(),
    };
    let line = |c: &str, d: &str| {
        check_line(&cli, &place(c), c, d)
            .map(|f| f.problems)
            .unwrap_or_default()
    };
    let span = |c: &str| {
        check_span(&cli, &place(c), c)
            .map(|f| f.problems)
            .unwrap_or_default()
    };
    // What the docs write, read as the binary reads it.
    for fine in [
        "oneshot job create (--worker A|--worker-cmd C) [--max-loops N] [--activate] TASK|-",
        "oneshot job list [--state S] [--json] | show ID [--json] | diff ID | audit [ID] [--json]",
        "oneshot schema list|show LABEL|FILE",
        "oneshot --policy p.lua resume ID",
        "oneshot --worker gemini --auditor-cmd \"sh check.sh\" \"add a --frob flag\"",
        "oneshot man | man -l -",
        "oneshot run --json PROMPT > run.ndjson",
    ] {
        assert_eq!(line(fine, ""), Vec::<String>::new(), "{fine}");
    }
    assert!(span("job run --parallel 10").is_empty());
    assert!(span("reject ID --feedback TEXT").is_empty());
    assert!(span("cargo bench --bench guard -- --frob").is_empty());
    assert!(span("--sandbox read-only").is_empty());

    // What it must catch.
    let p = line("oneshot job merge ID", "");
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].starts_with("`oneshot job` has no subcommand `merge` (its --help offers create,"),
        "{p:?}"
    );
    let p = line("oneshot policy replay ID --policy F --frob-divergence", "");
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].starts_with("--frob-divergence is not an option of `oneshot policy replay` (its --help offers --color, --exit-code,"),
        "{p:?}"
    );
    // A flag of another command is not this one's.
    let p = line("oneshot status ID --parallel 3", "");
    assert!(
        p[0].contains("--parallel is not an option of `oneshot status`"),
        "{p:?}"
    );
    // Each sibling of a synopsis is checked against its own help.
    let p = line("oneshot job list --json | show ID --frob", "");
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].contains("`oneshot job show`"), "{p:?}");
    // A description's flags must be oneshot's.
    let p = line("oneshot list [--json]", "sessions (--frob: all of them)");
    assert!(
        p[0].starts_with("--frob is no option of any oneshot command"),
        "{p:?}"
    );
    // In prose: a command, a verb of the job table, a flag on its own.
    assert!(!span("oneshot job merge").is_empty());
    assert!(!span("run [--parallel N] [--frob]").is_empty());
    assert!(!span("--frob-divergence").is_empty());
    assert!(!span("oneshot log ID --frob").is_empty());

    // The failure names the file, the line and the command.
    let f = check_line(&cli, &place("oneshot job merge"), "oneshot job merge", "").unwrap();
    assert!(report(&[f]).starts_with("docs/x.md:7: `oneshot job merge`\n    `oneshot job` has"));

    // A synopsis' small indent continues it; a wide one is its description.
    let (commands, prose) = fenced(
        "text\n```\noneshot job create [--source DIR]\n      [--max-loops N]\n                  \
         a job (--activate)\n$ oneshot list\n  output --not-checked\n```\n`--json` after\n",
    );
    assert_eq!(
        commands,
        [
            (
                3,
                "oneshot job create [--source DIR] [--max-loops N]".to_string(),
                " a job (--activate)".to_string()
            ),
            (6, "oneshot list".to_string(), String::new()),
        ]
    );
    assert_eq!(spans(&prose), [(9, "--json".to_string())]);
}

/// The types `---@type NAME` names in what `oneshot init` writes and in the policy reference:
/// each must be a class or alias of the editor stubs `init` writes beside them.
#[test]
fn the_starter_policy_names_types_its_stubs_define() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_oneshot"))
        .args(["init", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let stubs = read(&dir.path().join("oneshot.d.lua"));
    let defined: BTreeSet<&str> = stubs
        .lines()
        .filter_map(|l| {
            l.strip_prefix("---@class ")
                .or_else(|| l.strip_prefix("---@alias "))
        })
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(defined.contains("OneshotPolicy"), "{defined:?}");
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/policy.md");
    let mut named = 0;
    for file in [
        dir.path().join("oneshot.lua"),
        dir.path().join("oneshot_test.lua"),
        reference,
    ] {
        let text = read(&file);
        for (n, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("---@type ") {
                let ty: String = line[at + 9..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // Lua's own types (`string`, `table`) are the language's.
                if ty.starts_with(|c: char| c.is_ascii_uppercase()) {
                    named += 1;
                    assert!(
                        defined.contains(ty.as_str()),
                        "{}:{}: `---@type {ty}` names no class of the stubs (oneshot.d.lua \
                         defines {defined:?})",
                        file.display(),
                        n + 1
                    );
                }
            }
        }
    }
    assert!(named >= 2, "found only {named} ---@type annotations");
}
