//! The streamed table's loop (see `stream_plan`): rows arrive from the feed a chunk at a
//! time; each row becomes a value of its own (owned strings, nothing borrowed from the
//! chunk), so a chunk is freed once its rows have run and a row once nothing holds it.
//!
//! Rows are data, as the context is: neither their parsing nor their copies are charged to
//! the template's fuel or memory budget (a render that fits its budgets over the context fits
//! them over the stream); the loop charges its iterations as any loop does.
use super::{R, Renderer, eval_err};
use crate::data::{JsonArena, JsonMap};
use crate::limits::Tracked;
use crate::stream_plan::Streamed;
use crate::value::{Json, ListKind, ListV, LoopInfo, MapV, Origin, OwnedMap, Text, Value};
use reporter_ports::ports::RenderError;
use std::rc::Rc;

impl<'a> Renderer<'a> {
    /// Runs `{% for key in <stream> %}` over the rows of the feed, as
    /// `exec_for_inner` runs it over a list. MUST fail if the loop runs a second time (the
    /// plan rules that out).
    pub(super) fn exec_for_streamed(
        &mut self,
        stream: Streamed<'a>,
        key: &'a str,
        body: &'a [crate::ast::Node],
        empty: Option<&'a [crate::ast::Node]>,
        parent: Option<Value<'a>>,
    ) -> R<()> {
        let Some(feed) = self.feed.take() else {
            return Err(eval_err("the streamed table was read twice"));
        };
        let info = Rc::new(LoopInfo {
            index: std::cell::Cell::new(0),
            count: i64::MAX,
            parent,
        });
        self.set_var("forloop", Value::Loop(info.clone()));
        let origin = Origin::Row(stream.ds, stream.table);
        let mut names: Vec<Rc<str>> = Vec::new();
        let mut index: i64 = 0;
        while let Some(chunk) = feed.next_chunk()? {
            let arena = JsonArena::new();
            let rows = match Json::parse(&chunk, &arena) {
                Ok(Json::Array(rows)) => rows,
                Ok(_) => {
                    return Err(RenderError::context_not_json(
                        "a chunk of rows is not a list",
                    ));
                }
                Err(e) => return Err(RenderError::context_not_json(e)),
            };
            for row in rows {
                let value = self.own_row(row, origin, &mut names)?;
                self.budget.fuel(1)?;
                info.index.set(index);
                self.set_var(key, value);
                self.exec_block(body)?;
                index = index.saturating_add(1);
            }
        }
        match empty {
            Some(e) if index == 0 => self.exec_block(e),
            _ => Ok(()),
        }
    }

    /// A row of a chunk as a value that outlives the chunk: what reading the same row from
    /// the context gives, field for field.
    fn own_row(
        &mut self,
        row: &Json<'_>,
        origin: Origin<'a>,
        names: &mut Vec<Rc<str>>,
    ) -> R<Value<'a>> {
        match row {
            Json::Object(map) => self.own_map(map, origin, Some(names)),
            // A row that is a string stays one (read from a table, it is never a time).
            Json::String(s) => Ok(data_str(s)),
            other => self.own_value(other),
        }
    }

    /// `map` with owned entries, sorted by name. `names` keeps the rows' field names so
    /// that rows of one table share them.
    fn own_map(
        &mut self,
        map: &JsonMap<'_>,
        origin: Origin<'a>,
        mut names: Option<&mut Vec<Rc<str>>>,
    ) -> R<Value<'a>> {
        let mut entries = Vec::with_capacity(map.len());
        for (i, (name, json)) in map.iter().enumerate() {
            let name = match names.as_deref_mut() {
                Some(known) => shared_name(known, i, name),
                None => Rc::from(name),
            };
            entries.push((name, self.own_value(json)?));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Value::Map(MapV::Owned(Rc::new(Tracked::adopt(
            OwnedMap {
                base: None,
                entries,
                origin,
                synthetic: Vec::new(),
            },
            0,
        )))))
    }

    /// A field's value as `Value::from_json` reads it below a row, owned.
    fn own_value(&mut self, json: &Json<'_>) -> R<Value<'a>> {
        Ok(match json {
            Json::Array(items) => {
                let mut owned = Vec::with_capacity(items.len());
                for item in *items {
                    owned.push(self.own_value(item)?);
                }
                Value::List(ListV::Owned(
                    Rc::new(Tracked::adopt(owned, 0)),
                    ListKind::Any,
                ))
            }
            Json::Object(map) => self.own_map(map, Origin::None, None)?,
            scalar => match Value::from_json(scalar, Origin::None) {
                Value::Str(text, _) => data_str(text.as_str()),
                Value::Nil => Value::Nil,
                Value::Bool(b) => Value::Bool(b),
                Value::Int(n) => Value::Int(n),
                Value::Float(f) => Value::Float(f),
                Value::Time(t) => Value::Time(t),
                _ => return Err(eval_err("unexpected value in a streamed row")),
            },
        })
    }
}

/// A data string as a value of its own (not charged: it is data).
fn data_str<'a>(s: &str) -> Value<'a> {
    Value::Str(Text::Owned(Rc::new(Tracked::adopt(s.to_owned(), 0))), false)
}

/// The `i`-th field name of a row, shared with the rows before when they had it there.
fn shared_name(known: &mut Vec<Rc<str>>, i: usize, name: &str) -> Rc<str> {
    match known.get(i) {
        Some(n) if &**n == name => n.clone(),
        Some(_) => Rc::from(name),
        None => {
            let n: Rc<str> = Rc::from(name);
            known.push(n.clone());
            n
        }
    }
}
