//! The Console's settings: `CONSOLE_ENABLED`.
use super::Checker;
use clap::Args;

/// Raw Console settings.
#[derive(Debug, Clone, Args)]
pub struct ConsoleRaw {
    /// Serve the Reporter Console (web UI) at /console on every role that serves the API.
    #[arg(long, env = "CONSOLE_ENABLED", default_value = "true")]
    pub console_enabled: String,
}

impl ConsoleRaw {
    /// Whether the Console is served (a boolean, else a problem).
    pub(super) fn enabled(&self, c: &mut Checker) -> bool {
        c.boolean("CONSOLE_ENABLED", &self.console_enabled)
    }
}
