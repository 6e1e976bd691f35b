//! [`Writeback`]: the pages of a file written a piece at a time handed to the disk as it
//! grows, so the fsync that makes it durable waits for the last few pieces only.
//!
//! Without it the kernel keeps every written page dirty until the fsync (or its own flush,
//! tens of seconds later): an artifact of several megabytes is then written to the disk at
//! commit, while the client waits. `sync_file_range(SYNC_FILE_RANGE_WRITE)` starts the
//! writing of a range and returns (it does not wait for the disk, nor flush the disk's cache,
//! nor write the file's metadata): durability is still the fsync's, unchanged; this only
//! moves most of its work earlier, beside the render. Best effort: where the call is missing
//! or fails, the fsync does all the work as before.
use std::fs::File;

/// Bytes written since the last start of a writeback before the next one: the call is made
/// about once per MiB, not per piece.
const STEP_BYTES: u64 = 1024 * 1024;

/// What of a file has been written, and what of it was handed to the disk.
#[derive(Debug, Default)]
pub(crate) struct Writeback {
    /// Bytes written to the file so far.
    written: u64,
    /// Bytes whose writeback was started (a prefix of `written`).
    started: u64,
}

impl Writeback {
    /// Counts `len` more bytes written to `file` (appended); once [`STEP_BYTES`] are not yet
    /// handed to the disk, starts their writeback. Never fails: the fsync decides.
    pub(crate) fn wrote(&mut self, file: &File, len: usize) {
        self.written += len as u64;
        let pending = self.written - self.started;
        if pending >= STEP_BYTES {
            start(file, self.started, pending);
            self.started = self.written;
        }
    }
}

/// Starts writing `len` bytes of `file` from `offset` to the disk, without waiting.
#[cfg(target_os = "linux")]
fn start(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (offset.try_into(), len.try_into()) else {
        return;
    };
    // SAFETY: the descriptor is open for the borrow of `file`; the call reads no memory of
    // this process, and its result is only advice (errors are left to the fsync).
    let _ = unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
}

/// Elsewhere the fsync does all the work.
#[cfg(not(target_os = "linux"))]
fn start(_file: &File, _offset: u64, _len: u64) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_writeback_starts_once_a_step_is_written_and_the_bytes_stay_the_same() {
        let mut file = tempfile::tempfile().expect("temp file");
        let mut wb = Writeback::default();
        let piece = vec![b'x'; 300 * 1024];
        for _ in 0..3 {
            file.write_all(&piece).expect("write");
            wb.wrote(&file, piece.len());
        }
        assert_eq!((wb.written, wb.started), (900 * 1024, 0));
        file.write_all(&piece).expect("write");
        wb.wrote(&file, piece.len());
        assert_eq!(wb.started, 1200 * 1024);
        file.sync_all().expect("fsync");
        assert_eq!(file.metadata().expect("metadata").len(), 1200 * 1024);
    }
}
