//! Connection settings the SQL sources share: the checks of their common fields, URL
//! decoding, and the password's redaction (the password itself is a
//! [`reporter_ports::Secret`], which never prints).
use reporter_ports::Secret;
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::DataSourceError;
use std::time::Duration;

/// The settings every SQL source relies on, checked in this order: a non-empty `database`,
/// a non-empty list of non-empty `schemas`, a pool of at least one connection, positive
/// `timeouts`. Fails with `Unavailable("<id>: <what is wrong>")`.
pub fn check_common(
    id: &DataSourceId,
    database: &str,
    schemas: &[String],
    pool_size: usize,
    timeouts: &[Duration],
) -> Result<(), DataSourceError> {
    let why = if database.is_empty() {
        "database must not be empty"
    } else if schemas.is_empty() || schemas.iter().any(String::is_empty) {
        "schemas must be a non-empty list of non-empty names"
    } else if pool_size == 0 {
        "pool size must be at least 1"
    } else if timeouts.iter().any(Duration::is_zero) {
        "timeouts must be positive"
    } else {
        return Ok(());
    };
    Err(refused(id, why))
}

/// `Unavailable("<id>: <why>")`: how a source refuses its settings.
pub fn refused(id: &DataSourceId, why: impl std::fmt::Display) -> DataSourceError {
    DataSourceError::Unavailable(format!("{id}: {why}"))
}

/// What a settings `Debug` shows for a password: whether there is one, never its value.
pub fn redacted(password: Option<&Secret>) -> Option<&'static str> {
    password.map(|_| "<redacted>")
}

/// A URL part with `%XX` escapes decoded (an invalid escape stays as it is; invalid UTF-8 is
/// replaced).
pub fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// A query-string value: `+` is a space, then `%XX` escapes are decoded.
pub fn form_decode(s: &str) -> String {
    percent_decode(&s.replace('+', " "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_checks_name_the_first_problem() {
        let id = DataSourceId::parse("sql").expect("id");
        let schemas = vec!["public".to_owned()];
        let ok = [Duration::from_secs(1)];
        assert!(check_common(&id, "db", &schemas, 1, &ok).is_ok());
        let problem = |r: Result<(), DataSourceError>| match r {
            Err(DataSourceError::Unavailable(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            problem(check_common(&id, "", &[], 0, &[])),
            "sql: database must not be empty"
        );
        assert!(problem(check_common(&id, "db", &[String::new()], 1, &ok)).contains("schemas"));
        assert!(problem(check_common(&id, "db", &schemas, 0, &ok)).contains("pool size"));
        let zero = [Duration::from_secs(1), Duration::ZERO];
        assert!(problem(check_common(&id, "db", &schemas, 1, &zero)).contains("timeouts"));
    }

    #[test]
    fn url_parts_decode() {
        assert_eq!(percent_decode("s%40cret%2"), "s@cret%2");
        assert_eq!(percent_decode("a+b%2B"), "a+b+");
        assert_eq!(form_decode("a+b%2B%2Fc"), "a b+/c");
        assert_eq!(
            redacted(Some(&Secret::new("x".to_owned()))),
            Some("<redacted>")
        );
        assert_eq!(redacted(None), None);
    }
}
