//! The template builder's operations: the catalogues, `generate-code` and `validate`. The
//! compiler (blocks → template code, validation, refusals) is the `reporter-builder` crate,
//! re-exported here; this module runs its stages with the ones that need I/O (data sources'
//! schemas, the sandbox's parse: see `build`) and maps its refusals to [`AppError`]s.
//!
//! Validation runs in stages, each only when the previous found nothing: limits (block count,
//! depth), structure (every block and property), names and data sources (no bound name is a
//! data source's; every data source, table and field exists, as at upload), the template as a
//! whole (script, output format, size — the upload's rules), the sandbox's parse and analysis
//! of the code (the upload's: its bounds on nesting, chains, time and memory). The CPU stages
//! run on the blocking pool. `validate` and `generate-code` run this one pipeline, so `valid`
//! is true exactly when `generate-code` succeeds.
mod build;

pub use reporter_builder::{
    BlockDefinition, BlockProblem, BlockSpec, Class, ElifSpec, FilterDefinition, FilterSpec,
    Finding, FormatIssue, Locale, MAX_BLOCKS, MAX_DEPTH, Msg, PropertyDef,
};
pub use reporter_builder::{catalog, codegen, escape, expr, fields, messages, model, validate};

use super::datasources::Warning;
use super::error::{AppError, AppResult, Code};
use super::{App, Caller};
use reporter_builder::refusal::{self, findings_error, problems};
use reporter_builder::{Refusal, RefusalCode, parse_format};
use reporter_ports::template::MappedFields;

/// `POST /v1/templates/generate-code`.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedCode {
    /// Template source in the original's dialect.
    pub code: String,
    /// What it reads: what the sandbox's analysis of `code` (the upload's) extracts.
    pub mapped_fields: MappedFields,
    /// Data sources that could not be checked.
    pub warnings: Vec<Warning>,
}

/// `POST /v1/templates/validate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockValidation {
    /// True when code can be generated and uploaded.
    pub valid: bool,
    /// Every problem.
    pub errors: Vec<BlockProblem>,
    /// Data sources that could not be checked.
    pub warnings: Vec<Warning>,
}

/// The error code of a refusal's kind (the code of the same name).
fn code_of(kind: RefusalCode) -> Code {
    match kind {
        RefusalCode::MissingFields => Code::MissingFields,
        RefusalCode::TooManyBlocks => Code::TooManyBlocks,
        RefusalCode::NestingTooDeep => Code::NestingTooDeep,
        RefusalCode::TemplateTooComplex => Code::TemplateTooComplex,
        RefusalCode::TemplateParseTimeout => Code::TemplateParseTimeout,
        RefusalCode::TemplateParseMemory => Code::TemplateParseMemory,
        RefusalCode::InvalidBlocks => Code::InvalidBlocks,
        RefusalCode::ScriptDetected => Code::ScriptDetected,
        RefusalCode::UnknownDataSource => Code::UnknownDataSource,
        RefusalCode::UnknownTable => Code::UnknownTable,
        RefusalCode::UnknownField => Code::UnknownField,
        RefusalCode::InvalidContent => Code::InvalidContent,
        RefusalCode::TemplateTooLarge => Code::TemplateTooLarge,
        RefusalCode::InvalidOutputFormat => Code::InvalidOutputFormat,
    }
}

impl From<Refusal> for AppError {
    fn from(r: Refusal) -> Self {
        AppError::new(code_of(r.code), r.message).fields(r.fields)
    }
}

impl App {
    /// The block catalogue.
    pub fn template_blocks_config(&self, caller: &Caller, locale: Locale) -> Vec<BlockDefinition> {
        let span = crate::use_case_span!(
            "template_blocks_config",
            tenant = %caller.tenant,
            locale = locale.tag(),
        );
        span.in_scope(|| {
            let blocks = catalog::block_definitions(locale);
            tracing::debug!(count = blocks.len(), "block catalogue");
            blocks
        })
    }

    /// The filter catalogue.
    pub fn template_filters_config(
        &self,
        caller: &Caller,
        locale: Locale,
    ) -> Vec<FilterDefinition> {
        let span = crate::use_case_span!(
            "template_filters_config",
            tenant = %caller.tenant,
            locale = locale.tag(),
        );
        span.in_scope(|| {
            let filters = catalog::filter_definitions(locale);
            tracing::debug!(count = filters.len(), "filter catalogue");
            filters
        })
    }

    /// Generates template code from blocks.
    ///
    /// MUST answer `MissingFields` without `blocks` (or with none), `InvalidOutputFormat` for
    /// an unknown `format`, and otherwise every problem of [`Self::validate_template_blocks`]
    /// as one error whose code is that of the most fundamental problem: `TooManyBlocks`,
    /// `NestingTooDeep`, `TemplateTooComplex` (an expression past the operator bound),
    /// `InvalidBlocks`, `ScriptDetected`, `UnknownDataSource` / `UnknownTable` /
    /// `UnknownField` (the upload's codes), `InvalidContent`, `TemplateTooLarge`, and the
    /// sandbox parse's refusals (`TemplateTooComplex`, `TemplateParseTimeout`,
    /// `TemplateParseMemory`, as at upload); messages in `locale`. The code returned uploads as a template of
    /// `format`, and `mapped_fields` is what the sandbox's analysis of it (the upload's)
    /// extracts; when that differs from the builder's own analysis of the blocks (a builder
    /// bug) the answer is `Internal`. Validation and code generation run on the blocking pool.
    pub async fn generate_template_code(
        &self,
        caller: &Caller,
        blocks: Option<Vec<BlockSpec>>,
        format: Option<String>,
        locale: Locale,
    ) -> AppResult<GeneratedCode> {
        let span = crate::use_case_span!(
            "generate_template_code",
            tenant = %caller.tenant,
            locale = locale.tag(),
        );
        span.run(async move {
            let Some(blocks) = blocks else {
                return Err(refusal::missing_blocks(locale).into());
            };
            let format = parse_format(format.as_deref())
                .map_err(|f| AppError::from(refusal::unknown_format(&f, locale)))?;
            let build = self.build(blocks, format).await?;
            if !build.findings.is_empty() {
                tracing::info!(problems = build.findings.len(), "blocks refused");
                return Err(findings_error(&build.findings, locale).into());
            }
            tracing::info!(bytes = build.code.len(), "template code generated");
            Ok(GeneratedCode {
                code: build.code,
                mapped_fields: build.mapped,
                warnings: build.warnings,
            })
        })
        .await
    }

    /// Validates blocks: every problem, with the block and property it is about.
    ///
    /// MUST answer `MissingFields` only when `blocks` is absent; every other problem
    /// (including an empty list, an unknown `format`, limits, unknown data, the sandbox
    /// parse's bounds) is a finding of the result, whose `valid` is true exactly when
    /// `generate_template_code` would succeed: both run the same check ([`Self::build`]), and
    /// what makes the check fail to run at all (the sandbox unavailable, a builder bug) is the
    /// same error on both.
    pub async fn validate_template_blocks(
        &self,
        caller: &Caller,
        blocks: Option<Vec<BlockSpec>>,
        format: Option<String>,
        locale: Locale,
    ) -> AppResult<BlockValidation> {
        let span = crate::use_case_span!(
            "validate_template_blocks",
            tenant = %caller.tenant,
            locale = locale.tag(),
        );
        span.run(async move {
            let Some(blocks) = blocks else {
                return Err(refusal::missing_blocks(locale).into());
            };
            let (format, format_finding) = match parse_format(format.as_deref()) {
                Ok(f) => (f, None),
                Err(raw) => (
                    None,
                    Some(Finding::new("", "format", Msg::InvalidFormat(raw))),
                ),
            };
            let mut build = self.build(blocks, format).await?;
            build.findings.extend(format_finding);
            tracing::info!(problems = build.findings.len(), "blocks validated");
            Ok(BlockValidation {
                valid: build.findings.is_empty(),
                errors: problems(&build.findings, locale),
                warnings: build.warnings,
            })
        })
        .await
    }
}

/// Blocks from JSON (tests).
#[cfg(test)]
pub(crate) fn specs_from_json(v: serde_json::Value) -> Vec<BlockSpec> {
    serde_json::from_value(v).expect("block specs")
}
