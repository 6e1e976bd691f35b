//! Every filter: Pongo2's built-ins and the original's custom filters.
mod builtin;
mod custom;
mod html;
mod sprintf;

use crate::render::Renderer;
use crate::value::Value;
use reporter_ports::ports::RenderError;

macro_rules! filters {
    ($($variant:ident => $($name:literal)|+),* $(,)?) => {
        /// A filter, resolved by name at parse time.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum FilterFn { $($variant),* }

        /// The filter called `name`, if there is one.
        pub fn lookup(name: &str) -> Option<FilterFn> {
            match name {
                $($($name)|+ => Some(FilterFn::$variant),)*
                _ => None,
            }
        }

        /// Every filter name (for documentation and tests).
        pub const NAMES: &[&str] = &[$($($name),+),*];
    };
}

filters! {
    Escape => "escape" | "e",
    Safe => "safe",
    Escapejs => "escapejs",
    Add => "add",
    Addslashes => "addslashes",
    Capfirst => "capfirst",
    Center => "center",
    Cut => "cut",
    Date => "date",
    Time => "time",
    Default => "default",
    DefaultIfNone => "default_if_none",
    Divisibleby => "divisibleby",
    First => "first",
    Floatformat => "floatformat",
    GetDigit => "get_digit",
    Iriencode => "iriencode",
    Join => "join",
    Last => "last",
    Length => "length",
    LengthIs => "length_is",
    Linebreaks => "linebreaks",
    Linebreaksbr => "linebreaksbr",
    Linenumbers => "linenumbers",
    Ljust => "ljust",
    Lower => "lower",
    MakeList => "make_list",
    Phone2numeric => "phone2numeric",
    Pluralize => "pluralize",
    Random => "random",
    Removetags => "removetags",
    Rjust => "rjust",
    Slice => "slice",
    Split => "split",
    Stringformat => "stringformat",
    Striptags => "striptags",
    Title => "title",
    Truncatechars => "truncatechars",
    TruncatecharsHtml => "truncatechars_html",
    Truncatewords => "truncatewords",
    TruncatewordsHtml => "truncatewords_html",
    Upper => "upper",
    Urlencode => "urlencode",
    Urlize => "urlize",
    Urlizetrunc => "urlizetrunc",
    Wordcount => "wordcount",
    Wordwrap => "wordwrap",
    Yesno => "yesno",
    Float => "float",
    Integer => "integer",
    PercentOf => "percent_of",
    SliceStr => "slice_str",
    StripZeros => "strip_zeros",
    Replace => "replace",
    Where => "where",
    Sum => "sum",
    Count => "count",
    AddDay => "add_day",
    AddSigned => "add_signed",
}

pub(crate) type R<T> = Result<T, RenderError>;

/// A filter's error (cause `filter_failed`; its words may quote the data: logs only).
pub(crate) fn err(filter: &str, msg: impl std::fmt::Display) -> RenderError {
    crate::render::eval_fault(
        reporter_ports::ports::EvaluationCause::FilterFailed,
        format!("[filter:{filter}] {msg}"),
    )
}

/// Applies `f` to `input` with `param` (`Nil` when the filter has no argument).
/// Long by design: the dispatch table, one arm per built-in filter.
pub(crate) fn apply<'a>(
    r: &mut Renderer<'a>,
    f: FilterFn,
    input: Value<'a>,
    param: Value<'a>,
) -> R<Value<'a>> {
    use FilterFn as F;
    r.budget.fuel(1)?;
    match f {
        F::Escape => builtin::escape(r, &input),
        F::Safe => Ok(input),
        F::Escapejs => builtin::escapejs(r, &input),
        F::Add => builtin::add(r, &input, &param),
        F::Addslashes => builtin::addslashes(r, &input),
        F::Capfirst => builtin::capfirst(r, &input),
        F::Center => builtin::center(r, input, &param),
        F::Cut => builtin::cut(r, &input, &param),
        F::Date => builtin::date(r, &input, &param, true),
        F::Time => builtin::date(r, &input, &param, false),
        F::Default => Ok(if input.is_true() { input } else { param }),
        F::DefaultIfNone => Ok(if input.is_nil() { param } else { input }),
        F::Divisibleby => {
            let d = param.integer();
            Ok(Value::Bool(d != 0 && input.integer().wrapping_rem(d) == 0))
        }
        F::First => builtin::first_last(r, input, true),
        F::Last => builtin::first_last(r, input, false),
        F::Floatformat => builtin::floatformat(r, &input, &param),
        F::GetDigit => builtin::get_digit(input, &param),
        F::Iriencode => builtin::iriencode(r, &input),
        F::Join => builtin::join(r, input, &param),
        F::Length => Ok(Value::Int(i64::try_from(input.len()).unwrap_or(i64::MAX))),
        F::LengthIs => Ok(Value::Bool(
            i64::try_from(input.len()).unwrap_or(i64::MAX) == param.integer(),
        )),
        F::Linebreaks => html::linebreaks(r, input),
        F::Linebreaksbr => builtin::replace_all(r, &input, "\n", "<br />"),
        F::Linenumbers => html::linenumbers(r, &input),
        F::Ljust => builtin::ljust(r, &input, &param),
        F::Lower => builtin::lower_upper(r, &input, false),
        F::Upper => builtin::lower_upper(r, &input, true),
        F::MakeList => builtin::make_list(r, &input),
        F::Phone2numeric => builtin::phone2numeric(r, &input),
        F::Pluralize => builtin::pluralize(&input, &param),
        F::Random => builtin::random(r, input),
        F::Removetags => html::removetags(r, &input, &param),
        F::Rjust => builtin::rjust(r, &input, &param),
        F::Slice => builtin::slice(r, input, &param),
        F::Split => builtin::split(r, &input, &param),
        F::Stringformat => sprintf::stringformat(r, &input, &param),
        F::Striptags => html::striptags(r, &input),
        F::Title => builtin::title(r, &input),
        F::Truncatechars => builtin::truncatechars(r, &input, &param),
        F::TruncatecharsHtml => html::truncatechars_html(r, &input, &param),
        F::Truncatewords => builtin::truncatewords(r, &input, &param),
        F::TruncatewordsHtml => html::truncatewords_html(r, &input, &param),
        F::Urlencode => builtin::urlencode(r, &input),
        F::Urlize => {
            let autoescape = if param.is_bool() {
                param.is_true()
            } else {
                true
            };
            html::urlize(r, &input, autoescape, -1)
        }
        F::Urlizetrunc => html::urlize(r, &input, true, param.integer()),
        F::Wordcount => Ok(Value::Int(
            i64::try_from(input.to_go_string().split_whitespace().count()).unwrap_or(i64::MAX),
        )),
        F::Wordwrap => builtin::wordwrap(r, input, &param),
        F::Yesno => builtin::yesno(r, &input, &param),
        F::Float => Ok(Value::Float(input.float())),
        F::Integer => Ok(Value::Int(input.integer())),
        F::PercentOf => custom::percent_of(r, &input, &param),
        F::SliceStr => custom::slice_str(r, &input, &param),
        F::StripZeros => custom::strip_zeros(r, &input),
        F::Replace => custom::replace(r, &input, &param),
        F::Where => custom::where_(r, &input, &param),
        F::Sum => custom::sum(r, &input, &param),
        F::Count => custom::count(r, &input, &param),
        F::AddDay => custom::add_day(r, &input, &param),
        F::AddSigned => custom::add_signed(r, &input, &param),
    }
}
