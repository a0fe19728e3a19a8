//! The command a mistyped word was meant to be: `oneshot stauts` (a one-word task that looks
//! like a command) and `oneshot job aprove ID` (an unknown verb of a command group) get the
//! same "did you mean …?". The verbs are clap's own at each level, so a new command or verb is
//! covered without a list to update.

use clap::CommandFactory;

/// The clap command tree, built (so each group has its `help` verb).
fn tree() -> clap::Command {
    let mut cli = super::args::Cli::command();
    cli.build();
    cli
}

/// The verbs of `group`, `help` included.
fn verbs(group: &clap::Command) -> Vec<String> {
    group
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect()
}

/// The verb among `verbs` that `word` is a typo of. Transpositions count once (`stauts`,
/// `lsit`); short words get less slack, so `test` or `fix` still run as tasks.
fn nearest(verbs: &[String], word: &str) -> Option<String> {
    let slack = if word.chars().count() <= 4 { 1 } else { 2 };
    let lower = word.to_ascii_lowercase();
    verbs
        .iter()
        .find(|v| strsim::osa_distance(&lower, v) <= slack)
        .cloned()
}

/// The top-level command a one-word task looks like a typo of (`stauts` → `status`).
pub fn command_like(word: &str) -> Option<String> {
    nearest(&verbs(&tree()), word)
}

/// Whether `word` names one of oneshot's commands.
pub fn is_command(word: &str) -> bool {
    tree().find_subcommand(word).is_some()
}

/// What to say about `bad`, the word clap could not place, when the line's `words` (options
/// left out) lead through one or more commands to it: `oneshot job aprove ID` → "run `oneshot
/// job aprove`: there is no such verb; did you mean `oneshot job approve`? …", to follow
/// "failed to ". `None` when `bad` does not stand where a verb of a command group is expected
/// (then it is no mistyped verb).
pub fn unknown_verb(words: &[String], bad: &str) -> Option<String> {
    let mut group = tree();
    let mut path = vec!["oneshot"];
    for w in words {
        if w == bad {
            break;
        }
        // A word that is no verb here is an option's value (`schema --registry DIR lst`).
        if let Some(sub) = group.find_subcommand(w).cloned() {
            path.push(w);
            group = sub;
        }
    }
    if path.len() < 2 || !group.has_subcommands() {
        return None;
    }
    // `oneshot job help VERB` names the verbs of `oneshot job`, whose --help describes them.
    let described = match path.split_last() {
        Some((&"help", group)) => group.join(" "),
        _ => path.join(" "),
    };
    let path = path.join(" ");
    let verbs = verbs(&group);
    let hint = match nearest(&verbs, bad) {
        Some(verb) => format!("did you mean `{path} {verb}`?"),
        None => format!("the verbs of `{path}` are {}", verbs.join(", ")),
    };
    Some(format!(
        "run `{path} {bad}`: there is no such verb; {hint} (`{described} --help` says what each \
         does)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn a_mistyped_verb_of_any_group_is_named_with_the_nearest_one() {
        let m = unknown_verb(&words("job aprove job-1"), "aprove").unwrap();
        assert!(m.contains("did you mean `oneshot job approve`?"), "{m}");
        let m = unknown_verb(&words("policy chek p.lua"), "chek").unwrap();
        assert!(m.contains("`oneshot policy check`"), "{m}");
        // An option's value between the group and the verb is skipped.
        let m = unknown_verb(&words("schema dir lst"), "lst").unwrap();
        assert!(m.contains("`oneshot schema list`"), "{m}");
        let m = unknown_verb(&words("job help aprove"), "aprove").unwrap();
        assert!(m.contains("`oneshot job help approve`"), "{m}");
        assert!(m.contains("(`oneshot job --help` says"), "{m}");
        let m = unknown_verb(&words("job frobnicate"), "frobnicate").unwrap();
        assert!(
            m.starts_with("run `oneshot job frobnicate`: there is no such verb"),
            "{m}"
        );
        assert!(
            m.contains("the verbs of `oneshot job` are create, activate, approve"),
            "{m}"
        );
        // Not a verb position: an unquoted task.
        assert_eq!(unknown_verb(&words("fix the bug"), "the"), None);
    }

    #[test]
    fn a_one_word_task_close_to_a_command_is_named() {
        assert_eq!(command_like("stauts").as_deref(), Some("status"));
        assert_eq!(command_like("hlep").as_deref(), Some("help"));
        assert_eq!(command_like("test"), None);
        assert!(is_command("job") && !is_command("jbo"));
    }
}
