//! [`LocalObjectStorage`]: object storage in a local directory.
use crate::upload::LocalUpload;
use crate::writeback::Writeback;
use async_trait::async_trait;
use bytes::Bytes;
use reporter_ports::ports::{ObjectStorage, ObjectUpload, StoredObject, SweepReport};
use reporter_ports::{ObjectKey, StoreError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Content type answered for an object whose sidecar is missing or unreadable.
pub const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";

/// Suffix of the sidecar file holding an object's metadata.
const META_SUFFIX: &str = ".meta";

/// Object storage rooted at a local directory.
///
/// # Keys
/// A key is a `/`-separated relative path, stored at `<root>/<key>` (parent directories are
/// created on demand). Rejected with `StoreError::Unavailable("invalid object key ...")`:
/// empty keys, absolute keys (leading `/`), empty segments (`a//b`, trailing `/`), `.` and
/// `..` segments, backslashes and NUL. Because the layout is a plain directory tree, two more
/// rules keep objects from colliding with this adapter's own files: no segment may start
/// with `.` (temporary files are hidden files) or end with `.meta` (sidecars). A key that
/// names an existing directory (`a` when `a/b` is stored), or runs through an existing
/// object (`a/b` when `a` is stored), fails with `Unavailable` on put and reads as absent.
///
/// # Layout and atomicity
/// The bytes live at `<root>/<key>`; the content type lives in a JSON sidecar
/// `<root>/<key>.meta` (`{"content_type": "..."}`). Each file is written to a hidden temporary
/// file in the same directory, fsynced, renamed over the target, and the directory is fsynced,
/// so a reader sees either the old or the new content of each file, never a torn one. The
/// bytes are renamed into place first and the sidecar second: a reader racing an overwrite
/// that changes the content type may briefly see the new bytes with the old type, and an
/// object whose sidecar is missing (a crash between the two renames) reads with
/// [`DEFAULT_CONTENT_TYPE`].
#[derive(Debug, Clone)]
pub struct LocalObjectStorage {
    root: PathBuf,
}

fn unavailable(what: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(what.to_string())
}

/// Validates a key and answers its segments.
fn key_segments(key: &str) -> Result<Vec<&str>, StoreError> {
    ObjectKey::checked(key)?;
    // This layout's own rules on top of the shared one: hidden names are this adapter's
    // temporary files, `.meta` names its sidecars.
    let reject = |why: &str| unavailable(format!("invalid object key {key:?}: {why}"));
    let segments: Vec<&str> = key.split('/').collect();
    for segment in &segments {
        match *segment {
            s if s.starts_with('.') => return Err(reject("segment starts with '.'")),
            s if s.ends_with(META_SUFFIX) => return Err(reject("segment ends with '.meta'")),
            _ => {}
        }
    }
    Ok(segments)
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Meta {
    content_type: String,
}

/// True for errors meaning "no such object here" (absent, or a directory/file in the way).
fn is_absent(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::NotFound | ErrorKind::NotADirectory | ErrorKind::IsADirectory
    )
}

impl LocalObjectStorage {
    /// Storage rooted at `root`. Does no I/O: the directory is created by the first `put` and
    /// verified by [`ObjectStorage::check`].
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn object_path(&self, key: &str) -> Result<PathBuf, StoreError> {
        let mut path = self.root.clone();
        path.extend(key_segments(key)?);
        Ok(path)
    }

    async fn blocking<T: Send + 'static>(
        f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        blocking(f).await
    }
}

/// Runs file work on the blocking thread pool.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| unavailable(format!("local storage task failed: {e}")))?
}

/// The sidecar's text for `content_type`.
fn encode_meta(content_type: &str) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(&Meta {
        content_type: content_type.to_owned(),
    })
    .map_err(|e| unavailable(format!("cannot encode metadata: {e}")))
}

/// The error of a failed write of the object at `path`.
pub(crate) fn write_failed(path: &Path, e: std::io::Error) -> StoreError {
    unavailable(format!("cannot write object {}: {e}", path.display()))
}

fn sidecar(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(META_SUFFIX);
    PathBuf::from(name)
}

/// The temporary file of a new version of the object at `path` (its directories created).
pub(crate) fn start_object(path: &Path) -> std::io::Result<TempObject> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    TempObject::create(path)
}

/// Makes `temp` the object, then writes its sidecar `meta`: each atomically.
pub(crate) fn finish_object(temp: TempObject, meta: &[u8]) -> std::io::Result<()> {
    let target = temp.target().to_owned();
    temp.persist()?;
    write_atomic(&sidecar(&target), meta)
}

/// Writes `bytes` to `target` atomically ([`TempObject`]).
fn write_atomic(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut temp = TempObject::create(target)?;
    temp.write_all(bytes)?;
    temp.persist()
}

/// A file written next to its target under a hidden temporary name, then made the target
/// at once by [`Self::persist`] (fsync, rename, fsync of the directory): a reader sees the
/// target's old content or the new one, never a part. Dropped unpersisted, it is removed.
pub(crate) struct TempObject {
    file: tempfile::NamedTempFile,
    target: PathBuf,
    writeback: Writeback,
}

impl TempObject {
    /// A new empty temporary file in `target`'s directory (which must exist).
    pub(crate) fn create(target: &Path) -> std::io::Result<Self> {
        let dir = target
            .parent()
            .ok_or_else(|| std::io::Error::other("object path has no parent directory"))?;
        let name = target
            .file_name()
            .ok_or_else(|| std::io::Error::other("object path has no file name"))?;
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // As a file `open` creates: 0666 less the umask (tempfile's own default is 0600).
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let file = builder.tempfile_in(dir)?;
        Ok(Self {
            file,
            target: target.to_owned(),
            writeback: Writeback::default(),
        })
    }

    /// Appends `bytes`.
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.as_file_mut().write_all(bytes)
    }

    /// Appends `bytes`, one piece of several: the pieces written so far go to the disk as
    /// the file grows ([`Writeback`]), so [`Self::persist`] waits for the last ones only.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.write_all(bytes)?;
        self.writeback.wrote(self.file.as_file(), bytes.len());
        Ok(())
    }

    /// The path it becomes.
    pub(crate) fn target(&self) -> &Path {
        &self.target
    }

    /// Makes the file its target (replacing what was there), durably.
    pub(crate) fn persist(self) -> std::io::Result<()> {
        self.file.as_file().sync_all()?;
        self.file.persist(&self.target).map_err(|e| e.error)?;
        match self.target.parent() {
            Some(dir) => sync_dir(dir),
            None => Ok(()),
        }
    }
}

/// Fsyncs a directory so a rename in it is durable (no-op where unsupported).
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::fs::File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[async_trait]
impl ObjectStorage for LocalObjectStorage {
    async fn put(&self, key: &str, bytes: Bytes, content_type: &str) -> Result<String, StoreError> {
        let path = self.object_path(key)?;
        let meta = encode_meta(content_type)?;
        let size = bytes.len();
        let shown = key.to_owned();
        Self::blocking(move || {
            let fail = |e: std::io::Error| write_failed(&path, e);
            let mut temp = start_object(&path).map_err(fail)?;
            temp.write_all(&bytes).map_err(fail)?;
            finish_object(temp, &meta).map_err(fail)
        })
        .await?;
        tracing::debug!(key = %shown, size, "object stored");
        Ok(key.to_owned())
    }

    /// The object goes to a hidden temporary file next to its target, renamed over it at
    /// commit (its sidecar then written as `put` writes it); an aborted or dropped upload
    /// removes the file.
    async fn begin_put(
        &self,
        key: &str,
        content_type: &str,
    ) -> Result<Option<Box<dyn ObjectUpload>>, StoreError> {
        let path = self.object_path(key)?;
        let meta = encode_meta(content_type)?;
        let temp =
            Self::blocking(move || start_object(&path).map_err(|e| write_failed(&path, e))).await?;
        Ok(Some(Box::new(LocalUpload::new(key, temp, meta))))
    }

    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StoreError> {
        let path = self.object_path(key)?;
        Self::blocking(move || {
            let bytes = match std::fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) if is_absent(&e) => return Ok(None),
                Err(e) => {
                    return Err(unavailable(format!(
                        "cannot read object {}: {e}",
                        path.display()
                    )));
                }
            };
            let content_type = match std::fs::read(sidecar(&path)) {
                Ok(raw) => match serde_json::from_slice::<Meta>(&raw) {
                    Ok(meta) => meta.content_type,
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "unreadable object metadata");
                        DEFAULT_CONTENT_TYPE.to_owned()
                    }
                },
                Err(e) if is_absent(&e) => {
                    tracing::warn!(path = %path.display(), "object metadata missing");
                    DEFAULT_CONTENT_TYPE.to_owned()
                }
                Err(e) => {
                    return Err(unavailable(format!(
                        "cannot read object metadata {}: {e}",
                        path.display()
                    )));
                }
            };
            Ok(Some(StoredObject {
                bytes: Bytes::from(bytes),
                content_type,
            }))
        })
        .await
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        let path = self.object_path(key)?;
        Self::blocking(move || {
            for file in [path.clone(), sidecar(&path)] {
                match std::fs::remove_file(&file) {
                    Ok(()) => {}
                    Err(e) if is_absent(&e) => {}
                    Err(e) => {
                        return Err(unavailable(format!(
                            "cannot delete {}: {e}",
                            file.display()
                        )));
                    }
                }
            }
            Ok(())
        })
        .await
    }

    /// Removes the hidden temporary files (an object or sidecar being written, a readiness
    /// probe) not written to for `older_than`: an upload's age is the time since its last
    /// write, so a slow upload that keeps writing is never taken for an abandoned one.
    async fn sweep_abandoned(
        &self,
        older_than: std::time::Duration,
    ) -> Result<Option<SweepReport>, StoreError> {
        let root = self.root.clone();
        let removed = Self::blocking(move || crate::sweep::sweep_dir(&root, older_than)).await?;
        Ok(Some(SweepReport { removed }))
    }

    async fn check(&self) -> Result<(), StoreError> {
        let root = self.root.clone();
        Self::blocking(move || {
            let meta = std::fs::metadata(&root)
                .map_err(|e| unavailable(format!("storage root {}: {e}", root.display())))?;
            if !meta.is_dir() {
                return Err(unavailable(format!(
                    "storage root {} is not a directory",
                    root.display()
                )));
            }
            // A hidden file written and fsynced, removed when dropped.
            tempfile::Builder::new()
                .prefix(".check-")
                .tempfile_in(&root)
                .and_then(|mut probe| {
                    probe.write_all(b"ok")?;
                    probe.as_file().sync_all()
                })
                .map_err(|e| {
                    unavailable(format!(
                        "storage root {} is not writable: {e}",
                        root.display()
                    ))
                })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Objects are created as `open` creates files (0666 less the umask; 022 or 002 here),
    /// not 0600: others sharing the directory read them as before.
    #[cfg(unix)]
    #[tokio::test]
    async fn objects_are_readable_as_plainly_created_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("a directory");
        let storage = LocalObjectStorage::new(dir.path());
        storage
            .put("a/put.txt", Bytes::from_static(b"x"), "text/plain")
            .await
            .expect("put");
        let mut upload = storage
            .begin_put("a/upload.txt", "text/plain")
            .await
            .expect("begin")
            .expect("an upload");
        upload.write(Bytes::from_static(b"y")).await.expect("write");
        upload.commit().await.expect("commit");
        for name in ["put.txt", "upload.txt", "upload.txt.meta"] {
            let mode = std::fs::metadata(dir.path().join("a").join(name))
                .expect("stored")
                .permissions()
                .mode();
            assert_eq!(mode & 0o604, 0o604, "{name}: {mode:o}");
        }
    }

    #[test]
    fn keys_are_validated() {
        assert_eq!(
            key_segments("reports/t1/r.pdf").expect("valid"),
            ["reports", "t1", "r.pdf"]
        );
        assert!(key_segments("a b/ü.txt").is_ok());
        for bad in [
            "", "/a", "a//b", "a/", "./a", "a/../b", "..", "a\\b", "a\0b", ".hidden", "a/.x",
            "a.meta", "a.meta/b",
        ] {
            assert!(
                matches!(key_segments(bad), Err(StoreError::Unavailable(m)) if m.starts_with("invalid object key")),
                "{bad:?}"
            );
        }
    }
}
