//! The template builder operations: `/v1/templates/blocks-config`, `/v1/templates/filters`,
//! `/v1/templates/generate-code`, `/v1/templates/validate`. Shapes and schema names are the
//! original's.
use super::auth::{Auth, Scope};
use super::deep_json::DeepJson;
use super::dto::WarningDto;
use super::error::{AUTH, ApiResult, ErrorBody, PAYLOAD_TOO_LARGE, UNAVAILABLE};
use super::string_field::Text;
use super::tags::ApiTags;
use crate::app::App;
use crate::app::Code;
use crate::app::builder::{
    BlockDefinition, BlockSpec, ElifSpec, FilterDefinition, FilterSpec, Locale,
};
use poem::web::Data;
use poem_openapi::param::Header;
use poem_openapi::payload::Json;
use poem_openapi::types::Example;
use poem_openapi::{ApiResponse, Object, OpenApi};
use reporter_ports::template::MappedFields;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One property of a block type.
#[derive(Debug, Clone, Object)]
#[oai(rename = "BlockProperty")]
pub struct BlockPropertyDto {
    /// Property name. `counterMode` and `counterNames` are keys of the block's `properties`
    /// object (as in the original); every other one is a field of the block.
    pub name: String,
    /// `string`, `boolean`, `enum`, `string[]`, `path` (`source.table.field`, `row.field`),
    /// `identifier`, `expression`, `filter[]`, `block[]` or `elifBranch[]`.
    #[oai(rename = "type")]
    pub kind: String,
    /// Must be present and non-empty.
    pub required: bool,
    /// The values of an `enum`; empty (`[]`) for every other type.
    pub values: Vec<String>,
}

/// A block type of the builder.
#[derive(Debug, Clone, Object)]
#[oai(rename = "BlockDefinition", rename_all = "camelCase")]
pub struct BlockDefinitionDto {
    /// Type name, the `type` of a block.
    #[oai(rename = "type")]
    pub block_type: String,
    /// Label in the negotiated language (the original's Portuguese labels by default).
    pub label: String,
    /// basic, control, data, dimp, layout or advanced.
    pub category: String,
    /// True for loop, conditional, section and with.
    pub accepts_children: bool,
    /// Its properties.
    pub properties: Vec<BlockPropertyDto>,
}

impl From<&BlockDefinition> for BlockDefinitionDto {
    fn from(d: &BlockDefinition) -> Self {
        Self {
            block_type: d.block_type.as_str().to_owned(),
            label: d.label.to_owned(),
            category: d.category.to_owned(),
            accepts_children: d.accepts_children,
            properties: d
                .properties
                .iter()
                .map(|p| BlockPropertyDto {
                    name: p.name.to_owned(),
                    kind: p.kind.to_owned(),
                    required: p.required,
                    values: p.values.iter().map(|v| (*v).to_owned()).collect(),
                })
                .collect(),
        }
    }
}

/// The block catalogue.
#[derive(Debug, Clone, Object)]
#[oai(rename = "BlocksConfigResponse", example)]
pub struct BlocksConfigDto {
    /// Every block type, in a stable order.
    pub blocks: Vec<BlockDefinitionDto>,
}

impl Example for BlocksConfigDto {
    /// The first entries of the real catalogue (Portuguese labels).
    fn example() -> Self {
        let all = crate::app::builder::catalog::block_definitions(Locale::Pt);
        Self {
            blocks: all
                .iter()
                .filter(|d| matches!(d.block_type.as_str(), "text" | "loop" | "custom_tag"))
                .map(Into::into)
                .collect(),
        }
    }
}

/// A filter a block may apply.
#[derive(Debug, Clone, Object)]
#[oai(rename = "FilterDefinition")]
pub struct FilterDefinitionDto {
    /// Filter name.
    pub name: String,
    /// What it does, in the negotiated language.
    pub description: String,
    /// Its argument (`field:value`, `start:end`, …); empty when it takes none.
    pub args: Vec<String>,
    /// A use.
    pub example: String,
}

impl From<&FilterDefinition> for FilterDefinitionDto {
    fn from(f: &FilterDefinition) -> Self {
        Self {
            name: f.name.to_owned(),
            description: f.description.to_owned(),
            args: f.args.iter().map(|a| (*a).to_owned()).collect(),
            example: f.example.to_owned(),
        }
    }
}

/// The filter catalogue.
#[derive(Debug, Clone, Object)]
#[oai(rename = "FiltersResponse", example)]
pub struct FiltersDto {
    /// Every filter, in a stable order.
    pub filters: Vec<FilterDefinitionDto>,
}

impl Example for FiltersDto {
    /// The first entries of the real catalogue (Portuguese descriptions).
    fn example() -> Self {
        let all = crate::app::builder::catalog::filter_definitions(Locale::Pt);
        Self {
            filters: all.iter().take(3).map(Into::into).collect(),
        }
    }
}

/// A filter applied by a variable block.
#[derive(Debug, Clone, Default, Object)]
#[oai(rename = "FilterChain", deny_unknown_fields)]
pub struct FilterChainDto {
    /// A name from `GET /v1/templates/filters`.
    pub name: Option<Text>,
    /// Its argument, written as a string literal (`"2"`, `"status:active"`).
    #[oai(skip_serializing_if_is_none)]
    pub args: Option<Text>,
}

/// An `elif` branch of a conditional block.
#[derive(Debug, Clone, Default, Object)]
#[oai(rename = "ElifBranch", deny_unknown_fields)]
pub struct ElifBranchDto {
    /// Condition (expression).
    pub condition: Option<Text>,
    /// Blocks of the branch.
    pub children: Option<Vec<TemplateBlockDto>>,
}

/// A block. Which properties a type takes is in `GET /v1/templates/blocks-config`; every
/// property is optional in the schema, and a missing required one is a validation error
/// naming the block and the property.
#[derive(Debug, Clone, Default, Object)]
#[oai(
    rename = "TemplateBlock",
    rename_all = "camelCase",
    deny_unknown_fields,
    example
)]
pub struct TemplateBlockDto {
    /// Client id, echoed in validation errors; generated from the position when absent
    /// (`block-0`, `block-0-1`, `block-0-else-0`, `block-0-elif-0-0`).
    #[oai(skip_serializing_if_is_none)]
    pub block_id: Option<Text>,
    /// text, variable, loop, conditional, aggregation, calculation, date_time, counter,
    /// comment, section, with, expression or custom_tag.
    #[oai(rename = "type")]
    pub block_type: Option<Text>,
    /// Text of `text` (any characters; written so that it never becomes template code and
    /// prints verbatim, except that the output clean-up applies to it as to all output:
    /// `1.50` prints `1.5`) and `comment` (one line, no template delimiters).
    #[oai(skip_serializing_if_is_none)]
    pub content: Option<Text>,
    /// Path read by `variable`, `calculation`, `date_time`; name bound by `with`.
    #[oai(skip_serializing_if_is_none)]
    pub variable: Option<Text>,
    /// Filters of `variable`, applied in order.
    #[oai(skip_serializing_if_is_none)]
    pub filters: Option<Vec<FilterChainDto>>,
    /// Loop variable of `loop`.
    #[oai(skip_serializing_if_is_none)]
    pub iterator: Option<Text>,
    /// Rows of `loop` and `aggregation` (a path).
    #[oai(skip_serializing_if_is_none)]
    pub collection: Option<Text>,
    /// Condition of `conditional` (expression).
    #[oai(skip_serializing_if_is_none)]
    pub condition: Option<Text>,
    /// `sum` / `count` for `aggregation`; `length` / `strip_zeros` / `floatformat` for
    /// `calculation`.
    #[oai(skip_serializing_if_is_none)]
    pub function: Option<Text>,
    /// Argument of `aggregation`: a field for `sum`, `field:value` for `count`.
    #[oai(skip_serializing_if_is_none)]
    pub field: Option<Text>,
    /// Layout of `date_time`: `YYYY MM dd HH mm ss` tokens for now, a Go layout
    /// (`02/01/2006`) when formatting `variable`.
    #[oai(skip_serializing_if_is_none)]
    pub format: Option<Text>,
    /// Free properties; `counter` reads `counterMode` (increment | show) and `counterNames`.
    #[oai(skip_serializing_if_is_none)]
    pub properties: Option<BTreeMap<String, serde_json::Value>>,
    /// Children of `loop`, `conditional`, `section`, `with`.
    #[oai(skip_serializing_if_is_none)]
    pub children: Option<Vec<TemplateBlockDto>>,
    /// Written without indentation or line break.
    #[oai(skip_serializing_if_is_none)]
    pub inline: Option<bool>,
    /// Tags written `{%- … -%}` (trimming the whitespace around them).
    #[oai(skip_serializing_if_is_none)]
    pub trim_whitespace: Option<bool>,
    /// `else` blocks of `conditional`.
    #[oai(skip_serializing_if_is_none)]
    pub else_children: Option<Vec<TemplateBlockDto>>,
    /// `elif` branches of `conditional`.
    #[oai(skip_serializing_if_is_none)]
    pub elif_branches: Option<Vec<ElifBranchDto>>,
    /// Expression of `with`.
    #[oai(skip_serializing_if_is_none)]
    pub assignment: Option<Text>,
    /// Expression of `expression`.
    #[oai(skip_serializing_if_is_none)]
    pub expression: Option<Text>,
    /// Tag of `custom_tag`: sum_by, count_by, avg_by, min_by, max_by, calc,
    /// last_item_by_group.
    #[oai(skip_serializing_if_is_none)]
    pub tag_name: Option<Text>,
    /// Arguments of `custom_tag`, e.g. `bank.transactions by "amount" if direction == "debit"`.
    #[oai(skip_serializing_if_is_none)]
    pub tag_args: Option<Text>,
}

fn t(v: Option<Text>) -> Option<String> {
    v.map(Text::into_inner)
}

impl From<TemplateBlockDto> for BlockSpec {
    fn from(b: TemplateBlockDto) -> Self {
        let list =
            |v: Option<Vec<TemplateBlockDto>>| v.map(|c| c.into_iter().map(Into::into).collect());
        Self {
            block_id: t(b.block_id),
            block_type: t(b.block_type),
            content: t(b.content),
            variable: t(b.variable),
            filters: b.filters.map(|f| {
                f.into_iter()
                    .map(|f| FilterSpec {
                        name: t(f.name),
                        args: t(f.args),
                    })
                    .collect()
            }),
            iterator: t(b.iterator),
            collection: t(b.collection),
            condition: t(b.condition),
            function: t(b.function),
            field: t(b.field),
            format: t(b.format),
            properties: b.properties,
            children: list(b.children),
            inline: b.inline,
            trim_whitespace: b.trim_whitespace,
            else_children: list(b.else_children),
            elif_branches: b.elif_branches.map(|e| {
                e.into_iter()
                    .map(|e| ElifSpec {
                        condition: t(e.condition),
                        children: list(e.children),
                    })
                    .collect()
            }),
            assignment: t(b.assignment),
            expression: t(b.expression),
            tag_name: t(b.tag_name),
            tag_args: t(b.tag_args),
        }
    }
}

fn text(block_id: &str, content: &str, inline: bool) -> TemplateBlockDto {
    TemplateBlockDto {
        block_id: Some(block_id.into()),
        block_type: Some("text".into()),
        content: Some(content.into()),
        inline: inline.then_some(true),
        ..Default::default()
    }
}

fn variable(block_id: &str, path: &str) -> TemplateBlockDto {
    TemplateBlockDto {
        block_id: Some(block_id.into()),
        block_type: Some("variable".into()),
        variable: Some(path.into()),
        inline: Some(true),
        ..Default::default()
    }
}

/// The book's worked example (docs/src/templates/builder.md): EUR transactions of `bank`.
fn example_blocks() -> Vec<TemplateBlockDto> {
    vec![
        text("title", "<h1>EUR transactions</h1>", false),
        TemplateBlockDto {
            block_id: Some("rows".into()),
            block_type: Some("loop".into()),
            iterator: Some("t".into()),
            collection: Some("bank.transactions".into()),
            children: Some(vec![TemplateBlockDto {
                block_id: Some("eur".into()),
                block_type: Some("conditional".into()),
                condition: Some("t.currency == \"EUR\"".into()),
                children: Some(vec![
                    text("open", "<p>", true),
                    variable("day", "t.booked_on"),
                    text("sep", " ", true),
                    variable("amount", "t.amount"),
                    text("close", "</p>", false),
                ]),
                ..Default::default()
            }]),
            ..Default::default()
        },
        text("total-label", "<p>Debits: ", true),
        TemplateBlockDto {
            block_id: Some("debits".into()),
            block_type: Some("custom_tag".into()),
            tag_name: Some("sum_by".into()),
            tag_args: Some(
                "bank.transactions by \"amount\" if direction == \"debit\" and currency == \"EUR\""
                    .into(),
            ),
            inline: Some(true),
            ..Default::default()
        },
        text("total-end", "</p>", false),
    ]
}

impl Example for TemplateBlockDto {
    /// The loop of the book's worked example (docs/src/templates/builder.md).
    fn example() -> Self {
        example_blocks()
            .into_iter()
            .find(|b| b.block_type.as_deref() == Some("loop"))
            .unwrap_or_default()
    }
}

/// Documented error answers of the builder operations, added to the spec under
/// `responses.400` of each: (path, example name, summary, body).
pub fn error_examples() -> Vec<(&'static str, &'static str, &'static str, ErrorBody)> {
    let invalid = ErrorBody {
        code: "TPL-0090".into(),
        title: Code::InvalidBlocks.title().into(),
        message: "os blocos tem 2 problema(s)".into(),
        entity_type: None,
        fields: Some(BTreeMap::from([
            (
                "x.type".to_owned(),
                "Tipo de bloco invalido: chart".to_owned(),
            ),
            (
                "rows.iterator".to_owned(),
                "iterator e obrigatorio".to_owned(),
            ),
        ])),
    };
    let too_deep = ErrorBody {
        code: "TPL-0091".into(),
        title: Code::NestingTooDeep.title().into(),
        message: "the request body is nested too deeply".into(),
        entity_type: None,
        fields: None,
    };
    vec![
        (
            "/v1/templates/generate-code",
            "invalidBlocks",
            "Blocks with problems (TPL-0090): each in fields, as <blockId>.<property>",
            invalid,
        ),
        (
            "/v1/templates/validate",
            "bodyTooDeep",
            "A body nested deeper than 256 JSON levels (TPL-0091); deep blocks are a 200 finding",
            too_deep,
        ),
    ]
}

/// Generate code from blocks.
#[derive(Debug, Clone, Object)]
#[oai(rename = "GenerateCodeInput", deny_unknown_fields, example)]
pub struct GenerateCodeInput {
    /// The blocks, in order (required, at least one).
    pub blocks: Option<Vec<TemplateBlockDto>>,
    /// html, pdf, csv, xml or txt (any case). Decides the wrapper (`<html>` document, XML
    /// declaration), the indentation (html, pdf, xml only) and the upload's content rules.
    /// Without it: no wrapper, no indentation, no content rules.
    #[oai(skip_serializing_if_is_none)]
    pub format: Option<Text>,
}

impl Example for GenerateCodeInput {
    fn example() -> Self {
        Self {
            blocks: Some(example_blocks()),
            format: Some("html".into()),
        }
    }
}

/// Generated code and what it reads.
#[derive(Debug, Clone, Object)]
#[oai(rename = "GenerateCodeResponse", rename_all = "camelCase", example)]
pub struct GenerateCodeResponse {
    /// Template source in the original's dialect; upload it as a `.tpl` file.
    pub code: String,
    /// Data source → table → fields it reads: what an upload of `code` extracts.
    pub mapped_fields: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// Data sources that could not be checked (unreachable).
    #[oai(skip_serializing_if_is_empty)]
    pub warnings: Vec<WarningDto>,
}

impl Example for GenerateCodeResponse {
    fn example() -> Self {
        Self {
            code: "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"UTF-8\">\n</head>\n<body>\n\
                   <h1>EUR transactions</h1>\n\
                   {% for t in bank.transactions %}\n    {% if t.currency == \"EUR\" %}\n        \
                   <p>{{ t.booked_on }} {{ t.amount }}</p>\n    {% endif %}\n{% endfor %}\n\
                   <p>Debits: {% sum_by bank.transactions by \"amount\" if direction == \"debit\" and currency == \"EUR\" %}</p>\n\
                   </body>\n</html>\n"
                .into(),
            mapped_fields: BTreeMap::from([(
                "bank".to_owned(),
                BTreeMap::from([(
                    "transactions".to_owned(),
                    ["amount", "booked_on", "currency", "direction"]
                        .map(str::to_owned)
                        .to_vec(),
                )]),
            )]),
            warnings: Vec::new(),
        }
    }
}

/// Validate blocks.
#[derive(Debug, Clone, Object)]
#[oai(rename = "ValidateBlocksInput", deny_unknown_fields, example)]
pub struct ValidateBlocksInput {
    /// The blocks (required; an empty list is reported as a validation error).
    pub blocks: Option<Vec<TemplateBlockDto>>,
    /// Optional output format: when given, the upload's content rules for it are checked too.
    #[oai(skip_serializing_if_is_none)]
    pub format: Option<Text>,
}

impl Example for ValidateBlocksInput {
    fn example() -> Self {
        Self {
            blocks: Some(vec![
                TemplateBlockDto {
                    block_id: Some("rows".into()),
                    block_type: Some("loop".into()),
                    iterator: Some("t".into()),
                    collection: Some("bank.transactions".into()),
                    children: Some(vec![variable("amount", "t.amout")]),
                    ..Default::default()
                },
                TemplateBlockDto {
                    block_id: Some("x".into()),
                    block_type: Some("chart".into()),
                    ..Default::default()
                },
            ]),
            format: None,
        }
    }
}

/// A problem of one block.
#[derive(Debug, Clone, Object)]
#[oai(rename = "ValidationError", rename_all = "camelCase")]
pub struct ValidationErrorDto {
    /// The block (`<id>-filter-<n>` for a filter, `<id>-elif-<n>` for an elif; empty for
    /// the template as a whole).
    pub block_id: String,
    /// The property (`type`, `content`, `children`, `format`, …).
    pub field: String,
    /// What is wrong, in the negotiated language.
    pub message: String,
}

/// The validation result.
#[derive(Debug, Clone, Object)]
#[oai(rename = "ValidateBlocksResponse", example)]
pub struct ValidateBlocksResponse {
    /// True when code can be generated and uploaded.
    pub valid: bool,
    /// Every problem (empty when valid).
    pub errors: Vec<ValidationErrorDto>,
    /// Data sources that could not be checked (unreachable).
    #[oai(skip_serializing_if_is_empty)]
    pub warnings: Vec<WarningDto>,
}

impl Example for ValidateBlocksResponse {
    fn example() -> Self {
        Self {
            valid: false,
            errors: vec![ValidationErrorDto {
                block_id: "x".into(),
                field: "type".into(),
                message: "Tipo de bloco invalido: chart".into(),
            }],
            warnings: Vec::new(),
        }
    }
}

/// 200 with the block catalogue.
#[derive(Debug, ApiResponse)]
pub enum BlocksConfigResponse {
    /// The catalogue, labels in the negotiated language.
    #[oai(status = 200)]
    Ok(
        Json<BlocksConfigDto>,
        #[oai(header = "Content-Language")] String,
        #[oai(header = "Vary")] String,
    ),
}

/// 200 with the filter catalogue.
#[derive(Debug, ApiResponse)]
pub enum FiltersResponse {
    /// The catalogue, descriptions in the negotiated language.
    #[oai(status = 200)]
    Ok(
        Json<FiltersDto>,
        #[oai(header = "Content-Language")] String,
        #[oai(header = "Vary")] String,
    ),
}

/// 200 with the code.
#[derive(Debug, ApiResponse)]
pub enum GenerateCodeAnswer {
    /// The code and its mapped fields.
    #[oai(status = 200)]
    Ok(
        Json<GenerateCodeResponse>,
        #[oai(header = "Content-Language")] String,
        #[oai(header = "Vary")] String,
    ),
}

/// 200 with the validation result.
#[derive(Debug, ApiResponse)]
pub enum ValidateAnswer {
    /// Valid or not, with every problem.
    #[oai(status = 200)]
    Ok(
        Json<ValidateBlocksResponse>,
        #[oai(header = "Content-Language")] String,
        #[oai(header = "Vary")] String,
    ),
}

fn mapped_dto(m: &MappedFields) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    m.iter()
        .map(|(ds, tables)| {
            (
                ds.clone(),
                tables
                    .iter()
                    .map(|(t, f)| (t.clone(), f.iter().cloned().collect()))
                    .collect(),
            )
        })
        .collect()
}

const VARY: &str = "Accept-Language";

/// Template builder operations.
#[derive(Default)]
pub struct TemplateBuilderApi;

#[OpenApi(tag = "ApiTags::TemplateBuilder")]
impl TemplateBuilderApi {
    /// Block catalogue
    ///
    /// Every block type the builder offers, with its label, category, whether it takes
    /// children, and its properties (name, type, required, values). Labels are the original's
    /// Portuguese ones unless `Accept-Language` prefers English (`en`). Scope `templates:read`.
    #[oai(
        path = "/v1/templates/blocks-config",
        method = "get",
        operation_id = "getTemplateBlocksConfig"
    )]
    async fn blocks_config(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::TemplatesRead")] auth: Auth,
        /// `pt` (default) or `en`, with the usual quality values.
        #[oai(name = "Accept-Language")]
        accept_language: Header<Option<String>>,
        // A pure catalogue: it touches no storage.
    ) -> ApiResult<BlocksConfigResponse, AUTH> {
        let caller = auth.caller();
        let locale = Locale::negotiate(accept_language.0.as_deref());
        let blocks = app.template_blocks_config(&caller, locale);
        Ok(BlocksConfigResponse::Ok(
            Json(BlocksConfigDto {
                blocks: blocks.iter().map(Into::into).collect(),
            }),
            locale.tag().into(),
            VARY.into(),
        ))
    }

    /// Filter catalogue
    ///
    /// The filters a variable block may apply, with their argument and an example:
    /// percent_of, slice_str, strip_zeros, replace, where, sum, count, floatformat, length,
    /// date. Descriptions in Portuguese unless `Accept-Language` prefers English. Scope
    /// `templates:read`.
    #[oai(
        path = "/v1/templates/filters",
        method = "get",
        operation_id = "getTemplateFilters"
    )]
    async fn filters(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::TemplatesRead")] auth: Auth,
        /// `pt` (default) or `en`, with the usual quality values.
        #[oai(name = "Accept-Language")]
        accept_language: Header<Option<String>>,
        // A pure catalogue: it touches no storage.
    ) -> ApiResult<FiltersResponse, AUTH> {
        let caller = auth.caller();
        let locale = Locale::negotiate(accept_language.0.as_deref());
        let filters = app.template_filters_config(&caller, locale);
        Ok(FiltersResponse::Ok(
            Json(FiltersDto {
                filters: filters.iter().map(Into::into).collect(),
            }),
            locale.tag().into(),
            VARY.into(),
        ))
    }

    /// Generate template code from blocks
    ///
    /// Returns the template source in the original's dialect and the fields it reads
    /// (`mappedFields`, exactly what uploading the code extracts). Every user string is
    /// escaped or checked: text prints verbatim, never as code (template delimiters in it are written
    /// with `templatetag`), string arguments are quoted, names and paths follow a strict
    /// grammar, expressions are parsed and re-printed. Every data source, table and field
    /// must exist, as at upload. Limits: 5000 blocks, nesting depth 50, 1 MiB of code.
    /// `mappedFields` is the sandbox's analysis of the code, the one uploads use (a
    /// disagreement with the builder's own analysis would be a bug: 500 TPL-0018).
    /// Errors: TPL-0001 (no blocks), TPL-0003 (format), TPL-0090 (invalid blocks, each in
    /// `fields` as `<blockId>.<property>`), TPL-0091 (blocks nested deeper than 50 levels,
    /// or a body nested deeper than 256 JSON levels), TPL-0092 (block count),
    /// TPL-0032 (script), TPL-0031 / TPL-0030 / TPL-0014 (unknown data source / table /
    /// field), TPL-0007 (content does not fit the format), TPL-0063 (code over 1 MiB),
    /// TPL-0080 (an expression over 100 operators, or code past the parser's bounds),
    /// TPL-0081 / TPL-0082 (the code's parse past the upload's time / memory bounds),
    /// TPL-0015 / TPL-0017 (malformed body). `message` and the messages in `fields` follow
    /// `Accept-Language`. Scope `templates:write`.
    #[oai(
        path = "/v1/templates/generate-code",
        method = "post",
        operation_id = "generateTemplateCode"
    )]
    async fn generate_code(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::TemplatesWrite")] auth: Auth,
        /// `pt` (default) or `en`, with the usual quality values.
        #[oai(name = "Accept-Language")]
        accept_language: Header<Option<String>>,
        body: DeepJson<GenerateCodeInput>,
    ) -> ApiResult<GenerateCodeAnswer, { AUTH | PAYLOAD_TOO_LARGE | UNAVAILABLE }> {
        let caller = auth.caller();
        let locale = Locale::negotiate(accept_language.0.as_deref());
        let b = body.0;
        let blocks = b.blocks.map(|v| v.into_iter().map(Into::into).collect());
        let out = app
            .generate_template_code(&caller, blocks, t(b.format), locale)
            .await?;
        Ok(GenerateCodeAnswer::Ok(
            Json(GenerateCodeResponse {
                code: out.code,
                mapped_fields: mapped_dto(&out.mapped_fields),
                warnings: out.warnings.iter().map(WarningDto::from).collect(),
            }),
            locale.tag().into(),
            VARY.into(),
        ))
    }

    /// Validate blocks
    ///
    /// Always 200 with `{valid, errors[{blockId, field, message}]}` for problems of the
    /// blocks (unknown types, missing or malformed properties, injection attempts, limits,
    /// unknown data sources, tables or fields, with `format` the upload's content rules, and
    /// the bounds of the sandbox's parse of the generated code); `valid` is true exactly when
    /// generate-code would succeed: both run the same check. 400 only for a malformed
    /// body: TPL-0001 (no `blocks`), TPL-0015 (unknown fields), TPL-0017 (not JSON, wrong
    /// types), TPL-0091 (a body nested deeper than 131 JSON levels, 64 block levels;
    /// blocks nested past the 50-level bound within that are a finding of the 200 answer).
    /// Messages follow `Accept-Language`. Scope `templates:write`.
    #[oai(
        path = "/v1/templates/validate",
        method = "post",
        operation_id = "validateTemplateBlocks"
    )]
    async fn validate(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::TemplatesWrite")] auth: Auth,
        /// `pt` (default) or `en`, with the usual quality values.
        #[oai(name = "Accept-Language")]
        accept_language: Header<Option<String>>,
        body: DeepJson<ValidateBlocksInput>,
    ) -> ApiResult<ValidateAnswer, { AUTH | PAYLOAD_TOO_LARGE | UNAVAILABLE }> {
        let caller = auth.caller();
        let locale = Locale::negotiate(accept_language.0.as_deref());
        let b = body.0;
        let blocks = b.blocks.map(|v| v.into_iter().map(Into::into).collect());
        let out = app
            .validate_template_blocks(&caller, blocks, t(b.format), locale)
            .await?;
        Ok(ValidateAnswer::Ok(
            Json(ValidateBlocksResponse {
                valid: out.valid,
                errors: out
                    .errors
                    .into_iter()
                    .map(|e| ValidationErrorDto {
                        block_id: e.block_id,
                        field: e.field,
                        message: e.message,
                    })
                    .collect(),
                warnings: out.warnings.iter().map(WarningDto::from).collect(),
            }),
            locale.tag().into(),
            VARY.into(),
        ))
    }
}
