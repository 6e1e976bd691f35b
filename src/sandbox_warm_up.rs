//! The template a sandbox child renders once before it says hello (see
//! `reporter_adapter_sandbox::WarmUp`): the engine's common paths (loops, conditions, the
//! `filter` function, number and date filters, HTML for the sanitizer) over a few rows.
use reporter_adapter_sandbox::WarmUp;

/// Touches what most templates use; none of its output is kept.
const SOURCE: &str = r#"<html><head><style>td { padding: 2px; }</style></head><body>
<h1>{{ warm.meta.0.title|upper }}</h1>
{% for r in warm.rows %}{% with total=r.amount %}
<p class="row">{{ forloop.Counter }} {{ r.name|default:"-" }} {{ total|floatformat:2 }}
{% if r.kind == "credit" %}<b>{{ r.kind }}</b>{% elif r.kind == "debit" %}<i>{{ r.kind }}</i>{% else %}-{% endif %}
{{ r.booked|date:"02/01/2006" }} {{ r.name|length }}{% if not forloop.Last %},{% endif %}</p>
{% endwith %}{% endfor %}
<table>{% for r in filter(warm.rows, "kind", "credit") %}<tr><td>{{ r.name }}</td><td>{{ r.amount }}</td></tr>{% endfor %}</table>
</body></html>"#;

/// Its context.
const CONTEXT: &[u8] = br#"{"warm":{"meta":[{"title":"warm-up"}],"rows":[
{"name":"Ana & Bo","amount":"12.50","kind":"credit","booked":"2024-01-31"},
{"name":"<Carla>","amount":"7","kind":"debit","booked":"2024-02-29"},
{"name":"Davi","amount":"0.125","kind":"fee","booked":"2024-03-01"}]}}"#;

/// The warm-up of the service's sandbox children.
pub const WARM_UP: WarmUp<'static> = WarmUp {
    source: SOURCE,
    context: CONTEXT,
};

#[cfg(test)]
mod tests {
    use super::*;
    use reporter_adapter_ammonia::AmmoniaSanitizer;
    use reporter_adapter_pongo2::Pongo2Engine;
    use reporter_ports::ports::{HtmlSanitizer, RenderLimits, TemplateEngine};

    /// A warm-up that failed would warm nothing (its errors are dropped in the child).
    #[test]
    fn the_warm_up_parses_renders_and_sanitizes_without_error() {
        let (engine, limits) = (Pongo2Engine::new(), RenderLimits::default());
        let analysis = engine.analyze(WARM_UP.source, &limits).expect("parses");
        assert!(!analysis.mapped_fields.is_empty());
        let html = engine
            .render_json(WARM_UP.source, WARM_UP.context, &limits)
            .expect("renders");
        for part in [
            "WARM-UP",
            "Ana &amp; Bo 12.5",
            "Davi 0.12",
            "<b>credit</b>",
            "31/01/2024",
            "&lt;Carla&gt;",
        ] {
            assert!(html.contains(part), "{part} missing from {html}");
        }
        let clean = AmmoniaSanitizer::with_allowed_origins(Default::default()).sanitize(&html);
        assert!(clean.contains("<table>"), "{clean}");
    }
}
