//! Human-entered text fields: the one rule of `reporter_ports::human_text`, as an application error.
use super::{AppError, AppResult, Code};

/// MUST return `InvalidFieldValue` naming `field` when `s` contains a control or bidirectional
/// formatting character.
pub(super) fn check_human_text(field: &'static str, s: &str) -> AppResult<()> {
    match reporter_ports::human_text::first_forbidden(s) {
        None => Ok(()),
        Some(c) => Err(AppError::new(
            Code::InvalidFieldValue,
            format!(
                "{field} contains a control or bidirectional formatting character (U+{:04X})",
                u32::from(c)
            ),
        )
        .field(
            field,
            "must not contain control or bidirectional formatting characters",
        )),
    }
}
