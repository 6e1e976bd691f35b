//! What the builder offers: block types with their properties, and the filters a block may
//! apply. Labels and descriptions exist in Portuguese (the original's, kept word for word) and
//! English.

/// Language of labels, descriptions and validation messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Locale {
    /// Portuguese, the original's language and the default.
    #[default]
    Pt,
    /// English.
    En,
}

impl Locale {
    /// Chooses from an `Accept-Language` header value: the supported language (`pt`, `en`,
    /// any region) with the highest quality wins, the first listed on a tie; `q=0` excludes a
    /// language. Portuguese when the header is absent, malformed or names no supported
    /// language.
    pub fn negotiate(header: Option<&str>) -> Self {
        let Some(h) = header else {
            return Self::Pt;
        };
        let mut best: Option<(u16, Locale)> = None;
        for item in h.split(',').take(32) {
            let mut parts = item.split(';');
            let tag = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let primary = tag.split('-').next().unwrap_or_default();
            let locale = match primary {
                "pt" => Locale::Pt,
                "en" => Locale::En,
                _ => continue,
            };
            let mut q = 1000u16;
            for p in parts {
                if let Some(v) = p.trim().strip_prefix("q=") {
                    q = parse_quality(v).unwrap_or(0);
                }
            }
            if q > 0 && best.is_none_or(|(bq, _)| q > bq) {
                best = Some((q, locale));
            }
        }
        best.map_or(Self::Pt, |(_, l)| l)
    }

    /// The `Content-Language` value.
    pub fn tag(&self) -> &'static str {
        match self {
            Self::Pt => "pt-BR",
            Self::En => "en",
        }
    }

    /// Picks the text of this locale.
    pub fn pick<'a>(&self, pt: &'a str, en: &'a str) -> &'a str {
        match self {
            Self::Pt => pt,
            Self::En => en,
        }
    }
}

/// `q` value in thousandths (`0.8` → 800); `None` when malformed.
fn parse_quality(v: &str) -> Option<u16> {
    let v = v.trim();
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_val: u16 = format!("{frac:0<3}").parse().ok()?;
    match int {
        "0" => Some(frac_val),
        "1" if frac_val == 0 => Some(1000),
        _ => None,
    }
}

/// A block type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockType {
    /// Literal text.
    Text,
    /// A value, with filters.
    Variable,
    /// `for … in …`.
    Loop,
    /// `if / elif / else`.
    Conditional,
    /// `sum` / `count` over rows.
    Aggregation,
    /// A value through an argument-less filter.
    Calculation,
    /// A date: now, or a value formatted.
    DateTime,
    /// Named counters (DIMP).
    Counter,
    /// A template comment.
    Comment,
    /// A group of blocks.
    Section,
    /// `with name = expression`.
    With,
    /// A free expression.
    Expression,
    /// One of the original's custom tags.
    CustomTag,
}

impl BlockType {
    /// Every type, in the catalogue's order (the original's).
    pub const ALL: [BlockType; 13] = [
        Self::Text,
        Self::Variable,
        Self::Loop,
        Self::Conditional,
        Self::Aggregation,
        Self::Calculation,
        Self::DateTime,
        Self::Counter,
        Self::Comment,
        Self::Section,
        Self::With,
        Self::Expression,
        Self::CustomTag,
    ];

    /// Wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Variable => "variable",
            Self::Loop => "loop",
            Self::Conditional => "conditional",
            Self::Aggregation => "aggregation",
            Self::Calculation => "calculation",
            Self::DateTime => "date_time",
            Self::Counter => "counter",
            Self::Comment => "comment",
            Self::Section => "section",
            Self::With => "with",
            Self::Expression => "expression",
            Self::CustomTag => "custom_tag",
        }
    }

    /// Parses a wire name (exact, lower case).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Category (the original's).
    pub fn category(&self) -> &'static str {
        match self {
            Self::Text | Self::Variable | Self::Comment => "basic",
            Self::Loop | Self::Conditional | Self::With => "control",
            Self::Aggregation | Self::Calculation | Self::DateTime | Self::Expression => "data",
            Self::Counter => "dimp",
            Self::Section => "layout",
            Self::CustomTag => "advanced",
        }
    }

    /// True for blocks with `children`.
    pub fn accepts_children(&self) -> bool {
        matches!(
            self,
            Self::Loop | Self::Conditional | Self::Section | Self::With
        )
    }

    /// Label.
    pub fn label(&self, l: Locale) -> &'static str {
        match self {
            Self::Text => l.pick("Texto", "Text"),
            Self::Variable => l.pick("Variavel", "Variable"),
            Self::Loop => l.pick("Loop", "Loop"),
            Self::Conditional => l.pick("Conditional", "Conditional"),
            Self::Aggregation => l.pick("Agregacao", "Aggregation"),
            Self::Calculation => l.pick("Calculo", "Calculation"),
            Self::DateTime => l.pick("Data/Hora", "Date/Time"),
            Self::Counter => l.pick("Contador", "Counter"),
            Self::Comment => l.pick("Comentario", "Comment"),
            Self::Section => l.pick("Secao", "Section"),
            Self::With => l.pick("With (Atribuicao)", "With (Assignment)"),
            Self::Expression => l.pick("Expressao", "Expression"),
            Self::CustomTag => l.pick("Tag Customizada", "Custom tag"),
        }
    }

    /// The properties a block of this type takes.
    pub fn properties(&self) -> Vec<PropertyDef> {
        use PropertyDef as P;
        let inline = P::opt("inline", "boolean");
        let trim = P::opt("trimWhitespace", "boolean");
        let children = P::req("children", "block[]");
        match self {
            Self::Text => vec![P::req("content", "string"), inline],
            Self::Variable => vec![
                P::req("variable", "path"),
                P::opt("filters", "filter[]"),
                inline,
            ],
            Self::Loop => vec![
                P::req("iterator", "identifier"),
                P::req("collection", "path"),
                children,
                trim,
            ],
            Self::Conditional => vec![
                P::req("condition", "expression"),
                children,
                P::opt("elifBranches", "elifBranch[]"),
                P::opt("elseChildren", "block[]"),
                inline,
                trim,
            ],
            Self::Aggregation => vec![
                P::req("collection", "path"),
                P::values("function", AggFunction::NAMES),
                P::req("field", "string"),
                inline,
            ],
            Self::Calculation => vec![
                P::req("variable", "path"),
                P::values("function", CALCULATION_FUNCTIONS),
                inline,
            ],
            Self::DateTime => vec![
                P::req("format", "string"),
                P::opt("variable", "path"),
                inline,
                trim,
            ],
            Self::Counter => vec![
                P::values("counterMode", &["increment", "show"]),
                P::req("counterNames", "string[]"),
                inline,
                trim,
            ],
            Self::Comment => vec![P::req("content", "string"), inline],
            Self::Section => vec![children],
            Self::With => vec![
                P::req("variable", "identifier"),
                P::req("assignment", "expression"),
                children,
                trim,
            ],
            Self::Expression => vec![P::req("expression", "expression"), inline],
            Self::CustomTag => vec![
                P::values("tagName", CustomTagName::NAMES),
                P::req("tagArgs", "string"),
                inline,
                trim,
            ],
        }
    }
}

/// One property of a block type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyDef {
    /// Property name (`counterMode` and `counterNames` live in the block's `properties`
    /// object, as in the original; every other one is a field of the block).
    pub name: &'static str,
    /// `string`, `boolean`, `enum`, `string[]`, `path`, `identifier`, `expression`,
    /// `filter[]`, `block[]` or `elifBranch[]`.
    pub kind: &'static str,
    /// Must be present and non-empty.
    pub required: bool,
    /// The values of an `enum`.
    pub values: &'static [&'static str],
}

impl PropertyDef {
    fn req(name: &'static str, kind: &'static str) -> Self {
        Self {
            name,
            kind,
            required: true,
            values: &[],
        }
    }
    fn opt(name: &'static str, kind: &'static str) -> Self {
        Self {
            name,
            kind,
            required: false,
            values: &[],
        }
    }
    fn values(name: &'static str, values: &'static [&'static str]) -> Self {
        Self {
            name,
            kind: "enum",
            required: true,
            values,
        }
    }
}

/// One entry of the block catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDefinition {
    /// The type.
    pub block_type: BlockType,
    /// Label in the requested language.
    pub label: &'static str,
    /// Category.
    pub category: &'static str,
    /// True for blocks with `children`.
    pub accepts_children: bool,
    /// Properties.
    pub properties: Vec<PropertyDef>,
}

/// The block catalogue.
pub fn block_definitions(l: Locale) -> Vec<BlockDefinition> {
    BlockType::ALL
        .into_iter()
        .map(|t| BlockDefinition {
            block_type: t,
            label: t.label(l),
            category: t.category(),
            accepts_children: t.accepts_children(),
            properties: t.properties(),
        })
        .collect()
}

/// The function of an aggregation block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunction {
    /// `sum:"field"`: exact decimal sum of a field over rows.
    Sum,
    /// `count:"field:value"`: rows whose field equals value.
    Count,
}

impl AggFunction {
    /// Wire names.
    pub const NAMES: &'static [&'static str] = &["sum", "count"];

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "sum" => Some(Self::Sum),
            "count" => Some(Self::Count),
            _ => None,
        }
    }

    /// The filter it generates.
    pub fn filter(&self) -> CatalogFilter {
        match self {
            Self::Sum => CatalogFilter::Sum,
            Self::Count => CatalogFilter::Count,
        }
    }
}

/// Functions a calculation block takes: the catalogue's filters that need no argument.
pub const CALCULATION_FUNCTIONS: &[&str] = &["length", "strip_zeros", "floatformat"];

/// The original's custom tags a `custom_tag` block may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CustomTagName {
    /// `sum_by`.
    SumBy,
    /// `count_by`.
    CountBy,
    /// `avg_by`.
    AvgBy,
    /// `min_by`.
    MinBy,
    /// `max_by`.
    MaxBy,
    /// `calc`.
    Calc,
    /// `last_item_by_group`.
    LastItemByGroup,
}

impl CustomTagName {
    /// Wire names.
    pub const NAMES: &'static [&'static str] = &[
        "sum_by",
        "count_by",
        "avg_by",
        "min_by",
        "max_by",
        "calc",
        "last_item_by_group",
    ];

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "sum_by" => Self::SumBy,
            "count_by" => Self::CountBy,
            "avg_by" => Self::AvgBy,
            "min_by" => Self::MinBy,
            "max_by" => Self::MaxBy,
            "calc" => Self::Calc,
            "last_item_by_group" => Self::LastItemByGroup,
            _ => return None,
        })
    }

    /// Wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::SumBy => "sum_by",
            Self::CountBy => "count_by",
            Self::AvgBy => "avg_by",
            Self::MinBy => "min_by",
            Self::MaxBy => "max_by",
            Self::Calc => "calc",
            Self::LastItemByGroup => "last_item_by_group",
        }
    }

    /// The shape of its `tagArgs`, in `l` (the keywords `by`, `if`, `group_by`, `order_by`
    /// and `as` are the tag's syntax and stay as they are).
    pub fn grammar(&self, l: Locale) -> &'static str {
        match self {
            Self::SumBy | Self::AvgBy | Self::MinBy | Self::MaxBy => l.pick(
                "<colecao> by \"<campo>\" [if <condicao>]",
                "<collection> by \"<field>\" [if <condition>]",
            ),
            Self::CountBy => l.pick("<colecao> [if <condicao>]", "<collection> [if <condition>]"),
            Self::Calc => l.pick(
                "<numeros e caminhos com + - * / ** e parenteses>",
                "<numbers and paths with + - * / ** and parentheses>",
            ),
            Self::LastItemByGroup => l.pick(
                "<colecao> group_by \"<campo>[,<campo>…]\" order_by \"<campo>\" [if <condicao>] as <nome>",
                "<collection> group_by \"<field>[,<field>…]\" order_by \"<field>\" [if <condition>] as <name>",
            ),
        }
    }
}

/// What argument a catalogue filter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgRule {
    /// None.
    None,
    /// A decimal number.
    Number,
    /// An integer, optional.
    OptionalInteger,
    /// `start:end`, each an optional integer.
    Range,
    /// `search:replacement`.
    Pair,
    /// `field:value`.
    FieldValue,
    /// A field name.
    Field,
    /// Free text (a date layout).
    Text,
}

/// The filters of the catalogue (the original's ten).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogFilter {
    /// `percent_of`.
    PercentOf,
    /// `slice_str`.
    SliceStr,
    /// `strip_zeros`.
    StripZeros,
    /// `replace`.
    Replace,
    /// `where`.
    Where,
    /// `sum`.
    Sum,
    /// `count`.
    Count,
    /// `floatformat`.
    Floatformat,
    /// `length`.
    Length,
    /// `date`.
    Date,
}

impl CatalogFilter {
    /// Every filter, in the catalogue's order (the original's).
    pub const ALL: [CatalogFilter; 10] = [
        Self::PercentOf,
        Self::SliceStr,
        Self::StripZeros,
        Self::Replace,
        Self::Where,
        Self::Sum,
        Self::Count,
        Self::Floatformat,
        Self::Length,
        Self::Date,
    ];

    /// Wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::PercentOf => "percent_of",
            Self::SliceStr => "slice_str",
            Self::StripZeros => "strip_zeros",
            Self::Replace => "replace",
            Self::Where => "where",
            Self::Sum => "sum",
            Self::Count => "count",
            Self::Floatformat => "floatformat",
            Self::Length => "length",
            Self::Date => "date",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// Its argument.
    pub fn arg(&self) -> ArgRule {
        match self {
            Self::PercentOf => ArgRule::Number,
            Self::SliceStr => ArgRule::Range,
            Self::StripZeros | Self::Length => ArgRule::None,
            Self::Replace => ArgRule::Pair,
            Self::Where | Self::Count => ArgRule::FieldValue,
            Self::Sum => ArgRule::Field,
            Self::Floatformat => ArgRule::OptionalInteger,
            Self::Date => ArgRule::Text,
        }
    }

    fn args_doc(&self) -> &'static [&'static str] {
        match self {
            Self::PercentOf => &["denominator"],
            Self::SliceStr => &["start:end"],
            Self::StripZeros | Self::Length => &[],
            Self::Replace => &["search:replacement"],
            Self::Where | Self::Count => &["field:value"],
            Self::Sum => &["field"],
            Self::Floatformat => &["decimal_places"],
            Self::Date => &["format"],
        }
    }

    fn description(&self, l: Locale) -> &'static str {
        match self {
            Self::PercentOf => l.pick(
                "Calcula percentual relativo a um valor",
                "Percentage of the value relative to a denominator (2 decimals, with %)",
            ),
            Self::SliceStr => l.pick("Extrai substring por posicao", "Substring by position"),
            Self::StripZeros => l.pick(
                "Remove zeros a direita de numeros",
                "Removes trailing zeros from numbers",
            ),
            Self::Replace => l.pick("Substitui texto", "Replaces text"),
            Self::Where => l.pick("Filtra array por campo", "Rows whose field equals a value"),
            Self::Sum => l.pick("Soma campo de array", "Exact sum of a field over rows"),
            Self::Count => l.pick(
                "Conta elementos filtrados por campo",
                "Counts the rows whose field equals a value",
            ),
            Self::Floatformat => l.pick(
                "Formata numero com casas decimais",
                "Formats a number with decimal places",
            ),
            Self::Length => l.pick(
                "Retorna tamanho de uma lista ou string",
                "Length of a list or a string",
            ),
            Self::Date => l.pick(
                "Formata data com layout Go",
                "Formats a date with a Go layout (2006-01-02)",
            ),
        }
    }

    fn example(&self) -> &'static str {
        match self {
            Self::PercentOf => "{{ value|percent_of:\"1000\" }}",
            Self::SliceStr => "{{ text|slice_str:\"0:5\" }}",
            Self::StripZeros => "{{ value|strip_zeros }}",
            Self::Replace => "{{ val|replace:\".:,\" }}",
            Self::Where => "{{ items|where:\"state:SP\" }}",
            Self::Sum => "{{ items|sum:\"value\" }}",
            Self::Count => "{{ items|count:\"field:value\" }}",
            Self::Floatformat => "{{ value|floatformat:\"2\" }}",
            Self::Length => "{{ items|length }}",
            Self::Date => "{{ created_at|date:\"02/01/2006\" }}",
        }
    }
}

/// One entry of the filter catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterDefinition {
    /// Name.
    pub name: &'static str,
    /// What it does, in the requested language.
    pub description: &'static str,
    /// Its argument, as the original documents it.
    pub args: &'static [&'static str],
    /// A use.
    pub example: &'static str,
}

/// The filter catalogue.
pub fn filter_definitions(l: Locale) -> Vec<FilterDefinition> {
    CatalogFilter::ALL
        .into_iter()
        .map(|f| FilterDefinition {
            name: f.as_str(),
            description: f.description(l),
            args: f.args_doc(),
            example: f.example(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        assert_eq!(Locale::negotiate(None), Locale::Pt);
        assert_eq!(Locale::negotiate(Some("en")), Locale::En);
        assert_eq!(Locale::negotiate(Some("en-US,en;q=0.9")), Locale::En);
        assert_eq!(
            Locale::negotiate(Some("pt-BR,pt;q=0.9,en;q=0.8")),
            Locale::Pt
        );
        assert_eq!(Locale::negotiate(Some("fr, en;q=0.5")), Locale::En);
        assert_eq!(Locale::negotiate(Some("pt;q=0.4, en;q=0.5")), Locale::En);
        assert_eq!(Locale::negotiate(Some("en;q=0, pt")), Locale::Pt);
        assert_eq!(Locale::negotiate(Some("fr")), Locale::Pt);
        assert_eq!(Locale::negotiate(Some("*")), Locale::Pt);
        assert_eq!(Locale::negotiate(Some("en;q=abc")), Locale::Pt);
        assert_eq!(Locale::negotiate(Some("EN-gb")), Locale::En);
    }

    #[test]
    fn catalogue_is_the_originals() {
        let b = block_definitions(Locale::Pt);
        assert_eq!(b.len(), 13);
        let counter = b
            .iter()
            .find(|d| d.block_type == BlockType::Counter)
            .unwrap();
        assert_eq!(counter.label, "Contador");
        assert_eq!(counter.category, "dimp");
        assert_eq!(counter.properties[0].values, &["increment", "show"]);
        let f = filter_definitions(Locale::En);
        assert_eq!(f.len(), 10);
        for t in BlockType::ALL {
            assert_eq!(BlockType::parse(t.as_str()), Some(t));
        }
        for n in CustomTagName::NAMES {
            assert_eq!(CustomTagName::parse(n).map(|t| t.as_str()), Some(*n));
        }
    }
}
