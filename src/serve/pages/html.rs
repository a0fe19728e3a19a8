//! Writing HTML by hand, safely: every dynamic text goes through [`Esc`], which escapes what
//! could open a tag, an entity or leave a quoted attribute. Pages are built with `write!` into
//! a `String`; a `String` never fails to take a write, so those results are ignored through
//! `w!`.

use std::fmt;

/// Text as HTML element content or a double- or single-quoted attribute value: `&`, `<`, `>`,
/// `"` and `'` become entities, so a task holding `<script>` shows as text and runs nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Esc<'a>(pub &'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(['&', '<', '>', '"', '\'']) {
            f.write_str(&rest[..i])?;
            f.write_str(match rest.as_bytes()[i] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => "&#39;",
            })?;
            rest = &rest[i + 1..];
        }
        f.write_str(rest)
    }
}

/// `write!` into a page's `String`, which cannot fail.
macro_rules! w {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = write!($out, $($arg)*);
    }};
}
pub(crate) use w;

/// A path segment with every byte but `A-Za-z0-9-_.~` percent-encoded, so an id that is not
/// a plain word cannot change the path (or, escaped again as an attribute, the page).
pub(crate) fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            w!(out, "%{b:02X}");
        }
    }
    out
}

/// The path of job `id`'s page.
pub(crate) fn job_path(id: &str) -> String {
    format!("/jobs/{}", segment(id))
}

/// A link to job `id`'s page, showing the id.
pub(crate) fn job_link(id: &str) -> String {
    format!(
        "<a class=\"id\" href=\"{}\">{}</a>",
        Esc(&job_path(id)),
        Esc(id)
    )
}

/// A state as a badge, coloured by its kind through the stylesheet (`state-approval_required`).
pub(crate) fn state_badge(state: crate::job::JobState) -> String {
    let name = state.as_str();
    format!(
        "<span class=\"badge state state-{}\">{}</span>",
        name.to_ascii_lowercase(),
        name
    )
}

/// The whole document: the header with the navigation and who is looking, then `body`.
pub(crate) fn document(title: &str, viewer: &super::Viewer, body: &str) -> String {
    let mut scopes = vec!["read"];
    if viewer.can_operate {
        scopes.push("operate");
    }
    if viewer.can_approve {
        scopes.push("approve");
    }
    let mut out = String::with_capacity(body.len() + 1024);
    w!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"same-origin\">\n\
         <title>{} · oneshot</title>\n<link rel=\"stylesheet\" href=\"{}\">\n\
         <script src=\"{}\" defer></script>\n</head>\n<body>\n\
         <header class=\"top\"><nav><a class=\"brand\" href=\"{}\">oneshot</a> \
         <a href=\"{}\">Board</a> <a href=\"{}\">Inbox</a> <a href=\"{}\">Spend</a> \
         <span id=\"live-badge\" class=\"badge live\" hidden></span></nav>\
         <span class=\"viewer\">signed in as <b>{}</b> <small>({})</small> \
         <form class=\"signout\" method=\"post\" action=\"/logout\"><button>sign out</button>\
         </form></span></header>\n<main>\n{body}</main>\n\
         </body>\n</html>\n",
        Esc(title),
        super::STYLE_PATH,
        super::LIVE_JS_PATH,
        super::BOARD_PATH,
        super::BOARD_PATH,
        super::INBOX_PATH,
        super::SPEND_PATH,
        Esc(&viewer.name),
        scopes.join(", "),
    );
    out
}

/// The element that tells the page's script where its live stream is, and from where the
/// page as rendered goes on (`after`, a job stream's cursor).
pub(crate) fn live_feed(src: &str, after: Option<&str>) -> String {
    let after = after
        .map(|a| format!(" data-after=\"{}\"", Esc(a)))
        .unwrap_or_default();
    format!(
        "<div id=\"live\" hidden data-src=\"{}\"{after}></div>\n",
        Esc(src)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_special_character_is_escaped_and_the_rest_kept() {
        assert_eq!(
            Esc("<script>alert('x') & \"y\"</script>é").to_string(),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;é"
        );
        assert_eq!(Esc("plain").to_string(), "plain");
        assert_eq!(segment("job-1a/../x y"), "job-1a%2F..%2Fx%20y");
    }
}
