//! The diff parser and renderer over real `git diff` output: a repository made with the real
//! `git`, changed in every way a job's work changes files (modified, added, deleted, renamed
//! with a space in its name, binary), diffed with renames on and off, with and without
//! `--binary`.

use super::diff::{FileDiff, Status, parse, render};
use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "-c",
            "core.quotepath=on",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A repository with two commits; the second changes every kind of file.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    git(d, &["init", "-q"]);
    let keep: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    std::fs::write(d.join("keep.txt"), keep.replace("line 3\n", "-- dash\n")).unwrap();
    std::fs::write(d.join("gone.txt"), "one\ntwo\nthree\n").unwrap();
    let long: String = (1..=20).map(|i| format!("stable text {i}\n")).collect();
    std::fs::write(d.join("old_name.txt"), &long).unwrap();
    std::fs::write(d.join("img.bin"), [0u8, 1, 2, 3, 255, 0, 7]).unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "base"]);
    std::fs::write(
        d.join("keep.txt"),
        keep.replace("line 3\n", "line three\n") + "line 11\n",
    )
    .unwrap();
    std::fs::remove_file(d.join("gone.txt")).unwrap();
    git(d, &["mv", "old_name.txt", "new name.txt"]);
    std::fs::write(d.join("new name.txt"), long + "one more\n").unwrap();
    std::fs::write(d.join("added.txt"), "fresh\n").unwrap();
    std::fs::write(d.join("img.bin"), [0u8, 9, 9, 3, 255, 0, 7, 1]).unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "work"]);
    dir
}

fn file<'a>(files: &'a [FileDiff], path: &str) -> &'a FileDiff {
    files
        .iter()
        .find(|f| f.path() == path)
        .unwrap_or_else(|| panic!("{path} in {files:#?}"))
}

#[test]
fn every_kind_of_change_reads_with_its_status_counts_and_line_numbers() {
    let r = repo();
    let patch = git(
        r.path(),
        &["diff", "--no-color", "-M", "--binary", "HEAD~1", "HEAD"],
    );
    let files = parse(&patch);
    assert_eq!(files.len(), 5, "{files:#?}");

    let keep = file(&files, "keep.txt");
    assert_eq!(
        (keep.status, keep.added, keep.removed),
        (Status::Modified, 2, 1)
    );
    // The removed line was `-- dash`: git writes it `--- dash`, which is no file header.
    let lines: Vec<_> = keep.hunks.iter().flat_map(|h| &h.lines).collect();
    let removed = lines
        .iter()
        .find(|l| l.kind == '-')
        .expect("a removed line");
    assert_eq!(
        (removed.old, removed.new, removed.text.as_str()),
        (Some(3), None, "-- dash")
    );
    let added: Vec<_> = lines.iter().filter(|l| l.kind == '+').collect();
    assert_eq!(
        added
            .iter()
            .map(|l| (l.new, l.text.as_str()))
            .collect::<Vec<_>>(),
        [(Some(3), "line three"), (Some(11), "line 11")]
    );
    let context = lines.iter().find(|l| l.text == "line 4").expect("context");
    assert_eq!((context.old, context.new), (Some(4), Some(4)));
    assert_eq!(keep.old_path.as_deref(), Some("keep.txt"));

    let gone = file(&files, "gone.txt");
    assert_eq!(
        (gone.status, gone.added, gone.removed),
        (Status::Deleted, 0, 3)
    );
    assert_eq!(gone.new_path, None);

    let moved = file(&files, "new name.txt");
    assert_eq!(moved.status, Status::Renamed);
    assert_eq!(moved.old_path.as_deref(), Some("old_name.txt"));
    assert_eq!((moved.added, moved.removed), (1, 0));
    assert_eq!(moved.hunks[0].lines.last().unwrap().new, Some(21));

    let fresh = file(&files, "added.txt");
    assert_eq!(
        (fresh.status, fresh.added, fresh.old_path.as_deref()),
        (Status::Added, 1, None)
    );

    let img = file(&files, "img.bin");
    assert!(img.binary && img.hunks.is_empty(), "{img:#?}");
    assert_eq!(img.status, Status::Modified);

    // Without --binary git says only that the files differ.
    let plain = parse(&git(
        r.path(),
        &["diff", "--no-color", "-M", "HEAD~1", "HEAD"],
    ));
    assert!(file(&plain, "img.bin").binary);
    assert_eq!(plain.len(), 5);
}

#[test]
fn with_renames_off_as_a_workspace_diff_is_a_rename_reads_as_a_deletion_and_an_addition() {
    let r = repo();
    let patch = git(
        r.path(),
        &[
            "diff",
            "--no-color",
            "--no-renames",
            "--binary",
            "HEAD~1",
            "HEAD",
        ],
    );
    let files = parse(&patch);
    assert_eq!(files.len(), 6, "{files:#?}");
    assert_eq!(file(&files, "old_name.txt").status, Status::Deleted);
    let new = file(&files, "new name.txt");
    assert_eq!((new.status, new.added), (Status::Added, 21));
}

#[test]
fn a_quoted_path_is_unquoted() {
    let r = repo();
    let d = r.path();
    std::fs::write(d.join("tést \"q\".txt"), "x\n").unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "quoted"]);
    let files = parse(&git(d, &["diff", "--no-color", "HEAD~1", "HEAD"]));
    assert_eq!(files.len(), 1, "{files:#?}");
    assert_eq!(files[0].path(), "tést \"q\".txt");
    assert_eq!(files[0].status, Status::Added);
}

#[test]
fn the_file_list_links_to_each_files_section_and_each_line_is_named_as_a_comment_names_it() {
    let r = repo();
    let patch = git(
        r.path(),
        &["diff", "--no-color", "-M", "--binary", "HEAD~1", "HEAD"],
    );
    let files = parse(&patch);
    let html = render(&files);
    for (i, f) in files.iter().enumerate() {
        let link = format!("<a href=\"#file-{i}\">");
        let section = format!("<article class=\"diff-file\" id=\"file-{i}\">");
        assert!(html.contains(&link), "{link} in {html}");
        let at = html.find(&section).unwrap_or_else(|| panic!("{section}"));
        let path = crate::serve::views::esc(f.path());
        assert!(html[at..].starts_with(&format!("{section}\n<h3><code>{path}</code>")));
    }
    let i = files.iter().position(|f| f.path() == "keep.txt").unwrap();
    // The added line 3 and the removed old line 3: each anchor's tooltip is its `path:line`.
    assert!(
        html.contains(&format!(
            "<a id=\"file-{i}-n3\" href=\"#file-{i}-n3\" title=\"keep.txt:3\">3</a>"
        )),
        "{html}"
    );
    assert!(html.contains(&format!("id=\"file-{i}-o3\"")));
    assert!(html.contains("<span class=\"status status-renamed\">renamed</span>"));
    assert!(html.contains("<small>from <code>old_name.txt</code></small>"));
    assert!(html.contains("A binary file: no lines to show."));
    assert!(html.contains("5 files changed"), "{html}");
    assert_eq!(
        render(&[]),
        "<p class=\"empty\">No changes against the base.</p>\n"
    );
}
