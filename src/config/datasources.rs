//! `DATASOURCE_<NAME>_*` variables (reference E.1): one family of variables per data source.
use super::{ConfigProblem, problem};
use reporter_ports::datasource::DataSourceId;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How to reach one configured data source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataSourceSpec {
    /// A directory of `<table>.json` / `<table>.csv` files.
    File {
        /// The directory.
        path: PathBuf,
    },
    /// A PostgreSQL database.
    Postgresql {
        /// Host (or Unix-socket directory).
        host: String,
        /// Port.
        port: u16,
        /// User.
        user: String,
        /// Password.
        password: Option<String>,
        /// Database.
        database: String,
        /// Schemas to expose (default `public`).
        schemas: Vec<String>,
    },
    /// A MongoDB database.
    Mongodb {
        /// Connection string.
        uri: String,
        /// Database.
        database: String,
    },
}

/// Every configured data source, by id, plus whether the bundled example is registered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DataSourceConfig {
    /// Sources by id (`DATASOURCE_<NAME>_CONFIG_NAME`, default `<name>` lower-cased).
    pub sources: BTreeMap<DataSourceId, DataSourceSpec>,
    /// Register the bundled example data set as `bank`.
    pub example: bool,
}

const KNOWN_SUFFIXES: &[&str] = &[
    "CONFIG_NAME",
    "TYPE",
    "PATH",
    "HOST",
    "PORT",
    "USER",
    "PASSWORD",
    "DATABASE",
    "SSLMODE",
    "SCHEMAS",
    "URI",
];

impl DataSourceConfig {
    /// Reads every `DATASOURCE_<NAME>_<SETTING>` variable of `env`. `example` is the
    /// `EXAMPLE_DATA_ENABLED` choice (`None` = auto: on when no data source is configured).
    pub fn from_env(
        env: &[(String, String)],
        example: Option<bool>,
        problems: &mut Vec<ConfigProblem>,
    ) -> Self {
        let mut by_name: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (key, value) in env {
            let Some(rest) = key.strip_prefix("DATASOURCE_") else {
                continue;
            };
            let Some(suffix) = KNOWN_SUFFIXES
                .iter()
                .find(|s| rest.ends_with(&format!("_{s}")))
            else {
                problems.push(problem(
                    key,
                    "unknown data source setting",
                    "DATASOURCE_<NAME>_CONFIG_NAME, _TYPE or _PATH",
                ));
                continue;
            };
            let name = &rest[..rest.len() - suffix.len() - 1];
            if name.is_empty() {
                problems.push(problem(
                    key,
                    "missing <NAME>",
                    "DATASOURCE_<NAME>_<SETTING>",
                ));
                continue;
            }
            by_name
                .entry(name.to_owned())
                .or_default()
                .insert((*suffix).to_owned(), value.clone());
        }
        let mut sources = BTreeMap::new();
        for (name, settings) in &by_name {
            let var = |s: &str| format!("DATASOURCE_{name}_{s}");
            let raw_id = settings
                .get("CONFIG_NAME")
                .cloned()
                .unwrap_or_else(|| name.to_ascii_lowercase());
            let Some(id) = DataSourceId::parse(raw_id.trim()) else {
                problems.push(problem(
                    &var("CONFIG_NAME"),
                    format!("'{raw_id}' is not a valid data source id"),
                    "^[a-zA-Z][a-zA-Z0-9_-]{0,127}$",
                ));
                continue;
            };
            let kind = settings
                .get("TYPE")
                .map(|s| s.trim().to_ascii_lowercase())
                .unwrap_or_default();
            let spec = match kind.as_str() {
                "file" => match settings
                    .get("PATH")
                    .map(|p| p.trim())
                    .filter(|p| !p.is_empty())
                {
                    Some(p) => DataSourceSpec::File {
                        path: PathBuf::from(p),
                    },
                    None => {
                        problems.push(problem(
                            &var("PATH"),
                            "missing",
                            "a directory of <table>.json / <table>.csv files",
                        ));
                        continue;
                    }
                },
                "" => {
                    problems.push(problem(&var("TYPE"), "missing", "file"));
                    continue;
                }
                other => {
                    problems.push(problem(
                        &var("TYPE"),
                        format!("'{other}' is not a supported data source type"),
                        "file",
                    ));
                    continue;
                }
            };
            if sources.insert(id.clone(), spec).is_some() {
                problems.push(problem(
                    &var("CONFIG_NAME"),
                    format!("data source id '{id}' is configured twice"),
                    "ids must be unique",
                ));
            }
        }
        let example = example.unwrap_or(sources.is_empty());
        if example && sources.keys().any(|k| k.as_str() == "bank") {
            problems.push(problem(
                "EXAMPLE_DATA_ENABLED",
                "a configured data source already uses the id 'bank'",
                "disable the example or rename the source",
            ));
        }
        Self { sources, example }
    }
}
