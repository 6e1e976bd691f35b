//! Build information for `/version`, shared by the build script (`build.rs`, which includes
//! this file) and its tests: the git commit, whether the tree had uncommitted changes, the
//! build time and the compiler.
//!
//! Works without git (a source tarball): the commit is then `unknown` and `dirty` false,
//! unless the packager sets `REPORTER_BUILD_COMMIT` / `REPORTER_BUILD_DIRTY`. The build time
//! is `SOURCE_DATE_EPOCH` when set (reproducible builds), else the current time. Git is only
//! trusted when the crate is the top of the repository (not a tarball unpacked inside another
//! repository).
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `/version` reports about the build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildInfo {
    /// Git commit, or `unknown`.
    pub commit: String,
    /// Uncommitted changes at build time (false when unknown).
    pub dirty: bool,
    /// RFC 3339 UTC.
    pub build_time: String,
    /// `rustc --version`, or `unknown`.
    pub rustc: String,
    /// Files whose change must re-run the build script.
    pub watch: Vec<PathBuf>,
}

/// Variables that change the result.
pub const ENV_VARS: [&str; 3] = [
    "REPORTER_BUILD_COMMIT",
    "REPORTER_BUILD_DIRTY",
    "SOURCE_DATE_EPOCH",
];

/// Collects the build information of the crate at `root`; `env` reads a variable.
pub fn collect(root: &Path, env: &dyn Fn(&str) -> Option<String>) -> BuildInfo {
    let env_value = |name: &str| {
        env(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let repo = git_repository(root);
    let mut watch = Vec::new();
    if let Some(git_dir) = &repo {
        // A commit, a checkout or a staged change touches one of these; an edited source
        // file re-runs the script through the source directories below.
        for f in ["HEAD", "index", "logs/HEAD"] {
            let p = git_dir.join(f);
            if p.exists() {
                watch.push(p);
            }
        }
        for d in ["src", "ports", "adapters", "Cargo.toml", "Cargo.lock"] {
            if root.join(d).exists() {
                watch.push(PathBuf::from(d));
            }
        }
    }
    let commit = env_value("REPORTER_BUILD_COMMIT")
        .or_else(|| {
            repo.as_ref()
                .and_then(|_| git(root, &["rev-parse", "HEAD"]))
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let dirty = match env_value("REPORTER_BUILD_DIRTY").as_deref() {
        Some("true" | "1" | "yes") => true,
        Some(_) => false,
        None => repo
            .as_ref()
            .and_then(|_| git(root, &["status", "--porcelain"]))
            .is_some_and(|s| !s.is_empty()),
    };
    let epoch = env_value("SOURCE_DATE_EPOCH")
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_secs()).unwrap_or(0))
                .unwrap_or(0)
        });
    let rustc = env_value("RUSTC").unwrap_or_else(|| "rustc".into());
    let rustc = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    BuildInfo {
        commit,
        dirty,
        build_time: rfc3339(epoch),
        rustc,
        watch,
    }
}

/// Runs git in `dir`; its trimmed output on success.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The git directory when `root` is the top of a git working tree.
fn git_repository(root: &Path) -> Option<PathBuf> {
    let top = git(root, &["rev-parse", "--show-toplevel"])?;
    let same = std::fs::canonicalize(&top).ok()? == std::fs::canonicalize(root).ok()?;
    if !same {
        return None;
    }
    let dir = PathBuf::from(git(root, &["rev-parse", "--git-dir"])?);
    Some(if dir.is_absolute() {
        dir
    } else {
        root.join(dir)
    })
}

/// `YYYY-MM-DDTHH:MM:SSZ` of a Unix time (proleptic Gregorian, UTC).
pub fn rfc3339(epoch: i64) -> String {
    let days = epoch.div_euclid(86_400);
    let secs = epoch.rem_euclid(86_400);
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_767_225_599), "2025-12-31T23:59:59Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
    }

    /// A source tarball: no git anywhere above the directory that git would trust.
    #[test]
    fn a_tree_without_git_builds_with_unknown_commit() {
        let dir = std::env::temp_dir().join(format!("reporter-tarball-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        let none = |_: &str| None;
        let info = collect(&dir, &none);
        assert_eq!(info.commit, "unknown");
        assert!(!info.dirty);
        assert!(info.watch.is_empty(), "{:?}", info.watch);
        assert!(info.rustc.starts_with("rustc "), "{}", info.rustc);
        let packaged = |name: &str| match name {
            "REPORTER_BUILD_COMMIT" => Some("abc123".to_owned()),
            "REPORTER_BUILD_DIRTY" => Some("true".to_owned()),
            "SOURCE_DATE_EPOCH" => Some("86400".to_owned()),
            _ => None,
        };
        let info = collect(&dir, &packaged);
        assert_eq!(info.commit, "abc123");
        assert!(info.dirty);
        assert_eq!(info.build_time, "1970-01-02T00:00:00Z");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// In a git checkout the commit is the 40-hex HEAD, and the git files are watched.
    #[test]
    fn a_checkout_reports_its_head() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let Some(head) = git(root, &["rev-parse", "HEAD"]) else {
            reporter_contract::services::skipped("a git checkout");
            return;
        };
        let none = |_: &str| None;
        let info = collect(root, &none);
        assert_eq!(info.commit, head);
        assert_eq!(info.commit.len(), 40);
        assert!(
            info.watch.iter().any(|p| p.ends_with("HEAD")),
            "{:?}",
            info.watch
        );
    }
}
