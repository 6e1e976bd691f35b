//! The pure stages of checking a block tree: limits, structure and the builder's analysis;
//! code generation and the upload's rules on the whole template; what a bound of the
//! sandbox's parse of the code means. The stages that need I/O (data sources' schemas, the
//! sandbox) are the application's, which runs these in order, each only when the previous
//! found nothing.
use super::fields::{self, Analysis};
use super::messages::{Finding, FormatIssue, Msg};
use super::model::{BlockSpec, Node};
use super::refusal::dedup;
use super::{codegen, validate};
use reporter_ports::ports::RenderError;
use reporter_ports::template::{
    MAX_TEMPLATE_BYTES, OutputFormat, TemplateFileError, content_rules, find_script,
    validate_template_file,
};

/// Limits, structure and the builder's own analysis of the tree. MUST refuse an empty list
/// and answer every structural finding at once (without repeats).
pub fn structure(blocks: Vec<BlockSpec>) -> Result<(Vec<Node>, Analysis), Vec<Finding>> {
    if blocks.is_empty() {
        return Err(vec![Finding::new("", "blocks", Msg::EmptyBlocks)]);
    }
    if let Some(f) = validate::check_limits(&blocks) {
        return Err(vec![f]);
    }
    let (nodes, findings) = validate::convert(&blocks);
    if !findings.is_empty() {
        return Err(dedup(findings));
    }
    let analysis = fields::analyze(&nodes);
    Ok((nodes, analysis))
}

/// The generated code and the upload's rules on it.
pub fn generate(nodes: &[Node], format: Option<OutputFormat>) -> (String, Vec<Finding>) {
    let code = codegen::generate(nodes, format);
    let findings = whole_template(&code, format);
    (code, findings)
}

/// The finding for a bound the sandbox's parse of generated code hit: the upload's refusal
/// (`TPL-0080`, `TPL-0081`, `TPL-0082` on `generate-code`), about the template as a whole.
/// Syntax errors are not bounds: the caller MUST have handled them (a builder bug).
pub fn sandbox_finding(e: RenderError) -> Finding {
    let msg = match e {
        RenderError::Timeout => Msg::ParseTimeout,
        RenderError::MemoryLimit(_) => Msg::ParseMemory,
        RenderError::Syntax(_)
        | RenderError::Evaluation(_)
        | RenderError::Fault(_)
        | RenderError::NestingTooDeep(_)
        | RenderError::FuelExhausted
        | RenderError::RecursionLimit
        | RenderError::OutputTooLarge(_)
        | RenderError::Crashed(_) => Msg::CodeTooComplex,
    };
    Finding::new("", "blocks", msg)
}

/// The upload's rules on the template as a whole.
fn whole_template(code: &str, format: Option<OutputFormat>) -> Vec<Finding> {
    let result = match format {
        Some(f) => validate_template_file("generated.tpl", code.as_bytes(), f).map(|_| ()),
        None if code.len() > MAX_TEMPLATE_BYTES => Err(TemplateFileError::TooLarge {
            max: MAX_TEMPLATE_BYTES,
        }),
        None => match find_script(code) {
            Some(found) => Err(TemplateFileError::ScriptDetected { found }),
            None => Ok(()),
        },
    };
    let (field, msg) = match result {
        Ok(()) => return Vec::new(),
        Err(TemplateFileError::TooLarge { max }) => ("blocks", Msg::CodeTooLarge(max)),
        Err(TemplateFileError::ScriptDetected { found }) => ("blocks", Msg::Script(found)),
        Err(TemplateFileError::ContentMismatch { rule, .. }) => {
            ("format", Msg::FormatMismatch(format_issue(rule)))
        }
        Err(TemplateFileError::Empty) => ("format", Msg::FormatMismatch(FormatIssue::Empty)),
        Err(e @ (TemplateFileError::NotTpl | TemplateFileError::NotUtf8)) => (
            "format",
            Msg::FormatMismatch(FormatIssue::Other(e.to_string())),
        ),
    };
    vec![Finding::new("", field, msg)]
}

fn format_issue(rule: &str) -> FormatIssue {
    match rule {
        r if r == content_rules::HTML => FormatIssue::HtmlRoot,
        r if r == content_rules::XML => FormatIssue::XmlMarkup,
        r if r == content_rules::CSV_LINES => FormatIssue::CsvLines,
        r if r == content_rules::CSV_SEPARATOR => FormatIssue::CsvSeparator,
        other => FormatIssue::Other(other.to_owned()),
    }
}
