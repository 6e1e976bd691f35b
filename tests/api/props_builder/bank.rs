//! The bundled `bank` example data, read independently of the service, and what the
//! generator knows about its fields.
use std::collections::BTreeMap;

pub type Row = BTreeMap<String, String>;

pub struct Bank {
    tables: BTreeMap<&'static str, Vec<Row>>,
}

fn csv_line(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn csv(text: &str) -> Vec<Row> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = csv_line(lines.next().unwrap_or_default());
    lines
        .map(|l| header.iter().cloned().zip(csv_line(l)).collect())
        .collect()
}

impl Bank {
    pub fn load() -> Self {
        let tx: Vec<Row> = serde_json::from_str(include_str!(
            "../../../examples/data/bank/transactions.json"
        ))
        .expect("transactions");
        Self {
            tables: BTreeMap::from([
                (
                    "accounts",
                    csv(include_str!("../../../examples/data/bank/accounts.csv")),
                ),
                (
                    "balances",
                    csv(include_str!("../../../examples/data/bank/balances.csv")),
                ),
                ("transactions", tx),
            ]),
        }
    }

    pub fn rows(&self, t: &str) -> &[Row] {
        self.tables.get(t).map(Vec::as_slice).unwrap_or_default()
    }
}

pub const TABLES: [&str; 3] = ["accounts", "balances", "transactions"];

pub fn fields(table: &str) -> &'static [&'static str] {
    match table {
        "accounts" => &[
            "account_id",
            "holder_name",
            "branch",
            "currency",
            "opened_on",
        ],
        "balances" => &["account_id", "as_of", "balance"],
        _ => &[
            "transaction_id",
            "account_id",
            "booked_on",
            "amount",
            "currency",
            "direction",
            "category",
        ],
    }
}

pub fn is_money(f: &str) -> bool {
    f == "amount" || f == "balance"
}

pub fn is_date(f: &str) -> bool {
    matches!(f, "booked_on" | "opened_on" | "as_of")
}

/// The money field of a table (accounts have none: `None`).
pub fn money_field(table: &str) -> Option<&'static str> {
    match table {
        "balances" => Some("balance"),
        "transactions" => Some("amount"),
        _ => None,
    }
}

/// The date field of a table.
pub fn date_field(table: &str) -> &'static str {
    match table {
        "balances" => "as_of",
        "transactions" => "booked_on",
        _ => "opened_on",
    }
}

/// Values worth comparing a field with (some match, some do not).
pub fn probe_values(field: &str) -> &'static [&'static str] {
    match field {
        "currency" => &["EUR", "GBP", "USD", "JPY"],
        "direction" => &["credit", "debit"],
        "category" => &["rent", "salary", "fee", "nothing"],
        "branch" => &["London City", "Paris Opera"],
        _ => &["ACC-1001", "ACC-1003", "none"],
    }
}

/// A field fit for an equality test (no money, no dates).
pub fn comparable(f: &'static str) -> &'static str {
    if is_money(f) || is_date(f) {
        "account_id"
    } else {
        f
    }
}
