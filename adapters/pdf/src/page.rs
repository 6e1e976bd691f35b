//! Page geometry shared by both renderers.

/// Paper size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PaperSize {
    /// US Letter, 8.5 × 11 in (the reference's Chrome setting).
    #[default]
    Letter,
    /// ISO A4, 210 × 297 mm.
    A4,
}

impl PaperSize {
    /// `(width, height)` in inches.
    pub fn inches(self) -> (f64, f64) {
        match self {
            Self::Letter => (8.5, 11.0),
            Self::A4 => (210.0 / 25.4, 297.0 / 25.4),
        }
    }
}

/// Page margins in inches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Margins {
    /// Top margin.
    pub top: f64,
    /// Right margin.
    pub right: f64,
    /// Bottom margin.
    pub bottom: f64,
    /// Left margin.
    pub left: f64,
}

impl Margins {
    /// The same margin on every side.
    pub fn uniform(inches: f64) -> Self {
        Self {
            top: inches,
            right: inches,
            bottom: inches,
            left: inches,
        }
    }
}

impl Default for Margins {
    /// 0.5 in on every side (the reference's Chrome setting).
    fn default() -> Self {
        Self::uniform(0.5)
    }
}

/// Paper size and margins. Default: US Letter with 0.5 in margins. An `@page` rule in the
/// HTML may override them in the native renderer; Chromium uses these values.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PageSetup {
    /// Paper size.
    pub paper: PaperSize,
    /// Margins.
    pub margins: Margins,
}

/// The smallest output accepted as a real PDF (the reference treats less as a failure).
pub const MIN_PDF_BYTES: usize = 1_000;

/// Checks the reference's output rules: at least [`MIN_PDF_BYTES`] and the `%PDF-` magic.
pub(crate) fn validate(pdf: Vec<u8>) -> Result<Vec<u8>, reporter_ports::ports::PdfError> {
    if pdf.len() < MIN_PDF_BYTES {
        return Err(reporter_ports::ports::PdfError::Failed(format!(
            "output too small to be a document ({} bytes)",
            pdf.len()
        )));
    }
    if !pdf.starts_with(b"%PDF-") {
        return Err(reporter_ports::ports::PdfError::Failed(
            "output is not a PDF".into(),
        ));
    }
    Ok(pdf)
}
