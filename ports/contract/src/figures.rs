//! Figures a passing test wants seen in CI's log (chaos scenarios, measured bounds, tables).
//!
//! libtest captures what a test prints unless it fails, and `.ci/run` runs the README's plain
//! `cargo test --workspace`. So a figure is written twice: to stderr (shown with the test's
//! output when it fails, or under `--nocapture`) and appended, one line per write, to
//! `<target>/tmp/figures/<test binary>.log`, which `.ci/run` prints after the test step. Use
//! [`figure!`](crate::figure) from an integration test: it fills in the directory
//! (`CARGO_TARGET_TMPDIR`) and the binary's name.
use std::io::Write;
use std::path::{Path, PathBuf};

/// The folder under `target_tmpdir` (cargo's `CARGO_TARGET_TMPDIR`) the figures go to.
pub fn folder(target_tmpdir: &str) -> PathBuf {
    Path::new(target_tmpdir).join("figures")
}

/// Prints `text` to stderr and appends it to `<folder>/<binary>.log` (one `write` per line,
/// so concurrent tests of one binary never interleave within a line). A file that cannot be
/// written is reported on stderr and otherwise ignored: figures never fail a test.
pub fn record(target_tmpdir: &str, binary: &str, text: &str) {
    eprintln!("{text}");
    let dir = folder(target_tmpdir);
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(format!("{binary}.log")))?;
        let mut lines = String::new();
        for line in text.lines() {
            lines.push_str(binary);
            lines.push_str(": ");
            lines.push_str(line);
            lines.push('\n');
        }
        file.write_all(lines.as_bytes())
    });
    if let Err(e) = written {
        eprintln!("figures: cannot write to {}: {e}", dir.display());
    }
}

/// `figure!("fmt", args…)`: [`record`]s a formatted figure from an integration test or bench
/// (`CARGO_TARGET_TMPDIR` and `CARGO_CRATE_NAME` of the calling crate).
#[macro_export]
macro_rules! figure {
    ($($arg:tt)*) => {
        $crate::figures::record(
            env!("CARGO_TARGET_TMPDIR"),
            env!("CARGO_CRATE_NAME"),
            &format!($($arg)*),
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_is_appended_with_the_binary_name() {
        let dir = std::env::temp_dir().join(format!("figures-{}", uuid::Uuid::now_v7().simple()));
        let tmp = dir.to_string_lossy().into_owned();
        record(&tmp, "chaos", "CHAOS a: 1");
        record(&tmp, "chaos", "table\nrow 1");
        let got = std::fs::read_to_string(folder(&tmp).join("chaos.log")).expect("log");
        assert_eq!(got, "chaos: CHAOS a: 1\nchaos: table\nchaos: row 1\n");
        let _ = std::fs::remove_dir_all(dir);
    }
}
