use super::*;
use crate::config::allowed::{Allowed, RULES};
use crate::config::{Checker, RawConfig, parse_bool};
use clap::{Args, Command, parser::ValueSource};
use std::collections::BTreeMap;

const COMMITTED: &str = include_str!("../../docs/src/operations/configuration.md");

#[test]
fn the_committed_reference_is_the_generated_one() {
    assert!(
        COMMITTED == markdown(),
        "{PATH} is stale: run `{REGENERATE}`"
    );
}

/// The committed page's rows under `## {section}`: the first cell with `prefix` and the
/// trailing backtick stripped → the row's Default cell (its second).
fn documented_cells(section: &str, prefix: &str) -> BTreeMap<String, String> {
    COMMITTED
        .split(&format!("## {section}"))
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let key = cells.first()?.strip_prefix(prefix)?.strip_suffix('`')?;
            Some((key.to_owned(), (*cells.get(1)?).to_owned()))
        })
        .collect()
}

/// The committed page's "Variables" rows: variable → its Default cell.
fn documented_defaults() -> BTreeMap<String, String> {
    documented_cells("Variables", "| `")
}

/// What clap applies with no flag and no environment: env name → (value, from the default).
fn clap_applied() -> BTreeMap<String, Option<String>> {
    let command = RawConfig::augment_args(Command::new("reporter"));
    let envs: Vec<(String, String)> = command
        .get_arguments()
        .filter_map(|a| {
            Some((
                a.get_id().to_string(),
                a.get_env()?.to_string_lossy().into(),
            ))
        })
        .collect();
    let matches = command
        .mut_args(|a| a.env(None::<&str>))
        .try_get_matches_from(["reporter"])
        .expect("no flag parses");
    envs.into_iter()
        .map(|(id, env)| {
            let value = matches
                .get_raw(&id)
                .and_then(|mut v| v.next())
                .map(|v| v.to_string_lossy().into_owned());
            if value.is_some() {
                assert_eq!(
                    matches.value_source(&id),
                    Some(ValueSource::DefaultValue),
                    "{env}"
                );
            }
            (env, value)
        })
        .collect()
}

/// For EVERY variable: the default the committed page states, the default clap applies (or,
/// for a variable without one, its [`declared::WhenUnset`] value) and the value the checker
/// falls back to on a bad value are one and the same.
#[test]
fn every_default_is_the_same_in_the_docs_in_clap_and_in_the_checker() {
    let documented = documented_defaults();
    let applied = clap_applied();
    let declared = declared::variables();
    assert!(declared.len() >= 98, "{} variables", declared.len());
    assert_eq!(
        applied.len(),
        declared.len(),
        "every variable has an env name"
    );
    for d in declared {
        let default = applied[&d.env].as_deref();
        assert_eq!(
            default,
            d.default.as_deref(),
            "{}: declared vs applied",
            d.env
        );
        if default.is_some() {
            assert_eq!(
                d.when_unset, None,
                "{}: a clap default and a WhenUnset",
                d.env
            );
        }
        let default = d.effective_default();
        assert_eq!(
            documented.get(&d.env).map(String::as_str),
            Some(default_cell(default).as_str()),
            "{}: the reference's default differs from the declared one (run `{REGENERATE}`)",
            d.env
        );
        let Some(default) = default else { continue };
        let rule = allowed::rule(&d.env);
        if default.trim().parse::<u64>().is_ok() || parse_bool(default).is_some() {
            assert!(rule.is_some(), "{}: no row in allowed.rs", d.env);
        }
        let Some(rule) = rule else { continue };
        assert!(
            rule.accepts(default),
            "{}: default {default:?} not allowed",
            d.env
        );
        let mut c = Checker {
            problems: Vec::new(),
        };
        match rule.allowed {
            Allowed::Integer { .. } => {
                if let Ok(n) = default.trim().parse::<u64>() {
                    assert_eq!(c.int::<u64>(&d.env, "not a number"), n, "{}", d.env);
                    assert_eq!(c.int::<u64>(&d.env, default), n, "{}", d.env);
                }
            }
            Allowed::Boolean => {
                if let Some(b) = parse_bool(default) {
                    assert_eq!(c.boolean(&d.env, "maybe"), b, "{}", d.env);
                }
            }
            Allowed::OneOf(_) | Allowed::BooleanOrReason => {}
        }
        let bad = c.problems.iter().filter(|p| p.variable == d.env).count();
        assert!(
            c.problems.len() == bad && bad <= 1,
            "{}: {:?}",
            d.env,
            c.problems
        );
    }
}

#[test]
fn every_allowed_row_names_a_declared_variable_once() {
    for (i, r) in RULES.iter().enumerate() {
        assert!(
            declared::variable(r.env).is_some(),
            "{} is not declared",
            r.env
        );
        assert!(RULES[..i].iter().all(|o| o.env != r.env), "{} twice", r.env);
        if let Allowed::Integer { min, max } = r.allowed {
            assert!(min <= max, "{}", r.env);
        }
    }
}

#[test]
fn the_reference_lists_every_variable_and_data_source_setting() {
    let page = markdown();
    for d in declared::variables() {
        assert!(page.contains(&format!("| `{}` |", d.env)), "{}", d.env);
    }
    assert!(page.contains("| `RABBITMQ_DLX` | `reporter.dlx` |"));
    let documented: Vec<&str> = DATASOURCE_SETTINGS.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        documented,
        crate::config::datasources::KNOWN_SUFFIXES,
        "DATASOURCE_SETTINGS must list datasources.rs's settings, in its order"
    );
    for name in crate::config::crm::ENCRYPT_KEY_VARS
        .iter()
        .chain(&crate::config::crm::HASH_KEY_VARS)
    {
        assert!(page.contains(&format!("`{name}`")), "{name}");
    }
}

#[test]
fn secrets_are_marked_and_their_defaults_unset() {
    for d in declared::variables().iter().filter(|d| d.secret) {
        assert_eq!(d.default, None, "{}", d.env);
        assert!(meaning(d).contains("Secret"), "{}", d.env);
    }
}

#[test]
fn the_derived_defaults_are_clap_s() {
    let d = RawConfig::defaults();
    let applied = clap_applied();
    assert_eq!(
        Some(d.max_pagination_limit.as_str()),
        applied["MAX_PAGINATION_LIMIT"].as_deref()
    );
    assert_eq!(
        Some(d.rabbitmq_dlx.as_str()),
        applied["RABBITMQ_DLX"].as_deref()
    );
    assert_eq!(
        Some(d.protection.rate_limit_export.as_str()),
        applied["RATE_LIMIT_EXPORT"].as_deref()
    );
    assert_eq!(d.cors_allowed_origins, "");
    assert_eq!(d.health_address, None);
}

/// Each [`declared::WhenUnset`] names a declared variable without a clap default (its being
/// unset stays distinguishable), its help names the value, and the checker falls back to it.
#[test]
fn every_when_unset_value_is_declared_once_beside_an_unset_variable() {
    let applied = clap_applied();
    let unset = declared::when_unset_values();
    for (env, value) in &unset {
        let d = declared::variable(env).unwrap_or_else(|| panic!("{env} is not declared"));
        assert_eq!(d.default, None, "{env}: has a clap default");
        assert_eq!(applied[*env], None, "{env}: clap applies a value");
        assert_eq!(d.when_unset.as_deref(), Some(value.as_str()), "{env}");
        assert!(
            d.help.contains(&format!("default {value}")),
            "{env}: {:?}",
            d.help
        );
        assert_eq!(declared::default_of(env), Some(value.as_str()), "{env}");
    }
    let names: Vec<&str> = unset.iter().map(|(e, _)| *e).collect();
    assert_eq!(
        names,
        [
            "MONGO_PORT",
            "RATE_LIMIT_GLOBAL",
            "RATE_LIMIT_WINDOW_SECONDS",
            "REDIS_PORT",
            "SWAGGER_ENABLED"
        ]
    );
}

/// The committed page's "Data sources" rows: setting suffix → its Default cell.
fn documented_datasource_defaults() -> BTreeMap<String, String> {
    documented_cells("Data sources", "| `DATASOURCE_<NAME>_")
}

/// For each SQL type: the defaults the committed page states are the ones a source with only
/// `_TYPE` and `_DATABASE` gets.
#[test]
fn every_data_source_default_is_the_same_in_the_docs_and_in_the_code() {
    use crate::config::{DataSourceConfig, DataSourceSpec, SqlConnection};
    let documented = documented_datasource_defaults();
    assert_eq!(documented.len(), DATASOURCE_SETTINGS.len());
    let entries = |suffix: &str| -> Vec<String> {
        documented[suffix]
            .split(", ")
            .map(|c| {
                c.split(" (")
                    .next()
                    .unwrap_or(c)
                    .trim_matches('`')
                    .to_owned()
            })
            .collect()
    };
    fn applied<M: Default + PartialEq + std::fmt::Debug + std::str::FromStr>(
        c: &SqlConnection<M>,
        [port, user, schema, host, mode]: [&str; 5],
    ) {
        assert_eq!(c.port.to_string(), port);
        assert_eq!(c.user, user);
        let schema = if schema == "the database" {
            "db"
        } else {
            schema
        };
        assert_eq!(c.schemas, [schema]);
        assert_eq!(c.host, host);
        assert_eq!(c.tls.mode, M::default());
        assert!(mode.parse::<M>().is_ok_and(|m| m == M::default()), "{mode}");
        assert_eq!(c.tls.root_cert, None);
    }
    let (ports, users, schemas) = (entries("PORT"), entries("USER"), entries("SCHEMAS"));
    let host = entries("HOST").remove(0);
    let mode = entries("SSLMODE").remove(0);
    for (i, kind) in ["postgresql", "mysql", "sqlserver"].into_iter().enumerate() {
        let env = [
            ("DATASOURCE_S_TYPE".to_owned(), kind.to_owned()),
            ("DATASOURCE_S_DATABASE".to_owned(), "db".to_owned()),
        ];
        let mut problems = Vec::new();
        let config = DataSourceConfig::from_env(&env, Some(false), &mut problems);
        assert!(problems.is_empty(), "{kind}: {problems:?}");
        let spec = &config.sources.values().next().expect("one source");
        let expected = [
            ports[i].as_str(),
            users[i].as_str(),
            schemas[i].as_str(),
            host.as_str(),
            mode.as_str(),
        ];
        match spec {
            DataSourceSpec::Postgresql(c) => applied(c, expected),
            DataSourceSpec::Mysql(c) => applied(c, expected),
            DataSourceSpec::Sqlserver(c) => applied(c, expected),
            other => panic!("{kind}: {other:?}"),
        }
        assert_eq!(
            documented["CONFIG_NAME"], "`<name>` lower-cased",
            "the id's default"
        );
        assert_eq!(config.sources.keys().next().map(|k| k.as_str()), Some("s"));
    }
}
