//! Reports: one generation of a template over the data sources, with its status machine.
use crate::ids::{ReportId, TemplateId};
use crate::ports::RenderFailure;
use crate::template::OutputFormat;
use crate::tenant::TenantId;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Report status, spelled as the original Reporter spells it. `Processing` is the only
/// non-terminal state.
///
/// ```text
/// Processing ──► Finished | Partial | Error     (terminal: no transition out)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReportStatus {
    /// Queued or being generated.
    Processing,
    /// Every section succeeded and the artifact is stored.
    Finished,
    /// Some sections failed; an artifact rendered from the others is stored.
    Partial,
    /// The report ended in error; no artifact is named. (Earlier builds of this service
    /// stored it as `Errored`; [`ReportStatus::parse_stored`] and serde still read that.)
    #[serde(alias = "Errored")]
    Error,
}

/// How earlier builds of this service stored [`ReportStatus::Error`].
pub const LEGACY_ERROR_NAME: &str = "Errored";

/// An attempted transition out of a terminal state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("report status {from:?} is terminal; cannot move to {to:?}")]
pub struct InvalidTransition {
    /// Current status.
    pub from: ReportStatus,
    /// Requested status.
    pub to: ReportStatus,
}

impl ReportStatus {
    /// Every status, in API order.
    pub const ALL: [ReportStatus; 4] =
        [Self::Processing, Self::Finished, Self::Partial, Self::Error];

    /// Parses the status name exactly as the API spells it (`Processing`, `Finished`,
    /// `Partial`, `Error`).
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }

    /// Parses a status read back from storage: the API names, plus the spelling `Errored`
    /// that earlier versions wrote for [`ReportStatus::Error`].
    pub fn parse_stored(raw: &str) -> Option<Self> {
        Self::parse(raw).or_else(|| (raw == LEGACY_ERROR_NAME).then_some(Self::Error))
    }

    /// Every stored spelling of this status (what a storage filter must match): the API
    /// name, and for `Error` also the legacy `Errored`.
    pub fn stored_names(&self) -> &'static [&'static str] {
        match self {
            Self::Processing => &["Processing"],
            Self::Finished => &["Finished"],
            Self::Partial => &["Partial"],
            Self::Error => &["Error", LEGACY_ERROR_NAME],
        }
    }
    /// The API name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Processing => "Processing",
            Self::Finished => "Finished",
            Self::Partial => "Partial",
            Self::Error => "Error",
        }
    }
    /// True for Finished, Partial and Error.
    pub fn is_terminal(&self) -> bool {
        !matches!(self, Self::Processing)
    }
    /// Validates a transition. MUST refuse any move out of a terminal state.
    pub fn transition(self, to: ReportStatus) -> Result<ReportStatus, InvalidTransition> {
        match (self, to) {
            (Self::Processing, t) if t.is_terminal() => Ok(t),
            (from, to) => Err(InvalidTransition { from, to }),
        }
    }
}

/// The fixed error vocabulary of report failures. Raw error text never leaves the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportErrorCode {
    /// Generation failed.
    ReportGenerationFailed,
    /// Generation exceeded its time limit.
    ReportGenerationTimeout,
    /// Generation was canceled (e.g. shutdown).
    ReportGenerationCanceled,
}

impl ReportErrorCode {
    /// The code as it appears on the wire.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::ReportGenerationFailed => "report_generation_failed",
            Self::ReportGenerationTimeout => "report_generation_timeout",
            Self::ReportGenerationCanceled => "report_generation_canceled",
        }
    }
    /// The fixed summary of the code.
    pub fn summary(&self) -> &'static str {
        match self {
            Self::ReportGenerationFailed => "Report generation failed",
            Self::ReportGenerationTimeout => "Report generation timed out",
            Self::ReportGenerationCanceled => "Report generation was canceled",
        }
    }
}

/// `metadata.error` of a `Partial` report (the original's wording).
pub const PARTIAL_SUMMARY: &str = "Some report data sections failed";
/// `metadata.error_code` of a `Partial` report. The original put a numeric code here; ours
/// is a word from the same fixed vocabulary style as [`ReportErrorCode`].
pub const PARTIAL_ERROR_CODE: &str = "report_sections_failed";

/// One filter condition on a field. Each operator takes an array of scalars; `between` exactly two.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FilterCondition {
    /// Equal to any of the values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub eq: Vec<serde_json::Value>,
    /// Greater than (the first value).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gt: Vec<serde_json::Value>,
    /// Greater than or equal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gte: Vec<serde_json::Value>,
    /// Less than.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lt: Vec<serde_json::Value>,
    /// Less than or equal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lte: Vec<serde_json::Value>,
    /// Inclusive range `[low, high]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub between: Vec<serde_json::Value>,
    /// Member of the values.
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "in")]
    pub in_: Vec<serde_json::Value>,
    /// Not a member of the values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nin: Vec<serde_json::Value>,
}

impl FilterCondition {
    /// Every operator with its values, in a fixed order, named as on the wire (`in`, not `in_`).
    pub fn operators(&self) -> [(&'static str, &Vec<serde_json::Value>); 8] {
        [
            ("eq", &self.eq),
            ("gt", &self.gt),
            ("gte", &self.gte),
            ("lt", &self.lt),
            ("lte", &self.lte),
            ("between", &self.between),
            ("in", &self.in_),
            ("nin", &self.nin),
        ]
    }
}

/// Report filters: data source → table → field → condition.
pub type ReportFilters = BTreeMap<String, BTreeMap<String, BTreeMap<String, FilterCondition>>>;

/// Outcome of one section (one data source) of a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionOutcome {
    /// True when the section's data was extracted.
    pub ok: bool,
    /// Stable code of the failure, when not ok.
    pub error_code: Option<String>,
}

/// A stored report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Server-generated id.
    pub id: ReportId,
    /// Owning tenant.
    pub tenant: TenantId,
    /// The template it renders.
    pub template_id: TemplateId,
    /// Template output format, copied at creation.
    pub output_format: OutputFormat,
    /// Template description, copied at creation.
    pub template_description: String,
    /// The filters requested.
    pub filters: ReportFilters,
    /// Current status.
    pub status: ReportStatus,
    /// Per-section outcome, by data source id.
    pub sections: BTreeMap<String, SectionOutcome>,
    /// Error code when `Error` (never set for the other statuses).
    pub error_code: Option<ReportErrorCode>,
    /// When the report is `Error` because its render failed: the cause and the template
    /// line (`metadata.renderError`). Never data values, and never in events (their error
    /// fields stay the fixed `error_code` / `error_summary`).
    #[serde(default)]
    pub render_failure: Option<RenderFailure>,
    /// Object key of the artifact, exactly as storage reported it.
    pub artifact_key: Option<String>,
    /// Artifact size in bytes.
    pub artifact_size: Option<u64>,
    /// When the report reached a terminal status.
    pub completed_at: Option<DateTime<Utc>>,
    /// Optimistic-concurrency version.
    pub version: u64,
    /// Creation instant.
    pub created_at: DateTime<Utc>,
    /// Last change instant.
    pub updated_at: DateTime<Utc>,
}

impl Report {
    /// The original's `metadata.error` and `metadata.error_code`: for `Error` the fixed
    /// summary and code of [`ReportErrorCode`] (the same pair `report.errored` carries), for
    /// `Partial` [`PARTIAL_SUMMARY`] / [`PARTIAL_ERROR_CODE`], else nothing. Never raw text.
    pub fn failure(&self) -> Option<(&'static str, &'static str)> {
        match self.status {
            ReportStatus::Error => {
                let code = self
                    .error_code
                    .unwrap_or(ReportErrorCode::ReportGenerationFailed);
                Some((code.summary(), code.as_str()))
            }
            ReportStatus::Partial => Some((PARTIAL_SUMMARY, PARTIAL_ERROR_CODE)),
            ReportStatus::Processing | ReportStatus::Finished => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_are_the_original_s_and_the_legacy_spelling_is_still_read() {
        let names: Vec<&str> = ReportStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, ["Processing", "Finished", "Partial", "Error"]);
        for s in ReportStatus::ALL {
            assert_eq!(ReportStatus::parse(s.as_str()), Some(s));
            assert_eq!(ReportStatus::parse_stored(s.as_str()), Some(s));
            assert_eq!(s.stored_names()[0], s.as_str());
        }
        assert_eq!(
            ReportStatus::parse("Errored"),
            None,
            "the API takes only Error"
        );
        assert_eq!(
            ReportStatus::parse_stored("Errored"),
            Some(ReportStatus::Error)
        );
        assert_eq!(ReportStatus::Error.stored_names(), ["Error", "Errored"]);
        let old: ReportStatus = serde_json::from_str("\"Errored\"").unwrap();
        assert_eq!(old, ReportStatus::Error);
        assert_eq!(
            serde_json::to_string(&ReportStatus::Error).unwrap(),
            "\"Error\""
        );
    }

    #[test]
    fn terminal_states_are_final() {
        use ReportStatus::*;
        for t in [Finished, Partial, Error] {
            assert_eq!(Processing.transition(t), Ok(t));
            for to in [Processing, Finished, Partial, Error] {
                assert!(t.transition(to).is_err());
            }
        }
        assert!(Processing.transition(Processing).is_err());
    }
}
