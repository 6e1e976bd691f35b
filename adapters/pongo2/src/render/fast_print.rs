//! `{{ row.field }}` and `{{ row.field|date:"layout" }}` (or `|time:`) of a streamed row,
//! printed straight from the row's chunk: the most common output of a report, one per cell.
//!
//! The generic path evaluates the expression into a value (the variable looked up and
//! cloned, the field read into a value, a time put behind a reference, the filter's result a
//! new string counted against the memory budget) and prints that. This path writes the same
//! bytes and charges the same budget (fuel, nesting, memory checks) in the same order, without
//! those values. It MUST print exactly what the generic path prints; it declines (answers
//! `false` before charging anything) whenever it is not sure to: the variable is not a
//! streamed row found in the scope frames, a frame binds a row's fields as bare names, reads
//! are recorded, the field is missing or of another kind, the filter's input is not a time.
use super::{R, Renderer};
use crate::ast::{Expr, ExprId, Part};
use crate::escape::html_escape;
use crate::filters::FilterFn;
use crate::rows::{FieldHint, PlainCell, RowChunk};
use crate::value::{MapV, Value};
use std::rc::Rc;

/// A printed expression this path takes.
enum Plain<'a> {
    /// `{{ head.field }}`.
    Field { head: &'a str, field: &'a str },
    /// `{{ head.field|date:"layout" }}` (or `time`, with a literal layout).
    Dated {
        head: &'a str,
        field: &'a str,
        layout: &'a str,
    },
}

impl<'a> Renderer<'a> {
    /// Prints `e` when it is a plain field of a streamed row (see the module docs):
    /// `Ok(true)` once printed, `Ok(false)` when the generic path must print it (nothing was
    /// charged or written then).
    pub(super) fn print_row_field(&mut self, e: ExprId) -> R<bool> {
        #[cfg(test)]
        if tests::GENERIC_ONLY.with(std::cell::Cell::get) {
            return Ok(false);
        }
        if self.reads.is_some() {
            return Ok(false);
        }
        let Some(plain) = self.plain(e) else {
            return Ok(false);
        };
        match plain {
            Plain::Field { head, field } => {
                let Some((chunk, row)) = self.row_var(head) else {
                    return Ok(false);
                };
                let Some(cell) = chunk.plain_field_hinted(row, field, self.hint(e)) else {
                    return Ok(false);
                };
                // `eval` of the variable.
                self.charged_eval(|_| Ok(()))?;
                match cell {
                    PlainCell::Str(s) if self.autoescape => self.write(&html_escape(s)),
                    PlainCell::Str(s) => self.write(s),
                    PlainCell::Int(i) => self.write(itoa::Buffer::new().format(i)),
                    PlainCell::Time(t) => self.write(&t.go_string()),
                }
            }
            Plain::Dated {
                head,
                field,
                layout,
            } => {
                let Some((chunk, row)) = self.row_var(head) else {
                    return Ok(false);
                };
                let Some(PlainCell::Time(t)) = chunk.plain_field_hinted(row, field, self.hint(e))
                else {
                    return Ok(false);
                };
                let mut out = String::new();
                // `eval` of the filtered expression: the variable's `eval`, the filter's
                // fuel, the layout's `eval`, then the filter itself (its transient check,
                // and the string it makes, reserved and freed once printed).
                self.charged_eval(|r| {
                    r.charged_eval(|_| Ok(()))?;
                    r.budget.fuel(1)?;
                    r.charged_eval(|_| Ok(()))?;
                    r.budget.fuel(1)?;
                    r.reserve_str(layout.len().saturating_mul(10))?;
                    out = t.format(layout);
                    r.budget.check_transient(out.capacity())
                })?;
                if self.autoescape {
                    self.write(&html_escape(&out))
                } else {
                    self.write(&out)
                }
            }
        }
        .map(|()| true)
    }

    /// The field hint of expression `e` (one per expression, so one per field name).
    fn hint(&mut self, e: ExprId) -> &mut Option<FieldHint> {
        let i = e as usize;
        if self.field_hints.len() <= i {
            self.field_hints.resize(i + 1, None);
        }
        // Resized above to hold index `i`.
        &mut self.field_hints[i]
    }

    /// Charges what `eval` charges around `f` (one level of nesting, one unit of fuel).
    fn charged_eval(&mut self, f: impl FnOnce(&mut Self) -> R<()>) -> R<()> {
        self.budget.enter()?;
        let r = self.budget.fuel(1).and_then(|()| f(self));
        self.budget.leave();
        r
    }

    /// The shape of `e` when this path takes it.
    fn plain(&self, e: ExprId) -> Option<Plain<'a>> {
        let tpl: &'a crate::ast::Template = self.tpl;
        match tpl.expr(e)? {
            Expr::Var { head, parts } => {
                let [Part::Attr(field)] = parts.as_slice() else {
                    return None;
                };
                Some(Plain::Field { head, field })
            }
            Expr::Filtered { base, filters } => {
                let [filter] = filters.as_slice() else {
                    return None;
                };
                if !matches!(filter.func, FilterFn::Date | FilterFn::Time) {
                    return None;
                }
                let Expr::Str(layout) = tpl.expr(filter.arg?)? else {
                    return None;
                };
                let Expr::Var { head, parts } = tpl.expr(*base)? else {
                    return None;
                };
                let [Part::Attr(field)] = parts.as_slice() else {
                    return None;
                };
                Some(Plain::Dated {
                    head,
                    field,
                    layout,
                })
            }
            _ => None,
        }
    }

    /// The streamed row `name` is bound to in the scope frames, as `lookup` finds it; `None`
    /// when it is bound to anything else, not in the frames, or a frame on the way binds a
    /// row's fields as bare names.
    fn row_var(&self, name: &str) -> Option<(Rc<RowChunk<'a>>, usize)> {
        let mut idx = self.frames.len().checked_sub(1);
        while let Some(i) = idx {
            let frame = self.frames.get(i)?;
            if frame.row.is_some() {
                return None;
            }
            if let Some((_, v)) = frame.vars.iter().rev().find(|(n, _)| *n == name) {
                return match v {
                    Value::Map(MapV::Row { chunk, row, .. }) => Some((chunk.clone(), *row)),
                    _ => None,
                };
            }
            idx = frame.parent;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::Pongo2Engine;
    use reporter_ports::ports::{RenderError, RenderLimits, RowFeed, TemplateEngine};
    use std::cell::Cell;

    thread_local! {
        /// Set: every print takes the generic path (the reference this path is checked
        /// against).
        pub(super) static GENERIC_ONLY: Cell<bool> = const { Cell::new(false) };
    }

    /// The rows, one chunk of two rows at a time.
    struct Feed(Vec<Vec<u8>>);

    impl RowFeed for Feed {
        fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, RenderError> {
            Ok((!self.0.is_empty()).then(|| self.0.remove(0)))
        }
    }

    fn rows() -> Vec<serde_json::Value> {
        serde_json::from_str(
            r#"[
            {"id": 1, "s": "Ana <b> & 'x' \"q\"", "t": "2024-01-02 03:04:05 +0000 UTC", "f": 1.5, "n": null, "b": true, "big": 18446744073709551615, "o": {"k": 1}, "l": [1, 2]},
            {"id": -7, "s": "", "t": "2024-02-03 00:00:00.25 -0300 -0300", "f": 1e21, "n": null, "b": false, "big": 1, "o": {}, "l": []},
            {"id": 0, "s": "plain", "t": "2024-03-04 05:06:07 +0000 UTC", "u": "not a time", "f": 0.1, "n": 3, "b": null, "big": -1, "o": null, "l": null},
            {"s": 5, "u": 12, "t": "2025-01-02 03:04:05 +0000 UTC", "id": "2024-01-02 03:04:05 +0000 UTC"},
            {"id": 9, "s": "1.50", "t": "2024-12-31 23:59:59.999999999 +0530 IST"}
        ]"#,
        )
        .expect("rows")
    }

    fn render(tpl: &str, limits: &RenderLimits, generic: bool) -> Result<String, RenderError> {
        GENERIC_ONLY.with(|g| g.set(generic));
        let chunks = rows()
            .chunks(2)
            .map(|c| serde_json::to_vec(c).expect("a chunk"))
            .collect();
        let out = Pongo2Engine::new().render_json_streamed(
            tpl,
            br#"{"d": {"t": [], "other": [{"a": 1}]}}"#,
            &mut Feed(chunks),
            limits,
        );
        GENERIC_ONLY.with(|g| g.set(false));
        out
    }

    /// The smallest bound `set` may give for the render to succeed, by bisection (the render
    /// succeeds at `high`).
    fn least(mut ok: impl FnMut(usize) -> bool, high: usize) -> usize {
        let (mut low, mut high) = (0, high);
        assert!(ok(high), "the render fails at the upper bound");
        while low < high {
            let mid = low + (high - low) / 2;
            if ok(mid) { high = mid } else { low = mid + 1 }
        }
        high
    }

    const TEMPLATES: [&str; 9] = [
        "{% for r in d.t %}{{ r.id|date:\"2006\" }}{% endfor %}",
        "{% for r in d.t %}{{ r.u|date:\"2006\" }}{% endfor %}",
        "{% for r in d.t %}{{ r.id }},{{ r.s }},{{ r.t }},{{ r.f }},{{ r.n }},{{ r.b }},{{ r.big }},{{ r.o }},{{ r.l }},{{ r.missing }}\n{% endfor %}",
        "{% for r in d.t %}{{ r.t|date:\"2006-01-02 15:04:05.000 MST -07:00\" }}|{{ r.t|time:\"Jan _2 3PM\" }}|{{ r.u }}|{{ r.t|date:\"<&>\" }}\n{% endfor %}",
        "{% autoescape off %}{% for r in d.t %}{{ r.s }}{{ r.t }}{{ r.t|date:\"2006\" }}{% endfor %}{% endautoescape %}",
        "{% for r in d.t %}{% for o in d.other %}{{ r.s }}{{ o.a }}{% endfor %}{% with r = d.other.0 %}{{ r.a }}{% endwith %}{% endfor %}",
        "{% for r in d.t %}{{ r.s|upper }}{{ r.t|date }}{{ r.t|date:2006 }}{{ forloop.Counter }}{% endfor %}",
        "{% for r in d.t %}{% sum_by d.other by \"a\" if r.id > 0 as x %}{{ r.s }}{{ x }}{% endfor %}",
        "{% macro m(r) %}{{ r.s }}{{ r.t|date:\"02\" }}{% endmacro %}{% for r in d.t %}{{ m(r) }}{% endfor %}",
    ];

    /// Renders `tpl` over `chunks` (each a JSON list of rows) with every print on the
    /// generic path or not.
    fn render_chunks(tpl: &str, chunks: &[&str], generic: bool) -> Result<String, RenderError> {
        GENERIC_ONLY.with(|g| g.set(generic));
        let chunks = chunks.iter().map(|c| c.as_bytes().to_vec()).collect();
        let out = Pongo2Engine::new().render_json_streamed(
            tpl,
            br#"{"d": {"t": []}}"#,
            &mut Feed(chunks),
            &RenderLimits::default(),
        );
        GENERIC_ONLY.with(|g| g.set(false));
        out
    }

    /// A print's field position is kept between rows: rows of another shape in the same
    /// chunk, and rows of the same shape index in a later chunk (other names, other
    /// positions), read each field where it is, as the generic path reads it.
    #[test]
    fn kept_field_positions_follow_shapes_and_chunks() {
        let tpl =
            "{% for r in d.t %}{{ r.a }}/{{ r.b }}/{{ r.c|date:\"2006-01-02\" }};{% endfor %}";
        let t = |d: u8| format!("\"2024-01-{d:02} 00:00:00 +0000 UTC\"");
        let chunks = [
            format!(
                r#"[{{"a":"1","b":"2","c":{}}},{{"b":"3","a":"4","c":{}}},{{"a":"5","b":"6","c":{}}}]"#,
                t(1),
                t(2),
                t(3)
            ),
            format!(
                r#"[{{"c":{},"b":"7","a":"8"}},{{"b":9,"c":{},"a":"x"}}]"#,
                t(4),
                t(5)
            ),
            format!(
                r#"[{{"a":"y","c":{}}},{{"c":{},"a":"z","b":"w"}},{{"b":"v","c":{}}}]"#,
                t(6),
                t(7),
                t(8)
            ),
        ];
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let want = render_chunks(tpl, &chunks, true).expect("renders");
        assert_eq!(
            want,
            "1/2/2024-01-01;4/3/2024-01-02;5/6/2024-01-03;8/7/2024-01-04;x/9/2024-01-05;y//2024-01-06;z/w/2024-01-07;/v/2024-01-08;"
        );
        assert_eq!(render_chunks(tpl, &chunks, false).expect("renders"), want);
    }

    /// Each template prints the same through this path as through the generic one, and
    /// needs the same fuel and the same memory bound to succeed.
    #[test]
    fn prints_and_charges_as_the_generic_path() {
        let limits = RenderLimits::default();
        for tpl in TEMPLATES {
            let want = render(tpl, &limits, true);
            assert_eq!(render(tpl, &limits, false), want, "{tpl}");
            if want.is_err() {
                continue;
            }
            let with_fuel = |generic: bool| {
                move |fuel: usize| {
                    let limits = RenderLimits {
                        fuel: fuel as u64,
                        ..RenderLimits::default()
                    };
                    render(tpl, &limits, generic).is_ok()
                }
            };
            let fuel = least(with_fuel(true), 1 << 20);
            assert_eq!(least(with_fuel(false), 1 << 20), fuel, "fuel of {tpl}");
            let with_memory = |generic: bool| {
                move |bytes: usize| {
                    let limits = RenderLimits {
                        max_memory_bytes: bytes,
                        ..RenderLimits::default()
                    };
                    render(tpl, &limits, generic).is_ok()
                }
            };
            let memory = least(with_memory(true), 1 << 20);
            assert_eq!(
                least(with_memory(false), 1 << 20),
                memory,
                "memory of {tpl}"
            );
        }
    }
}
