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
                "postgresql" | "postgres" => {
                    let port = match settings.get("PORT").map(|p| p.trim()) {
                        None | Some("") => 5432,
                        Some(p) => match p.parse::<u16>() {
                            Ok(p) if p > 0 => p,
                            _ => {
                                problems.push(problem(
                                    &var("PORT"),
                                    format!("'{p}' is not a port"),
                                    "1-65535",
                                ));
                                continue;
                            }
                        },
                    };
                    if let Some(mode) = settings
                        .get("SSLMODE")
                        .map(|m| m.trim().to_ascii_lowercase())
                        .filter(|m| !m.is_empty())
                        && mode != "disable"
                        && mode != "prefer"
                    {
                        problems.push(problem(
                            &var("SSLMODE"),
                            format!("'{mode}' is not supported yet"),
                            "disable",
                        ));
                        continue;
                    }
                    let Some(database) = settings
                        .get("DATABASE")
                        .map(|d| d.trim().to_owned())
                        .filter(|d| !d.is_empty())
                    else {
                        problems.push(problem(&var("DATABASE"), "missing", "the database name"));
                        continue;
                    };
                    let schemas: Vec<String> = settings
                        .get("SCHEMAS")
                        .map(|s| {
                            s.split(',')
                                .map(|x| x.trim().to_owned())
                                .filter(|x| !x.is_empty())
                                .collect()
                        })
                        .filter(|v: &Vec<String>| !v.is_empty())
                        .unwrap_or_else(|| vec!["public".to_owned()]);
                    DataSourceSpec::Postgresql {
                        host: settings
                            .get("HOST")
                            .map(|h| h.trim().to_owned())
                            .filter(|h| !h.is_empty())
                            .unwrap_or_else(|| "127.0.0.1".into()),
                        port,
                        user: settings
                            .get("USER")
                            .map(|u| u.trim().to_owned())
                            .filter(|u| !u.is_empty())
                            .unwrap_or_else(|| "postgres".into()),
                        password: settings.get("PASSWORD").cloned().filter(|p| !p.is_empty()),
                        database,
                        schemas,
                    }
                }
                "mongodb" | "mongo" => {
                    let Some(uri) = settings
                        .get("URI")
                        .map(|u| u.trim().to_owned())
                        .filter(|u| u.starts_with("mongodb://") || u.starts_with("mongodb+srv://"))
                    else {
                        problems.push(problem(
                            &var("URI"),
                            "missing or not a MongoDB connection string",
                            "mongodb://host:port or mongodb+srv://…",
                        ));
                        continue;
                    };
                    let Some(database) = settings
                        .get("DATABASE")
                        .map(|d| d.trim().to_owned())
                        .filter(|d| !d.is_empty())
                    else {
                        problems.push(problem(&var("DATABASE"), "missing", "the database name"));
                        continue;
                    };
                    DataSourceSpec::Mongodb { uri, database }
                }
                "" => {
                    problems.push(problem(&var("TYPE"), "missing", "file|postgresql|mongodb"));
                    continue;
                }
                other => {
                    problems.push(problem(
                        &var("TYPE"),
                        format!("'{other}' is not a supported data source type"),
                        "file|postgresql|mongodb",
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
