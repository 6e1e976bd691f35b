//! Validation findings about blocks, with their messages in Portuguese and English.
use super::catalog::{ArgRule, CustomTagName, Locale};
use super::expr::Issue;

/// The class of a finding; on `generate-code` it decides the error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// More blocks than the limit.
    TooManyBlocks,
    /// Nested deeper than the limit.
    TooDeep,
    /// An expression, or the generated template, past the template parser's bounds
    /// (nesting, chains, parse work).
    TooComplex,
    /// A missing, malformed or unknown property.
    Structure,
    /// `<script`, `javascript:`, an inline event handler.
    Script,
    /// A data source that is not configured.
    UnknownDataSource,
    /// A table its data source does not have.
    UnknownTable,
    /// A field its table does not have.
    UnknownField,
    /// The generated template does not fit its output format.
    Format,
    /// The generated template is larger than a template may be.
    TooLarge,
    /// Parsing the generated template took longer than an upload's parse may.
    ParseTimeout,
    /// Parsing the generated template needed more memory than an upload's parse may.
    ParseMemory,
}

/// What is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    /// No blocks at all.
    EmptyBlocks,
    /// A block without `type`.
    TypeRequired,
    /// A `type` outside the catalogue.
    UnknownType(String),
    /// A required property is missing or empty.
    Required(&'static str),
    /// Children given to a block that has none (they would be lost).
    NotForType(&'static str, &'static str),
    /// A property that does not parse.
    Invalid(&'static str, Issue),
    /// A filter outside the catalogue.
    UnknownFilter(String),
    /// A filter that needs an argument has none.
    FilterArgMissing(String),
    /// A filter that takes no argument has one.
    FilterArgNotTaken(String),
    /// A filter argument of the wrong shape.
    FilterArg(String, ArgRule),
    /// A function outside the allowed ones.
    UnknownFunction(String, &'static [&'static str]),
    /// `counterMode` outside increment | show.
    UnknownCounterMode(String),
    /// A counter name of the wrong shape.
    CounterName(String),
    /// `increment` with more than one name.
    CounterIncrementOne,
    /// A `tagName` outside the catalogue.
    UnknownTag(String),
    /// `tagArgs` that do not fit the tag's grammar.
    TagArgs(CustomTagName, Option<Issue>),
    /// Nested deeper than allowed.
    DepthExceeded(usize),
    /// More blocks than allowed.
    TooManyBlocks(usize),
    /// The same `blockId` twice.
    DuplicateBlockId(String),
    /// A `blockId` too long or with control characters.
    BlockIdInvalid,
    /// A bound name (loop iterator, `with` variable, `as`) that is a data source's name: it
    /// would hide the data source.
    ShadowsDataSource(String),
    /// Unknown data source.
    UnknownDataSource(String),
    /// Unknown table.
    UnknownTable(String, String),
    /// Unknown field.
    UnknownField(String, String, String),
    /// Script found.
    Script(String),
    /// The template does not fit the format.
    FormatMismatch(FormatIssue),
    /// The template is too large.
    CodeTooLarge(usize),
    /// `format` is not an output format.
    InvalidFormat(String),
    /// The sandbox's parse of the generated template (the upload's) hit a bound of the parser
    /// (nesting, chains, work).
    CodeTooComplex,
    /// The sandbox's parse of the generated template took too long.
    ParseTimeout,
    /// The sandbox's parse of the generated template needed too much memory.
    ParseMemory,
}

/// Why generated code does not fit its output format (the upload's content rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatIssue {
    /// html and pdf need `<html` or `<!DOCTYPE html`.
    HtmlRoot,
    /// xml needs markup.
    XmlMarkup,
    /// csv needs a header line and one more line.
    CsvLines,
    /// csv needs a `,` or `;` in its header line.
    CsvSeparator,
    /// Nothing but whitespace.
    Empty,
    /// Another rule, in English (not expected of generated code).
    Other(String),
}

fn format_issue(f: &FormatIssue, l: Locale) -> String {
    match f {
        FormatIssue::HtmlRoot => l
            .pick(
                "um template HTML deve conter <html ou <!DOCTYPE html",
                "an HTML template must contain <html or <!DOCTYPE html",
            )
            .into(),
        FormatIssue::XmlMarkup => l
            .pick(
                "um template XML deve conter marcacao",
                "an XML template must contain markup",
            )
            .into(),
        FormatIssue::CsvLines => l
            .pick(
                "um template CSV precisa de uma linha de cabecalho e pelo menos mais uma linha",
                "a CSV template needs a header line and at least one more line",
            )
            .into(),
        FormatIssue::CsvSeparator => l
            .pick(
                "a primeira linha do CSV deve conter um separador , ou ;",
                "the first CSV line must contain a , or ; separator",
            )
            .into(),
        FormatIssue::Empty => l
            .pick(
                "o template gerado esta vazio",
                "the generated template is empty",
            )
            .into(),
        FormatIssue::Other(rule) => rule.clone(),
    }
}

fn issue(i: &Issue, l: Locale) -> String {
    match (i, l) {
        (Issue::Empty, Locale::Pt) => "vazio".into(),
        (Issue::Empty, Locale::En) => "empty".into(),
        (Issue::TooLong(n), Locale::Pt) => format!("mais de {n} caracteres"),
        (Issue::TooLong(n), Locale::En) => format!("longer than {n} characters"),
        (Issue::Delimiters, Locale::Pt) => {
            "contem delimitadores de template nao permitidos ({{, }}, {%, %}, {#, #})".into()
        }
        (Issue::Delimiters, Locale::En) => {
            "contains template delimiters ({{, }}, {%, %}, {#, #}), which are not allowed here"
                .into()
        }
        (Issue::Control, Locale::Pt) => "contem quebra de linha ou caractere de controle".into(),
        (Issue::Control, Locale::En) => "contains a line break or a control character".into(),
        (Issue::Char(c), Locale::Pt) => format!("caractere nao permitido '{c}'"),
        (Issue::Char(c), Locale::En) => format!("character '{c}' is not allowed"),
        (Issue::UnclosedString, Locale::Pt) => "texto entre aspas nao fechado".into(),
        (Issue::UnclosedString, Locale::En) => "a quoted string is not closed".into(),
        (Issue::BadEscape, Locale::Pt) => "escape invalido (apenas \\\" e \\\\)".into(),
        (Issue::BadEscape, Locale::En) => "invalid escape (only \\\" and \\\\)".into(),
        (Issue::Unexpected(t), Locale::Pt) => format!("'{t}' inesperado"),
        (Issue::Unexpected(t), Locale::En) => format!("unexpected '{t}'"),
        (Issue::UnexpectedEnd, Locale::Pt) => "termina antes do esperado".into(),
        (Issue::UnexpectedEnd, Locale::En) => "ends too early".into(),
        (Issue::UnknownFilter(f), Locale::Pt) => format!("filtro nao permitido '{f}'"),
        (Issue::UnknownFilter(f), Locale::En) => format!("filter '{f}' is not allowed"),
        (Issue::Call(f), Locale::Pt) => {
            format!("chamada '{f}(...)' nao permitida (apenas filter e contains)")
        }
        (Issue::Call(f), Locale::En) => {
            format!("call '{f}(...)' is not allowed (only filter and contains)")
        }
        (Issue::TooDeep, Locale::Pt) => "parenteses aninhados demais".into(),
        (Issue::TooDeep, Locale::En) => "parentheses nested too deeply".into(),
        (Issue::TooComplex(n), Locale::Pt) => {
            format!("mais de {n} operadores (o template seria complexo demais para analisar)")
        }
        (Issue::TooComplex(n), Locale::En) => {
            format!("more than {n} operators (the template would be too complex to parse)")
        }
        (Issue::Reserved(w), Locale::Pt) => format!("'{w}' e uma palavra reservada"),
        (Issue::Reserved(w), Locale::En) => format!("'{w}' is a reserved word"),
        (Issue::NotAName, Locale::Pt) => {
            "deve ser um nome (letra ou _ seguidos de letras, digitos ou _) ou um caminho nome.nome"
                .into()
        }
        (Issue::NotAName, Locale::En) => {
            "must be a name (a letter or _ then letters, digits or _) or a path name.name".into()
        }
    }
}

fn arg_rule(r: ArgRule, l: Locale) -> &'static str {
    match r {
        ArgRule::None => l.pick("nenhum argumento", "no argument"),
        ArgRule::Number => l.pick("um numero (ex.: 1000)", "a number (e.g. 1000)"),
        ArgRule::OptionalInteger => l.pick("um inteiro (ex.: 2)", "an integer (e.g. 2)"),
        ArgRule::Range => l.pick("inicio:fim (ex.: 0:5)", "start:end (e.g. 0:5)"),
        ArgRule::Pair => l.pick("busca:substituicao", "search:replacement"),
        ArgRule::FieldValue => l.pick("campo:valor", "field:value"),
        ArgRule::Field => l.pick("um nome de campo", "a field name"),
        ArgRule::Text => l.pick("um texto", "a text"),
    }
}

impl Msg {
    /// The message in `l`.
    /// Long by design: the message table, one arm per message with its English and
    /// Portuguese text side by side.
    pub fn text(&self, l: Locale) -> String {
        use Locale::{En, Pt};
        match (self, l) {
            (Self::EmptyBlocks, Pt) => "a lista de blocos nao pode ser vazia".into(),
            (Self::EmptyBlocks, En) => "blocks must not be empty".into(),
            (Self::TypeRequired, Pt) => "Bloco deve ter um tipo (type)".into(),
            (Self::TypeRequired, En) => "the block needs a type".into(),
            (Self::UnknownType(t), Pt) => format!("Tipo de bloco invalido: {t}"),
            (Self::UnknownType(t), En) => format!("unknown block type: {t}"),
            (Self::Required(p), Pt) => format!("{p} e obrigatorio"),
            (Self::Required(p), En) => format!("{p} is required"),
            (Self::NotForType(p, t), Pt) => format!("blocos {t} nao aceitam {p}"),
            (Self::NotForType(p, t), En) => format!("{t} blocks take no {p}"),
            (Self::Invalid(p, i), _) => format!("{p}: {}", issue(i, l)),
            (Self::UnknownFilter(f), Pt) => format!("Filtro desconhecido: {f}"),
            (Self::UnknownFilter(f), En) => {
                format!("unknown filter: {f} (see GET /v1/templates/filters)")
            }
            (Self::FilterArgMissing(f), Pt) => format!("o filtro {f} exige um argumento"),
            (Self::FilterArgMissing(f), En) => format!("filter {f} needs an argument"),
            (Self::FilterArgNotTaken(f), Pt) => format!("o filtro {f} nao aceita argumento"),
            (Self::FilterArgNotTaken(f), En) => format!("filter {f} takes no argument"),
            (Self::FilterArg(f, r), Pt) => {
                format!("argumento de {f} deve ser {}", arg_rule(*r, l))
            }
            (Self::FilterArg(f, r), En) => {
                format!("the argument of {f} must be {}", arg_rule(*r, l))
            }
            (Self::UnknownFunction(v, allowed), Pt) => {
                format!("funcao invalida: {v} (use {})", allowed.join(", "))
            }
            (Self::UnknownFunction(v, allowed), En) => {
                format!("unknown function: {v} (one of {})", allowed.join(", "))
            }
            (Self::UnknownCounterMode(m), Pt) => {
                format!("Modo de contador invalido: {m} (deve ser 'increment' ou 'show')")
            }
            (Self::UnknownCounterMode(m), En) => {
                format!("unknown counter mode: {m} (increment or show)")
            }
            (Self::CounterName(n), Pt) => format!("nome de contador invalido: {n}"),
            (Self::CounterName(n), En) => format!(
                "counter name '{n}' must be 1-64 letters, digits, _ . : or -, starting with a letter or _"
            ),
            (Self::CounterIncrementOne, Pt) => "o modo increment aceita exatamente um nome".into(),
            (Self::CounterIncrementOne, En) => "increment takes exactly one name".into(),
            (Self::UnknownTag(t), Pt) => format!("Tag customizada desconhecida: {t}"),
            (Self::UnknownTag(t), En) => format!("unknown custom tag: {t}"),
            (Self::TagArgs(t, detail), Pt) => format!(
                "argumentos de {} devem ser {}{}",
                t.as_str(),
                t.grammar(l),
                detail
                    .as_ref()
                    .map(|d| format!(" ({})", issue(d, l)))
                    .unwrap_or_default()
            ),
            (Self::TagArgs(t, detail), En) => format!(
                "the arguments of {} must be {}{}",
                t.as_str(),
                t.grammar(l),
                detail
                    .as_ref()
                    .map(|d| format!(" ({})", issue(d, l)))
                    .unwrap_or_default()
            ),
            (Self::DepthExceeded(n), Pt) => {
                format!("Profundidade maxima de aninhamento excedida ({n} niveis)")
            }
            (Self::DepthExceeded(n), En) => format!("blocks nest deeper than {n} levels"),
            (Self::TooManyBlocks(n), Pt) => format!("mais de {n} blocos"),
            (Self::TooManyBlocks(n), En) => format!("more than {n} blocks"),
            (Self::DuplicateBlockId(id), Pt) => format!("blockId repetido: {id}"),
            (Self::DuplicateBlockId(id), En) => format!("blockId {id} is used twice"),
            (Self::BlockIdInvalid, Pt) => {
                "blockId deve ter ate 128 caracteres, sem caracteres de controle".into()
            }
            (Self::BlockIdInvalid, En) => {
                "blockId must be at most 128 characters, without control characters".into()
            }
            (Self::ShadowsDataSource(n), Pt) => {
                format!("o nome '{n}' e o de uma fonte de dados e a esconderia; escolha outro")
            }
            (Self::ShadowsDataSource(n), En) => {
                format!("'{n}' is the name of a data source and would hide it; choose another")
            }
            (Self::UnknownDataSource(ds), Pt) => {
                format!("fonte de dados '{ds}' nao configurada")
            }
            (Self::UnknownDataSource(ds), En) => {
                format!("data source '{ds}' is not configured")
            }
            (Self::UnknownTable(ds, t), Pt) => {
                format!("tabela '{t}' nao existe na fonte de dados '{ds}'")
            }
            (Self::UnknownTable(ds, t), En) => {
                format!("table '{t}' does not exist in data source '{ds}'")
            }
            (Self::UnknownField(ds, t, f), Pt) => {
                format!("campo '{f}' nao existe na tabela '{t}' de '{ds}'")
            }
            (Self::UnknownField(ds, t, f), En) => {
                format!("field '{f}' does not exist in table '{t}' of '{ds}'")
            }
            (Self::Script(found), Pt) => {
                format!("script ou manipulador de evento nao permitido ({found})")
            }
            (Self::Script(found), En) => {
                format!("script, javascript: or an inline event handler is not allowed ({found})")
            }
            (Self::FormatMismatch(f), Pt) => {
                format!(
                    "o template gerado nao serve para o formato: {}",
                    format_issue(f, l)
                )
            }
            (Self::FormatMismatch(f), En) => {
                format!(
                    "the generated template does not fit its format: {}",
                    format_issue(f, l)
                )
            }
            (Self::CodeTooLarge(n), Pt) => format!("o template gerado passa de {n} bytes"),
            (Self::CodeTooLarge(n), En) => {
                format!("the generated template is larger than {n} bytes")
            }
            (Self::InvalidFormat(f), Pt) => {
                format!("formato '{f}' invalido (html, pdf, csv, xml ou txt)")
            }
            (Self::InvalidFormat(f), En) => {
                format!("format '{f}' is not one of html, pdf, csv, xml, txt")
            }
            (Self::CodeTooComplex, Pt) => {
                "o template gerado e complexo demais para analisar (aninhamento ou cadeias alem dos limites do analisador)".into()
            }
            (Self::CodeTooComplex, En) => {
                "the generated template is too complex to parse (nesting or chains past the parser's bounds)".into()
            }
            (Self::ParseTimeout, Pt) => {
                "analisar o template gerado levou mais tempo que TEMPLATE_PARSE_TIMEOUT_MS permite".into()
            }
            (Self::ParseTimeout, En) => {
                "parsing the generated template took longer than TEMPLATE_PARSE_TIMEOUT_MS allows".into()
            }
            (Self::ParseMemory, Pt) => {
                "analisar o template gerado precisou de mais memoria que TEMPLATE_PARSE_MEMORY_MIB permite".into()
            }
            (Self::ParseMemory, En) => {
                "parsing the generated template needed more memory than TEMPLATE_PARSE_MEMORY_MIB allows".into()
            }
        }
    }

    /// Its class.
    pub fn class(&self) -> Class {
        match self {
            Self::TooManyBlocks(_) => Class::TooManyBlocks,
            Self::DepthExceeded(_) => Class::TooDeep,
            Self::Script(_) => Class::Script,
            Self::UnknownDataSource(_) => Class::UnknownDataSource,
            Self::UnknownTable(..) => Class::UnknownTable,
            Self::UnknownField(..) => Class::UnknownField,
            Self::FormatMismatch(_) => Class::Format,
            Self::CodeTooLarge(_) => Class::TooLarge,
            Self::CodeTooComplex
            | Self::Invalid(_, Issue::TooComplex(_))
            | Self::TagArgs(_, Some(Issue::TooComplex(_))) => Class::TooComplex,
            Self::ParseTimeout => Class::ParseTimeout,
            Self::ParseMemory => Class::ParseMemory,
            _ => Class::Structure,
        }
    }
}

/// One finding: the block (its id, or `""` for the template as a whole), the property and
/// what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Block id (`<id>-filter-<n>` for a filter, `<id>-elif-<n>` for an elif branch).
    pub block_id: String,
    /// Property (`type`, `content`, `children`, …).
    pub field: String,
    /// What is wrong.
    pub msg: Msg,
}

impl Finding {
    /// A finding.
    pub fn new(block_id: impl Into<String>, field: impl Into<String>, msg: Msg) -> Self {
        Self {
            block_id: block_id.into(),
            field: field.into(),
            msg,
        }
    }
}
