//! The original's settings: the table against the chart's list, the code and the docs; and
//! each mapping and refusal of `original_names`.
use super::super::{RawConfig, crm, parse_bool};
use super::*;
use clap::Args;
use std::collections::BTreeSet;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The variables clap reads into [`RawConfig`].
fn read_by_clap() -> BTreeSet<String> {
    RawConfig::augment_args(clap::Command::new("reporter"))
        .get_arguments()
        .filter_map(|a| a.get_env())
        .map(|e| e.to_string_lossy().into_owned())
        .collect()
}

/// Read by scanning the environment rather than through clap.
fn read_by_scan(name: &str) -> bool {
    name.starts_with("DATASOURCE_")
        || crm::ENCRYPT_KEY_VARS.contains(&name)
        || crm::HASH_KEY_VARS.contains(&name)
}

#[test]
fn the_table_lists_exactly_the_charts_settings_in_order() {
    let chart: Vec<&str> = include_str!("../../tests/fixtures/helm/schema-keys.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let ours: Vec<&str> = ORIGINAL_SETTINGS.iter().map(|s| s.name).collect();
    assert_eq!(ours, chart);
    assert_eq!(chart.len(), 152, "133 settings and 19 data source examples");
}

#[test]
fn honoured_and_mapped_names_are_read_and_the_others_are_not() {
    let clap = read_by_clap();
    let wrong: Vec<String> = ORIGINAL_SETTINGS
        .iter()
        .filter_map(|s| {
            let read = clap.contains(s.name) || read_by_scan(s.name);
            match s.treatment {
                Treatment::Honoured | Treatment::Mapped(_) | Treatment::Restricted(_) if !read => {
                    Some(format!(
                        "{} is {} but nothing reads it",
                        s.name,
                        s.treatment.outcome()
                    ))
                }
                Treatment::NoEffect(_) | Treatment::Refused(_) if read => Some(format!(
                    "{} is read but is {}",
                    s.name,
                    s.treatment.outcome()
                )),
                _ => None,
            }
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn the_docs_table_is_the_generated_one() {
    let committed = include_str!("../../docs/original-settings.md");
    assert!(
        committed == markdown(),
        "docs/original-settings.md is stale: run `cargo run -q -- config original-settings > docs/original-settings.md`"
    );
}

fn validate(
    edit: impl FnOnce(&mut RawConfig),
    pairs: &[(&str, &str)],
) -> Result<crate::config::Config, Vec<String>> {
    let mut raw = RawConfig::defaults();
    edit(&mut raw);
    raw.validate(&env(pairs))
        .map_err(|e| e.0.into_iter().map(|p| p.variable).collect())
}

#[test]
fn server_port_alone_listens_on_every_interface() {
    let c = validate(|r| r.original.server_port = Some("4015".into()), &[]).expect("valid");
    assert_eq!(c.server_address.to_string(), "0.0.0.0:4015");
}

#[test]
fn server_port_agreeing_with_server_address_keeps_the_address() {
    let c = validate(
        |r| {
            r.server_address = ":4005".into();
            r.original.server_port = Some("4005".into());
        },
        &[("SERVER_ADDRESS", ":4005"), ("SERVER_PORT", "4005")],
    )
    .expect("valid");
    assert_eq!(c.server_address.to_string(), "0.0.0.0:4005");
}

#[test]
fn server_port_disagreeing_with_server_address_is_a_problem() {
    let errs = validate(
        |r| {
            r.server_address = "127.0.0.1:4005".into();
            r.original.server_port = Some("4010".into());
        },
        &[("SERVER_ADDRESS", "127.0.0.1:4005")],
    )
    .unwrap_err();
    assert!(errs.contains(&"SERVER_PORT".to_owned()), "{errs:?}");
}

#[test]
fn a_server_port_that_is_no_port_is_a_problem() {
    let errs = validate(|r| r.original.server_port = Some("http".into()), &[]).unwrap_err();
    assert_eq!(errs, ["SERVER_PORT"]);
}

#[test]
fn plugin_auth_enabled_false_turns_auth_off_when_auth_enabled_is_unset() {
    let c = validate(
        |r| r.original.plugin_auth_enabled = Some("false".into()),
        &[],
    )
    .expect("valid");
    assert!(!c.auth.enabled);
}

#[test]
fn plugin_auth_enabled_disagreeing_with_auth_enabled_is_a_problem() {
    let errs = validate(
        |r| r.original.plugin_auth_enabled = Some("false".into()),
        &[("AUTH_ENABLED", "true")],
    )
    .unwrap_err();
    assert_eq!(errs, ["PLUGIN_AUTH_ENABLED"]);
}

#[test]
fn the_access_manager_address_is_refused_while_auth_has_no_key() {
    let errs = validate(
        |r| r.original.plugin_auth_address = Some("http://plugin-auth:4000".into()),
        &[],
    )
    .unwrap_err();
    assert_eq!(errs, ["PLUGIN_AUTH_ADDRESS"]);
    let errs = validate(
        |r| r.original.plugin_auth_host = Some("http://plugin-auth:4000".into()),
        &[],
    )
    .unwrap_err();
    assert_eq!(errs, ["PLUGIN_AUTH_HOST"]);
}

#[test]
fn the_access_manager_address_has_no_effect_with_a_key_or_without_auth() {
    validate(
        |r| {
            r.original.plugin_auth_address = Some("http://plugin-auth:4000".into());
            r.auth_jwt_secret = Some("0123456789abcdef0123456789abcdef".into());
        },
        &[],
    )
    .expect("with a key");
    validate(
        |r| {
            r.original.plugin_auth_address = Some("http://plugin-auth:4000".into());
            r.original.plugin_auth_enabled = Some("false".into());
        },
        &[],
    )
    .expect("auth off");
}

#[test]
fn numbers_of_workers_sets_the_concurrency_unless_ours_disagrees() {
    let c = validate(
        |r| r.original.rabbitmq_numbers_of_workers = Some("6".into()),
        &[],
    )
    .expect("valid");
    assert_eq!(c.worker.settings.concurrency, 6);
    let errs = validate(
        |r| {
            r.worker_concurrency = "3".into();
            r.original.rabbitmq_numbers_of_workers = Some("6".into());
        },
        &[("WORKER_CONCURRENCY", "3")],
    )
    .unwrap_err();
    assert_eq!(errs, ["RABBITMQ_NUMBERS_OF_WORKERS"]);
}

#[test]
fn run_mode_must_be_api_worker_or_all() {
    for ok in ["api", "WORKER", "all"] {
        validate(|r| r.original.run_mode = Some(ok.into()), &[]).expect(ok);
    }
    let errs = validate(|r| r.original.run_mode = Some("both".into()), &[]).unwrap_err();
    assert_eq!(errs, ["RUN_MODE"]);
}

#[test]
fn cors_methods_and_headers_are_read_and_checked() {
    let c = validate(
        |r| {
            r.original.cors_allowed_methods = Some("get, POST,options".into());
            r.original.cors_allowed_headers = Some("Authorization,X-Request-ID".into());
        },
        &[],
    )
    .expect("valid");
    assert_eq!(c.original.cors_methods, ["GET", "POST", "OPTIONS"]);
    assert_eq!(c.original.cors_headers, ["Authorization", "X-Request-ID"]);
    let errs = validate(
        |r| {
            r.original.cors_allowed_methods = Some("GET,NOT A METHOD".into());
            r.original.cors_allowed_headers = Some("Bad Header".into());
        },
        &[],
    )
    .unwrap_err();
    assert_eq!(errs, ["CORS_ALLOWED_METHODS", "CORS_ALLOWED_HEADERS"]);
}

#[test]
fn swagger_enabled_is_a_boolean_defaulting_to_true() {
    let c = validate(|_| {}, &[]).expect("valid");
    assert!(c.original.swagger_enabled);
    let c = validate(|r| r.original.swagger_enabled = Some("false".into()), &[]).expect("valid");
    assert!(!c.original.swagger_enabled);
    let errs = validate(|r| r.original.swagger_enabled = Some("maybe".into()), &[]).unwrap_err();
    assert_eq!(errs, ["SWAGGER_ENABLED"]);
}

#[test]
fn fetcher_enabled_true_is_refused_false_has_no_effect() {
    let errs = validate(|_| {}, &[("FETCHER_ENABLED", "true")]).unwrap_err();
    assert_eq!(errs, ["FETCHER_ENABLED"]);
    validate(|_| {}, &[("FETCHER_ENABLED", "false")]).expect("false is fine");
    assert_eq!(
        without_effect(&env(&[
            ("FETCHER_URL", "http://fetcher"),
            ("SD_ENABLED", "true")
        ])),
        ["FETCHER_URL", "SD_ENABLED"]
    );
}

#[test]
fn an_object_storage_endpoint_alone_chooses_s3() {
    let c = validate(
        |r| r.s3_endpoint = Some("https://s3.example.com".into()),
        &[("OBJECT_STORAGE_ENDPOINT", "https://s3.example.com")],
    )
    .expect("valid");
    assert!(matches!(
        c.object_storage,
        crate::config::ObjectStorageChoice::S3(_)
    ));
    let c = validate(
        |r| r.s3_endpoint = Some("https://s3.example.com".into()),
        &[
            ("OBJECT_STORAGE_ENDPOINT", "https://s3.example.com"),
            ("OBJECT_STORAGE_BACKEND", "memory"),
        ],
    )
    .expect("valid");
    assert!(matches!(
        c.object_storage,
        crate::config::ObjectStorageChoice::Memory { .. }
    ));
}

#[test]
fn db_schemas_is_the_charts_spelling_of_schemas() {
    let c = validate(
        |_| {},
        &[
            ("DATASOURCE_EXTERNAL_TYPE", "postgresql"),
            ("DATASOURCE_EXTERNAL_HOST", "127.0.0.1"),
            ("DATASOURCE_EXTERNAL_DATABASE", "ext"),
            ("DATASOURCE_EXTERNAL_DB_SCHEMAS", "public,sales"),
        ],
    )
    .expect("valid");
    let spec = format!("{:?}", c.data_sources.sources);
    assert!(spec.contains("sales"), "{spec}");
    assert!(!spec.contains("external_db"), "{spec}");
    let errs = validate(
        |_| {},
        &[
            ("DATASOURCE_EXTERNAL_TYPE", "postgresql"),
            ("DATASOURCE_EXTERNAL_HOST", "127.0.0.1"),
            ("DATASOURCE_EXTERNAL_DATABASE", "ext"),
            ("DATASOURCE_EXTERNAL_SCHEMAS", "public"),
            ("DATASOURCE_EXTERNAL_DB_SCHEMAS", "public,sales"),
        ],
    )
    .unwrap_err();
    assert!(
        errs.contains(&"DATASOURCE_EXTERNAL_DB_SCHEMAS".to_owned()),
        "{errs:?}"
    );
}

#[test]
fn parse_bool_reads_the_charts_empty_allowances_as_unset() {
    // The chart sets ALLOW_RATELIMIT_* to "" by default: blank means unset, never "true".
    assert_eq!(parse_bool(""), None);
    assert!(present(&env(&[("ALLOW_RATELIMIT_FAIL_OPEN", "")])).is_empty());
}
