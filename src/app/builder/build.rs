//! Checking a block tree and generating its code, in stages, each only when the previous
//! found nothing: limits, structure and the builder's analysis (CPU work, on the blocking
//! pool); names and data references against the data sources (on the runtime: schemas are
//! I/O); code generation and the upload's rules on the whole template (blocking pool); the
//! sandbox's parse and analysis of the code, as an upload would ([`App::confirm_mapped`]).
//! `validate` and `generate-code` both run exactly this pipeline ([`App::build`]), so what
//! one refuses the other refuses.
use crate::app::App;
use crate::app::datasources::Warning;
use crate::app::error::{AppError, AppResult, Code};
use crate::app::templates::analysis_error;
use reporter_builder::fields::{Analysis, Reference};
use reporter_builder::model::BlockSpec;
use reporter_builder::refusal::dedup;
use reporter_builder::stages::{generate, sandbox_finding, structure};
use reporter_builder::{Finding, Msg};
use reporter_ports::ports::{RenderError, RenderLimits, RunnerError};
use reporter_ports::template::{MappedFields, OutputFormat};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What checking a tree produced: findings, or the code with what it reads (the sandbox's
/// analysis of the code, equal to the builder's).
pub(super) struct Build {
    pub findings: Vec<Finding>,
    pub code: String,
    pub mapped: MappedFields,
    pub warnings: Vec<Warning>,
}

impl Build {
    fn refused(findings: Vec<Finding>, warnings: Vec<Warning>) -> Self {
        Self {
            findings,
            code: String::new(),
            mapped: MappedFields::new(),
            warnings,
        }
    }
}

/// Runs CPU-bound `f` on the blocking pool.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> AppResult<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        tracing::error!(error = %e, "template builder task failed");
        AppError::new(Code::Internal, "the blocks could not be checked")
    })
}

impl App {
    /// Checks `blocks` and, when they are valid, generates their code for `format` and has
    /// the sandbox parse and analyse it as an upload would. The one check of both `validate`
    /// and `generate-code`: the code MUST be generated exactly when `findings` is empty.
    /// `Err` only when a stage could not run at all (the sandbox is unavailable, a task
    /// failed) or the builder has a bug (the code does not parse, the analyses differ).
    pub(super) async fn build(
        &self,
        blocks: Vec<BlockSpec>,
        format: Option<OutputFormat>,
    ) -> AppResult<Build> {
        let (nodes, analysis) = match blocking(move || structure(blocks)).await? {
            Ok(checked) => checked,
            Err(findings) => return Ok(Build::refused(findings, Vec::new())),
        };
        let mut findings = self.check_bindings(&analysis);
        let (refs, warnings) = self.check_references(&analysis.references).await;
        findings.extend(refs);
        if !findings.is_empty() {
            return Ok(Build::refused(dedup(findings), warnings));
        }
        let (code, findings) = blocking(move || generate(&nodes, format)).await?;
        if !findings.is_empty() {
            return Ok(Build::refused(findings, warnings));
        }
        match self.confirm_mapped(&code, &analysis.mapped).await? {
            Ok(mapped) => Ok(Build {
                findings: Vec::new(),
                code,
                mapped,
                warnings,
            }),
            Err(finding) => Ok(Build::refused(vec![finding], warnings)),
        }
    }

    /// A name a block binds must not be a data source's: it would hide the data source in
    /// its scope and, outside it, the upload's analysis takes it for a local (see the engine).
    fn check_bindings(&self, analysis: &Analysis) -> Vec<Finding> {
        analysis
            .bindings
            .iter()
            .filter(|(_, name)| self.catalog.get(name).is_some())
            .map(|(origin, name)| {
                Finding::new(
                    &origin.block_id,
                    origin.property,
                    Msg::ShadowsDataSource(name.clone()),
                )
            })
            .collect()
    }

    /// Every data source, table and field the blocks read must exist (the upload's rule); a
    /// source whose schema cannot be read is a warning.
    async fn check_references(&self, refs: &[Reference]) -> (Vec<Finding>, Vec<Warning>) {
        let mut findings = Vec::new();
        let mut warnings = Vec::new();
        let mut by_source: BTreeMap<&str, Vec<&Reference>> = BTreeMap::new();
        for r in refs {
            by_source.entry(r.source.as_str()).or_default().push(r);
        }
        for (ds, mine) in by_source {
            let Some(source) = self.catalog.get(ds) else {
                for r in mine {
                    findings.push(Finding::new(
                        &r.origin.block_id,
                        r.origin.property,
                        Msg::UnknownDataSource(ds.to_owned()),
                    ));
                }
                continue;
            };
            let schema = match source.schema().await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, data_source = %ds, "schema unavailable during block validation");
                    warnings.push(Warning {
                        code: "DATA_SOURCE_UNAVAILABLE",
                        field: ds.to_owned(),
                        message: format!(
                            "data source '{ds}' is unavailable; its fields were not checked"
                        ),
                    });
                    continue;
                }
            };
            for r in mine {
                let msg = match (schema.table(&r.table), &r.field) {
                    (None, _) => Some(Msg::UnknownTable(ds.to_owned(), r.table.clone())),
                    (Some(t), Some(f)) if !t.fields.iter().any(|x| x == f) => {
                        Some(Msg::UnknownField(ds.to_owned(), r.table.clone(), f.clone()))
                    }
                    _ => None,
                };
                if let Some(m) = msg {
                    findings.push(Finding::new(&r.origin.block_id, r.origin.property, m));
                }
            }
        }
        (findings, warnings)
    }

    /// What the upload extracts from generated `code`: the sandbox's own analysis, the one
    /// uploads use. MUST equal `builder` (the builder's analysis of the blocks); a code that
    /// does not parse or reads something else is a builder bug, answered as an internal
    /// error. A bound of the sandbox's parse (nesting, work, time, memory) is a finding about
    /// the template as a whole ([`sandbox_finding`]), as an upload would be refused.
    async fn confirm_mapped(
        &self,
        code: &str,
        builder: &MappedFields,
    ) -> AppResult<Result<MappedFields, Finding>> {
        let analysed = self
            .ports
            .runner
            .analyze(Arc::from(code), RenderLimits::default())
            .await;
        let upload = match analysed {
            Ok(a) => a.mapped_fields,
            Err(RunnerError::Template(
                e @ (RenderError::Syntax(_) | RenderError::Evaluation(_)),
            )) => {
                tracing::error!(error = %e, "generated template code does not parse (builder bug)");
                return Err(AppError::new(
                    Code::Internal,
                    "the generated code does not parse: a template builder bug",
                ));
            }
            Err(RunnerError::Template(e)) => {
                tracing::info!(error = %e, "generated template code refused by the sandbox's parse bounds");
                return Ok(Err(sandbox_finding(e)));
            }
            Err(e) => return Err(analysis_error(e)),
        };
        if upload != *builder {
            tracing::error!(
                ?builder,
                ?upload,
                "builder and upload analyses disagree (builder bug)"
            );
            return Err(AppError::new(
                Code::Internal,
                "the builder's mapped fields differ from what an upload of the generated code extracts: a template builder bug",
            ));
        }
        Ok(Ok(upload))
    }
}
