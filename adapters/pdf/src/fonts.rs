//! The bundled DejaVu Sans faces, handed to the engine from memory. The engine loads a font
//! by path only, and a confined child may open no file; so the child writes each face (from
//! the `dejavu` crate, compiled into the executable) into a pipe of its own, from a thread of
//! its own, and gives the engine the path `/proc/self/fd/<read end>`. Opening it opens the
//! pipe again: a pipe is no file Landlock guards, the process may always reach its own
//! descriptors, and the seccomp filter allows an open for reading.
use rustix::fd::OwnedFd;
use rustix::pipe::{PipeFlags, pipe_with};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// Stack of a thread that writes one face into its pipe (the write needs next to none).
const WRITER_STACK_BYTES: usize = 64 * 1024;

/// The four DejaVu Sans faces, in the order the engine is given them.
fn faces() -> [(&'static str, &'static [u8]); 4] {
    [
        ("DejaVuSans", dejavu::sans::regular()),
        ("DejaVuSans-Bold", dejavu::sans::bold()),
        ("DejaVuSans-Oblique", dejavu::sans::oblique()),
        ("DejaVuSans-BoldOblique", dejavu::sans::bold_oblique()),
    ]
}

/// The faces, served from memory while this value lives: each [`FontPipes::paths`] entry
/// reads one face to its end.
pub(crate) struct FontPipes {
    paths: Vec<PathBuf>,
    /// The read ends the paths name: they MUST stay open until the engine has read them.
    _read_ends: Vec<OwnedFd>,
}

impl FontPipes {
    /// Creates a pipe per face and starts the thread that writes the face into it and then
    /// closes its write end (the engine's read then ends). A face nobody reads leaves its
    /// writer blocked until the process exits.
    ///
    /// MUST run after the confinement (it starts threads, which inherit it) and only once per
    /// conversion (a pipe is read once).
    pub(crate) fn serve() -> io::Result<Self> {
        let mut paths = Vec::new();
        let mut read_ends = Vec::new();
        for (name, bytes) in faces() {
            let (read, write) = pipe_with(PipeFlags::CLOEXEC)?;
            std::thread::Builder::new()
                .name(format!("font {name}"))
                .stack_size(WRITER_STACK_BYTES)
                .spawn(move || {
                    // A failed write (the engine stopped reading) only shortens the face,
                    // which the engine then refuses.
                    let _ = std::fs::File::from(write).write_all(bytes);
                })?;
            paths.push(PathBuf::from(format!("/proc/self/fd/{}", read.as_raw_fd())));
            read_ends.push(read);
        }
        Ok(Self {
            paths,
            _read_ends: read_ends,
        })
    }

    /// One path per face, for the engine's font list.
    pub(crate) fn paths(&self) -> &[PathBuf] {
        &self.paths
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn each_path_reads_its_whole_face() {
        let pipes = FontPipes::serve().expect("pipes");
        assert_eq!(pipes.paths().len(), 4);
        for (path, (name, bytes)) in pipes.paths().iter().zip(faces()) {
            let mut read = Vec::new();
            std::fs::File::open(path)
                .and_then(|mut f| f.read_to_end(&mut read))
                .expect("the face reads");
            assert_eq!(read.len(), bytes.len(), "{name}");
            assert!(read == bytes, "{name} differs");
        }
    }
}
