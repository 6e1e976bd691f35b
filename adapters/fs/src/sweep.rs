//! The sweep of [`LocalObjectStorage`](crate::LocalObjectStorage): hidden temporary files a
//! crashed writer left.
use reporter_ports::StoreError;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// True for the name of a file this adapter writes before renaming it: `.<name>.XXXXXX.tmp`
/// (an object or sidecar being written) or `.check-XXXXXX` (the readiness probe). Keys never
/// have a segment starting with `.`, so no object is ever such a file.
fn is_leftover_name(name: &str) -> bool {
    name.starts_with('.') && (name.ends_with(".tmp") || name.starts_with(".check-"))
}

/// Removes, under `root`, the temporary files not written to for `older_than` (their
/// modification time). Walks real directories only (no symbolic link is followed) and skips
/// hidden ones (never an object's). Answers how many files were removed; a missing root has
/// none. A file that vanishes meanwhile (its writer committed or aborted) is not counted.
pub(crate) fn sweep_dir(root: &Path, older_than: Duration) -> Result<u64, StoreError> {
    let cutoff = SystemTime::now()
        .checked_sub(older_than)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut removed = 0;
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(failed(&dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| failed(&dir, e))?;
            let kind = entry.file_type().map_err(|e| failed(&entry.path(), e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() && !name.starts_with('.') {
                pending.push(entry.path());
            } else if kind.is_file() && is_leftover_name(&name) {
                removed += u64::from(remove_if_older(&entry.path(), cutoff)?);
            }
        }
    }
    Ok(removed)
}

/// Removes `path` when last modified before `cutoff`; `true` when it did.
fn remove_if_older(path: &Path, cutoff: SystemTime) -> Result<bool, StoreError> {
    let modified = match std::fs::symlink_metadata(path).and_then(|m| m.modified()) {
        Ok(modified) => modified,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(failed(path, e)),
    };
    if modified >= cutoff {
        return Ok(false);
    }
    match std::fs::remove_file(path) {
        Ok(()) => {
            tracing::info!(path = %path.display(), "abandoned temporary file removed");
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(failed(path, e)),
    }
}

fn failed(path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Unavailable(format!("sweep of {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_adapters_temporary_names_are_leftovers() {
        for name in [
            ".r.pdf.a1B2c3.tmp",
            ".r.pdf.meta.XyZ123.tmp",
            ".check-a1B2c3",
        ] {
            assert!(is_leftover_name(name), "{name}");
        }
        for name in ["r.pdf", "r.pdf.meta", "a.tmp", ".hidden", ".git"] {
            assert!(!is_leftover_name(name), "{name}");
        }
    }

    #[test]
    fn old_temporary_files_go_and_everything_else_stays() {
        let dir = tempfile::tempdir().expect("a directory");
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).expect("dirs");
        std::fs::create_dir_all(root.join(".hidden")).expect("dirs");
        for file in [
            "a/b/.r.pdf.a1B2c3.tmp",
            "a/b/r.pdf",
            "a/b/r.pdf.meta",
            ".check-Zz9Yy8",
            "a/.other",
            ".hidden/.x.abc.tmp",
        ] {
            std::fs::write(root.join(file), b"x").expect("write");
        }
        assert_eq!(
            sweep_dir(root, Duration::from_secs(3600)).expect("sweep"),
            0
        );
        assert!(root.join("a/b/.r.pdf.a1B2c3.tmp").exists(), "young: kept");
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            sweep_dir(root, Duration::from_millis(10)).expect("sweep"),
            2
        );
        assert!(!root.join("a/b/.r.pdf.a1B2c3.tmp").exists());
        assert!(!root.join(".check-Zz9Yy8").exists());
        for kept in [
            "a/b/r.pdf",
            "a/b/r.pdf.meta",
            "a/.other",
            ".hidden/.x.abc.tmp",
        ] {
            assert!(root.join(kept).exists(), "{kept} was removed");
        }
        assert_eq!(
            sweep_dir(&root.join("absent"), Duration::ZERO).expect("sweep"),
            0
        );
    }
}
