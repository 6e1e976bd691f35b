//! Trees as the builder's JSON blocks.
use super::tree::{Block, CalcFn, Coll, Cond, Filter, Leaf, RowCond, RowsEnd, Stat, Val};
use serde_json::{Value, json};

pub fn loop_var(depth: usize) -> String {
    format!("r{depth}")
}

fn val_code(v: &Val) -> String {
    match v {
        Val::Indexed(t, i, f) => format!("bank.{t}.{i}.{f}"),
        Val::LoopField(l, f) => format!("{}.{f}", loop_var(*l)),
        Val::Counter => "forloop.Counter".into(),
    }
}

fn cond_code(c: &Cond) -> String {
    match c {
        Cond::LoopEq(l, f, v, eq) => {
            format!(
                "{}.{f} {} \"{v}\"",
                loop_var(*l),
                if *eq { "==" } else { "!=" }
            )
        }
        Cond::IndexedEq(i, v) => format!("bank.accounts.{i}.currency == \"{v}\""),
        Cond::HelperCount(t, f, v, n) => {
            format!("filter(bank.{t}, \"{f}\", \"{v}\")|length > {n}")
        }
        Cond::First => "forloop.First".into(),
        Cond::NotLast => "not forloop.Last".into(),
        Cond::And(a, b) => format!("({}) and ({})", cond_code(a), cond_code(b)),
        Cond::Or(a, b) => format!("({}) or ({})", cond_code(a), cond_code(b)),
    }
}

fn with_cond(mut args: String, cnd: &RowCond) -> String {
    if let Some((f, v)) = cnd {
        args.push_str(&format!(" if {f} == \"{v}\""));
    }
    args
}

fn filter_json(f: &Filter) -> Value {
    match f {
        Filter::Floatformat2 => json!({"name": "floatformat", "args": "2"}),
        Filter::StripZeros => json!({"name": "strip_zeros"}),
        Filter::PercentOf(d) => json!({"name": "percent_of", "args": d.to_string()}),
        Filter::Length => json!({"name": "length"}),
        Filter::SliceStr(a, b) => json!({"name": "slice_str", "args": format!("{a}:{b}")}),
        Filter::Replace(a, b) => json!({"name": "replace", "args": format!("{a}:{b}")}),
        Filter::Date => json!({"name": "date", "args": "02/01/2006"}),
    }
}

fn tag(name: &str, args: String) -> Value {
    json!({"type": "custom_tag", "tagName": name, "tagArgs": args})
}

fn leaf_json(l: &Leaf) -> Value {
    match l {
        Leaf::Text(s) => json!({"type": "text", "content": s}),
        Leaf::Var(v, fl) => {
            let filters: Vec<Value> = fl.iter().map(filter_json).collect();
            json!({"type": "variable", "variable": val_code(v), "filters": filters})
        }
        Leaf::Rows(c, cnd, end) => {
            let mut filters = Vec::new();
            if let Some((f, v)) = cnd {
                filters.push(json!({"name": "where", "args": format!("{f}:{v}")}));
            }
            filters.push(match end {
                RowsEnd::Length => json!({"name": "length"}),
                RowsEnd::Sum(f) => json!({"name": "sum", "args": f}),
                RowsEnd::Count(f, v) => json!({"name": "count", "args": format!("{f}:{v}")}),
            });
            json!({"type": "variable", "variable": c.code(), "filters": filters})
        }
        Leaf::SumAgg(c, f) => {
            json!({"type": "aggregation", "collection": c.code(), "function": "sum", "field": f})
        }
        Leaf::CountAgg(c, f, v) => {
            json!({"type": "aggregation", "collection": c.code(), "function": "count", "field": format!("{f}:{v}")})
        }
        Leaf::Increment(n) => {
            json!({"type": "counter", "properties": {"counterMode": "increment", "counterNames": [n]}})
        }
        Leaf::Show(ns) => {
            json!({"type": "counter", "properties": {"counterMode": "show", "counterNames": ns}})
        }
        Leaf::Comment(s) => json!({"type": "comment", "content": s}),
        Leaf::LengthPlus(c, k) => {
            json!({"type": "expression", "expression": format!("{}|length + {k}", c.code())})
        }
        Leaf::CountBy(c, cnd) => tag("count_by", with_cond(c.code(), cnd)),
        Leaf::SumBy(c, cnd) => {
            let field = super::bank::money_field(c.table()).unwrap_or("amount");
            tag(
                "sum_by",
                with_cond(format!("{} by \"{field}\"", c.code()), cnd),
            )
        }
        Leaf::Stat(stat, c, cnd) => {
            let name = match stat {
                Stat::Avg => "avg_by",
                Stat::Min => "min_by",
                Stat::Max => "max_by",
            };
            let field = super::bank::money_field(c.table()).unwrap_or("amount");
            tag(name, with_cond(format!("{} by \"{field}\"", c.code()), cnd))
        }
        Leaf::Calc(ops, first) => {
            let mut s = first.to_string();
            for (op, n) in ops {
                s.push_str(&format!(" {op} {n}"));
            }
            tag("calc", s)
        }
        Leaf::LastItem(Coll::Last { name, table, group }) => tag(
            "last_item_by_group",
            format!(
                "bank.{table} group_by \"{}\" order_by \"{}\" as {name}",
                group.join(","),
                super::bank::date_field(table)
            ),
        ),
        Leaf::LastItem(other) => unreachable!("last_item_by_group binds a Last: {other:?}"),
        Leaf::DateNow(layout) => json!({"type": "date_time", "format": layout}),
        Leaf::DateOf(v) => {
            json!({"type": "date_time", "variable": val_code(v), "format": "02/01/2006"})
        }
        Leaf::Calculation(v, f) => {
            let function = match f {
                CalcFn::Length => "length",
                CalcFn::StripZeros => "strip_zeros",
                CalcFn::Floatformat => "floatformat",
            };
            json!({"type": "calculation", "variable": val_code(v), "function": function})
        }
    }
}

pub fn json_blocks(bs: &[Block], loops: usize) -> Value {
    Value::Array(bs.iter().map(|b| json_block(b, loops)).collect())
}

fn json_block(b: &Block, loops: usize) -> Value {
    match b {
        Block::Leaf(l, inline, trim) => {
            let mut v = leaf_json(l);
            v["inline"] = json!(inline);
            if *trim {
                v["trimWhitespace"] = json!(true);
            }
            v
        }
        Block::Loop(c, children, trim) => json!({
            "type": "loop", "iterator": loop_var(loops), "collection": c.code(),
            "children": json_blocks(children, loops + 1), "trimWhitespace": trim
        }),
        Block::If(branches, otherwise, inline, trim) => {
            let first = &branches[0];
            let elifs: Vec<Value> = branches[1..]
                .iter()
                .map(|(c, ch)| json!({"condition": cond_code(c), "children": json_blocks(ch, loops)}))
                .collect();
            let mut v = json!({
                "type": "conditional", "condition": cond_code(&first.0),
                "children": json_blocks(&first.1, loops), "inline": inline,
                "trimWhitespace": trim
            });
            if !elifs.is_empty() {
                v["elifBranches"] = Value::Array(elifs);
            }
            if !otherwise.is_empty() {
                v["elseChildren"] = json_blocks(otherwise, loops);
            }
            v
        }
        Block::Section(ch) => json!({"type": "section", "children": json_blocks(ch, loops)}),
        Block::With(
            Coll::Bound {
                name,
                table,
                field,
                value,
                helper,
            },
            ch,
            trim,
        ) => {
            let assignment = if *helper {
                format!("filter(bank.{table}, \"{field}\", \"{value}\")")
            } else {
                format!("bank.{table}|where:\"{field}:{value}\"")
            };
            json!({
                "type": "with", "variable": name, "assignment": assignment,
                "children": json_blocks(ch, loops), "trimWhitespace": trim
            })
        }
        Block::With(other, ..) => unreachable!("with binds a filtered table: {other:?}"),
    }
}
