use crate::deadline::{Deadline, DeadlineStatus, DeadlineType};
use crate::error::StoreError;
use crate::ids::{DeadlineId, ReportId, TemplateId};
use crate::page::{Page, PageRequest};
use crate::report::{Report, ReportStatus};
use crate::template::{OutputFormat, Template};
use crate::tenant::TenantId;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// Filters of the template list. All present filters must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateQuery {
    /// Exact output format.
    pub output_format: Option<OutputFormat>,
    /// Case-insensitive substring of the description (plain text, never a pattern).
    pub description_contains: Option<String>,
    /// `created_at >= from`.
    pub created_from: Option<DateTime<Utc>>,
    /// `created_at < to`.
    pub created_to: Option<DateTime<Utc>>,
}

impl TemplateQuery {
    /// True when the template matches every filter. Adapters that filter in memory use this.
    pub fn matches(&self, t: &Template) -> bool {
        self.output_format.is_none_or(|f| t.output_format == f)
            && self
                .description_contains
                .as_ref()
                .is_none_or(|s| t.description.to_lowercase().contains(&s.to_lowercase()))
            && self.created_from.is_none_or(|f| t.created_at >= f)
            && self.created_to.is_none_or(|to| t.created_at < to)
    }
}

/// Reads of templates. Writes go through [`super::UnitOfWorkPort`].
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait TemplateRepository: Send + Sync {
    /// The template with this id in this tenant. MUST answer `Ok(None)` for a missing id and for
    /// another tenant's id alike; soft-deleted templates only when `include_deleted`.
    async fn get(
        &self,
        tenant: &TenantId,
        id: TemplateId,
        include_deleted: bool,
    ) -> Result<Option<Template>, StoreError>;
    /// [`Self::get`]'s answer, shared: the same contract, for a reader that only reads the
    /// record. An adapter that keeps its records in memory behind an `Arc` answers without
    /// copying the record; the default wraps [`Self::get`]'s.
    async fn get_shared(
        &self,
        tenant: &TenantId,
        id: TemplateId,
        include_deleted: bool,
    ) -> Result<Option<Arc<Template>>, StoreError> {
        Ok(self.get(tenant, id, include_deleted).await?.map(Arc::new))
    }
    /// Live templates matching `query`, ordered by `created_at` then id in `page.sort`
    /// direction; `total` counts every match.
    async fn list(
        &self,
        tenant: &TenantId,
        query: &TemplateQuery,
        page: PageRequest,
    ) -> Result<Page<Template>, StoreError>;
    /// Number of live templates.
    async fn count(&self, tenant: &TenantId) -> Result<u64, StoreError>;
}

/// Filters of the deadline list, evaluated on the view at `now` ([`Deadline::view`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeadlineQuery {
    /// Derived status.
    pub status: Option<DeadlineStatus>,
    /// Active flag.
    pub active: Option<bool>,
    /// Type.
    pub kind: Option<DeadlineType>,
    /// Effective due date `>= from`.
    pub due_from: Option<DateTime<Utc>>,
    /// Effective due date `<= to`.
    pub due_to: Option<DateTime<Utc>>,
}

impl DeadlineQuery {
    /// True when the deadline matches every filter at `now`.
    pub fn matches(&self, d: &Deadline, now: DateTime<Utc>) -> bool {
        let v = d.view(now);
        self.status.is_none_or(|s| v.status == s)
            && self.active.is_none_or(|a| d.active == a)
            && self.kind.is_none_or(|k| d.kind == k)
            && self.due_from.is_none_or(|f| v.due_date >= f)
            && self.due_to.is_none_or(|t| v.due_date <= t)
    }
}

/// Reads of deadlines.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait DeadlineRepository: Send + Sync {
    /// Same contract as [`TemplateRepository::get`].
    async fn get(
        &self,
        tenant: &TenantId,
        id: DeadlineId,
        include_deleted: bool,
    ) -> Result<Option<Deadline>, StoreError>;
    /// Live deadlines matching `query` at `now`, ordered by `created_at` then id.
    async fn list(
        &self,
        tenant: &TenantId,
        query: &DeadlineQuery,
        page: PageRequest,
        now: DateTime<Utc>,
    ) -> Result<Page<Deadline>, StoreError>;
    /// Every live deadline linked to the template.
    async fn list_by_template(
        &self,
        tenant: &TenantId,
        template_id: TemplateId,
    ) -> Result<Vec<Deadline>, StoreError>;
    /// Live, active deadlines that are not delivered at `now`, at most `cap`, ordered by
    /// effective due date.
    async fn list_undelivered_active(
        &self,
        tenant: &TenantId,
        now: DateTime<Utc>,
        cap: usize,
    ) -> Result<Vec<Deadline>, StoreError>;
}

/// Filters of the report list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportQuery {
    /// Status.
    pub status: Option<ReportStatus>,
    /// Template.
    pub template_id: Option<TemplateId>,
    /// The template's output format, as copied to the report at creation.
    pub output_format: Option<OutputFormat>,
    /// Case-insensitive substring of the template description copied to the report at
    /// creation (plain text, never a pattern).
    pub description_contains: Option<String>,
    /// `created_at >= from`.
    pub created_from: Option<DateTime<Utc>>,
    /// `created_at < to`.
    pub created_to: Option<DateTime<Utc>>,
}

impl ReportQuery {
    /// True when the report matches every filter.
    pub fn matches(&self, r: &Report) -> bool {
        self.status.is_none_or(|s| r.status == s)
            && self.template_id.is_none_or(|t| r.template_id == t)
            && self.output_format.is_none_or(|f| r.output_format == f)
            && self.description_contains.as_ref().is_none_or(|s| {
                r.template_description
                    .to_lowercase()
                    .contains(&s.to_lowercase())
            })
            && self.created_from.is_none_or(|f| r.created_at >= f)
            && self.created_to.is_none_or(|t| r.created_at < t)
    }
}

/// Reads of reports.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait ReportRepository: Send + Sync {
    /// Same contract as [`TemplateRepository::get`] (reports are never deleted).
    async fn get(&self, tenant: &TenantId, id: ReportId) -> Result<Option<Report>, StoreError>;
    /// Reports matching `query`, ordered by `created_at` then id.
    async fn list(
        &self,
        tenant: &TenantId,
        query: &ReportQuery,
        page: PageRequest,
    ) -> Result<Page<Report>, StoreError>;
    /// Number of reports matching `query`.
    async fn count(&self, tenant: &TenantId, query: &ReportQuery) -> Result<u64, StoreError>;
    /// Reports of every tenant still `Processing` whose last change (`updated_at`) is before
    /// `before`, least recently changed first, at most `limit`: the reconciliation sweep's
    /// query (a job lost between commit and enqueue, or dead-lettered during an outage).
    ///
    /// MUST NOT return a report in a terminal state, nor one changed at or after `before`.
    async fn list_stale_processing(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Report>, StoreError>;
}
