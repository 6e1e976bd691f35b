//! `DATASOURCE_<NAME>_*` variables (reference E.1): one family of variables per data source.
use super::{ConfigProblem, problem};
use reporter_ports::Secret;
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
    /// A PostgreSQL database (schemas default to `public`).
    Postgresql(SqlConnection<reporter_adapter_postgres::SslMode>),
    /// A MySQL or MariaDB database.
    Mysql(SqlConnection<reporter_adapter_mysql::SslMode>),
    /// A SQL Server database.
    Sqlserver(SqlConnection<reporter_adapter_sqlserver::SslMode>),
    /// A MongoDB database.
    Mongodb {
        /// Connection string (it may hold the password).
        uri: Secret,
        /// Database.
        database: String,
        /// The Midaz CRM's keys and organization, when the id is `plugin_crm` or `crm`.
        crm: Option<super::crm::CrmSpec>,
    },
}

/// The TLS variables of a SQL source (`_SSLMODE`, `_SSL`, `_SSLROOTCERT`, `_SSLCA`,
/// `_SSLCA_BASE64`; see [`super::datasource_tls`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlTls<M> {
    /// The mode (libpq's names).
    pub mode: M,
    /// The CA certificates to trust.
    pub root_cert: Option<RootCert>,
}

/// Where a source's CA certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCert {
    /// A PEM file (`_SSLROOTCERT`, or the original's `_SSLCA`).
    File(PathBuf),
    /// PEM text given inline (the original's `_SSLCA_BASE64`, decoded); the service writes it
    /// to a private file for the driver at start-up.
    Pem(Vec<u8>),
}

/// The connection variables of a PostgreSQL, MySQL or SQL Server source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlConnection<M> {
    /// Host.
    pub host: String,
    /// Port.
    pub port: u16,
    /// User.
    pub user: String,
    /// Password.
    pub password: Option<Secret>,
    /// Database.
    pub database: String,
    /// Schemas (MySQL: databases) to expose; default `public`, the database (MySQL) or
    /// `dbo`.
    pub schemas: Vec<String>,
    /// TLS.
    pub tls: SqlTls<M>,
}

/// Every configured data source, by id, plus whether the bundled example is registered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DataSourceConfig {
    /// Sources by id (`DATASOURCE_<NAME>_CONFIG_NAME`, default `<name>` lower-cased).
    pub sources: BTreeMap<DataSourceId, DataSourceSpec>,
    /// Register the bundled example data set as `bank`.
    pub example: bool,
}

/// The defaults of one SQL source type, declared once: [`source_spec`] applies them and the
/// configuration reference lists them (see [`documented_default`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct SqlDefaults {
    /// The type as the reference names it.
    pub label: &'static str,
    /// `_PORT` when unset.
    pub port: u16,
    /// `_USER` when unset.
    pub user: &'static str,
    /// `_SCHEMAS` when unset.
    pub schemas: DefaultSchemas,
}

/// The schemas a SQL source lists when `_SCHEMAS` is unset.
#[derive(Debug, Clone, Copy)]
pub(super) enum DefaultSchemas {
    /// This one schema.
    Named(&'static str),
    /// The source's database (MySQL: a database is a schema).
    TheDatabase,
}

/// PostgreSQL's defaults.
pub(super) const POSTGRESQL: SqlDefaults = SqlDefaults {
    label: "PostgreSQL",
    port: 5432,
    user: "postgres",
    schemas: DefaultSchemas::Named("public"),
};
/// MySQL's and MariaDB's defaults.
pub(super) const MYSQL: SqlDefaults = SqlDefaults {
    label: "MySQL/MariaDB",
    port: 3306,
    user: "root",
    schemas: DefaultSchemas::TheDatabase,
};
/// SQL Server's defaults.
pub(super) const SQLSERVER: SqlDefaults = SqlDefaults {
    label: "SQL Server",
    port: 1433,
    user: "sa",
    schemas: DefaultSchemas::Named("dbo"),
};
/// Every SQL type's defaults, in the order the reference lists them.
pub(super) const SQL_DEFAULTS: [SqlDefaults; 3] = [POSTGRESQL, MYSQL, SQLSERVER];

/// A SQL source's `_HOST` when unset.
pub(super) const DEFAULT_HOST: &str = "127.0.0.1";

/// The reference's "Default" cell of setting `suffix` (one of [`KNOWN_SUFFIXES`]), derived
/// from the defaults [`source_spec`] applies; per SQL type in [`SQL_DEFAULTS`]' order.
pub(super) fn documented_default(suffix: &str) -> String {
    let per_type = |f: &dyn Fn(&SqlDefaults) -> String| {
        SQL_DEFAULTS
            .iter()
            .map(|d| format!("{} ({})", f(d), d.label))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match suffix {
        "CONFIG_NAME" => "`<name>` lower-cased".to_owned(),
        "HOST" => format!("`{DEFAULT_HOST}`"),
        "PORT" => per_type(&|d| format!("`{}`", d.port)),
        "USER" => per_type(&|d| format!("`{}`", d.user)),
        "SSLMODE" => format!(
            "`{}`",
            reporter_adapter_postgres::SslMode::default().as_str()
        ),
        "SCHEMAS" => per_type(&|d| match d.schemas {
            DefaultSchemas::Named(s) => format!("`{s}`"),
            DefaultSchemas::TheDatabase => "the database".to_owned(),
        }),
        "MIDAZ_ORGANIZATION_ID" => "— (every organization)".to_owned(),
        _ => "—".to_owned(),
    }
}

const SUPPORTED_TYPES: &str = "file|postgresql|mysql|sqlserver|mongodb";

pub(super) const KNOWN_SUFFIXES: &[&str] = &[
    "CONFIG_NAME",
    "TYPE",
    "PATH",
    "HOST",
    "PORT",
    "USER",
    "PASSWORD",
    "DATABASE",
    "SSLMODE",
    "SSLROOTCERT",
    "SSLCA_BASE64",
    "SSLCA",
    "SSL",
    "OPTIONS",
    // The Helm chart's spelling of SCHEMAS: listed before it so that the longer suffix wins.
    "DB_SCHEMAS",
    "SCHEMAS",
    "URI",
    "MIDAZ_ORGANIZATION_ID",
];

/// The TLS settings of SQL sources, which a MongoDB source takes in its `_URI` instead.
const SQL_TLS_SUFFIXES: &[&str] = &["SSLMODE", "SSL", "SSLROOTCERT", "SSLCA", "SSLCA_BASE64"];

/// What the "unknown setting" problem lists: every accepted suffix.
fn accepted_suffixes() -> String {
    format!(
        "DATASOURCE_<NAME>_<SETTING>, <SETTING> one of {}",
        KNOWN_SUFFIXES.join(", ")
    )
}

impl DataSourceConfig {
    /// Reads every `DATASOURCE_<NAME>_<SETTING>` variable of `env`. `example` is the
    /// `EXAMPLE_DATA_ENABLED` choice (`None` = auto: on when no data source is configured).
    pub fn from_env(
        env: &[(String, String)],
        example: Option<bool>,
        problems: &mut Vec<ConfigProblem>,
    ) -> Self {
        let mut sources = BTreeMap::new();
        for (name, settings) in &settings_by_name(env, problems) {
            let Some((id, spec)) = source_spec(name, settings, env, problems) else {
                continue;
            };
            if sources.insert(id.clone(), spec).is_some() {
                problems.push(problem(
                    &format!("DATASOURCE_{name}_CONFIG_NAME"),
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

/// The `DATASOURCE_<NAME>_<SETTING>` variables of `env`, grouped by `<NAME>`; a variable with
/// an unknown `<SETTING>` or no `<NAME>` is a problem.
fn settings_by_name(
    env: &[(String, String)],
    problems: &mut Vec<ConfigProblem>,
) -> BTreeMap<String, BTreeMap<String, String>> {
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
                &accepted_suffixes(),
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
        let setting = if *suffix == "DB_SCHEMAS" {
            "SCHEMAS"
        } else {
            suffix
        };
        let settings = by_name.entry(name.to_owned()).or_default();
        if settings.insert(setting.to_owned(), value.clone()).is_some() {
            problems.push(problem(
                key,
                "set twice (as _SCHEMAS and as the Helm chart's _DB_SCHEMAS)",
                "one of DATASOURCE_<NAME>_SCHEMAS or DATASOURCE_<NAME>_DB_SCHEMAS",
            ));
        }
    }
    by_name
}

/// The id and connection of the source `name`, or `None` after pushing its problem: one arm
/// per source type.
fn source_spec(
    name: &str,
    settings: &BTreeMap<String, String>,
    env: &[(String, String)],
    problems: &mut Vec<ConfigProblem>,
) -> Option<(DataSourceId, DataSourceSpec)> {
    let var = |s: &str| format!("DATASOURCE_{name}_{s}");
    let raw_id = settings
        .get("CONFIG_NAME")
        .cloned()
        .unwrap_or_else(|| name.to_ascii_lowercase());
    let Some(id) = DataSourceId::parse(raw_id.trim()) else {
        problems.push(problem(
            &var("CONFIG_NAME"),
            format!("'{raw_id}' is not a valid data source id"),
            DataSourceId::PATTERN,
        ));
        return None;
    };
    let kind = settings
        .get("TYPE")
        .map(|s| s.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let is_crm = matches!(kind.as_str(), "mongodb" | "mongo")
        && reporter_adapter_mongo::is_crm_source(id.as_str());
    if !is_crm
        && settings
            .get("MIDAZ_ORGANIZATION_ID")
            .is_some_and(|o| !o.trim().is_empty())
    {
        problems.push(problem(
            &var("MIDAZ_ORGANIZATION_ID"),
            "only the Midaz CRM source reads it",
            "unset it, or use it on the MongoDB source whose id (_CONFIG_NAME) is plugin_crm or crm",
        ));
        return None;
    }
    if settings
        .get("OPTIONS")
        .is_some_and(|o| !o.trim().is_empty())
    {
        problems.push(problem(
            &var("OPTIONS"),
            "not supported: the original's free-form driver options have no documented \
                 meaning (reference E.1 names the variable only), and Reporter passes no \
                 options through",
            "unset or empty; TLS is _SSLMODE with _SSLROOTCERT / _SSLCA / _SSLCA_BASE64",
        ));
        return None;
    }
    let spec = match kind.as_str() {
        "file" => file_spec(settings, &var, problems)?,
        "postgresql" | "postgres" => {
            DataSourceSpec::Postgresql(sql_connection(settings, &var, &POSTGRESQL, problems)?)
        }
        "mysql" | "mariadb" => {
            DataSourceSpec::Mysql(sql_connection(settings, &var, &MYSQL, problems)?)
        }
        "sqlserver" | "sql_server" | "mssql" => {
            DataSourceSpec::Sqlserver(sql_connection(settings, &var, &SQLSERVER, problems)?)
        }
        "oracle" => {
            problems.push(problem(
                &var("TYPE"),
                "'oracle' is not built: the Rust Oracle drivers need Oracle's client \
                     libraries (docs/src/templates/data-sources.md)",
                SUPPORTED_TYPES,
            ));
            return None;
        }
        "mongodb" | "mongo" => {
            let crm = reporter_adapter_mongo::is_crm_source(id.as_str()).then(|| {
                let org = settings
                    .get("MIDAZ_ORGANIZATION_ID")
                    .map(|o| o.trim().to_owned())
                    .filter(|o| !o.is_empty());
                super::crm::crm_spec(env, org, problems)
            });
            mongo_spec(settings, &var, crm, problems)?
        }
        "" => {
            problems.push(problem(&var("TYPE"), "missing", SUPPORTED_TYPES));
            return None;
        }
        other => {
            problems.push(problem(
                &var("TYPE"),
                format!("'{other}' is not a supported data source type"),
                SUPPORTED_TYPES,
            ));
            return None;
        }
    };
    Some((id, spec))
}

/// A `file` source: its `_PATH`, or `None` after pushing the problem.
fn file_spec(
    settings: &BTreeMap<String, String>,
    var: &dyn Fn(&str) -> String,
    problems: &mut Vec<ConfigProblem>,
) -> Option<DataSourceSpec> {
    let path = settings
        .get("PATH")
        .map(|p| p.trim())
        .filter(|p| !p.is_empty());
    if path.is_none() {
        problems.push(problem(
            &var("PATH"),
            "missing",
            "a directory of <table>.json / <table>.csv files",
        ));
    }
    path.map(|p| DataSourceSpec::File {
        path: PathBuf::from(p),
    })
}

/// A MongoDB source: its `_URI` and `_DATABASE`, or `None` after pushing the problem. MUST
/// refuse the SQL TLS variables (a MongoDB source takes TLS in its connection string).
fn mongo_spec(
    settings: &BTreeMap<String, String>,
    var: &dyn Fn(&str) -> String,
    crm: Option<super::crm::CrmSpec>,
    problems: &mut Vec<ConfigProblem>,
) -> Option<DataSourceSpec> {
    if let Some(s) = mongo_tls_setting(settings) {
        problems.push(problem(
            &var(s),
            "a MongoDB source takes TLS in its connection string",
            "_URI with tls=true (and tlsCAFile=<PEM file>); unset this variable",
        ));
        return None;
    }
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
        return None;
    };
    let Some(database) = settings
        .get("DATABASE")
        .map(|d| d.trim().to_owned())
        .filter(|d| !d.is_empty())
    else {
        problems.push(problem(&var("DATABASE"), "missing", "the database name"));
        return None;
    };
    Some(DataSourceSpec::Mongodb {
        uri: Secret::new(uri),
        database,
        crm,
    })
}

/// The first SQL TLS setting of a MongoDB source that asks for something: empty values and
/// the ones that say "no TLS" (`disable`, `false`) are harmless leftovers of a shared template.
fn mongo_tls_setting(settings: &BTreeMap<String, String>) -> Option<&'static str> {
    SQL_TLS_SUFFIXES.iter().copied().find(|s| {
        settings.get(*s).is_some_and(|v| {
            let v = v.trim().to_ascii_lowercase();
            !matches!(v.as_str(), "" | "disable" | "false" | "0" | "no")
        })
    })
}

/// `_HOST`, `_PORT`, `_USER`, `_PASSWORD`, `_DATABASE`, `_SCHEMAS` and the TLS variables of
/// one SQL source, unset ones taken from `defaults`; `None` after recording the problems.
fn sql_connection<M>(
    settings: &BTreeMap<String, String>,
    var: &dyn Fn(&str) -> String,
    defaults: &SqlDefaults,
    problems: &mut Vec<ConfigProblem>,
) -> Option<SqlConnection<M>>
where
    M: std::str::FromStr<Err = String> + Default + PartialEq,
{
    let get = |key: &str| {
        settings
            .get(key)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let before = problems.len();
    let default_port = defaults.port;
    let port = match get("PORT") {
        None => default_port,
        Some(p) => match p.parse::<u16>() {
            Ok(p) if p > 0 => p,
            _ => {
                problems.push(problem(
                    &var("PORT"),
                    format!("'{p}' is not a port"),
                    "1-65535",
                ));
                default_port
            }
        },
    };
    let tls = super::datasource_tls::sql_tls::<M>(&get, var, problems);
    let database = get("DATABASE");
    if database.is_none() {
        problems.push(problem(&var("DATABASE"), "missing", "the database name"));
    }
    let schemas = settings.get("SCHEMAS").and_then(|s| {
        let list: Vec<String> = s
            .split(',')
            .map(|x| x.trim().to_owned())
            .filter(|x| !x.is_empty())
            .collect();
        (!list.is_empty()).then_some(list)
    });
    if problems.len() > before {
        return None;
    }
    let database = database?;
    Some(SqlConnection {
        host: get("HOST").unwrap_or_else(|| DEFAULT_HOST.into()),
        port,
        user: get("USER").unwrap_or_else(|| defaults.user.into()),
        password: settings
            .get("PASSWORD")
            .filter(|p| !p.is_empty())
            .map(|p| Secret::from(p.as_str())),
        schemas: schemas.unwrap_or_else(|| match defaults.schemas {
            DefaultSchemas::Named(s) => vec![s.to_owned()],
            DefaultSchemas::TheDatabase => vec![database.clone()],
        }),
        database,
        tls,
    })
}
