//! [`MemoryStore`]: the record repositories, the unit of work and the outbox in one map, under
//! one lock.
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use reporter_ports::deadline::{Deadline, DeadlineStatus, uniqueness_key};
use reporter_ports::ids::OutboxId;
use reporter_ports::page::{Page, PageRequest, SortOrder};
use reporter_ports::ports::{
    Change, DeadlineQuery, DeadlineRepository, OutboxRecord, OutboxStatus, ReportQuery,
    ReportRepository, TemplateQuery, TemplateRepository, UnitOfWork, UnitOfWorkPort,
};
use reporter_ports::report::{Report, ReportStatus};
use reporter_ports::template::Template;
use reporter_ports::{DeadlineId, ReportId, StoreError, TemplateId, TenantId};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

/// The rule named by `StoreError::Duplicate` when two live deadlines of a tenant would share
/// (type, template, due date, frequency) ([`reporter_ports::deadline::uniqueness_key`]).
pub const DEADLINE_UNIQUENESS_RULE: &str = "deadline_type_template_due_date_frequency";

/// The records of one tenant. Keying by tenant first makes isolation structural: a lookup in
/// the wrong tenant cannot see another tenant's record. Templates are kept behind an `Arc`, so
/// a read (`get_shared`: every `GET /v1/templates/{id}`) copies no record.
#[derive(Default)]
pub(crate) struct TenantState {
    pub(crate) templates: HashMap<TemplateId, Arc<Template>>,
    pub(crate) deadlines: HashMap<DeadlineId, Deadline>,
    pub(crate) reports: HashMap<ReportId, Report>,
}

/// How many published outbox rows [`MemoryStore::new`] keeps at most (the oldest go first).
pub const DEFAULT_MAX_PUBLISHED: usize = 10_000;

/// Outbox rows in commit order. `seq` is the insertion sequence, which is the per-aggregate
/// commit order the dispatcher must respect.
///
/// Besides the rows, three indexes keep every operation's cost independent of how many
/// published rows are retained: the pending rows in commit order (what a claim walks), the
/// parked rows (what a redrive walks), and the published rows in publish order (what
/// retention trims, by age and by count).
pub(crate) struct OutboxState {
    pub(crate) next_seq: u64,
    pub(crate) rows: BTreeMap<u64, OutboxRecord>,
    pub(crate) index: HashMap<OutboxId, u64>,
    pub(crate) pending: BTreeSet<u64>,
    pub(crate) parked: BTreeSet<u64>,
    pub(crate) published: VecDeque<u64>,
    pub(crate) max_published: usize,
}

impl Default for OutboxState {
    fn default() -> Self {
        Self {
            next_seq: 0,
            rows: BTreeMap::new(),
            index: HashMap::new(),
            pending: BTreeSet::new(),
            parked: BTreeSet::new(),
            published: VecDeque::new(),
            max_published: DEFAULT_MAX_PUBLISHED,
        }
    }
}

impl OutboxState {
    pub(crate) fn seq_of(&self, id: OutboxId) -> Option<u64> {
        self.index.get(&id).copied()
    }

    pub(crate) fn row_mut(&mut self, id: OutboxId) -> Option<&mut OutboxRecord> {
        let seq = self.index.get(&id)?;
        self.rows.get_mut(seq)
    }

    /// Appends a committed row (pending, or whatever status it carries).
    pub(crate) fn insert(&mut self, row: OutboxRecord) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.index.insert(row.id, seq);
        match row.status {
            OutboxStatus::Pending => {
                self.pending.insert(seq);
            }
            OutboxStatus::Parked => {
                self.parked.insert(seq);
            }
            OutboxStatus::Published => self.published.push_back(seq),
        }
        self.rows.insert(seq, row);
        self.trim_published();
    }

    /// Moves row `seq` to `status`, keeping the indexes in step.
    pub(crate) fn set_status(&mut self, seq: u64, status: OutboxStatus) {
        let Some(row) = self.rows.get_mut(&seq) else {
            return;
        };
        match row.status {
            OutboxStatus::Pending => {
                self.pending.remove(&seq);
            }
            OutboxStatus::Parked => {
                self.parked.remove(&seq);
            }
            // Left in the deque; `drop_published` skips rows no longer published.
            OutboxStatus::Published => {}
        }
        row.status = status;
        match status {
            OutboxStatus::Pending => {
                self.pending.insert(seq);
            }
            OutboxStatus::Parked => {
                self.parked.insert(seq);
            }
            OutboxStatus::Published => {
                self.published.push_back(seq);
                self.trim_published();
            }
        }
    }

    /// Removes the oldest published rows beyond `max_published`.
    fn trim_published(&mut self) {
        while self.published.len() > self.max_published {
            if let Some(seq) = self.published.pop_front() {
                self.drop_published(seq);
            }
        }
    }

    /// Removes row `seq` if it is (still) published; true when it did.
    pub(crate) fn drop_published(&mut self, seq: u64) -> bool {
        if self
            .rows
            .get(&seq)
            .is_some_and(|r| r.status == OutboxStatus::Published)
            && let Some(row) = self.rows.remove(&seq)
        {
            self.index.remove(&row.id);
            return true;
        }
        false
    }
}

/// Everything the store holds.
#[derive(Default)]
pub(crate) struct State {
    pub(crate) tenants: HashMap<TenantId, TenantState>,
    pub(crate) outbox: OutboxState,
    pub(crate) idempotency: crate::idempotency::IdempotencyTable,
}

/// In-memory implementation of [`TemplateRepository`], [`DeadlineRepository`],
/// [`ReportRepository`], [`UnitOfWorkPort`], [`reporter_ports::ports::Outbox`] and
/// [`reporter_ports::ports::IdempotencyStore`].
///
/// All state sits behind one mutex, so every operation, and in particular every
/// [`UnitOfWorkPort::commit`], is atomic and linearizable: a commit validates every change
/// (versions, existence, tenant, deadline uniqueness) before applying any of them together with
/// its outbox rows. The lock is never held across an `.await`.
///
/// Cloning is cheap and shares the state, so one instance can be handed out as several trait
/// objects. The store does no wake-ups: callers that want to nudge a dispatcher after a commit do
/// so themselves.
///
/// Records are stored exactly as committed (callers set `version`, `v + 1` on update). If the
/// lock is ever poisoned (a panic while holding it, which no code path here does), every
/// operation answers `StoreError::Unavailable`.
#[derive(Clone, Default)]
pub struct MemoryStore {
    inner: Arc<Mutex<State>>,
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

impl MemoryStore {
    /// An empty store keeping at most [`DEFAULT_MAX_PUBLISHED`] published outbox rows.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store keeping at most `max_published` published outbox rows (at least 1): once
    /// more are published, the oldest are removed, whatever their age. A published row is
    /// only kept for diagnostics; retention by age is `purge_published`.
    pub fn with_max_published(max_published: usize) -> Self {
        let store = Self::default();
        if let Ok(mut state) = store.inner.lock() {
            state.outbox.max_published = max_published.max(1);
        }
        store
    }

    /// The template `get` answers, shared with the store.
    fn template(
        &self,
        tenant: &TenantId,
        id: TemplateId,
        include_deleted: bool,
    ) -> Result<Option<Arc<Template>>, StoreError> {
        let state = self.lock()?;
        Ok(state
            .tenants
            .get(tenant)
            .and_then(|t| t.templates.get(&id))
            .filter(|t| include_deleted || !t.is_deleted())
            .cloned())
    }

    pub(crate) fn lock(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        self.inner
            .lock()
            .map_err(|_| StoreError::Unavailable("memory store lock poisoned".into()))
    }
}

/// What the unit of work needs to know about a record.
trait Versioned: Clone {
    fn version(&self) -> u64;
    fn tenant(&self) -> &TenantId;
}

impl Versioned for Template {
    fn version(&self) -> u64 {
        self.version
    }
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }
}
impl<R: Versioned> Versioned for Arc<R> {
    fn version(&self) -> u64 {
        R::version(self)
    }
    fn tenant(&self) -> &TenantId {
        R::tenant(self)
    }
}
impl Versioned for Deadline {
    fn version(&self) -> u64 {
        self.version
    }
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }
}
impl Versioned for Report {
    fn version(&self) -> u64 {
        self.version
    }
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }
}

/// Stages one write on top of `base` (the committed records of the tenant) and the writes
/// staged before it in the same unit of work.
fn stage<K: Eq + Hash, R: Versioned>(
    tenant: &TenantId,
    base: Option<&HashMap<K, R>>,
    staged: &mut HashMap<K, R>,
    id: K,
    record: R,
    expected_version: Option<u64>,
) -> Result<(), StoreError> {
    if record.tenant() != tenant {
        // A record of another tenant is not in this tenant: treat it like a missing one.
        return Err(StoreError::NotFound);
    }
    let current = staged.get(&id).or_else(|| base.and_then(|m| m.get(&id)));
    match (expected_version, current) {
        (None, Some(_)) => return Err(StoreError::VersionConflict),
        (None, None) => {}
        (Some(_), None) => return Err(StoreError::NotFound),
        (Some(v), Some(cur)) if cur.version() != v => return Err(StoreError::VersionConflict),
        (Some(_), Some(_)) => {}
    }
    staged.insert(id, record);
    Ok(())
}

/// Validates `uow` against `state` without changing it; answers the staged records.
fn validate(
    state: &State,
    tenant: &TenantId,
    uow: &UnitOfWork,
) -> Result<TenantStaged, StoreError> {
    let base = state.tenants.get(tenant);
    let mut staged = TenantStaged::default();
    for change in &uow.changes {
        match change {
            Change::Template {
                record,
                expected_version,
            } => stage(
                tenant,
                base.map(|b| &b.templates),
                &mut staged.templates,
                record.id,
                Arc::new(record.clone()),
                *expected_version,
            )?,
            Change::Deadline {
                record,
                expected_version,
            } => stage(
                tenant,
                base.map(|b| &b.deadlines),
                &mut staged.deadlines,
                record.id,
                record.clone(),
                *expected_version,
            )?,
            Change::Report {
                record,
                expected_version,
            } => stage(
                tenant,
                base.map(|b| &b.reports),
                &mut staged.reports,
                record.id,
                record.clone(),
                *expected_version,
            )?,
        }
    }

    // Deadline uniqueness among the live deadlines of the tenant as they would be after the
    // commit (committed ones overlaid with the staged ones).
    for d in staged.deadlines.values() {
        let Some(key) = uniqueness_key(d) else {
            continue;
        };
        let committed = base
            .into_iter()
            .flat_map(|b| b.deadlines.values())
            .filter(|other| !staged.deadlines.contains_key(&other.id));
        let clash = staged
            .deadlines
            .values()
            .chain(committed)
            .any(|other| other.id != d.id && uniqueness_key(other).as_ref() == Some(&key));
        if clash {
            return Err(StoreError::Duplicate(DEADLINE_UNIQUENESS_RULE.into()));
        }
    }

    let mut ids = HashSet::new();
    for row in &uow.outbox {
        if &row.tenant != tenant || &row.event.tenant != tenant {
            return Err(StoreError::NotFound);
        }
        if state.outbox.index.contains_key(&row.id) || !ids.insert(row.id) {
            return Err(StoreError::VersionConflict);
        }
    }
    Ok(staged)
}

#[derive(Default)]
struct TenantStaged {
    templates: HashMap<TemplateId, Arc<Template>>,
    deadlines: HashMap<DeadlineId, Deadline>,
    reports: HashMap<ReportId, Report>,
}

fn sort_page<T>(
    mut items: Vec<T>,
    page: PageRequest,
    key: impl Fn(&T) -> (DateTime<Utc>, uuid::Uuid),
) -> Page<T> {
    items.sort_by_key(|a| key(a));
    if page.sort == SortOrder::Desc {
        items.reverse();
    }
    Page::from_sorted(items, page)
}

#[async_trait]
impl UnitOfWorkPort for MemoryStore {
    /// Validates every change and outbox row, then applies all of them, under one lock.
    ///
    /// Besides the trait's errors: a record or outbox row whose tenant is not `tenant` is
    /// refused with `NotFound` (it is not in this tenant), and an outbox row whose id already
    /// exists with `VersionConflict`. An empty unit of work succeeds and changes nothing.
    async fn commit(&self, tenant: &TenantId, uow: UnitOfWork) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        let staged = validate(&state, tenant, &uow)?;
        if let Some(c) = &uow.idempotency {
            state.idempotency.check(c)?;
        }
        if !(staged.templates.is_empty()
            && staged.deadlines.is_empty()
            && staged.reports.is_empty())
        {
            let t = state.tenants.entry(tenant.clone()).or_default();
            t.templates.extend(staged.templates);
            t.deadlines.extend(staged.deadlines);
            t.reports.extend(staged.reports);
        }
        for row in uow.outbox {
            state.outbox.insert(row);
        }
        if let Some(c) = uow.idempotency {
            state.idempotency.apply(c);
        }
        Ok(())
    }
}

#[async_trait]
impl TemplateRepository for MemoryStore {
    async fn get(
        &self,
        tenant: &TenantId,
        id: TemplateId,
        include_deleted: bool,
    ) -> Result<Option<Template>, StoreError> {
        let shared = self.template(tenant, id, include_deleted)?;
        Ok(shared.map(Arc::unwrap_or_clone))
    }

    async fn get_shared(
        &self,
        tenant: &TenantId,
        id: TemplateId,
        include_deleted: bool,
    ) -> Result<Option<Arc<Template>>, StoreError> {
        self.template(tenant, id, include_deleted)
    }

    async fn list(
        &self,
        tenant: &TenantId,
        query: &TemplateQuery,
        page: PageRequest,
    ) -> Result<Page<Template>, StoreError> {
        let items: Vec<Template> = {
            let state = self.lock()?;
            state
                .tenants
                .get(tenant)
                .into_iter()
                .flat_map(|t| t.templates.values())
                .filter(|t| !t.is_deleted() && query.matches(t))
                .map(|t| Template::clone(t))
                .collect()
        };
        Ok(sort_page(items, page, |t| (t.created_at, t.id.0)))
    }

    async fn count(&self, tenant: &TenantId) -> Result<u64, StoreError> {
        let state = self.lock()?;
        let n = state.tenants.get(tenant).map_or(0, |t| {
            t.templates.values().filter(|t| !t.is_deleted()).count()
        });
        Ok(n as u64)
    }
}

#[async_trait]
impl DeadlineRepository for MemoryStore {
    async fn get(
        &self,
        tenant: &TenantId,
        id: DeadlineId,
        include_deleted: bool,
    ) -> Result<Option<Deadline>, StoreError> {
        let state = self.lock()?;
        Ok(state
            .tenants
            .get(tenant)
            .and_then(|t| t.deadlines.get(&id))
            .filter(|d| include_deleted || !d.is_deleted())
            .cloned())
    }

    async fn list(
        &self,
        tenant: &TenantId,
        query: &DeadlineQuery,
        page: PageRequest,
        now: DateTime<Utc>,
    ) -> Result<Page<Deadline>, StoreError> {
        let items: Vec<Deadline> = {
            let state = self.lock()?;
            state
                .tenants
                .get(tenant)
                .into_iter()
                .flat_map(|t| t.deadlines.values())
                .filter(|d| !d.is_deleted() && query.matches(d, now))
                .cloned()
                .collect()
        };
        Ok(sort_page(items, page, |d| (d.created_at, d.id.0)))
    }

    /// Ordered by `created_at` then id, oldest first.
    async fn list_by_template(
        &self,
        tenant: &TenantId,
        template_id: TemplateId,
    ) -> Result<Vec<Deadline>, StoreError> {
        let mut items: Vec<Deadline> = {
            let state = self.lock()?;
            state
                .tenants
                .get(tenant)
                .into_iter()
                .flat_map(|t| t.deadlines.values())
                .filter(|d| !d.is_deleted() && d.template_id == Some(template_id))
                .cloned()
                .collect()
        };
        items.sort_by_key(|d| (d.created_at, d.id));
        Ok(items)
    }

    /// Ties on the effective due date are broken by `created_at` then id.
    async fn list_undelivered_active(
        &self,
        tenant: &TenantId,
        now: DateTime<Utc>,
        cap: usize,
    ) -> Result<Vec<Deadline>, StoreError> {
        let mut items: Vec<(DateTime<Utc>, Deadline)> = {
            let state = self.lock()?;
            state
                .tenants
                .get(tenant)
                .into_iter()
                .flat_map(|t| t.deadlines.values())
                .filter(|d| d.active && !d.is_deleted())
                .filter_map(|d| {
                    let v = d.view(now);
                    (v.status != DeadlineStatus::Delivered).then(|| (v.due_date, d.clone()))
                })
                .collect()
        };
        items.sort_by_key(|(due, d)| (*due, d.created_at, d.id));
        items.truncate(cap);
        Ok(items.into_iter().map(|(_, d)| d).collect())
    }
}

#[async_trait]
impl ReportRepository for MemoryStore {
    async fn get(&self, tenant: &TenantId, id: ReportId) -> Result<Option<Report>, StoreError> {
        let state = self.lock()?;
        Ok(state
            .tenants
            .get(tenant)
            .and_then(|t| t.reports.get(&id))
            .cloned())
    }

    async fn list(
        &self,
        tenant: &TenantId,
        query: &ReportQuery,
        page: PageRequest,
    ) -> Result<Page<Report>, StoreError> {
        let items: Vec<Report> = {
            let state = self.lock()?;
            state
                .tenants
                .get(tenant)
                .into_iter()
                .flat_map(|t| t.reports.values())
                .filter(|r| query.matches(r))
                .cloned()
                .collect()
        };
        Ok(sort_page(items, page, |r| (r.created_at, r.id.0)))
    }

    async fn count(&self, tenant: &TenantId, query: &ReportQuery) -> Result<u64, StoreError> {
        let state = self.lock()?;
        let n = state.tenants.get(tenant).map_or(0, |t| {
            t.reports.values().filter(|r| query.matches(r)).count()
        });
        Ok(n as u64)
    }

    async fn list_stale_processing(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Report>, StoreError> {
        let mut stale: Vec<Report> = {
            let state = self.lock()?;
            state
                .tenants
                .values()
                .flat_map(|t| t.reports.values())
                .filter(|r| r.status == ReportStatus::Processing && r.updated_at < before)
                .cloned()
                .collect()
        };
        stale.sort_by_key(|r| (r.updated_at, r.id.0));
        stale.truncate(limit);
        Ok(stale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reporter_ports::ports::Outbox;
    use reporter_ports::template::OutputFormat;

    #[tokio::test]
    async fn clones_share_state_across_trait_objects() {
        let store = MemoryStore::new();
        let uow: Arc<dyn UnitOfWorkPort> = Arc::new(store.clone());
        let repo: Arc<dyn TemplateRepository> = Arc::new(store.clone());
        let outbox: Arc<dyn Outbox> = Arc::new(store);
        let tenant = TenantId::parse("t").unwrap();
        let now = Utc::now();
        let t = Template {
            id: TemplateId::new(),
            tenant: tenant.clone(),
            output_format: OutputFormat::Txt,
            description: "d".into(),
            file_name: "x.tpl".into(),
            object_key: "t/x.tpl".into(),
            content_sha256: String::new(),
            size_bytes: 1,
            mapped_fields: Default::default(),
            version: 1,
            created_at: now,
            updated_at: now,
            deleted_at: None,
        };
        let event = reporter_ports::events::EventEnvelope {
            id: "e".into(),
            key: reporter_ports::events::EventKey::TemplateCreated,
            tenant: tenant.clone(),
            subject: t.id.to_string(),
            time: now,
            payload: serde_json::json!({}).into(),
            sequence: None,
            trace: None,
        };
        let row = OutboxRecord::pending(event, t.id.to_string(), now, None);
        let work = UnitOfWork::new()
            .change(Change::Template {
                record: t.clone(),
                expected_version: None,
            })
            .with_outbox([row.clone()]);
        uow.commit(&tenant, work).await.unwrap();
        assert_eq!(repo.get(&tenant, t.id, false).await.unwrap(), Some(t));
        assert!(outbox.get(row.id).await.unwrap().is_some());
    }

    #[test]
    fn duplicate_rule_name_is_stable() {
        assert_eq!(
            DEADLINE_UNIQUENESS_RULE,
            "deadline_type_template_due_date_frequency"
        );
    }
}
