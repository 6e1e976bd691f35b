//! The original's custom tags: aggregations, `last_item_by_group` and `date_time`.
use super::{R, Renderer, eval_fault, is_resource_error};
use crate::ast::{AggOp, ExprId};
use crate::decimal;
use crate::gotime::{self, GoTime};
use crate::value::{ListKind, MapV, Value};
use reporter_ports::ports::EvaluationCause;
use rust_decimal::Decimal;
use std::collections::BTreeMap;

/// `date_time`'s tokens (`YYYY MM dd HH mm ss`, case-sensitive) replaced by Go layout
/// elements; the result is then a Go layout (as in the original).
pub(crate) fn date_time_layout(layout: &str) -> String {
    const PAIRS: [(&str, &str); 6] = [
        ("YYYY", "2006"),
        ("MM", "01"),
        ("dd", "02"),
        ("HH", "15"),
        ("mm", "04"),
        ("ss", "05"),
    ];
    let mut out = String::with_capacity(layout.len());
    let mut rest = layout;
    'outer: while !rest.is_empty() {
        for (from, to) in PAIRS {
            if let Some(r) = rest.strip_prefix(from) {
                out.push_str(to);
                rest = r;
                continue 'outer;
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

/// The original's `parseTime`: a time, or a string in RFC 3339 or `2006-01-02`.
pub(crate) fn time_of(v: &Value<'_>) -> Option<GoTime> {
    match v {
        Value::Time(t) => Some((**t).clone()),
        Value::Str(t, _) => gotime::parse_loose(t.as_str()),
        _ => None,
    }
}

impl<'a> Renderer<'a> {
    /// The rows of a value that must be a `[]map[string]any` (the original's
    /// `evaluateCollection`).
    pub(crate) fn rows_strict(&mut self, v: &Value<'a>) -> R<Vec<MapV<'a>>> {
        let Value::List(l) = v else {
            return Err(eval_fault(
                EvaluationCause::AggregationFailed,
                "Expected []map[string]any for collection",
            ));
        };
        if l.kind() != ListKind::Rows {
            return Err(eval_fault(
                EvaluationCause::AggregationFailed,
                "Expected []map[string]any for collection",
            ));
        }
        self.reserve_list(l.len())?;
        Ok(l.iter()
            .filter_map(|v| match v {
                Value::Map(m) => Some(m),
                _ => None,
            })
            .collect())
    }

    /// Whether `row` passes the condition of a tag (`if …`, with the row's fields as bare
    /// names); evaluation errors make it fail, as in the original.
    pub(crate) fn passes(&mut self, row: &MapV<'a>, condition: Option<ExprId>) -> R<bool> {
        let Some(c) = condition else {
            return Ok(true);
        };
        match self.with_row(row.clone(), |r| r.eval(c)) {
            Ok(v) => Ok(v.is_true()),
            Err(e) if is_resource_error(&e) => Err(e),
            Err(_) => Ok(false),
        }
    }

    pub(super) fn exec_aggregate(
        &mut self,
        op: AggOp,
        collection: ExprId,
        field: Option<ExprId>,
        condition: Option<ExprId>,
    ) -> R<String> {
        let coll = self.eval(collection)?;
        let rows = self.rows_strict(&coll)?;
        let mut total = Decimal::ZERO;
        let mut count: i64 = 0;
        let mut min: Option<Decimal> = None;
        let mut max: Option<Decimal> = None;
        for row in &rows {
            self.budget.fuel(1)?;
            if !self.passes(row, condition)? {
                continue;
            }
            if op == AggOp::Count {
                count = count.wrapping_add(1);
                continue;
            }
            let name = match field {
                Some(f) => self.eval(f)?.to_go_string().into_owned(),
                None => String::new(),
            };
            let Some(v) = self.nested_field(row, &name) else {
                continue;
            };
            let Some(d) = decimal::of_value(&v) else {
                continue;
            };
            match op {
                AggOp::Sum | AggOp::Avg => {
                    total = total.checked_add(d).ok_or_else(|| {
                        eval_fault(
                            EvaluationCause::AggregationFailed,
                            "decimal overflow in aggregation",
                        )
                    })?;
                    count = count.wrapping_add(1);
                }
                AggOp::Min => {
                    if min.is_none_or(|m| d < m) {
                        min = Some(d);
                    }
                }
                AggOp::Max => {
                    if max.is_none_or(|m| d > m) {
                        max = Some(d);
                    }
                }
                AggOp::Count => {}
            }
        }
        Ok(match op {
            AggOp::Count => count.to_string(),
            AggOp::Sum => decimal::to_string(total),
            AggOp::Avg => {
                if count == 0 {
                    "0".to_owned()
                } else {
                    let avg = decimal::div16(total, Decimal::from(count)).ok_or_else(|| {
                        eval_fault(
                            EvaluationCause::AggregationFailed,
                            "decimal overflow in aggregation",
                        )
                    })?;
                    decimal::to_string(avg)
                }
            }
            AggOp::Min => min.map_or_else(|| "0".to_owned(), decimal::to_string),
            AggOp::Max => max.map_or_else(|| "0".to_owned(), decimal::to_string),
        })
    }

    /// The composite key of `row` for comma-separated `fields` (`%v` of each, joined with
    /// `|`); `None` when a field is missing.
    fn group_key(&mut self, row: &MapV<'a>, fields: &[&str]) -> Option<String> {
        let mut parts = Vec::with_capacity(fields.len());
        for f in fields {
            parts.push(self.nested_field(row, f.trim())?.to_go_v());
        }
        Some(parts.join("|"))
    }

    pub(super) fn exec_last_item_by_group(
        &mut self,
        collection: ExprId,
        group_by: ExprId,
        order_by: ExprId,
        condition: Option<ExprId>,
    ) -> R<Value<'a>> {
        let coll = self.eval(collection)?;
        let rows = self.rows_strict(&coll)?;
        let group_field = self
            .eval(group_by)
            .map(|v| v.to_go_string().into_owned())
            .unwrap_or_default();
        let order_field = self
            .eval(order_by)
            .map(|v| v.to_go_string().into_owned())
            .unwrap_or_default();
        let fields: Vec<&str> = group_field.split(',').collect();
        // group key -> (latest instant, row)
        let mut groups: BTreeMap<String, (Option<(i64, u32)>, MapV<'a>)> = BTreeMap::new();
        for row in rows {
            self.budget.fuel(1)?;
            if !self.passes(&row, condition)? {
                continue;
            }
            let Some(key) = self.group_key(&row, &fields) else {
                continue;
            };
            self.budget.check_transient(key.len())?;
            let at = self
                .nested_field(&row, &order_field)
                .and_then(|v| time_of(&v))
                .map(|t| t.sort_key());
            // Later rows win ties; rows without a time rank lowest (zero time).
            let zero = Some((i64::MIN, 0));
            let replace = match groups.get(&key) {
                None => true,
                Some((best, _)) => at.or(zero) >= best.or(zero),
            };
            if replace {
                groups.insert(key, (at, row));
            }
        }
        let items: Vec<Value<'a>> = groups.into_values().map(|(_, r)| Value::Map(r)).collect();
        self.new_list(items, ListKind::Rows)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn date_time_tokens() {
        assert_eq!(
            super::date_time_layout("YYYYMMdd HH:mm:ss"),
            "20060102 15:04:05"
        );
        assert_eq!(super::date_time_layout("DD/MM/YYYY"), "DD/01/2006");
    }
}
