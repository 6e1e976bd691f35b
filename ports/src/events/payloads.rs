//! Event payloads. Keys are snake_case (unlike the camelCase REST surface). Timestamps are
//! RFC 3339 UTC with millisecond precision.
use chrono::{DateTime, SecondsFormat, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, Serializer};

/// Serializes a timestamp as RFC 3339 with milliseconds and `Z`.
pub fn rfc3339<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// Same as [`rfc3339`] for an optional timestamp.
pub fn rfc3339_opt<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => rfc3339(t, s),
        None => s.serialize_none(),
    }
}

/// `template.created` and `template.updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplateChanged {
    /// Template id.
    pub template_id: String,
    /// html | pdf | csv | xml | txt.
    pub output_format: String,
    /// The description the user wrote.
    pub description: String,
    /// `<id>.tpl`.
    pub file_name: String,
    /// Creation instant.
    #[serde(serialize_with = "rfc3339")]
    pub created_at: DateTime<Utc>,
    /// Last change instant.
    #[serde(serialize_with = "rfc3339")]
    pub updated_at: DateTime<Utc>,
}

/// `template.deleted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplateDeleted {
    /// Template id.
    pub template_id: String,
    /// html | pdf | csv | xml | txt.
    pub output_format: String,
    /// Soft-delete instant.
    #[serde(serialize_with = "rfc3339")]
    pub deleted_at: DateTime<Utc>,
    /// How many live deadlines of the template were soft-deleted with it.
    pub cascaded_deadline_count: u64,
}

/// `deadline.created` and `deadline.updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeadlineChanged {
    /// Deadline id.
    pub deadline_id: String,
    /// The name the user wrote.
    pub name: String,
    /// regulatory | custom.
    #[serde(rename = "type")]
    pub kind: String,
    /// Linked template, if any.
    pub template_id: Option<String>,
    /// Due instant of the current occurrence.
    #[serde(serialize_with = "rfc3339")]
    pub due_date: DateTime<Utc>,
    /// once | daily | weekly | monthly | semiannual | annual.
    pub frequency: String,
    /// Months for semiannual / annual.
    pub months_of_year: Vec<u32>,
    /// Whether the deadline is active.
    pub active: bool,
    /// Notification lead time in days.
    pub notify_days_before: u32,
    /// `#RRGGBB`.
    pub color: String,
    /// pending | overdue | delivered, at emission.
    pub status: String,
    /// Creation instant.
    #[serde(serialize_with = "rfc3339")]
    pub created_at: DateTime<Utc>,
    /// Last change instant.
    #[serde(serialize_with = "rfc3339")]
    pub updated_at: DateTime<Utc>,
}

/// `deadline.deleted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeadlineDeleted {
    /// Deadline id.
    pub deadline_id: String,
    /// Linked template, if any.
    pub template_id: Option<String>,
    /// Soft-delete instant.
    #[serde(serialize_with = "rfc3339")]
    pub deleted_at: DateTime<Utc>,
    /// True when the deadline was deleted because its template was.
    pub cascaded: bool,
}

/// `deadline.delivered`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeadlineDelivered {
    /// Deadline id.
    pub deadline_id: String,
    /// Linked template, if any.
    pub template_id: Option<String>,
    /// Due instant of the delivered occurrence.
    #[serde(serialize_with = "rfc3339")]
    pub due_date: DateTime<Utc>,
    /// Delivery instant.
    #[serde(serialize_with = "rfc3339")]
    pub delivered_at: DateTime<Utc>,
    /// Always `delivered`.
    pub status: String,
}

/// `deadline.delivery_reverted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeadlineDeliveryReverted {
    /// Deadline id.
    pub deadline_id: String,
    /// Linked template, if any.
    pub template_id: Option<String>,
    /// Due instant of the occurrence whose delivery was cleared.
    #[serde(serialize_with = "rfc3339")]
    pub due_date: DateTime<Utc>,
    /// When the delivery mark was cleared.
    #[serde(serialize_with = "rfc3339")]
    pub reverted_at: DateTime<Utc>,
    /// pending | overdue after the revert.
    pub status: String,
}

/// `report.requested`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportRequested {
    /// Report id.
    pub report_id: String,
    /// Template id.
    pub template_id: String,
    /// Output format.
    pub output_format: String,
    /// Always `Processing`.
    pub status: String,
    /// Creation instant.
    #[serde(serialize_with = "rfc3339")]
    pub created_at: DateTime<Utc>,
}

/// One failed section of a partial report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SectionFailure {
    /// The section: the data source id.
    pub section: String,
    /// Stable code of the failure (e.g. `data_source_unavailable`).
    pub error_code: String,
}

/// `report.finished`: exactly the fields of the seed's example.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportFinished {
    /// Report id.
    pub report_id: String,
    /// Template id.
    pub template_id: String,
    /// Output format.
    pub output_format: String,
    /// Always `Finished`.
    pub status: String,
    /// The exact object key storage reported after the write. Never empty.
    pub artifact_object_key: String,
    /// Content type of the artifact.
    pub artifact_content_type: String,
    /// Completion instant.
    #[serde(serialize_with = "rfc3339")]
    pub completed_at: DateTime<Utc>,
    /// Generation time in milliseconds.
    pub duration_ms: u64,
    /// Number of sections (data sources) rendered.
    pub section_count: u64,
}

/// `report.partial`: the finished fields plus the failed sections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportPartial {
    /// Report id.
    pub report_id: String,
    /// Template id.
    pub template_id: String,
    /// Output format.
    pub output_format: String,
    /// Always `Partial`.
    pub status: String,
    /// The exact object key storage reported after the write. Never empty.
    pub artifact_object_key: String,
    /// Content type of the artifact.
    pub artifact_content_type: String,
    /// Completion instant.
    #[serde(serialize_with = "rfc3339")]
    pub completed_at: DateTime<Utc>,
    /// Generation time in milliseconds.
    pub duration_ms: u64,
    /// Number of sections.
    pub section_count: u64,
    /// The sections that failed.
    pub section_failures: Vec<SectionFailure>,
    /// `section_failures.len()`.
    pub failed_section_count: u64,
}

/// `report.errored`: the fields of `report.finished` with the artifact fields
/// (`artifact_object_key`, `artifact_content_type`) replaced by `error_code` and
/// `error_summary`, both from a fixed vocabulary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportErrored {
    /// Report id.
    pub report_id: String,
    /// Template id.
    pub template_id: String,
    /// Output format.
    pub output_format: String,
    /// Always `Error` (the original's status name).
    pub status: String,
    /// Completion instant.
    #[serde(serialize_with = "rfc3339")]
    pub completed_at: DateTime<Utc>,
    /// Time until the error, in milliseconds.
    pub duration_ms: u64,
    /// Number of sections (data sources) attempted before the error; 0 when it happened
    /// before extraction (queueing, template file, timeout before any section ended).
    pub section_count: u64,
    /// report_generation_failed | report_generation_timeout | report_generation_canceled (the
    /// event contract's fixed vocabulary).
    pub error_code: String,
    /// The fixed summary of `error_code`.
    pub error_summary: String,
}
