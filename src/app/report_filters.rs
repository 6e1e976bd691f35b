//! The filters of a report request: checked against the template and the data source schemas,
//! and keyed by the table names the template reads.
use super::App;
use super::error::{AppError, AppResult, Code};
use reporter_ports::datasource::SourceSchema;
use reporter_ports::ports::FilterSupport;
use reporter_ports::report::{FilterCondition, ReportFilters};
use reporter_ports::template::Template;
use std::collections::{BTreeMap, BTreeSet};

fn check_condition(path: &str, c: &FilterCondition, problems: &mut BTreeMap<String, String>) {
    let ops = c.operators();
    let mut any = false;
    for (name, values) in ops {
        if values.is_empty() {
            continue;
        }
        any = true;
        if values.iter().any(|v| v.is_object() || v.is_array()) {
            problems.insert(
                format!("{path}.{name}"),
                "values must be scalars (string, number, boolean or null)".into(),
            );
        }
        if matches!(name, "gt" | "gte" | "lt" | "lte") && values.len() != 1 {
            problems.insert(format!("{path}.{name}"), "takes exactly one value".into());
        }
        if name == "between" && values.len() != 2 {
            problems.insert(
                format!("{path}.{name}"),
                "takes exactly two values [low, high]".into(),
            );
        }
    }
    if !any {
        problems.insert(
            path.to_owned(),
            "a condition needs at least one operator: eq, gt, gte, lt, lte, between, in, nin"
                .into(),
        );
    }
}

/// The template's names of each table of one data source, by the table's listed name: a
/// template that reads one table under two spellings (`ds.orders`, `ds:public.orders`) has
/// two names for it.
fn mapped_names<'m>(
    schema: &SourceSchema,
    mapped: Option<&'m BTreeMap<String, BTreeSet<String>>>,
) -> BTreeMap<String, Vec<&'m String>> {
    let mut names: BTreeMap<String, Vec<&String>> = BTreeMap::new();
    for key in mapped.into_iter().flat_map(BTreeMap::keys) {
        if let Some(t) = schema.table(key) {
            names.entry(t.name.clone()).or_default().push(key);
        }
    }
    names
}

impl App {
    /// Validates filters against the template and the data source schemas, and answers them
    /// keyed by the template's table names.
    ///
    /// A table may be named by any spelling the source accepts (`SourceSchema::table`:
    /// `orders`, `public.orders`, `public__orders` for the default schema; `sales.orders` or
    /// `sales__orders` otherwise); its conditions are stored under the name(s) the template
    /// reads it by, which is what extraction looks them up by.
    ///
    /// MUST answer `UnknownDataSource` / `UnknownTable` / `UnknownField` for names that do not
    /// exist, `InvalidFilter` for a malformed condition, a table the template does not read or
    /// a table named twice (two spellings of it) or a filter the source refuses
    /// ([`DataSource::filter_support`](reporter_ports::ports::DataSource::filter_support): an
    /// encrypted field it cannot match), and `DataSourceUnavailable` when a schema cannot be
    /// read.
    pub(super) async fn check_filters(
        &self,
        filters: ReportFilters,
        template: &Template,
    ) -> AppResult<ReportFilters> {
        let mut problems = BTreeMap::new();
        let mut first: Option<Code> = None;
        let mut keyed: ReportFilters = BTreeMap::new();
        for (ds, tables) in filters {
            let Some(source) = self.catalog.get(&ds) else {
                first.get_or_insert(Code::UnknownDataSource);
                problems.insert(ds.clone(), format!("data source '{ds}' is not configured"));
                continue;
            };
            let schema = source.schema().await.map_err(|e| {
                tracing::warn!(error = %e, data_source = %ds, "schema unavailable while validating filters");
                AppError::new(Code::DataSourceUnavailable, format!("data source '{ds}' is unavailable; retry later"))
            })?;
            let read_as = mapped_names(&schema, template.mapped_fields.get(&ds));
            let mut named: BTreeMap<String, String> = BTreeMap::new();
            let out = keyed.entry(ds.clone()).or_default();
            for (table, fields) in tables {
                let Some(t) = schema.table(&table) else {
                    first.get_or_insert(Code::UnknownTable);
                    problems.insert(
                        format!("{ds}.{table}"),
                        format!("table '{table}' does not exist in data source '{ds}'"),
                    );
                    continue;
                };
                if let Some(earlier) = named.insert(t.name.clone(), table.clone()) {
                    first.get_or_insert(Code::InvalidFilter);
                    problems.insert(
                        format!("{ds}.{table}"),
                        format!("names the same table as '{earlier}'; send its conditions once"),
                    );
                    continue;
                }
                let names = read_as.get(&t.name);
                if names.is_none() {
                    first.get_or_insert(Code::InvalidFilter);
                    problems.insert(
                        format!("{ds}.{table}"),
                        "the template does not read this table, so the filter would be ignored"
                            .into(),
                    );
                }
                for (field, condition) in &fields {
                    let path = format!("{ds}.{table}.{field}");
                    let support = source.filter_support(&table, field, condition);
                    if let FilterSupport::Refused(why) = support {
                        first.get_or_insert(Code::InvalidFilter);
                        problems.insert(path, why);
                        continue;
                    }
                    if support == FilterSupport::Schema && !t.fields.iter().any(|f| f == field) {
                        first.get_or_insert(Code::UnknownField);
                        problems.insert(
                            path,
                            format!("field '{field}' does not exist in table '{table}'"),
                        );
                        continue;
                    }
                    let before = problems.len();
                    check_condition(&path, condition, &mut problems);
                    if problems.len() > before {
                        first.get_or_insert(Code::InvalidFilter);
                    }
                }
                for name in names.into_iter().flatten() {
                    out.insert((*name).clone(), fields.clone());
                }
            }
        }
        match first {
            None => Ok(keyed),
            Some(code) => Err(AppError::new(
                code,
                format!("the filters have {} problem(s)", problems.len()),
            )
            .fields(problems)),
        }
    }
}
