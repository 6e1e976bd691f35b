//! Blocks as clients send them ([`BlockSpec`], every property optional, the original's
//! `TemplateBlock`) and as validation leaves them ([`Node`], only valid trees). Code is
//! generated from [`Node`]s only.
use super::catalog::{AggFunction, CatalogFilter, CustomTagName};
use super::expr::{Calc, Expression, Path};
use std::collections::BTreeMap;

/// A block as sent.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BlockSpec {
    /// Client id, echoed in validation errors (generated from the position when absent).
    pub block_id: Option<String>,
    /// One of the catalogue's types.
    #[serde(rename = "type")]
    pub block_type: Option<String>,
    /// Text of `text` and `comment`.
    pub content: Option<String>,
    /// Path of `variable`, `calculation`, `date_time`; name bound by `with`.
    pub variable: Option<String>,
    /// Filters of `variable`.
    pub filters: Option<Vec<FilterSpec>>,
    /// Loop variable of `loop`.
    pub iterator: Option<String>,
    /// Path of the rows of `loop` and `aggregation`.
    pub collection: Option<String>,
    /// Condition of `conditional`.
    pub condition: Option<String>,
    /// Function of `aggregation` and `calculation`.
    pub function: Option<String>,
    /// Argument of `aggregation`.
    pub field: Option<String>,
    /// Layout of `date_time`.
    pub format: Option<String>,
    /// Free properties; `counter` reads `counterMode` and `counterNames` here.
    pub properties: Option<BTreeMap<String, serde_json::Value>>,
    /// Children of `loop`, `conditional`, `section`, `with`.
    pub children: Option<Vec<BlockSpec>>,
    /// Written without indentation or line break.
    pub inline: Option<bool>,
    /// Tags written `{%- … -%}`.
    pub trim_whitespace: Option<bool>,
    /// `else` of `conditional`.
    pub else_children: Option<Vec<BlockSpec>>,
    /// `elif`s of `conditional`.
    pub elif_branches: Option<Vec<ElifSpec>>,
    /// Expression of `with`.
    pub assignment: Option<String>,
    /// Expression of `expression`.
    pub expression: Option<String>,
    /// Tag of `custom_tag`.
    pub tag_name: Option<String>,
    /// Arguments of `custom_tag`.
    pub tag_args: Option<String>,
}

/// An `elif` as sent.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElifSpec {
    /// Condition.
    pub condition: Option<String>,
    /// Blocks.
    pub children: Option<Vec<BlockSpec>>,
}

/// A filter as sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterSpec {
    /// Name from the filter catalogue.
    pub name: Option<String>,
    /// Argument (written as a string literal).
    pub args: Option<String>,
}

/// A valid block.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Its id (the client's, or generated from its position).
    pub id: String,
    /// What it is.
    pub kind: NodeKind,
}

/// A catalogue filter with its checked argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterUse {
    /// The filter.
    pub filter: CatalogFilter,
    /// Its argument.
    pub arg: Option<String>,
}

/// A branch of a conditional.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// Id of the branch (the block's for `if`, `<id>-elif-<n>` for an `elif`).
    pub id: String,
    /// Condition.
    pub condition: Expression,
    /// Blocks.
    pub children: Vec<Node>,
}

/// What a counter block does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CounterMode {
    /// `{% counter "name" %}`.
    Increment(String),
    /// `{% counter_show "a" "b" %}`.
    Show(Vec<String>),
}

/// A custom tag with its parsed arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum CustomTag {
    /// `sum_by`, `avg_by`, `min_by`, `max_by` (with a field) and `count_by` (without).
    Aggregate {
        /// Which.
        tag: CustomTagName,
        /// Rows.
        collection: Expression,
        /// The `by` field.
        field: Option<String>,
        /// The `if` condition over a row.
        condition: Option<Expression>,
    },
    /// `calc`.
    Calc(Calc),
    /// `last_item_by_group`.
    LastItemByGroup {
        /// Rows.
        collection: Expression,
        /// Group fields.
        group_by: Vec<String>,
        /// Order field.
        order_by: String,
        /// The `if` condition over a row.
        condition: Option<Expression>,
        /// Name bound to the result.
        as_name: String,
    },
}

/// The kinds of valid blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// Literal text.
    Text {
        /// The text.
        content: String,
        /// No line break.
        inline: bool,
    },
    /// `{{ path|filter… }}`.
    Variable {
        /// Path.
        path: Path,
        /// Filters.
        filters: Vec<FilterUse>,
        /// No line break.
        inline: bool,
    },
    /// `{% for iterator in collection %}`.
    Loop {
        /// Loop variable.
        iterator: String,
        /// Rows.
        collection: Path,
        /// Body.
        children: Vec<Node>,
        /// `{%- -%}`.
        trim: bool,
    },
    /// `{% if %}…{% elif %}…{% else %}…{% endif %}`.
    Conditional {
        /// `if` then every `elif`.
        branches: Vec<Branch>,
        /// `else` blocks.
        otherwise: Vec<Node>,
        /// On one line.
        inline: bool,
        /// `{%- -%}`.
        trim: bool,
    },
    /// `{{ collection|sum:"field" }}` / `{{ collection|count:"field:value" }}`.
    Aggregation {
        /// Rows.
        collection: Path,
        /// Function.
        function: AggFunction,
        /// Its argument.
        arg: String,
        /// No line break.
        inline: bool,
    },
    /// `{{ path|function }}`.
    Calculation {
        /// Value.
        path: Path,
        /// An argument-less filter.
        function: CatalogFilter,
        /// No line break.
        inline: bool,
    },
    /// `{% date_time "layout" %}` or `{{ path|date:"layout" }}`.
    DateTime {
        /// Value to format; now when absent.
        path: Option<Path>,
        /// Layout.
        format: String,
        /// No line break.
        inline: bool,
        /// `{%- -%}`.
        trim: bool,
    },
    /// `{% counter %}` / `{% counter_show %}`.
    Counter {
        /// Mode and names.
        mode: CounterMode,
        /// No line break.
        inline: bool,
        /// `{%- -%}`.
        trim: bool,
    },
    /// `{# content #}`.
    Comment {
        /// One line of text.
        content: String,
        /// No line break.
        inline: bool,
    },
    /// Its children, in place.
    Section {
        /// Blocks.
        children: Vec<Node>,
    },
    /// `{% with variable = assignment %}`.
    With {
        /// Name bound.
        variable: String,
        /// Value.
        assignment: Expression,
        /// Body.
        children: Vec<Node>,
        /// `{%- -%}`.
        trim: bool,
    },
    /// `{{ expression }}`.
    Expression {
        /// The expression.
        expr: Expression,
        /// No line break.
        inline: bool,
    },
    /// `{% tag args %}`.
    CustomTag {
        /// Tag and arguments.
        tag: CustomTag,
        /// No line break.
        inline: bool,
        /// `{%- -%}`.
        trim: bool,
    },
}
