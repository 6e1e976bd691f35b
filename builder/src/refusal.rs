//! Findings as answers: the problem list of `validate` and the one refusal of
//! `generate-code`, both in the requested language. A [`Refusal`] names its kind
//! ([`RefusalCode`]); the application maps that kind to its error code.
use super::BlockProblem;
use super::catalog::Locale;
use super::messages::{Class, Finding, Msg};
use super::validate::{MAX_BLOCKS, MAX_DEPTH};
use reporter_ports::template::MAX_TEMPLATE_BYTES;
use std::collections::{BTreeMap, BTreeSet};

/// The kind of a refusal, one per error code the builder's operations answer (the
/// application's code of the same name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalCode {
    /// No blocks (absent or an empty list).
    MissingFields,
    /// More blocks than [`MAX_BLOCKS`].
    TooManyBlocks,
    /// Blocks nested deeper than [`MAX_DEPTH`].
    NestingTooDeep,
    /// An expression past the operator bound, or code past the sandbox parse's bounds.
    TemplateTooComplex,
    /// The sandbox's parse of the code took too long.
    TemplateParseTimeout,
    /// The sandbox's parse of the code needed too much memory.
    TemplateParseMemory,
    /// A block or property is wrong.
    InvalidBlocks,
    /// The blocks contain a script.
    ScriptDetected,
    /// A data source the blocks read does not exist.
    UnknownDataSource,
    /// A table the blocks read does not exist.
    UnknownTable,
    /// A field the blocks read does not exist.
    UnknownField,
    /// The code does not fit its output format.
    InvalidContent,
    /// The code is larger than an upload may be.
    TemplateTooLarge,
    /// `format` is not an output format.
    InvalidOutputFormat,
}

/// A refusal of `generate-code`: its kind, a message and the field messages, in the
/// requested language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What kind of refusal.
    pub code: RefusalCode,
    /// Top-level message.
    pub message: String,
    /// Field (`<blockId>.<property>`, or a property of the body) → message.
    pub fields: BTreeMap<String, String>,
}

impl Refusal {
    fn new(code: RefusalCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            fields: BTreeMap::new(),
        }
    }

    fn field(mut self, field: &str, message: &str) -> Self {
        self.fields.insert(field.to_owned(), message.to_owned());
        self
    }
}

/// `findings` without repeats (same block, property and message).
pub fn dedup(findings: Vec<Finding>) -> Vec<Finding> {
    let mut seen = BTreeSet::new();
    findings
        .into_iter()
        .filter(|f| seen.insert((f.block_id.clone(), f.field.clone(), format!("{:?}", f.msg))))
        .collect()
}

/// The findings as `validate` lists them.
pub fn problems(findings: &[Finding], l: Locale) -> Vec<BlockProblem> {
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
fn summary(class: Class, findings: &[Finding], l: Locale) -> (RefusalCode, String) {
    let n = findings.len();
    match class {
        _ if findings.iter().all(|f| f.msg == Msg::EmptyBlocks) => (
            RefusalCode::MissingFields,
            l.pick(
                "a lista de blocos nao pode ser vazia",
                "blocks must not be empty",
            )
            .to_owned(),
        ),
        Class::TooManyBlocks => (
            RefusalCode::TooManyBlocks,
            match l {
                Locale::Pt => format!("um template pode ter no maximo {MAX_BLOCKS} blocos"),
                Locale::En => format!("a template may have at most {MAX_BLOCKS} blocks"),
            },
        ),
        Class::TooDeep => (
            RefusalCode::NestingTooDeep,
            match l {
                Locale::Pt => format!("os blocos podem aninhar no maximo {MAX_DEPTH} niveis"),
                Locale::En => format!("blocks may nest at most {MAX_DEPTH} levels deep"),
            },
        ),
        Class::TooComplex => (
            RefusalCode::TemplateTooComplex,
            l.pick(
                "os blocos sao complexos demais para analisar (aninhamento ou cadeias alem dos limites do analisador)",
                "the blocks are too complex to parse (nesting or chains past the parser's bounds)",
            )
            .to_owned(),
        ),
        Class::ParseTimeout => (
            RefusalCode::TemplateParseTimeout,
            l.pick(
                "analisar o template gerado levou tempo demais",
                "parsing the generated template took too long",
            )
            .to_owned(),
        ),
        Class::ParseMemory => (
            RefusalCode::TemplateParseMemory,
            l.pick(
                "analisar o template gerado precisou de memoria demais",
                "parsing the generated template needed too much memory",
            )
            .to_owned(),
        ),
        Class::Structure => (
            RefusalCode::InvalidBlocks,
            match l {
                Locale::Pt => format!("os blocos tem {n} problema(s)"),
                Locale::En => format!("the blocks have {n} problem(s)"),
            },
        ),
        Class::Script => (
            RefusalCode::ScriptDetected,
            l.pick(
                "os blocos contem uma tag script, javascript: ou um manipulador de evento",
                "the blocks contain a script tag, javascript: or an inline event handler",
            )
            .to_owned(),
        ),
        Class::UnknownDataSource | Class::UnknownTable | Class::UnknownField => (
            match class {
                Class::UnknownDataSource => RefusalCode::UnknownDataSource,
                Class::UnknownTable => RefusalCode::UnknownTable,
                _ => RefusalCode::UnknownField,
            },
            match l {
                Locale::Pt => {
                    format!("os blocos referenciam {n} item(ns) de dados desconhecido(s)")
                }
                Locale::En => format!("the blocks reference {n} unknown data source item(s)"),
            },
        ),
        Class::Format => (
            RefusalCode::InvalidContent,
            l.pick(
                "o template gerado nao serve para o seu formato de saida",
                "the generated template does not fit its output format",
            )
            .to_owned(),
        ),
        Class::TooLarge => (
            RefusalCode::TemplateTooLarge,
            match l {
                Locale::Pt => format!("o template gerado passa de {MAX_TEMPLATE_BYTES} bytes"),
                Locale::En => format!("the generated template exceeds {MAX_TEMPLATE_BYTES} bytes"),
            },
        ),
    }
}

/// The refusal `generate-code` answers for findings: the code of the most fundamental class,
/// a message and every finding in `fields` (`<blockId>.<property>` → message), all in `l`.
pub fn findings_error(findings: &[Finding], l: Locale) -> Refusal {
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
    Refusal {
        code,
        message,
        fields,
    }
}

/// No `blocks` in the body, in `l`.
pub fn missing_blocks(l: Locale) -> Refusal {
    Refusal::new(
        RefusalCode::MissingFields,
        l.pick("blocks e obrigatorio", "blocks is required"),
    )
    .field("blocks", l.pick("obrigatorio", "required"))
}

/// A `format` that is not an output format, in `l`.
pub fn unknown_format(f: &str, l: Locale) -> Refusal {
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
    Refusal::new(RefusalCode::InvalidOutputFormat, message).field("format", field)
}
