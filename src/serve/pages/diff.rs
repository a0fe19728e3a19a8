//! A job's diff against its base, for reading: git's patch text parsed into files and hunks,
//! shown as a file list (path, +added/−removed, added/deleted/renamed/modified) whose entries
//! link to each file's own section, where every line carries its old and new line numbers.
//! A line's number is also its name for a reject's line comment (`path:line: text`): the new
//! file's line, or for a removed line the old one, as each row's anchor and tooltip say.
//!
//! The patch is the workspace's own ([`crate::job::workspace::diff`], git's renames off): the
//! same text the artifact's diff hash is taken of, so the page can say whether what it shows
//! is what an approval binds to. A rename therefore reads as a deletion and an addition here;
//! the parser reads git's rename and copy headers too, for any patch that has them.

use super::forms::short;
use super::html::{Esc, w};
use crate::job::Job;
use crate::job::record::ArtifactVersion;
use sha2::{Digest, Sha256};
use std::path::Path;

/// The most diff lines one page renders; past it the page says what was left out.
const MAX_LINES: usize = 20_000;

/// What became of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// New in the change.
    Added,
    /// Gone in the change.
    Deleted,
    /// Moved (perhaps changed too).
    Renamed,
    /// Copied from another file (perhaps changed too).
    Copied,
    /// Changed in place (content or mode).
    Modified,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Deleted => "deleted",
            Status::Renamed => "renamed",
            Status::Copied => "copied",
            Status::Modified => "modified",
        }
    }
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    /// `' '` context, `'+'` added, `'-'` removed, `'\\'` git's "No newline at end of file".
    pub kind: char,
    /// Its number in the old file (context and removed lines).
    pub old: Option<u32>,
    /// Its number in the new file (context and added lines).
    pub new: Option<u32>,
    /// The text, without the marker.
    pub text: String,
}

/// One hunk: its `@@` header and lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    /// The `@@ -a,b +c,d @@ context` line.
    pub header: String,
    /// Its lines.
    pub lines: Vec<Line>,
}

/// One file of the patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileDiff {
    /// Its path before (`None` when added).
    pub old_path: Option<String>,
    /// Its path after (`None` when deleted).
    pub new_path: Option<String>,
    /// What became of it.
    pub status: Status,
    /// A binary file: no lines to show.
    pub binary: bool,
    /// Lines added.
    pub added: u32,
    /// Lines removed.
    pub removed: u32,
    /// Its hunks.
    pub hunks: Vec<Hunk>,
}

impl FileDiff {
    /// The path a reader knows it by: the new one, or the old one of a deleted file.
    pub(crate) fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }
}

/// A path as git writes it in a header: C-quoted (`"a/t\303\251st"`) when it holds special
/// bytes, else bare.
fn unquote(s: &str) -> String {
    let Some(inner) = s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return s.to_string();
    };
    let mut bytes = Vec::with_capacity(inner.len());
    let raw = inner.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != b'\\' || i + 1 == raw.len() {
            bytes.push(b);
            i += 1;
            continue;
        }
        let e = raw[i + 1];
        i += 2;
        match e {
            b'n' => bytes.push(b'\n'),
            b't' => bytes.push(b'\t'),
            b'r' => bytes.push(b'\r'),
            b'a' => bytes.push(7),
            b'b' => bytes.push(8),
            b'f' => bytes.push(12),
            b'v' => bytes.push(11),
            b'0'..=b'7' => {
                // Up to three octal digits: one byte.
                let mut v = u32::from(e - b'0');
                let mut n = 1;
                while n < 3 && i < raw.len() && (b'0'..=b'7').contains(&raw[i]) {
                    v = v * 8 + u32::from(raw[i] - b'0');
                    i += 1;
                    n += 1;
                }
                bytes.push(u8::try_from(v).unwrap_or(b'?'));
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `a/path` → `path` (a header's path, quoted or not; `/dev/null` → `None`).
fn side(s: &str, prefix: &str) -> Option<String> {
    let s = unquote(s.trim_end_matches('\t'));
    if s == "/dev/null" {
        return None;
    }
    Some(s.strip_prefix(prefix).map_or(s.clone(), str::to_string))
}

/// The two paths of `diff --git a/X b/Y` when they are the same path (unquoted with spaces
/// in it, the only case the header alone cannot split), or quoted.
fn git_header_paths(rest: &str) -> (Option<String>, Option<String>) {
    if rest.starts_with('"') {
        // `"a/x y" "b/x y"` or `"a/x" b/x`: the quoted part ends at the next unescaped quote.
        let bytes = rest.as_bytes();
        let mut i = 1;
        while i < bytes.len() && bytes[i] != b'"' {
            i += if bytes[i] == b'\\' { 2 } else { 1 };
        }
        let first = &rest[..(i + 1).min(rest.len())];
        let second = rest.get(i + 2..).unwrap_or("");
        return (side(first, "a/"), side(second, "b/"));
    }
    if let Some(q) = rest.find(" \"b/") {
        return (side(&rest[..q], "a/"), side(&rest[q + 1..], "b/"));
    }
    // Unquoted: `a/P b/P` splits in the middle when both are the same path.
    let n = rest.len();
    if n % 2 == 1 {
        let (a, b) = (&rest[..n / 2], &rest[n / 2 + 1..]);
        if let (Some(x), Some(y)) = (a.strip_prefix("a/"), b.strip_prefix("b/"))
            && x == y
        {
            return (Some(x.to_string()), Some(y.to_string()));
        }
    }
    match rest.split_once(" b/") {
        Some((a, b)) => (side(a, "a/"), Some(b.to_string())),
        None => (None, None),
    }
}

/// `@@ -a,b +c,d @@`: the first old and new line numbers and how many lines each side has.
fn hunk_range(line: &str) -> Option<(u32, u32, u32, u32)> {
    let body = line.strip_prefix("@@ -")?;
    let (ranges, _) = body.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(u32, u32)> {
        match r.split_once(',') {
            Some((s, n)) => Some((s.parse().ok()?, n.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (os, on) = range(old)?;
    let (ns, nn) = range(new)?;
    Some((os, on, ns, nn))
}

/// Parses git's patch text (`git diff`, with or without `--binary`, renames on or off).
/// What does not read as a patch line is skipped; a file is never left out.
pub(crate) fn parse(patch: &str) -> Vec<FileDiff> {
    let mut files: Vec<FileDiff> = Vec::new();
    // Lines still owed by the current hunk (old side, new side), and the next numbers.
    let (mut left_old, mut left_new, mut at_old, mut at_new) = (0u32, 0u32, 0u32, 0u32);
    let mut in_binary = false;
    for line in patch.lines() {
        if let Some(f) = files.last_mut()
            && (left_old > 0 || left_new > 0)
        {
            let (kind, text) = match line.chars().next() {
                Some(c @ (' ' | '+' | '-' | '\\')) => (c, &line[1..]),
                // An empty context line some tools trim.
                None => (' ', ""),
                Some(_) => ('?', line),
            };
            if kind != '?' {
                let hunk = f.hunks.last_mut().expect("a hunk is open");
                let (old, new) = match kind {
                    ' ' => (Some(at_old), Some(at_new)),
                    '-' => (Some(at_old), None),
                    '+' => (None, Some(at_new)),
                    _ => (None, None),
                };
                if old.is_some() {
                    at_old += 1;
                    left_old = left_old.saturating_sub(1);
                }
                if new.is_some() {
                    at_new += 1;
                    left_new = left_new.saturating_sub(1);
                }
                match kind {
                    '+' => f.added += 1,
                    '-' => f.removed += 1,
                    _ => {}
                }
                hunk.lines.push(Line {
                    kind,
                    old,
                    new,
                    text: text.to_string(),
                });
                continue;
            }
            (left_old, left_new) = (0, 0);
        }
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let (old_path, new_path) = git_header_paths(rest);
            files.push(FileDiff {
                old_path,
                new_path,
                status: Status::Modified,
                binary: false,
                added: 0,
                removed: 0,
                hunks: Vec::new(),
            });
            in_binary = false;
            continue;
        }
        let Some(f) = files.last_mut() else { continue };
        if line == "\\ No newline at end of file" {
            if let Some(h) = f.hunks.last_mut() {
                h.lines.push(Line {
                    kind: '\\',
                    old: None,
                    new: None,
                    text: "No newline at end of file".into(),
                });
            }
        } else if let Some((os, on, ns, nn)) =
            line.starts_with("@@ ").then(|| hunk_range(line)).flatten()
        {
            (at_old, left_old, at_new, left_new) = (os, on, ns, nn);
            f.hunks.push(Hunk {
                header: line.to_string(),
                lines: Vec::new(),
            });
        } else if in_binary {
            // The literal or delta data of `GIT binary patch`.
        } else if line.starts_with("new file mode") {
            f.status = Status::Added;
            f.old_path = None;
        } else if line.starts_with("deleted file mode") {
            f.status = Status::Deleted;
            f.new_path = None;
        } else if let Some(p) = line.strip_prefix("rename from ") {
            f.status = Status::Renamed;
            f.old_path = Some(unquote(p));
        } else if let Some(p) = line.strip_prefix("rename to ") {
            f.status = Status::Renamed;
            f.new_path = Some(unquote(p));
        } else if let Some(p) = line.strip_prefix("copy from ") {
            f.status = Status::Copied;
            f.old_path = Some(unquote(p));
        } else if let Some(p) = line.strip_prefix("copy to ") {
            f.status = Status::Copied;
            f.new_path = Some(unquote(p));
        } else if let Some(p) = line.strip_prefix("--- ") {
            if f.status != Status::Added {
                f.old_path = side(p, "a/").or(f.old_path.take());
            }
        } else if let Some(p) = line.strip_prefix("+++ ") {
            if f.status != Status::Deleted {
                f.new_path = side(p, "b/").or(f.new_path.take());
            }
        } else if line == "GIT binary patch" {
            f.binary = true;
            in_binary = true;
        } else if line.starts_with("Binary files ") && line.ends_with(" differ") {
            f.binary = true;
        }
    }
    files
}

/// The diff section of job `job`'s page: the patch of its workspace when it is on this
/// machine, checked against the latest artifact's diff hash; or why it is not shown.
pub(crate) fn section(job: &Job, latest: Option<&ArtifactVersion>, state_dir: &Path) -> String {
    let mut out = String::from("<section class=\"diff\" id=\"diff\">\n<h2>Diff</h2>\n");
    let Some(ws) = &job.workspace else {
        out.push_str("<p class=\"empty\">No workspace yet: no step has provisioned one.</p>\n");
        out.push_str("</section>\n");
        return out;
    };
    // As `job diff` reads it here, but never fetched from a remote while a page waits: a
    // remote's job is read from its worktree only when this machine's runner made it.
    let here = ws.path.is_dir()
        && (job.spec.remote.is_none() || ws.path.starts_with(state_dir.join("worktrees")));
    if !here {
        w!(
            out,
            "<p class=\"notice\">The workspace is not on this machine; \
             <code>oneshot job diff {}</code> shows the diff from anywhere.</p>\n</section>\n",
            Esc(&job.id)
        );
        return out;
    }
    let patch = match crate::job::workspace::diff(ws) {
        Ok(p) => p,
        Err(e) => {
            w!(
                out,
                "<p class=\"notice\">The diff could not be made: {}</p>\n</section>\n",
                Esc(&e.to_string())
            );
            return out;
        }
    };
    let hash: String = Sha256::digest(patch.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    match latest {
        Some(a) if a.diff_hash == hash => w!(
            out,
            "<p class=\"bound\">The diff of artifact v{} (<code title=\"{}\">{}</code>): what \
             an approval on this page binds to.</p>\n",
            a.version,
            Esc(&hash),
            Esc(short(&hash))
        ),
        Some(a) => w!(
            out,
            "<p class=\"notice\">The workspace has changed since artifact v{} was harvested: \
             this is the diff now (<code title=\"{}\">{}</code>), not the one an approval binds \
             to (<code title=\"{}\">{}</code>).</p>\n",
            a.version,
            Esc(&hash),
            Esc(short(&hash)),
            Esc(&a.diff_hash),
            Esc(short(&a.diff_hash))
        ),
        None => out.push_str(
            "<p class=\"notice\">No artifact harvested yet: this is the workspace as it is \
             now.</p>\n",
        ),
    }
    out.push_str(&render(&parse(&patch)));
    out.push_str("</section>\n");
    out
}

/// The file list and each file's section.
pub(crate) fn render(files: &[FileDiff]) -> String {
    if files.is_empty() {
        return "<p class=\"empty\">No changes against the base.</p>\n".into();
    }
    let (added, removed) = files
        .iter()
        .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed));
    let mut out = format!(
        "<p class=\"diffstat\">{} file{} changed, <span class=\"add\">+{added}</span> \
         <span class=\"del\">−{removed}</span>. A line comment names a line as \
         <code>path:line</code>: the new file's line, or a removed line's old one.</p>\n\
         <ol class=\"diff-files\">\n",
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    );
    for (i, f) in files.iter().enumerate() {
        w!(
            out,
            "<li><a href=\"#file-{i}\"><code>{0}</code></a> <span class=\"status status-{1}\">{1}</span> \
             {2}</li>\n",
            Esc(f.path()),
            f.status.as_str(),
            counts(f)
        );
    }
    out.push_str("</ol>\n");
    let mut shown = 0usize;
    for (i, f) in files.iter().enumerate() {
        let from = match (f.status, &f.old_path) {
            (Status::Renamed | Status::Copied, Some(old)) => {
                format!(" <small>from <code>{}</code></small>", Esc(old))
            }
            _ => String::new(),
        };
        w!(
            out,
            "<article class=\"diff-file\" id=\"file-{i}\">\n<h3><code>{0}</code>{from} \
             <span class=\"status status-{1}\">{1}</span> {2}</h3>\n",
            Esc(f.path()),
            f.status.as_str(),
            counts(f)
        );
        if f.binary {
            out.push_str("<p class=\"empty\">A binary file: no lines to show.</p>\n");
        } else if f.hunks.is_empty() {
            out.push_str("<p class=\"empty\">No line changed (its mode, or an empty file).</p>\n");
        }
        for h in &f.hunks {
            if shown >= MAX_LINES {
                break;
            }
            w!(
                out,
                "<table class=\"hunk\">\n<thead><tr><th colspan=\"3\"><code>{}</code></th></tr></thead>\n<tbody>\n",
                Esc(&h.header)
            );
            for l in &h.lines {
                out.push_str(&row(i, f.path(), l));
                shown += 1;
            }
            out.push_str("</tbody>\n</table>\n");
        }
        out.push_str("</article>\n");
    }
    let total: usize = files
        .iter()
        .flat_map(|f| &f.hunks)
        .map(|h| h.lines.len())
        .sum();
    if total > shown {
        w!(
            out,
            "<p class=\"notice\">Only the first {shown} of {total} diff lines are shown; \
             <code>oneshot job diff ID</code> prints them all.</p>\n"
        );
    }
    out
}

/// `+a −r` of a file, or `binary`.
fn counts(f: &FileDiff) -> String {
    if f.binary {
        return "<small>binary</small>".into();
    }
    format!(
        "<span class=\"add\">+{}</span> <span class=\"del\">−{}</span>",
        f.added, f.removed
    )
}

/// One line: its old and new numbers (each an anchor named `file-I-oN` / `file-I-nN`, whose
/// tooltip is the `path:line` a comment names it by) and its text.
fn row(i: usize, path: &str, l: &Line) -> String {
    let class = match l.kind {
        '+' => "add",
        '-' => "del",
        '\\' => "meta",
        _ => "ctx",
    };
    let num = |n: Option<u32>, side: char| {
        n.map_or_else(String::new, |n| {
            format!(
                "<a id=\"file-{i}-{side}{n}\" href=\"#file-{i}-{side}{n}\" title=\"{}:{n}\">{n}</a>",
                Esc(path)
            )
        })
    };
    let marker = match l.kind {
        '\\' => ' ',
        c => c,
    };
    format!(
        "<tr class=\"{class}\"><td class=\"ln\">{}</td><td class=\"ln\">{}</td>\
         <td class=\"code\"><pre>{marker}{}</pre></td></tr>\n",
        num(l.old, 'o'),
        num(l.new, 'n'),
        Esc(&l.text)
    )
}
