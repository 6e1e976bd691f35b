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

/// The committed page's "Variables" rows: variable → its Default cell.
fn documented_defaults() -> BTreeMap<String, String> {
    COMMITTED
        .split("## Variables")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let var = cells.first()?.strip_prefix("| `")?.strip_suffix('`')?;
            Some((var.to_owned(), (*cells.get(1)?).to_owned()))
        })
        .collect()
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

/// For EVERY variable: the default the committed page states, the default clap applies and
/// the value the checker falls back to on a bad value are one and the same.
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
        assert_eq!(
            documented.get(&d.env).map(String::as_str),
            Some(default_cell(default).as_str()),
            "{}: the reference's default differs from clap's (run `{REGENERATE}`)",
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
    let documented: Vec<&str> = DATASOURCE_SETTINGS.iter().map(|(s, _, _)| *s).collect();
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
