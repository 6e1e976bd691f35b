//! Character references inside a tag, decoded as the scan reads them, and the last
//! characters they make, to match a script URL scheme however it is written.
use super::name::Name;

/// URL schemes that run script.
const SCHEMES: &[&str] = &["javascript:", "vbscript:"];
/// Longest character reference decoded (`&#x0000006a;`, `&newline;`).
const REFERENCE_MAX: usize = 16;
/// Decoded characters kept to match a scheme.
const RECENT: usize = 16;

/// Decodes character references inside a tag and keeps the last characters (lower case,
/// without tab, CR, LF and NUL), to match a scheme however it is written.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Decoded {
    /// A reference being read (`&#10`…), `len` 0 when none.
    reference: [u8; REFERENCE_MAX],
    len: usize,
    recent: [u8; RECENT],
    /// The decoded value of the current `attributeName` attribute, when it is one.
    pub(super) value: Name,
    pub(super) keep_value: bool,
    pub(super) found: Option<&'static str>,
}

impl Decoded {
    pub(super) fn reset(&mut self) {
        self.len = 0;
        self.recent = [0; RECENT];
    }

    /// Reads one byte of a tag.
    pub(super) fn push(&mut self, b: u8) {
        if self.len == 0 {
            if b == b'&' {
                self.reference[0] = b;
                self.len = 1;
            } else {
                self.emit(b);
            }
            return;
        }
        if b == b';' {
            let decoded = reference_value(&self.reference[..self.len]);
            self.len = 0;
            match decoded {
                Some(c) => self.emit(c),
                None => self.flush_raw(b),
            }
            return;
        }
        if continues_reference(&self.reference[..self.len], b) {
            // Leading zeros are as many as the writer likes: keep one.
            let digits = digits_start(&self.reference[..self.len])
                .map(|start| &self.reference[start..self.len]);
            match digits {
                Some(b"0") if b == b'0' => {}
                Some(b"0") => self.reference[self.len - 1] = b,
                _ if self.len < REFERENCE_MAX => {
                    self.reference[self.len] = b;
                    self.len += 1;
                }
                // Longer than any reference that decodes to ASCII.
                _ => {
                    self.reference[1] = b'?';
                }
            }
            return;
        }
        // The reference ended without `;`: numeric ones still count.
        let numeric = self.reference.get(1) == Some(&b'#');
        match reference_value(&self.reference[..self.len]).filter(|_| numeric) {
            Some(c) => {
                self.len = 0;
                self.emit(c);
            }
            None => {
                let raw = self.reference;
                let n = self.len;
                self.len = 0;
                for &r in &raw[..n] {
                    self.emit(r);
                }
            }
        }
        self.push(b);
    }

    fn flush_raw(&mut self, last: u8) {
        let raw = self.reference;
        let n = self.len;
        self.len = 0;
        for &r in &raw[..n] {
            self.emit(r);
        }
        self.emit(last);
    }

    /// One decoded character (a byte: a non-ASCII one matches nothing).
    fn emit(&mut self, c: u8) {
        if matches!(c, b'\t' | b'\n' | b'\r' | 0) {
            return;
        }
        let c = c.to_ascii_lowercase();
        if self.keep_value {
            self.value.push(c);
        }
        self.recent.copy_within(1.., 0);
        self.recent[RECENT - 1] = c;
        if self.found.is_none() {
            self.found = SCHEMES
                .iter()
                .find(|s| self.recent.ends_with(s.as_bytes()))
                .copied();
        }
    }
}

/// Where the digits of the numeric reference `r` start (after `&#` or `&#x`).
fn digits_start(r: &[u8]) -> Option<usize> {
    match r {
        [b'&', b'#', b'x' | b'X', ..] => Some(3),
        [b'&', b'#', ..] => Some(2),
        _ => None,
    }
}

/// Whether `b` may continue the reference `r` (which starts with `&`).
fn continues_reference(r: &[u8], b: u8) -> bool {
    match r {
        [b'&'] => b == b'#' || b.is_ascii_alphabetic(),
        [b'&', b'#'] => b == b'x' || b == b'X' || b.is_ascii_digit(),
        [b'&', b'#', b'x' | b'X', ..] => b.is_ascii_hexdigit(),
        [b'&', b'#', ..] => b.is_ascii_digit(),
        _ => b.is_ascii_alphanumeric(),
    }
}

/// The character `r` (a reference without its `;`) stands for, as a byte (`0x80` for any
/// non-ASCII character, which matches no scheme).
fn reference_value(r: &[u8]) -> Option<u8> {
    let body = r.get(1..)?;
    let value = match body {
        [b'#', b'x' | b'X', hex @ ..] if !hex.is_empty() => {
            u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
        }
        [b'#', dec @ ..] if !dec.is_empty() => std::str::from_utf8(dec).ok()?.parse().ok(),
        name => {
            let name = name.to_ascii_lowercase();
            let c = match name.as_slice() {
                b"colon" => b':',
                b"tab" => b'\t',
                b"newline" => b'\n',
                b"amp" => b'&',
                b"lt" => b'<',
                b"gt" => b'>',
                b"quot" => b'"',
                b"apos" => b'\'',
                b"sol" => b'/',
                _ => return None,
            };
            return Some(c);
        }
    }
    .unwrap_or(0xfffd);
    Some(
        u8::try_from(value)
            .ok()
            .filter(u8::is_ascii)
            .unwrap_or(0x80),
    )
}
