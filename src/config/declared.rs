//! Each variable as its declaration gives it, read back from clap's `Command`.
//!
//! The `#[arg(long, env = "…", default_value = "…")]` attribute and its doc comment are the
//! one place a variable's name, default and meaning are written. [`RawConfig::defaults`],
//! the checker's fallbacks ([`super::Checker::int`], [`super::Checker::boolean`]) and the
//! configuration reference (`reporter config reference`) MUST be derived from here, never
//! written again.
//!
//! A few variables have no clap default because being set at all changes something (a
//! `MONGO_PORT` beside a complete `MONGO_URI` is refused, `RATE_LIMIT_GLOBAL` wins over
//! `RATE_LIMIT_MAX`, …): a clap default would make "unset" and "set to the default" the same.
//! Their value while unset is a typed [`WhenUnset`] constant declared beside the field; its
//! help text, the checker's fallback and the reference's Default cell read it from there.
use super::RawConfig;
use clap::{Args, Command, FromArgMatches};
use std::fmt::Display;
use std::sync::LazyLock;

/// The value variable `env` stands for while it is unset (or blank), for a variable that has
/// no clap default on purpose (see the module's documentation). Declared once, as a constant
/// beside the field; MUST be listed in [`when_unset_values`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WhenUnset<T> {
    /// The environment variable.
    pub env: &'static str,
    /// Its value while unset.
    pub value: T,
}

impl<T: Display + Copy> WhenUnset<T> {
    /// `value` when `raw` is unset or blank, else what `read` makes of the trimmed text.
    pub fn or_read(&self, raw: &Option<String>, read: impl FnOnce(&str) -> T) -> T {
        match raw.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            Some(v) => read(v),
            None => self.value,
        }
    }

    /// The help text `text` with `{default}` replaced by the value: the one place the help
    /// names it.
    pub fn help(&self, text: &str) -> String {
        text.replace("{default}", &self.value.to_string())
    }

    /// `(env, value as text)`.
    fn row(&self) -> (&'static str, String) {
        (self.env, self.value.to_string())
    }
}

/// Every [`WhenUnset`] constant, as text: `(env, value)`.
pub fn when_unset_values() -> [(&'static str, String); 5] {
    [
        super::mongo::MONGO_PORT.row(),
        super::rate_limit::RATE_LIMIT_GLOBAL.row(),
        super::rate_limit::RATE_LIMIT_WINDOW_SECONDS.row(),
        super::rate_limit::REDIS_PORT.row(),
        super::original_names::SWAGGER_ENABLED.row(),
    ]
}

/// One variable as clap declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The environment variable.
    pub env: String,
    /// The flag (`--server-address`).
    pub long: String,
    /// The default clap applies when the variable is unset; `None`: no default (unset).
    pub default: Option<String>,
    /// Its [`WhenUnset`] value, for a variable without a clap default that stands for one.
    pub when_unset: Option<String>,
    /// The doc comment, as `--help` shows it.
    pub help: String,
    /// Its value is a secret (`hide_env_values`: never shown by `--help`).
    pub secret: bool,
}

/// Every variable `RawConfig` reads, in declaration order (the order of `reporter --help`).
static DECLARED: LazyLock<Vec<Declared>> = LazyLock::new(|| {
    let unset = when_unset_values();
    RawConfig::augment_args(Command::new("reporter"))
        .get_arguments()
        .filter_map(|arg| {
            let env = arg.get_env()?.to_string_lossy().into_owned();
            let when_unset = unset
                .iter()
                .find(|(e, _)| *e == env)
                .map(|(_, v)| v.clone());
            let help = arg
                .get_long_help()
                .or(arg.get_help())
                .map(ToString::to_string)
                .unwrap_or_default();
            Some(Declared {
                env,
                long: arg.get_long().unwrap_or_default().to_owned(),
                default: arg
                    .get_default_values()
                    .first()
                    .map(|d| d.to_string_lossy().into_owned()),
                when_unset,
                help,
                secret: arg.is_hide_env_values_set(),
            })
        })
        .collect()
});

/// Every declared variable.
pub fn variables() -> &'static [Declared] {
    &DECLARED
}

/// The declaration of `env`, if `RawConfig` reads it.
pub fn variable(env: &str) -> Option<&'static Declared> {
    DECLARED.iter().find(|d| d.env == env)
}

impl Declared {
    /// The value the variable stands for when unset: clap's default, else its [`WhenUnset`].
    pub fn effective_default(&self) -> Option<&str> {
        self.default.as_deref().or(self.when_unset.as_deref())
    }
}

/// The value `env` stands for when unset: clap's default, else its [`WhenUnset`] (`None`:
/// unset, or not declared).
pub fn default_of(env: &str) -> Option<&'static str> {
    variable(env)?.effective_default()
}

/// `T` as clap builds it from no flag and no environment: every declared default.
///
/// Clap cannot fail here (no argument is required and every field is text), so an error is
/// a broken declaration: it is reported and the process exits as for a bad flag.
pub(super) fn defaults_of<T: Args + FromArgMatches>() -> T {
    T::augment_args(Command::new("reporter"))
        .mut_args(|arg| arg.env(None::<&str>))
        .try_get_matches_from(["reporter"])
        .and_then(|m| T::from_arg_matches(&m))
        .unwrap_or_else(|e| e.exit())
}
