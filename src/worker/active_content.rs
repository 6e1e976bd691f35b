//! The rendered output of a format a browser runs as a document (XML: see
//! [`reporter_ports::active_content`]) is read for script-capable markup before it is stored,
//! whole or piece by piece: the upload check (TPL-0032) reads the template's source, where
//! `{{ "<scr"|safe }}ipt>` hides what the render writes. A report whose output holds any ends
//! `Error` `report_generation_failed` (the event contract's fixed vocabulary) with
//! `render_error.cause` `script_detected`, and nothing is stored (refused rather than rewritten:
//! an XML document cannot be cleaned piece by piece without changing what it means, and a
//! report that was meant to be data has no script to keep).
use async_trait::async_trait;
use bytes::Bytes;
use reporter_ports::active_content::{ActiveContentScan, rendered_output_is_checked};
use reporter_ports::ports::{OutputPieces, RenderCause, RenderFailure};
use reporter_ports::report::{ReportErrorCode, SectionOutcome};
use reporter_ports::template::OutputFormat;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::Generation;

/// The script-capable markup of a whole output of `format`, when that format is checked.
pub(super) fn found_in_text(format: OutputFormat, text: &str) -> Option<String> {
    if !rendered_output_is_checked(format) {
        return None;
    }
    reporter_ports::active_content::find_active_content(text)
}

/// The generation of a report whose output holds script (`found`): `Error`
/// `report_generation_failed` with the cause `script_detected`, no artifact.
pub(super) fn script_detected(
    found: &str,
    sections: BTreeMap<String, SectionOutcome>,
) -> Generation {
    tracing::warn!(
        found,
        "the rendered report contains script; it is not stored"
    );
    Generation::RenderFailed {
        code: ReportErrorCode::ReportGenerationFailed,
        failure: RenderFailure {
            cause: RenderCause::ScriptDetected,
            line: None,
        },
        sections,
    }
}

/// The scan of an output written in pieces, shared by the pieces' reader and the job.
#[derive(Debug, Clone, Default)]
pub(super) struct SharedScan(Arc<Mutex<ActiveContentScan>>);

impl SharedScan {
    fn feed(&self, bytes: &[u8]) -> bool {
        let mut scan = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        scan.feed(bytes).is_some()
    }

    /// Reads the output's end (`tail`, after every piece was read) and answers what was found
    /// in the whole output, if anything.
    pub(super) fn finish(&self, tail: &[u8]) -> Option<String> {
        let mut scan = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        scan.feed(tail).map(str::to_owned)
    }
}

/// `pieces`, read through a scan when `format` is checked: once script is found, the rest of
/// the output is read (the render is never held back) but no longer handed on.
pub(super) fn scanned(
    format: OutputFormat,
    pieces: Box<dyn OutputPieces>,
) -> (Box<dyn OutputPieces>, Option<SharedScan>) {
    if !rendered_output_is_checked(format) {
        return (pieces, None);
    }
    let scan = SharedScan::default();
    let reader = ScannedPieces {
        inner: pieces,
        scan: scan.clone(),
    };
    (Box::new(reader), Some(scan))
}

struct ScannedPieces {
    inner: Box<dyn OutputPieces>,
    scan: SharedScan,
}

#[async_trait]
impl OutputPieces for ScannedPieces {
    async fn next(&mut self) -> Option<Bytes> {
        let piece = self.inner.next().await?;
        if self.scan.feed(&piece) {
            while self.inner.next().await.is_some() {}
            return None;
        }
        Some(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Listed(Vec<&'static str>, Arc<Mutex<usize>>);

    #[async_trait]
    impl OutputPieces for Listed {
        async fn next(&mut self) -> Option<Bytes> {
            if self.0.is_empty() {
                return None;
            }
            *self.1.lock().unwrap() += 1;
            Some(Bytes::from_static(self.0.remove(0).as_bytes()))
        }
    }

    /// The pieces handed on, how many were read, and the finding with `tail`.
    async fn read(
        format: OutputFormat,
        pieces: Vec<&'static str>,
        tail: &str,
    ) -> (String, usize, Option<String>) {
        let count = Arc::new(Mutex::new(0));
        let (mut reader, scan) = scanned(format, Box::new(Listed(pieces, count.clone())));
        let mut out = String::new();
        while let Some(p) = reader.next().await {
            out.push_str(std::str::from_utf8(&p).unwrap());
        }
        let found = scan.and_then(|s| s.finish(tail.as_bytes()));
        let read = *count.lock().unwrap();
        (out, read, found)
    }

    #[tokio::test]
    async fn a_vector_split_between_pieces_is_found_and_the_rest_is_read_not_handed_on() {
        let pieces = vec![
            "<r xmlns=\"http://www.w3.org/1999/xhtml\"><p>a</p><sc",
            "ript>alert(1)</script>\n",
            "<p>more</p>\n",
        ];
        let (out, read, found) = read(OutputFormat::Xml, pieces, "</r>").await;
        assert_eq!(found.as_deref(), Some("<script"));
        assert_eq!(read, 3, "every piece is read");
        assert_eq!(out, "<r xmlns=\"http://www.w3.org/1999/xhtml\"><p>a</p><sc");
    }

    #[tokio::test]
    async fn a_vector_completed_by_the_tail_is_found() {
        let (_, _, found) = read(
            OutputFormat::Xml,
            vec!["<r><a href=\"java"],
            "script:x\"/></r>",
        )
        .await;
        assert_eq!(found.as_deref(), Some("javascript:"));
        let (out, _, found) = read(OutputFormat::Xml, vec!["<r>\n", "<a/>\n"], "</r>").await;
        assert_eq!((out.as_str(), found), ("<r>\n<a/>\n", None));
    }

    #[tokio::test]
    async fn csv_and_txt_pieces_pass_unread() {
        for format in [OutputFormat::Csv, OutputFormat::Txt] {
            let (out, read, found) = read(format, vec!["<script>\n"], "").await;
            assert_eq!((out.as_str(), read, found), ("<script>\n", 1, None));
        }
        assert_eq!(found_in_text(OutputFormat::Txt, "<script>"), None);
        assert_eq!(
            found_in_text(OutputFormat::Xml, "<r><script/></r>").as_deref(),
            Some("<script")
        );
    }
}
