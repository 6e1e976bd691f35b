//! Findings as answers: the problem list of `validate` and the one error of `generate-code`,
//! both in the requested language.
use super::BlockProblem;
use super::catalog::Locale;
use super::messages::{Class, Finding, Msg};
use super::validate::{MAX_BLOCKS, MAX_DEPTH};
use crate::app::error::{AppError, Code};
use reporter_ports::template::MAX_TEMPLATE_BYTES;
use std::collections::{BTreeMap, BTreeSet};

/// `findings` without repeats (same block, property and message).
pub(super) fn dedup(findings: Vec<Finding>) -> Vec<Finding> {
    let mut seen = BTreeSet::new();
    findings
        .into_iter()
        .filter(|f| seen.insert((f.block_id.clone(), f.field.clone(), format!("{:?}", f.msg))))
        .collect()
}

/// The findings as `validate` lists them.
pub(super) fn problems(findings: &[Finding], l: Locale) -> Vec<BlockProblem> {
    findings
        .iter()
        .map(|f| BlockProblem {
            block_id: f.block_id.clone(),
            field: f.field.clone(),
            message: f.msg.text(l),
        })
        .collect()
}

/// The code and top-level message for findings of the most fundamental `class`.
fn summary(class: Class, findings: &[Finding], l: Locale) -> (Code, String) {
    let n = findings.len();
    match class {
        _ if findings.iter().all(|f| f.msg == Msg::EmptyBlocks) => (
            Code::MissingFields,
            l.pick(
                "a lista de blocos nao pode ser vazia",
                "blocks must not be empty",
            )
            .to_owned(),
        ),
        Class::TooManyBlocks => (
            Code::TooManyBlocks,
            match l {
                Locale::Pt => format!("um template pode ter no maximo {MAX_BLOCKS} blocos"),
                Locale::En => format!("a template may have at most {MAX_BLOCKS} blocks"),
            },
        ),
        Class::TooDeep => (
            Code::NestingTooDeep,
            match l {
                Locale::Pt => format!("os blocos podem aninhar no maximo {MAX_DEPTH} niveis"),
                Locale::En => format!("blocks may nest at most {MAX_DEPTH} levels deep"),
            },
        ),
        Class::TooComplex => (
            Code::TemplateTooComplex,
            l.pick(
                "os blocos sao complexos demais para analisar (aninhamento ou cadeias alem dos limites do analisador)",
                "the blocks are too complex to parse (nesting or chains past the parser's bounds)",
            )
            .to_owned(),
        ),
        Class::ParseTimeout => (
            Code::TemplateParseTimeout,
            l.pick(
                "analisar o template gerado levou tempo demais",
                "parsing the generated template took too long",
            )
            .to_owned(),
        ),
        Class::ParseMemory => (
            Code::TemplateParseMemory,
            l.pick(
                "analisar o template gerado precisou de memoria demais",
                "parsing the generated template needed too much memory",
            )
            .to_owned(),
        ),
        Class::Structure => (
            Code::InvalidBlocks,
            match l {
                Locale::Pt => format!("os blocos tem {n} problema(s)"),
                Locale::En => format!("the blocks have {n} problem(s)"),
            },
        ),
        Class::Script => (
            Code::ScriptDetected,
            l.pick(
                "os blocos contem uma tag script, javascript: ou um manipulador de evento",
                "the blocks contain a script tag, javascript: or an inline event handler",
            )
            .to_owned(),
        ),
        Class::UnknownDataSource | Class::UnknownTable | Class::UnknownField => (
            match class {
                Class::UnknownDataSource => Code::UnknownDataSource,
                Class::UnknownTable => Code::UnknownTable,
                _ => Code::UnknownField,
            },
            match l {
                Locale::Pt => {
                    format!("os blocos referenciam {n} item(ns) de dados desconhecido(s)")
                }
                Locale::En => format!("the blocks reference {n} unknown data source item(s)"),
            },
        ),
        Class::Format => (
            Code::InvalidContent,
            l.pick(
                "o template gerado nao serve para o seu formato de saida",
                "the generated template does not fit its output format",
            )
            .to_owned(),
        ),
        Class::TooLarge => (
            Code::TemplateTooLarge,
            match l {
                Locale::Pt => format!("o template gerado passa de {MAX_TEMPLATE_BYTES} bytes"),
                Locale::En => format!("the generated template exceeds {MAX_TEMPLATE_BYTES} bytes"),
            },
        ),
    }
}

/// The error `generate-code` answers for findings: the code of the most fundamental class,
/// a message and every finding in `fields` (`<blockId>.<property>` → message), all in `l`.
pub(super) fn findings_error(findings: &[Finding], l: Locale) -> AppError {
    let class = findings
        .iter()
        .map(|f| f.msg.class())
        .min()
        .unwrap_or(Class::Structure);
    let (code, message) = summary(class, findings, l);
    let mut fields: BTreeMap<String, String> = BTreeMap::new();
    for f in findings {
        let key = if f.block_id.is_empty() {
            f.field.clone()
        } else {
            format!("{}.{}", f.block_id, f.field)
        };
        let text = f.msg.text(l);
        fields
            .entry(key)
            .and_modify(|v| {
                v.push_str("; ");
                v.push_str(&text);
            })
            .or_insert(text);
    }
    AppError::new(code, message).fields(fields)
}

/// No `blocks` in the body, in `l`.
pub(super) fn missing_blocks(l: Locale) -> AppError {
    AppError::new(
        Code::MissingFields,
        l.pick("blocks e obrigatorio", "blocks is required"),
    )
    .field("blocks", l.pick("obrigatorio", "required"))
}

/// A `format` that is not an output format, in `l`.
pub(super) fn unknown_format(f: &str, l: Locale) -> AppError {
    let (message, field) = match l {
        Locale::Pt => (
            format!("formato '{f}' invalido (html, pdf, csv, xml ou txt)"),
            "deve ser html, pdf, csv, xml ou txt (maiusculas ou minusculas)",
        ),
        Locale::En => (
            format!("format '{f}' is not one of html, pdf, csv, xml, txt"),
            "must be one of html, pdf, csv, xml, txt (case-insensitive)",
        ),
    };
    AppError::new(Code::InvalidOutputFormat, message).field("format", field)
}
