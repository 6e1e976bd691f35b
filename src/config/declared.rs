//! Each variable as its declaration gives it, read back from clap's `Command`.
//!
//! The `#[arg(long, env = "…", default_value = "…")]` attribute and its doc comment are the
//! one place a variable's name, default and meaning are written. [`RawConfig::defaults`],
//! the checker's fallbacks ([`super::Checker::int`], [`super::Checker::boolean`]) and the
//! configuration reference (`reporter config reference`) MUST be derived from here, never
//! written again.
use super::RawConfig;
use clap::{Args, Command, FromArgMatches};
use std::sync::LazyLock;

/// One variable as clap declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The environment variable.
    pub env: String,
    /// The flag (`--server-address`).
    pub long: String,
    /// The default clap applies when the variable is unset; `None`: no default (unset).
    pub default: Option<String>,
    /// The doc comment, as `--help` shows it.
    pub help: String,
    /// Its value is a secret (`hide_env_values`: never shown by `--help`).
    pub secret: bool,
}

/// Every variable `RawConfig` reads, in declaration order (the order of `reporter --help`).
static DECLARED: LazyLock<Vec<Declared>> = LazyLock::new(|| {
    RawConfig::augment_args(Command::new("reporter"))
        .get_arguments()
        .filter_map(|arg| {
            let env = arg.get_env()?.to_string_lossy().into_owned();
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

/// The default clap applies to `env` (`None`: unset, or not declared).
pub fn default_of(env: &str) -> Option<&'static str> {
    variable(env)?.default.as_deref()
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
