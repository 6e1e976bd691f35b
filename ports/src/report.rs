//! Reports: one generation of a template over the data sources, with its status machine.
use crate::ids::{ReportId, TemplateId};
use crate::template::OutputFormat;
use crate::tenant::TenantId;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Report status. `Processing` is the only non-terminal state.
///
/// ```text
/// Processing ──► Finished | Partial | Errored     (terminal: no transition out)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReportStatus {
    /// Queued or being generated.
    Processing,
    /// Every section succeeded and the artifact is stored.
    Finished,
    /// Some sections failed; an artifact rendered from the others is stored.
    Partial,
    /// The report ended in error; no artifact is named.
    Errored,
}

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
    /// Parses the status name exactly as the API spells it.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "Processing" => Some(Self::Processing),
            "Finished" => Some(Self::Finished),
            "Partial" => Some(Self::Partial),
            "Errored" => Some(Self::Errored),
            _ => None,
        }
    }
    /// The API name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Processing => "Processing",
            Self::Finished => "Finished",
            Self::Partial => "Partial",
            Self::Errored => "Errored",
        }
    }
    /// True for Finished, Partial and Errored.
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
    /// Error code when Errored (or the failure class when Partial).
    pub error_code: Option<ReportErrorCode>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_states_are_final() {
        use ReportStatus::*;
        for t in [Finished, Partial, Errored] {
            assert_eq!(Processing.transition(t), Ok(t));
            for to in [Processing, Finished, Partial, Errored] {
                assert!(t.transition(to).is_err());
            }
        }
        assert!(Processing.transition(Processing).is_err());
    }
}
