//! The prompt an ask sends: the question, the schema when the target does not take it itself,
//! and — on a retry — what was wrong with the last answer.

use crate::schema::Schema;

/// The prompt for one run.
pub(super) fn compose(
    question: &str,
    schema: &Schema,
    takes_schema: bool,
    feedback: Option<&str>,
) -> String {
    let mut p = question.trim_end().to_string();
    p.push_str("\n\nAnswer with one JSON object");
    if takes_schema {
        p.push_str(" that fits the schema you were given.");
    } else {
        p.push_str(" that fits this JSON Schema, and nothing else:\n\n");
        p.push_str(schema.text.trim_end());
    }
    if let Some(f) = feedback {
        p.push_str("\n\nYour previous answer did not fit the schema:\n");
        p.push_str(f.trim_end());
        p.push_str("\nAnswer again, with the whole object.");
    }
    p.push('\n');
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Registry;

    #[test]
    fn the_schema_goes_in_the_prompt_only_when_the_target_does_not_take_it() {
        let s = Registry::builtin().resolve("verdict").unwrap();
        let own = compose("Is it done?", &s, true, None);
        assert!(own.starts_with("Is it done?\n\nAnswer with one JSON object"));
        assert!(!own.contains("open_criteria"));
        let inline = compose(
            "Is it done?",
            &s,
            false,
            Some("/verdict: \"maybe\" is not one of"),
        );
        assert!(inline.contains("\"open_criteria\""));
        assert!(inline.contains("did not fit the schema:\n/verdict: \"maybe\""));
    }
}
