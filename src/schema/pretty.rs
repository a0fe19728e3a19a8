//! Re-indenting JSON text without reordering it: `serde_json`'s maps sort their keys, and a
//! schema reads best in the order its author wrote (`type`, then `properties`, then
//! `required`), which is also the order agents see.

/// `text` (valid JSON) indented by two spaces per level, keys in their order, an empty
/// `{}` or `[]` kept on one line, ending in a newline. Text that is not JSON comes out
/// re-spaced but otherwise unchanged; the function never fails.
///
/// ```
/// let text = r#"{"type":"object","required":["a"],"properties":{}}"#;
/// assert_eq!(
///     oneshot::schema::pretty(text),
///     "{\n  \"type\": \"object\",\n  \"required\": [\n    \"a\"\n  ],\n  \"properties\": {}\n}\n"
/// );
/// ```
pub fn pretty(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let (mut in_string, mut escaped) = (false, false);
    let mut chars = text.trim().chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if let Some(&close) = chars.peek()
                    && (close == '}' || close == ']')
                {
                    out.push(close);
                    chars.next();
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out.push('\n');
    out
}
