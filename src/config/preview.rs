//! The template preview's bounds: `PREVIEW_TIMEOUT_SECONDS`, `PREVIEW_MAX_OUTPUT_BYTES`.
use super::{Checker, RawConfig};
use crate::app::PreviewSettings;
use std::time::Duration;

impl RawConfig {
    /// The preview section.
    pub(super) fn preview(&self, c: &mut Checker) -> PreviewSettings {
        let timeout = c.int::<u64>("PREVIEW_TIMEOUT_SECONDS", &self.preview_timeout_seconds);
        let max_output_bytes =
            c.int::<usize>("PREVIEW_MAX_OUTPUT_BYTES", &self.preview_max_output_bytes);
        PreviewSettings {
            timeout: Duration::from_secs(timeout),
            max_output_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::RawConfig;
    use std::time::Duration;

    #[test]
    fn the_preview_bounds_are_read_and_out_of_range_values_named() {
        let config = RawConfig::defaults()
            .validate(&[])
            .expect("defaults are valid");
        assert_eq!(config.preview.timeout, Duration::from_secs(10));
        assert_eq!(config.preview.max_output_bytes, 1024 * 1024);
        let mut raw = RawConfig::defaults();
        raw.preview_timeout_seconds = "0".into();
        raw.preview_max_output_bytes = "ten".into();
        let problems = raw.validate(&[]).expect_err("refused").to_string();
        for var in ["PREVIEW_TIMEOUT_SECONDS", "PREVIEW_MAX_OUTPUT_BYTES"] {
            assert!(problems.contains(var), "{var} in {problems}");
        }
    }
}
