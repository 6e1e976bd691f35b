//! The render context: `{ "<ds>": { "<table>": Table } }`.
use minijinja::value::{Enumerator, Object, ObjectRepr, Value, ValueKind};
use std::sync::Arc;

/// The rows of one table (or the list result of a helper).
///
/// It behaves as a sequence (loops, `|length`, `|first`, `[0]`, `|tojson`) and, like the
/// reference, also answers attribute access with the field of its FIRST row: `ds.table.name`
/// is `ds.table[0].name`. An empty table's fields are undefined.
#[derive(Debug, Clone, Default)]
pub struct Table {
    rows: Vec<Value>,
}

impl Table {
    /// Wraps rows.
    pub fn new(rows: Vec<Value>) -> Self {
        Self { rows }
    }

    /// Wraps rows as a template value.
    pub fn value(rows: Vec<Value>) -> Value {
        Value::from_object(Self::new(rows))
    }

    fn row(&self, index: i64) -> Option<Value> {
        let len = i64::try_from(self.rows.len()).ok()?;
        let i = if index < 0 { len + index } else { index };
        usize::try_from(i)
            .ok()
            .and_then(|i| self.rows.get(i))
            .cloned()
    }
}

impl Object for Table {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        if key.kind() == ValueKind::Number {
            return i64::try_from(key.clone()).ok().and_then(|i| self.row(i));
        }
        let name = key.as_str()?;
        if let Ok(i) = name.parse::<i64>() {
            return self.row(i);
        }
        let field = self.rows.first()?.get_attr(name).ok()?;
        (!field.is_undefined()).then_some(field)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.rows.len())
    }
}

/// Builds the render context from the port's JSON data: every array two levels down (a table)
/// becomes a [`Table`]; everything else is passed through as plain values.
pub fn context_value(data: &serde_json::Value) -> Value {
    match data {
        serde_json::Value::Object(sources) => Value::from_iter(
            sources
                .iter()
                .map(|(name, source)| (name.clone(), source_value(source))),
        ),
        other => Value::from_serialize(other),
    }
}

fn source_value(source: &serde_json::Value) -> Value {
    match source {
        serde_json::Value::Object(tables) => {
            Value::from_iter(tables.iter().map(|(name, table)| {
                let value = match table {
                    serde_json::Value::Array(rows) => {
                        Table::value(rows.iter().map(Value::from_serialize).collect())
                    }
                    other => Value::from_serialize(other),
                };
                (name.clone(), value)
            }))
        }
        other => Value::from_serialize(other),
    }
}

/// The rows of a list-like value, or an error naming the helper.
pub(crate) fn rows_of(helper: &str, value: &Value) -> Result<Vec<Value>, minijinja::Error> {
    if value.is_undefined() || value.is_none() {
        return Ok(Vec::new());
    }
    if value.kind() == ValueKind::String || value.kind() == ValueKind::Map {
        return Err(crate::decimal::helper_error(
            helper,
            format!("expected a list of rows, got {}", value.kind()),
        ));
    }
    value.try_iter().map(Iterator::collect).map_err(|_| {
        crate::decimal::helper_error(
            helper,
            format!("expected a list of rows, got {}", value.kind()),
        )
    })
}

/// The value at a dotted field path (`"address.state"`, `"items.0.price"`), `None` when any
/// step is missing or undefined.
pub(crate) fn field_of(row: &Value, path: &str) -> Option<Value> {
    let mut cur = row.clone();
    for seg in path.split('.') {
        let next = match seg.parse::<i64>() {
            Ok(i) if cur.kind() == ValueKind::Seq => cur.get_item(&Value::from(i)).ok()?,
            _ => cur.get_attr(seg).ok()?,
        };
        if next.is_undefined() {
            return None;
        }
        cur = next;
    }
    Some(cur)
}
