//! [`StderrTail`]: the last bytes of a child's stderr, kept to read its death ([`crate::Death`]).

/// The last `max` bytes written to a child's stderr (the parent pushes what it reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StderrTail {
    bytes: Vec<u8>,
    max: usize,
}

impl StderrTail {
    /// An empty tail that keeps at most `max` bytes.
    pub fn new(max: usize) -> Self {
        Self {
            bytes: Vec::new(),
            max,
        }
    }

    /// Appends `chunk`, dropping the oldest bytes beyond the bound.
    pub fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > self.max {
            self.bytes.drain(..self.bytes.len() - self.max);
        }
    }

    /// The tail as text (invalid UTF-8 replaced), trimmed.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).trim().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_last_bytes_are_kept() {
        let mut tail = StderrTail::new(8);
        tail.push(b"  first line\n");
        assert_eq!(tail.text(), "st line");
        tail.push(b"memory allocation of 9 bytes failed\n");
        assert_eq!(tail.text(), "failed");
        assert_eq!(StderrTail::new(4).text(), "");
    }
}
