//! No secret reaches `Debug` (`{:?}`, `{:#?}`) of the raw or the validated configuration, nor
//! the lines `config check` and the start-up banner print (issue 30).
use super::*;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

/// Every secret value below ends with this; alphanumeric, so percent-encoding keeps it.
const TAG: &str = "4d2f9e7b";

fn secret(name: &str) -> String {
    format!("Secret{name}{TAG}")
}

/// The data sources' variables, one source per kind that takes a password or a
/// credential-bearing URI.
fn data_source_vars() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for (name, kind) in [("PG", "postgresql"), ("MY", "mysql"), ("MS", "sqlserver")] {
        v.push((format!("DATASOURCE_{name}_TYPE"), kind.to_owned()));
        v.push((format!("DATASOURCE_{name}_DATABASE"), "ledger".to_owned()));
        v.push((
            format!("DATASOURCE_{name}_PASSWORD"),
            secret(&format!("Ds{name}Password")),
        ));
    }
    v.push(("DATASOURCE_DOCS_TYPE".to_owned(), "mongodb".to_owned()));
    v.push(("DATASOURCE_DOCS_DATABASE".to_owned(), "docs".to_owned()));
    v.push((
        "DATASOURCE_DOCS_URI".to_owned(),
        format!(
            "mongodb://docs:{}@docs.internal:27017/",
            secret("DsMongoUri")
        ),
    ));
    v
}

/// Mongo and RabbitMQ composed from their parts (`*_PASSWORD`, `*_PASS`), AMQP URIs in
/// `STREAMING_BROKERS`, S3 keys and the JWT secret.
fn composed(raw: &mut RawConfig) -> Vec<String> {
    let jwt = format!("SecretJwtSecretJwtSecretJwt{TAG}");
    raw.auth_jwt_secret = Some(jwt.as_str().into());
    raw.mongo_uri = Some("mongodb".into());
    raw.mongo_host = Some("mongo.internal".into());
    raw.mongo_user = Some("reporter".into());
    raw.mongo_password = Some(secret("MongoPassword").into());
    raw.rabbitmq_uri = Some("amqp".into());
    raw.rabbitmq_host = Some("mq.internal".into());
    raw.rabbitmq_user = Some("reporter".into());
    raw.rabbitmq_pass = Some(secret("RabbitPass").into());
    raw.streaming_enabled = "true".into();
    raw.events_exchange = Some("reporter.events".into());
    raw.streaming_source = Some("reporter".into());
    let brokers = format!(
        "amqp://events:{}@mq1.internal:5672/%2f,amqp://events:{}@mq2.internal:5672/%2f",
        secret("BrokerOne"),
        secret("BrokerTwo")
    );
    raw.streaming_brokers = Some(brokers.into());
    raw.object_storage_backend = "s3".into();
    raw.s3_access_key_id = Some(secret("S3AccessKeyId").into());
    raw.s3_secret_key = Some(secret("S3SecretKey").into());
    vec![
        jwt,
        secret("MongoPassword"),
        secret("RabbitPass"),
        secret("BrokerOne"),
        secret("BrokerTwo"),
        secret("S3AccessKeyId"),
        secret("S3SecretKey"),
    ]
}

/// Complete connection strings with passwords in `MONGO_URI` and `RABBITMQ_URI`, and a
/// broker list with credentials but no AMQP URI (so events go to `RABBITMQ_URI`).
fn complete(raw: &mut RawConfig) -> Vec<String> {
    raw.auth_jwt_secret = Some(format!("SecretJwtSecretJwtSecretJwt{TAG}").into());
    raw.mongo_uri = Some(
        format!(
            "mongodb://reporter:{}@mongo.internal:27017/?replicaSet=rs0",
            secret("MongoUri")
        )
        .into(),
    );
    raw.rabbitmq_uri = Some(
        format!(
            "amqps://reporter:{}@mq.internal:5671/%2f",
            secret("RabbitUri")
        )
        .into(),
    );
    raw.streaming_enabled = "true".into();
    raw.events_exchange = Some("reporter.events".into());
    raw.streaming_source = Some("reporter".into());
    raw.streaming_brokers = Some(format!("events:{}@rabbitmq:5672", secret("BrokerList")).into());
    vec![
        format!("SecretJwtSecretJwtSecretJwt{TAG}"),
        secret("MongoUri"),
        secret("RabbitUri"),
        secret("BrokerList"),
    ]
}

/// Fails naming the secret and the text it appeared in. Also looks for the value
/// percent-encoded and for the distinctive tag alone.
fn assert_hidden(what: &str, text: &str, secrets: &[String]) {
    for s in secrets {
        let encoded = utf8_percent_encode(s, NON_ALPHANUMERIC).to_string();
        assert!(
            !text.contains(s.as_str()) && !text.contains(&encoded),
            "{what} shows the secret {s}:\n{text}"
        );
    }
    assert!(!text.contains(TAG), "{what} shows a secret:\n{text}");
}

fn check(setup: fn(&mut RawConfig) -> Vec<String>) {
    let mut raw = RawConfig::defaults();
    let mut secrets = setup(&mut raw);
    let env = data_source_vars();
    secrets.extend(
        env.iter()
            .filter(|(k, _)| k.ends_with("_PASSWORD"))
            .map(|(_, v)| v.clone()),
    );
    secrets.push(secret("DsMongoUri"));
    let config = match raw.validate(&env) {
        Ok(c) => c,
        Err(e) => panic!("the configuration must be valid: {e}"),
    };
    assert_hidden("RawConfig {:?}", &format!("{raw:?}"), &secrets);
    assert_hidden("RawConfig {:#?}", &format!("{raw:#?}"), &secrets);
    assert_hidden("Config {:?}", &format!("{config:?}"), &secrets);
    assert_hidden("Config {:#?}", &format!("{config:#?}"), &secrets);
    assert_hidden("describe()", &config.streaming.describe(), &secrets);
    // The values are all there, for the adapters.
    assert_eq!(config.data_sources.sources.len(), 4);
    assert!(format!("{config:?}").contains(reporter_ports::secret::REDACTED));
}

#[test]
fn debug_of_the_configuration_shows_no_composed_secret() {
    check(composed);
}

#[test]
fn debug_of_the_configuration_shows_no_password_inside_a_uri() {
    check(complete);
}

#[test]
fn the_secret_values_reach_the_settings() {
    let mut raw = RawConfig::defaults();
    composed(&mut raw);
    let c = match raw.validate(&[]) {
        Ok(c) => c,
        Err(e) => panic!("valid: {e}"),
    };
    assert!(matches!(&c.auth.key, AuthKey::Secret(s) if s.expose().ends_with(TAG)));
    let Some(m) = &c.mongo else {
        panic!("mongo configured")
    };
    assert!(m.connection.uri.expose().contains(&secret("MongoPassword")));
    let ObjectStorageChoice::S3(s3) = &c.object_storage else {
        panic!("s3")
    };
    assert_eq!(
        s3.secret_key.as_ref().map(Secret::expose),
        Some(secret("S3SecretKey").as_str())
    );
    let JobQueueChoice::Rabbit { uri, .. } = &c.worker.queue else {
        panic!("rabbit")
    };
    assert!(uri.expose().contains(&secret("RabbitPass")));
}

/// A mistyped connection variable is named in the problem without its password.
#[test]
fn problems_with_a_secret_variable_hide_its_password() {
    let mut raw = RawConfig::defaults();
    raw.mongo_uri = Some(format!("reporter:{}@mongo.internal", secret("MongoBad")).into());
    raw.rabbitmq_uri = Some(format!("reporter:{}@mq.internal", secret("RabbitBad")).into());
    raw.streaming_enabled = "true".into();
    raw.events_exchange = Some("reporter.events".into());
    raw.streaming_source = Some("reporter".into());
    raw.streaming_brokers = Some(format!("u:{}@rabbitmq:5672", secret("Brokers")).into());
    let Err(e) = raw.validate(&[]) else {
        panic!("invalid URIs must be refused")
    };
    let text = e.to_string();
    assert!(
        text.contains("MONGO_") && text.contains("RABBITMQ_URI"),
        "{text}"
    );
    assert_hidden("the problems", &text, &[]);
}

/// Every variable that holds a secret hides its value in `--help` (clap's `hide_env_values`).
#[test]
fn help_hides_the_value_of_every_secret_variable() {
    use clap::CommandFactory;
    #[derive(clap::Parser)]
    struct W {
        #[command(flatten)]
        raw: RawConfig,
    }
    let cmd = W::command();
    for var in [
        "AUTH_JWT_SECRET",
        "MONGO_URI",
        "MONGO_PASSWORD",
        "RABBITMQ_URI",
        "RABBITMQ_DEFAULT_PASS",
        "STREAMING_BROKERS",
        "OBJECT_STORAGE_ACCESS_KEY_ID",
        "OBJECT_STORAGE_SECRET_KEY",
    ] {
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_env().is_some_and(|e| e == var));
        let Some(arg) = arg else {
            panic!("no argument reads {var}")
        };
        assert!(
            arg.is_hide_env_values_set(),
            "{var} shows its value in --help"
        );
    }
}
