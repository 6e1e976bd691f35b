//! A bounded, lower-case XML name, as the scan keeps it.

/// Longest name kept: longer ones are none of the elements and declarations above, and an
/// attribute name longer than this that starts `on` and letters is taken for a handler.
pub(super) const NAME_MAX: usize = 64;

/// A bounded lower-case name.
#[derive(Debug, Clone, Copy)]
pub(super) struct Name {
    pub(super) bytes: [u8; NAME_MAX],
    pub(super) len: usize,
    pub(super) too_long: bool,
}

impl Default for Name {
    fn default() -> Self {
        Self {
            bytes: [0; NAME_MAX],
            len: 0,
            too_long: false,
        }
    }
}

impl Name {
    pub(super) fn clear(&mut self) {
        self.len = 0;
        self.too_long = false;
    }

    pub(super) fn push(&mut self, b: u8) {
        match self.bytes.get_mut(self.len) {
            Some(slot) => {
                *slot = b.to_ascii_lowercase();
                self.len += 1;
            }
            None => self.too_long = true,
        }
    }

    /// The name after its prefix (`h:script` → `script`); `None` when too long.
    pub(super) fn local(&self) -> Option<&[u8]> {
        if self.too_long {
            return None;
        }
        let name = &self.bytes[..self.len];
        Some(match name.iter().rposition(|&b| b == b':') {
            Some(i) => &name[i + 1..],
            None => name,
        })
    }

    pub(super) fn is(&self, list: &[&str]) -> bool {
        self.local()
            .is_some_and(|n| list.iter().any(|w| w.as_bytes() == n))
    }

    /// `on` followed by letters only (of a name too long to keep: its kept beginning).
    pub(super) fn is_event_handler(&self) -> bool {
        let kept = &self.bytes[..self.len];
        let n = match kept.iter().rposition(|&b| b == b':') {
            Some(i) => &kept[i + 1..],
            None => kept,
        };
        n.len() > 2 && n.starts_with(b"on") && n[2..].iter().all(u8::is_ascii_alphabetic)
    }
}
