//! Streamed generation: the render runs while the rows of its planned table arrive.
//!
//! Order: the render starts and names its table ([`StreamPlan`]); every other table is
//! extracted into the context (that one written empty); the context is sent; the table's query
//! runs, each row written into a chunk (256 KiB) and each full chunk sent to the render, the source
//! held back while the render is busy ([`RowSink::ready`]); then the end, and the answer. The
//! row and byte limits apply as rows pass, also after the render stopped taking rows (a
//! template that answers early): the rest is read and counted, not sent, so the section
//! fails exactly when it would have failed in a whole context. If the query fails part-way, its
//! section fails as a whole: the render (which saw part of it) is abandoned and the report is
//! rendered again from the other sections, as if that section had failed before the render.
//! A query that passes its deadline while streaming may only have been held back by a slow
//! render: then every table is extracted again and the report rendered from a whole context.
use super::artifact_upload::{NotWritten, Written};
use super::pipeline::{
    Phases, Rendered, charge_section_bytes, render_failure, rendered, section_error,
    storage_failed, table_query,
};
use super::{SectionError, Worker};
use reporter_ports::ports::{
    DataSourceError, RenderSession, Row, RowSink, RunnerError, SinkReady, StreamPlan,
};
use reporter_ports::report::{Report, SectionOutcome};
use reporter_ports::template::Template;
use std::sync::Arc;
use std::time::Instant;

/// Bytes of rows sent to the render at a time: a few chunks fit in the child's input pipe
/// (1 MiB, the sandbox's `PIPE_BYTES`), so the query runs ahead of the render
/// instead of in step with it.
const CHUNK_BYTES: usize = 256 * 1024;

impl Worker {
    /// Renders `report` with `session`, its planned table streamed (see the module docs).
    pub(super) async fn render_streamed(
        &self,
        report: &Report,
        template: &Template,
        source: &Arc<str>,
        sanitize: bool,
        mut session: Box<dyn RenderSession>,
    ) -> Result<Rendered, String> {
        let mapped = &template.mapped_fields;
        // A plan is only followed for a table the template maps (the context holds no other).
        let plan = session.plan().cloned().filter(|p| {
            mapped
                .get(&p.data_source)
                .is_some_and(|t| t.contains_key(&p.table))
        });
        let phase = Instant::now();
        let super::pipeline::Extracted {
            sections: extracted,
            outcomes: mut sections,
            row_bytes,
            ..
        } = self.extract(report, mapped, plan.as_ref()).await;
        let extract_ms = phase.elapsed().as_millis() as u64;
        if let Some(failed) = super::pipeline::all_failed(&sections) {
            return Ok(Rendered::Failed(failed));
        }
        let context = reporter_ports::ports::RenderContext::from_sections(extracted.clone());
        let context_bytes = context.len();
        // Before the context: the output's pieces go to storage from the first one.
        let upload = self
            .artifact_upload(report, sanitize, session.as_mut())
            .await;
        let phase = Instant::now();
        if let Err(e) = session.send_context(&context).await {
            return render_failure(e, sections);
        }
        drop(context);
        let mut streamed_rows = None;
        if let Some(plan) = plan
            .as_ref()
            .filter(|p| sections.get(&p.data_source).is_some_and(|s| s.ok))
        {
            let section_bytes = row_bytes.get(&plan.data_source).copied().unwrap_or(0);
            match self
                .stream_table(report, template, plan, section_bytes, session.as_mut())
                .await
            {
                Streamed::Sent(rows) => {
                    self.metrics.streamed(rows);
                    streamed_rows = Some(rows);
                }
                Streamed::RenderFailed(e) => return render_failure(e, sections),
                Streamed::SectionFailed(SectionError::Timeout) => {
                    // The query's deadline counts the time the render held it back: a slow
                    // template is not a slow source. Everything is extracted again into the
                    // context and rendered whole.
                    drop((session, upload));
                    self.metrics.rendered_again();
                    tracing::warn!(data_source = %plan.data_source, table = %plan.table, "the streamed table's query passed its deadline while the render held it back; rendering again from a whole context");
                    return self
                        .extract_and_render_whole(report, template, source, sanitize)
                        .await;
                }
                Streamed::SectionFailed(error) => {
                    let code = error.code();
                    drop((session, upload));
                    self.metrics.rendered_again();
                    tracing::warn!(data_source = %plan.data_source, table = %plan.table, code, "the streamed table failed part-way; rendering again without its section");
                    sections.insert(
                        plan.data_source.clone(),
                        SectionOutcome {
                            ok: false,
                            error_code: Some(code.to_owned()),
                        },
                    );
                    let rest = extracted
                        .into_iter()
                        .filter(|(ds, _)| *ds != plan.data_source)
                        .collect();
                    return self
                        .render_whole(source, rest, sections, sanitize, extract_ms)
                        .await;
                }
            }
        }
        let result = session.finish().await;
        let phases = Phases {
            extract_ms,
            context_bytes,
            render_ms: phase.elapsed().as_millis() as u64,
            streamed_rows,
        };
        match (result, upload) {
            (Ok(tail), Some(upload)) => Ok(written(upload.finish(tail).await, sections, phases)),
            // A failed render drops the upload, which aborts it.
            (result, _) => rendered(result, sections, phases),
        }
    }

    /// Runs the planned table's query into the render.
    async fn stream_table(
        &self,
        report: &Report,
        template: &Template,
        plan: &StreamPlan,
        section_bytes: usize,
        session: &mut dyn RenderSession,
    ) -> Streamed {
        let ds = &plan.data_source;
        let Some(source) = self.app.catalog().get(ds) else {
            return Streamed::SectionFailed(SectionError::NotConfigured);
        };
        let fields = template
            .mapped_fields
            .get(ds)
            .and_then(|t| t.get(&plan.table))
            .cloned()
            .unwrap_or_default();
        let filters = report.filters.get(ds).cloned().unwrap_or_default();
        let q = table_query(plan.table.clone(), fields, &filters, &self.settings);
        let mut sink = StreamRows {
            chunk: vec![b'['],
            rows: 0,
            chunk_rows: 0,
            bytes: section_bytes,
            max: self.settings.max_section_bytes,
            session,
            draining: false,
            failed: None,
        };
        let done = tokio::time::timeout(self.settings.query_timeout, async {
            source.query_into(&q, &mut sink).await?;
            sink.flush().await
        })
        .await
        .unwrap_or(Err(DataSourceError::Timeout));
        if let Some(e) = sink.failed.take() {
            return Streamed::RenderFailed(e);
        }
        match section_error(ds, done) {
            Ok(()) => Streamed::Sent(sink.rows),
            Err(error) => Streamed::SectionFailed(error),
        }
    }
}

/// The render of an artifact written in pieces ([`storage_failed`] when the upload failed,
/// `report_generation_failed` with the cause `script_detected` when the output holds script).
fn written(
    upload: Result<Written, NotWritten>,
    sections: std::collections::BTreeMap<String, SectionOutcome>,
    phases: Phases,
) -> Rendered {
    match upload {
        Ok(written) => Rendered::Written(written, sections, phases),
        Err(NotWritten::Store(e)) => Rendered::Failed(storage_failed(&e, sections)),
        Err(NotWritten::Script(found)) => {
            Rendered::Failed(super::active_content::script_detected(&found, sections))
        }
    }
}

/// How the streamed table's query ended.
enum Streamed {
    /// The query ended within its limits: the count of rows the render took (all of them,
    /// unless it answered before the last).
    Sent(u64),
    /// The render failed or could not be reached while rows were sent.
    RenderFailed(RunnerError),
    /// The query failed part-way (the section's error code).
    SectionFailed(SectionError),
}

/// Writes the streamed table's rows into chunks and sends each full one to the render.
/// MUST stop the query with `TooLarge` at the first row that takes the section past `max`
/// bytes (also once the render takes no more rows: the rest is counted, not sent), and with
/// `Stopped` when sending failed.
struct StreamRows<'s> {
    /// `[` and the rows of the chunk so far, comma-separated.
    chunk: Vec<u8>,
    /// Rows the render took so far.
    rows: u64,
    chunk_rows: u64,
    /// Bytes of the section's rows so far (its other tables included).
    bytes: usize,
    max: usize,
    session: &'s mut dyn RenderSession,
    /// The render answered before the last row: the rest is counted, not sent.
    draining: bool,
    /// Sending failed (the render's deadline passed, or its process could not be reached).
    failed: Option<RunnerError>,
}

impl StreamRows<'_> {
    fn count(&mut self, bytes: usize) -> Result<(), DataSourceError> {
        self.chunk_rows += 1;
        charge_section_bytes(&mut self.bytes, self.max, bytes)
    }

    fn separator(&mut self) {
        if self.chunk_rows > 0 {
            self.chunk.push(b',');
        }
    }

    /// Counts a row the render no longer takes.
    fn drained(&mut self, bytes: usize) -> Result<(), DataSourceError> {
        charge_section_bytes(&mut self.bytes, self.max, bytes)
    }

    /// Sends the rows written so far.
    async fn flush(&mut self) -> Result<(), DataSourceError> {
        if self.chunk_rows == 0 {
            return Ok(());
        }
        self.chunk.push(b']');
        let sent = self.session.send_rows(&self.chunk).await;
        let rows = std::mem::take(&mut self.chunk_rows);
        self.chunk.clear();
        self.chunk.push(b'[');
        match sent {
            Ok(true) => {
                self.rows += rows;
                Ok(())
            }
            Ok(false) => {
                self.draining = true;
                self.chunk = Vec::new();
                Ok(())
            }
            Err(e) => {
                self.failed = Some(e);
                Err(DataSourceError::Stopped)
            }
        }
    }
}

impl RowSink for StreamRows<'_> {
    fn push(&mut self, row: Row) -> Result<(), DataSourceError> {
        if self.draining {
            let bytes = serde_json::to_vec(&row).map_or(0, |v| v.len());
            return self.drained(bytes);
        }
        self.separator();
        let before = self.chunk.len();
        // Serializing a JSON map into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.chunk, &row);
        let bytes = self.chunk.len() - before;
        self.count(bytes)
    }

    fn push_json(&mut self, json: &[u8]) -> Result<(), DataSourceError> {
        if self.draining {
            return self.drained(json.len());
        }
        self.separator();
        self.chunk.extend_from_slice(json);
        self.count(json.len())
    }

    fn ready(&mut self) -> Option<SinkReady<'_>> {
        if self.draining || self.chunk.len() < CHUNK_BYTES {
            return None;
        }
        Some(Box::pin(self.flush()))
    }
}
