//! The example templates render against the example bank data, loaded through the file data
//! source exactly as the worker would.
use reporter_adapter_fs::FileDataSource;
use reporter_adapter_pongo2::Pongo2Engine;
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::{DataSource, RenderLimits, TableQuery, TemplateEngine};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The example templates' file names (`examples/templates`).
const EXAMPLES: [&str; 4] = [
    "statement.html.tpl",
    "transactions.csv.tpl",
    "accounts.xml.tpl",
    "summary.txt.tpl",
];

/// The source of the example template `name`.
fn example(name: &str) -> String {
    match std::fs::read_to_string(repo().join("examples/templates").join(name)) {
        Ok(s) => s,
        Err(e) => panic!("read {name}: {e}"),
    }
}

async fn bank() -> serde_json::Value {
    let Some(id) = DataSourceId::parse("bank") else {
        panic!("id")
    };
    let source = match FileDataSource::open(id, repo().join("examples/data/bank")) {
        Ok(s) => s,
        Err(e) => panic!("open: {e}"),
    };
    let schema = match source.schema().await {
        Ok(s) => s,
        Err(e) => panic!("schema: {e}"),
    };
    let mut tables = serde_json::Map::new();
    for t in &schema.tables {
        let query = TableQuery {
            table: t.name.clone(),
            fields: t.fields.clone(),
            filters: BTreeMap::new(),
            max_rows: 100_000,
        };
        let rows = match source.query(&query).await {
            Ok(r) => r,
            Err(e) => panic!("query {}: {e}", t.name),
        };
        tables.insert(
            t.name.clone(),
            serde_json::Value::Array(rows.into_iter().map(serde_json::Value::Object).collect()),
        );
    }
    serde_json::json!({ "bank": tables })
}

fn render(template: &str, data: &serde_json::Value) -> String {
    let src = example(template);
    let engine = Pongo2Engine::new();
    assert!(
        engine.analyze(&src, &RenderLimits::default()).is_ok(),
        "{template}"
    );
    match engine.render(&src, data, &RenderLimits::default()) {
        Ok(s) => s,
        Err(e) => panic!("render {template}: {e}"),
    }
}

/// The example templates read only fields the example data has.
#[tokio::test]
async fn example_templates_read_only_existing_fields() {
    let data = bank().await;
    let engine = Pongo2Engine::new();
    for name in EXAMPLES {
        let src = example(name);
        let mapped = engine
            .analyze(&src, &RenderLimits::default())
            .expect(name)
            .mapped_fields;
        assert_eq!(mapped.len(), 1, "{name} reads only bank: {mapped:?}");
        for (table, fields) in &mapped["bank"] {
            let rows = data["bank"][table]
                .as_array()
                .unwrap_or_else(|| panic!("{name}: unknown table {table}"));
            for f in fields {
                assert!(
                    rows.iter().all(|r| r.get(f).is_some()),
                    "{name}: unknown field {table}.{f}"
                );
            }
        }
    }
}

fn count(data: &serde_json::Value, table: &str) -> usize {
    data["bank"][table].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn summary_txt() {
    let data = bank().await;
    let out = render("summary.txt.tpl", &data);
    assert!(
        out.starts_with("Bank data summary\n================="),
        "{out}"
    );
    assert!(
        out.contains(&format!("Accounts:     {}\n", count(&data, "accounts"))),
        "{out}"
    );
    assert!(
        out.contains(&format!("Transactions: {}\n", count(&data, "transactions"))),
        "{out}"
    );
    assert!(
        out.contains("ACC-1001  Maria Rossi (EUR, Milan Centrale)"),
        "{out}"
    );
    assert!(
        out.contains("ACC-1007  Northwind Trading, Ltd (GBP, London City)"),
        "{out}"
    );
    // `-%}` strips the whitespace after the tag, indentation included.
    assert!(
        out.contains("\nbalance as of 2023-12-31: 4820.15\n"),
        "{out}"
    );
    // The original's clean-up removes trailing zeros of decimals from the output.
    assert!(out.contains("\nbalance as of 2023-12-31: 12950\n"), "{out}");
    assert!(out.contains("\n2024-01-02  debit  1250  rent\n"), "{out}");
}

#[tokio::test]
async fn transactions_csv() {
    let data = bank().await;
    let out = render("transactions.csv.tpl", &data);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "transaction_id,account_id,booked_on,direction,amount,currency,category"
    );
    assert_eq!(lines.len(), 1 + count(&data, "transactions"), "{out}");
    assert!(
        lines.contains(&"TX-2024-0001,ACC-1001,2024-01-02,debit,1250,EUR,rent"),
        "{out}"
    );
    assert!(
        lines.iter().skip(1).all(|l| l.split(',').count() == 7),
        "{out}"
    );
}

#[tokio::test]
async fn accounts_xml() {
    let data = bank().await;
    let out = render("accounts.xml.tpl", &data);
    assert!(
        out.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<accounts source=\"bank\">"),
        "{out}"
    );
    assert_eq!(
        out.matches("<account id=").count(),
        count(&data, "accounts")
    );
    assert_eq!(
        out.matches("<balance asOf=").count(),
        count(&data, "balances")
    );
    assert!(
        out.contains("<account id=\"ACC-1007\" currency=\"GBP\">"),
        "{out}"
    );
    assert!(
        out.contains("<holder>Northwind Trading, Ltd</holder>"),
        "{out}"
    );
    assert!(
        out.contains("<balance asOf=\"2024-03-31\">88450.05</balance>"),
        "{out}"
    );
    assert!(out.trim_end().ends_with("</accounts>"), "{out}");
}

#[tokio::test]
async fn statement_html() {
    let data = bank().await;
    let out = render("statement.html.tpl", &data);
    assert!(out.starts_with("<!DOCTYPE html>"), "{out}");
    assert_eq!(out.matches("<section>").count(), count(&data, "accounts"));
    assert_eq!(out.matches("<td>TX-").count(), count(&data, "transactions"));
    assert!(out.contains("<h2>Maria Rossi (ACC-1001)</h2>"), "{out}");
    assert!(out.contains("<td>TX-2024-0001</td>"), "{out}");
    assert!(out.contains("<td class=\"amount\">1250</td>"), "{out}");
    assert!(out.contains("2024-03-31: 7147.78 EUR"), "{out}");
}

#[tokio::test]
async fn aggregations_over_the_example_data() {
    let data = bank().await;
    let engine = Pongo2Engine::new();
    let src = "{{ bank.transactions|where:\"account_id:ACC-1001\"|where:\"direction:debit\"|sum:\"amount\" }}|{% count_by bank.transactions if amount %}|{% last_item_by_group bank.balances group_by \"account_id\" order_by \"as_of\" as last %}{% for b in last %}{{ b.balance }};{% endfor %}";
    let out = match engine.render(src, &data, &RenderLimits::default()) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let parts: Vec<&str> = out.split('|').collect();
    assert_eq!(parts[1], count(&data, "transactions").to_string());
    assert!(parts[2].starts_with("7147.78;11802.37;"), "{out}");
    assert_eq!(parts[2].matches(';').count(), count(&data, "accounts"));
}

/// The comment the Console appends to a builder-made template (console/builder_marker.js):
/// `{# reporter-console:builder v1 <base64url of the JSON {blocks, format, description}> #}`.
fn console_marker(json: &serde_json::Value) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json.to_string());
    format!("{{# reporter-console:builder v1 {encoded} #}}")
}

/// A template carrying the Console's blocks comment renders byte for byte as it does without
/// it, reads the same fields and streams the same table: the comment renders to nothing,
/// whatever the blocks say (even `#}`, `{{` or a newline in a text block, which base64url
/// cannot carry through), and however large it is.
#[tokio::test]
async fn the_console_builder_comment_renders_to_nothing() {
    let data = bank().await;
    let engine = Pongo2Engine::new();
    let limits = RenderLimits::default();
    let hostile = serde_json::json!({
        "blocks": [
            {"blockId": "t1", "type": "text", "content": "#} {{ bank.accounts }} {% if %}\n{# x #}"},
            {"blockId": "l1", "type": "loop", "iterator": "a", "collection": "bank.accounts",
             "children": [{"blockId": "v1", "type": "variable", "variable": "a.holder_name"}]}
        ],
        "format": "html",
        "description": "Comentário «#}»"
    });
    let big = serde_json::json!({
        "blocks": (0..2000)
            .map(|i| serde_json::json!({"blockId": format!("t{i}"), "type": "text", "content": "x".repeat(100)}))
            .collect::<Vec<_>>(),
        "format": "txt",
        "description": ""
    });
    let markers = [console_marker(&hostile), console_marker(&big)];
    assert!(markers[1].len() > 250_000, "a large comment too");
    for m in &markers {
        assert!(
            !m[2..m.len() - 2].contains("#}") && !m.contains('\n'),
            "one comment"
        );
    }
    let generated = "{% for a in bank.accounts %}{{ a.account_id }};{% endfor %}\n".to_owned();
    let mut sources = vec![("builder-like".to_owned(), generated)];
    for name in EXAMPLES {
        let src = example(name);
        sources.push((name.to_owned(), src));
    }
    for (name, src) in &sources {
        let plain = engine.render(src, &data, &limits).expect(name);
        let analyzed = engine.analyze(src, &limits).expect(name);
        let plan = engine.stream_plan(src, &limits).expect(name);
        for m in &markers {
            let marked = format!("{src}{m}");
            assert_eq!(
                engine.render(&marked, &data, &limits).expect(name),
                plain,
                "{name}: the comment renders to nothing"
            );
            assert_eq!(
                engine.analyze(&marked, &limits).expect(name).mapped_fields,
                analyzed.mapped_fields,
                "{name}: the comment reads no field"
            );
            assert_eq!(
                engine.stream_plan(&marked, &limits).expect(name),
                plan,
                "{name}: the same streamed table"
            );
        }
    }
}
