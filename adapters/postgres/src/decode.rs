//! PostgreSQL values → JSON (crate docs, "Values").
use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, Utc};
use serde_json::{Number, Value};
use tokio_postgres::Row as PgRow;
use tokio_postgres::types::{FromSql, Type};

fn get<'a, T: FromSql<'a>>(row: &'a PgRow, i: usize) -> Result<Option<T>, String> {
    row.try_get::<_, Option<T>>(i).map_err(|e| e.to_string())
}

/// A float as JSON: a number when finite, else its name (`NaN`, `inf`, `-inf`).
fn float(value: f64) -> Value {
    Number::from_f64(value).map_or_else(|| Value::String(value.to_string()), Value::Number)
}

/// Column `i` of `row` as JSON, decoded by the column's wire type. Numeric and other types
/// arrive as `text` (the projection casts them), so every type reaching here is one of the
/// natively decoded ones or text-like.
pub(crate) fn value(row: &PgRow, i: usize) -> Result<Value, String> {
    let ty = row.columns().get(i).map(|c| c.type_().clone());
    let Some(ty) = ty else {
        return Err(format!("no column {i} in the result"));
    };
    let v = match ty {
        Type::BOOL => get::<bool>(row, i)?.map(Value::Bool),
        Type::INT2 => get::<i16>(row, i)?.map(Value::from),
        Type::INT4 => get::<i32>(row, i)?.map(Value::from),
        Type::INT8 => get::<i64>(row, i)?.map(Value::from),
        // Through the shortest decimal text, so 0.1::real reads 0.1, not 0.100000001490116.
        Type::FLOAT4 => {
            get::<f32>(row, i)?.map(|f| float(f.to_string().parse::<f64>().unwrap_or(f64::from(f))))
        }
        Type::FLOAT8 => get::<f64>(row, i)?.map(float),
        Type::DATE => {
            get::<NaiveDate>(row, i)?.map(|d| Value::String(d.format("%Y-%m-%d").to_string()))
        }
        Type::TIMESTAMP => get::<NaiveDateTime>(row, i)?
            .map(|t| Value::String(t.format("%Y-%m-%dT%H:%M:%S%.f").to_string())),
        Type::TIMESTAMPTZ => get::<DateTime<Utc>>(row, i)?
            .map(|t| Value::String(t.to_rfc3339_opts(SecondsFormat::AutoSi, true))),
        _ => get::<String>(row, i)?.map(Value::String),
    };
    Ok(v.unwrap_or(Value::Null))
}
