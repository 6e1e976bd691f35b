//! The book and the READMEs, checked: a failing test when a page or a link breaks.
//!
//! - every page under `docs/src` is listed in `docs/src/SUMMARY.md` (mdBook leaves an
//!   unlisted page out of the book without a word);
//! - every relative link of `README.md`, `docs/**/*.md` and `adapters/*/README.md` reaches an
//!   existing file or directory, and a link with an `#anchor` into a Markdown file reaches one
//!   of its headings, by the slug rule GitHub and mdBook share (lower case; letters, digits,
//!   `-` and `_` kept; a space becomes `-`; anything else dropped; a repeated heading gets
//!   `-1`, `-2`, …).
//!
//! Links are read with `pulldown-cmark`, the parser mdBook renders with, so a link inside code
//! is no link and a link in a table cell is one.
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// The repository's root (this crate's manifest directory).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Markdown files under `dir`, recursively, sorted.
fn markdown_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The files whose links are checked: README.md, docs/**/*.md, adapters/*/README.md.
fn checked_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    files.extend(markdown_under(&root.join("docs")));
    let adapters = std::fs::read_dir(root.join("adapters")).expect("adapters/");
    let mut readmes: Vec<PathBuf> = adapters
        .map(|e| e.expect("adapter entry").path().join("README.md"))
        .filter(|p| p.is_file())
        .collect();
    readmes.sort();
    files.extend(readmes);
    files
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_FOOTNOTES | Options::ENABLE_STRIKETHROUGH
}

/// The slug of a heading's text, as GitHub and mdBook make it.
fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings, repeated ones numbered as GitHub numbers them.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(markdown, options()) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let n = seen.entry(base.clone()).or_insert(0);
                out.insert(if *n == 0 {
                    base.clone()
                } else {
                    format!("{base}-{n}")
                });
                *n += 1;
            }
            _ => {}
        }
    }
    out
}

/// The link and image destinations of a Markdown text.
fn links(markdown: &str) -> Vec<String> {
    Parser::new_ext(markdown, options())
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string())
            }
            _ => None,
        })
        .collect()
}

/// True for a destination outside the repository (a URL with a scheme, an absolute path).
fn is_external(dest: &str) -> bool {
    dest.starts_with('/')
        || dest
            .split_once(':')
            .is_some_and(|(scheme, _)| !scheme.is_empty() && !scheme.contains(['/', '#', '.']))
}

/// `base/rel` with `.` and `..` resolved, without touching the filesystem.
fn join_normalized(base: &Path, rel: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in base.join(rel).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Every broken relative link of `file`: a missing target, or an anchor no heading makes.
fn broken_links(file: &Path, cache: &mut BTreeMap<PathBuf, BTreeSet<String>>) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let dir = file.parent().expect("a file has a directory");
    let mut broken = Vec::new();
    for dest in links(&text) {
        if is_external(&dest) {
            continue;
        }
        let (path, anchor) = match dest.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (dest.as_str(), None),
        };
        let target = if path.is_empty() {
            file.to_path_buf()
        } else {
            join_normalized(dir, path)
        };
        if !target.exists() {
            broken.push(format!("{dest}: no such file"));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if target.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let headings = cache
            .entry(target.clone())
            .or_insert_with(|| anchors(&std::fs::read_to_string(&target).unwrap_or_default()));
        if !headings.contains(anchor) {
            broken.push(format!("{dest}: no heading makes #{anchor}"));
        }
    }
    broken
}

#[test]
fn every_relative_link_reaches_a_file_and_every_anchor_a_heading() {
    let root = root();
    let mut cache = BTreeMap::new();
    let mut problems = Vec::new();
    let files = checked_files();
    for file in &files {
        for b in broken_links(file, &mut cache) {
            let shown = file.strip_prefix(&root).unwrap_or(file);
            problems.push(format!("{}: {b}", shown.display()));
        }
    }
    assert!(
        files.len() > 30,
        "the book's pages were not found: {files:?}"
    );
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let src = root().join("docs/src");
    let summary_path = src.join("SUMMARY.md");
    let summary = std::fs::read_to_string(&summary_path).expect("docs/src/SUMMARY.md");
    let listed: BTreeSet<PathBuf> = links(&summary)
        .iter()
        .filter(|d| !is_external(d))
        .map(|d| join_normalized(&src, d.split('#').next().unwrap_or_default()))
        .collect();
    let unlisted: Vec<String> = markdown_under(&src)
        .into_iter()
        .filter(|p| *p != summary_path && !listed.contains(p))
        .map(|p| p.strip_prefix(&src).unwrap_or(&p).display().to_string())
        .collect();
    assert!(
        unlisted.is_empty(),
        "pages under docs/src missing from SUMMARY.md (mdBook would leave them out): {unlisted:?}"
    );
}

#[test]
fn the_checks_can_fail() {
    // A slug as GitHub makes it, and a repeated heading numbered.
    assert_eq!(
        slug("Authentication and tenancy"),
        "authentication-and-tenancy"
    );
    assert_eq!(slug("`ce-id`, deterministic id"), "ce-id-deterministic-id");
    assert_eq!(slug("Where we differ (and why)"), "where-we-differ-and-why");
    let a = anchors("# A b\n\n## A b\n\n```\n# not a heading\n```\n### `X` & y\n");
    let want: BTreeSet<String> = ["a-b", "a-b-1", "x--y"].map(String::from).into();
    assert_eq!(a, want);
    // A link in code is no link; one in a table cell is.
    let l = links("`[no](a.md)`\n\n| x |\n|---|\n| [yes](b.md#c) |\n\n![img](i.png)\n");
    assert_eq!(l, ["b.md#c", "i.png"]);
    assert!(is_external("https://x.org") && is_external("mailto:a@b") && is_external("/abs"));
    assert!(!is_external("docs/a.md") && !is_external("#x") && !is_external("a.md#b:c"));
    // A broken file and a broken anchor are both reported.
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("p.md");
    std::fs::write(
        &page,
        "# Title\n\n[ok](#title) [bad](#nope) [gone](missing.md) [self](p.md#title)\n",
    )
    .expect("write");
    let broken = broken_links(&page, &mut BTreeMap::new());
    assert_eq!(
        broken,
        ["#nope: no heading makes #nope", "missing.md: no such file"]
    );
}
