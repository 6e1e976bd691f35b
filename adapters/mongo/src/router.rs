//! Multi-tenant routing: one database per tenant.
//!
//! [`MongoTenantRouter`] implements every store port by delegating to the tenant's own
//! [`MongoStore`] (database [`tenant_database_name`]`(prefix, tenant)`), created with its
//! indexes on first use and remembered in a registry collection (`tenants` in the deployment
//! database) so that other processes (a dispatcher in `reporter worker`) find every tenant.
//! Outbox claims rotate the starting tenant on every call and take rows from each tenant in
//! turn, so one busy tenant cannot starve the others.
use crate::idempotency::MongoIdempotencyStore;
use crate::store::{MongoStore, MongoStoreConfig};
use crate::tenant::tenant_database_name;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mongodb::bson::doc;
use mongodb::{Client, Database};
use reporter_ports::deadline::Deadline;
use reporter_ports::ids::OutboxId;
use reporter_ports::page::{Page, PageRequest};
use reporter_ports::ports::{
    DeadlineQuery, DeadlineRepository, IdempotencyBegin, IdempotencyOwner, IdempotencyScope,
    IdempotencyStore, Outbox, OutboxRecord, OutboxStats, ParkedEvent, ReportQuery,
    ReportRepository, StoredResponse, TemplateQuery, TemplateRepository, UnitOfWork,
    UnitOfWorkPort,
};
use reporter_ports::report::Report;
use reporter_ports::template::Template;
use reporter_ports::{DeadlineId, ReportId, StoreError, TemplateId, TenantId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::RwLock;
use uuid::Uuid;

struct TenantHandles {
    store: MongoStore,
    idempotency: MongoIdempotencyStore,
}

/// Routes every port call to the tenant's database.
#[derive(Clone)]
pub struct MongoTenantRouter {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    prefix: String,
    registry: Database,
    config: MongoStoreConfig,
    tenants: RwLock<HashMap<TenantId, Arc<TenantHandles>>>,
    /// Which tenant holds a claimed outbox row (settle calls carry only the row id).
    claimed: Mutex<HashMap<OutboxId, TenantId>>,
    rotation: AtomicUsize,
}

fn unavailable(what: &str, e: &mongodb::error::Error) -> StoreError {
    StoreError::Unavailable(format!("{what}: {e}"))
}

impl MongoTenantRouter {
    /// A router over `client`; tenant databases are named from `prefix`; the tenant registry
    /// lives in `registry_db`.
    pub fn new(client: Client, prefix: &str, registry_db: &str, config: MongoStoreConfig) -> Self {
        let registry = client.database(registry_db);
        Self {
            inner: Arc::new(Inner {
                client,
                prefix: prefix.to_owned(),
                registry,
                config,
                tenants: RwLock::new(HashMap::new()),
                claimed: Mutex::new(HashMap::new()),
                rotation: AtomicUsize::new(0),
            }),
        }
    }

    /// The database name of a tenant.
    pub fn database_name(&self, tenant: &TenantId) -> String {
        tenant_database_name(&self.inner.prefix, tenant)
    }

    async fn handles(&self, tenant: &TenantId) -> Result<Arc<TenantHandles>, StoreError> {
        if let Some(h) = self.inner.tenants.read().await.get(tenant) {
            return Ok(h.clone());
        }
        let mut map = self.inner.tenants.write().await;
        if let Some(h) = map.get(tenant) {
            return Ok(h.clone());
        }
        let name = self.database_name(tenant);
        let store =
            MongoStore::from_client(self.inner.client.clone(), &name, self.inner.config.clone())
                .await?;
        let idempotency = MongoIdempotencyStore::new(store.database()).await?;
        self.inner
            .registry
            .collection::<mongodb::bson::Document>("tenants")
            .update_one(
                doc! { "_id": tenant.as_str() },
                doc! { "$set": { "database": &name } },
            )
            .upsert(true)
            .await
            .map_err(|e| unavailable("register tenant", &e))?;
        let h = Arc::new(TenantHandles { store, idempotency });
        map.insert(tenant.clone(), h.clone());
        Ok(h)
    }

    async fn store(&self, tenant: &TenantId) -> Result<MongoStore, StoreError> {
        Ok(self.handles(tenant).await?.store.clone())
    }

    /// Every registered tenant (loads the ones other processes created).
    pub async fn tenants(&self) -> Result<Vec<TenantId>, StoreError> {
        use futures_util::TryStreamExt;
        let docs: Vec<mongodb::bson::Document> = self
            .inner
            .registry
            .collection::<mongodb::bson::Document>("tenants")
            .find(doc! {})
            .await
            .map_err(|e| unavailable("list tenants", &e))?
            .try_collect()
            .await
            .map_err(|e| unavailable("list tenants", &e))?;
        let mut out: Vec<TenantId> = docs
            .iter()
            .filter_map(|d| d.get_str("_id").ok())
            .filter_map(|s| TenantId::parse(s).ok())
            .collect();
        out.sort();
        Ok(out)
    }

    fn owner_of(&self, id: OutboxId) -> Option<TenantId> {
        self.inner
            .claimed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&id)
            .cloned()
    }

    fn forget(&self, id: OutboxId) {
        self.inner
            .claimed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&id);
    }

    async fn store_of_row(&self, id: OutboxId) -> Result<MongoStore, StoreError> {
        match self.owner_of(id) {
            Some(t) => self.store(&t).await,
            None => {
                for t in self.tenants().await? {
                    let s = self.store(&t).await?;
                    if Outbox::get(&s, id).await?.is_some() {
                        return Ok(s);
                    }
                }
                Err(StoreError::NotFound)
            }
        }
    }
}

#[async_trait]
impl UnitOfWorkPort for MongoTenantRouter {
    async fn commit(&self, tenant: &TenantId, uow: UnitOfWork) -> Result<(), StoreError> {
        self.store(tenant).await?.commit(tenant, uow).await
    }
}

#[async_trait]
impl TemplateRepository for MongoTenantRouter {
    async fn get(
        &self,
        tenant: &TenantId,
        id: TemplateId,
        include_deleted: bool,
    ) -> Result<Option<Template>, StoreError> {
        TemplateRepository::get(&self.store(tenant).await?, tenant, id, include_deleted).await
    }
    async fn list(
        &self,
        tenant: &TenantId,
        query: &TemplateQuery,
        page: PageRequest,
    ) -> Result<Page<Template>, StoreError> {
        TemplateRepository::list(&self.store(tenant).await?, tenant, query, page).await
    }
    async fn count(&self, tenant: &TenantId) -> Result<u64, StoreError> {
        TemplateRepository::count(&self.store(tenant).await?, tenant).await
    }
}

#[async_trait]
impl DeadlineRepository for MongoTenantRouter {
    async fn get(
        &self,
        tenant: &TenantId,
        id: DeadlineId,
        include_deleted: bool,
    ) -> Result<Option<Deadline>, StoreError> {
        DeadlineRepository::get(&self.store(tenant).await?, tenant, id, include_deleted).await
    }
    async fn list(
        &self,
        tenant: &TenantId,
        query: &DeadlineQuery,
        page: PageRequest,
        now: DateTime<Utc>,
    ) -> Result<Page<Deadline>, StoreError> {
        DeadlineRepository::list(&self.store(tenant).await?, tenant, query, page, now).await
    }
    async fn list_by_template(
        &self,
        tenant: &TenantId,
        template_id: TemplateId,
    ) -> Result<Vec<Deadline>, StoreError> {
        self.store(tenant)
            .await?
            .list_by_template(tenant, template_id)
            .await
    }
    async fn list_undelivered_active(
        &self,
        tenant: &TenantId,
        now: DateTime<Utc>,
        cap: usize,
    ) -> Result<Vec<Deadline>, StoreError> {
        self.store(tenant)
            .await?
            .list_undelivered_active(tenant, now, cap)
            .await
    }
}

#[async_trait]
impl ReportRepository for MongoTenantRouter {
    async fn get(&self, tenant: &TenantId, id: ReportId) -> Result<Option<Report>, StoreError> {
        ReportRepository::get(&self.store(tenant).await?, tenant, id).await
    }
    async fn list(
        &self,
        tenant: &TenantId,
        query: &ReportQuery,
        page: PageRequest,
    ) -> Result<Page<Report>, StoreError> {
        ReportRepository::list(&self.store(tenant).await?, tenant, query, page).await
    }
    async fn count(&self, tenant: &TenantId, query: &ReportQuery) -> Result<u64, StoreError> {
        ReportRepository::count(&self.store(tenant).await?, tenant, query).await
    }
    /// Every registered tenant's database, merged least recently changed first.
    async fn list_stale_processing(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Report>, StoreError> {
        let mut all = Vec::new();
        for tenant in self.tenants().await? {
            all.extend(
                self.store(&tenant)
                    .await?
                    .list_stale_processing(before, limit)
                    .await?,
            );
        }
        all.sort_by_key(|r| (r.updated_at, r.id.0));
        all.truncate(limit);
        Ok(all)
    }
}

#[async_trait]
impl Outbox for MongoTenantRouter {
    async fn claim(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxRecord>, StoreError> {
        let tenants = self.tenants().await?;
        if tenants.is_empty() {
            return Ok(Vec::new());
        }
        let start = self.inner.rotation.fetch_add(1, Ordering::Relaxed) % tenants.len();
        let share = limit.div_ceil(tenants.len()).max(1);
        let mut out = Vec::new();
        for i in 0..tenants.len() {
            if out.len() >= limit {
                break;
            }
            let tenant = &tenants[(start + i) % tenants.len()];
            let take = share.min(limit - out.len());
            let rows = self
                .store(tenant)
                .await?
                .claim(owner, now, lease_until, take)
                .await?;
            {
                let mut claimed = self
                    .inner
                    .claimed
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                for r in &rows {
                    claimed.insert(r.id, tenant.clone());
                }
            }
            out.extend(rows);
        }
        Ok(out)
    }
    async fn mark_published(
        &self,
        id: OutboxId,
        token: Uuid,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let r = self
            .store_of_row(id)
            .await?
            .mark_published(id, token, now)
            .await;
        self.forget(id);
        r
    }
    async fn mark_failed(
        &self,
        id: OutboxId,
        token: Uuid,
        error: &str,
        retry_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let r = self
            .store_of_row(id)
            .await?
            .mark_failed(id, token, error, retry_at)
            .await;
        self.forget(id);
        r
    }
    async fn release(
        &self,
        id: OutboxId,
        token: Uuid,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let r = self.store_of_row(id).await?.release(id, token, now).await;
        self.forget(id);
        r
    }
    async fn park(
        &self,
        id: OutboxId,
        token: Uuid,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let r = self
            .store_of_row(id)
            .await?
            .park(id, token, reason, now)
            .await;
        self.forget(id);
        r
    }
    async fn redrive(
        &self,
        tenant: Option<TenantId>,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let tenants = match tenant {
            Some(t) => vec![t],
            None => self.tenants().await?,
        };
        let mut n = 0;
        for t in tenants {
            n += self.store(&t).await?.redrive(Some(t.clone()), now).await?;
        }
        Ok(n)
    }
    /// One tenant's database for a tenant; else every tenant's newest `limit`, merged in the
    /// same order (a tie across databases goes to the later commit).
    async fn list_parked(
        &self,
        tenant: Option<TenantId>,
        limit: usize,
    ) -> Result<Vec<ParkedEvent>, StoreError> {
        if let Some(t) = tenant {
            return self
                .store(&t)
                .await?
                .list_parked(Some(t.clone()), limit)
                .await;
        }
        let mut all = Vec::new();
        for t in self.tenants().await? {
            all.extend(
                self.store(&t)
                    .await?
                    .list_parked(Some(t.clone()), limit)
                    .await?,
            );
        }
        all.sort_by(|a, b| {
            b.parked_at
                .cmp(&a.parked_at)
                .then(b.created_at.cmp(&a.created_at))
        });
        all.truncate(limit);
        Ok(all)
    }
    async fn stats(&self, now: DateTime<Utc>) -> Result<OutboxStats, StoreError> {
        let mut total = OutboxStats::default();
        for t in self.tenants().await? {
            let s = self.store(&t).await?.stats(now).await?;
            total.pending += s.pending;
            total.parked += s.parked;
            total.oldest_pending_age_secs =
                match (total.oldest_pending_age_secs, s.oldest_pending_age_secs) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
        }
        Ok(total)
    }
    async fn purge_published(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let mut n = 0;
        for t in self.tenants().await? {
            n += self.store(&t).await?.purge_published(before).await?;
        }
        Ok(n)
    }
    async fn get(&self, id: OutboxId) -> Result<Option<OutboxRecord>, StoreError> {
        match self.store_of_row(id).await {
            Ok(s) => Outbox::get(&s, id).await,
            Err(StoreError::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[async_trait]
impl IdempotencyStore for MongoTenantRouter {
    async fn begin(
        &self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<IdempotencyBegin, StoreError> {
        self.handles(&scope.tenant)
            .await?
            .idempotency
            .begin(scope, owner, now, lease_until)
            .await
    }
    async fn renew(
        &self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.handles(&scope.tenant)
            .await?
            .idempotency
            .renew(scope, owner, lease_until)
            .await
    }
    async fn complete(
        &self,
        scope: &IdempotencyScope,
        response: StoredResponse,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.handles(&scope.tenant)
            .await?
            .idempotency
            .complete(scope, response, expires_at)
            .await
    }
    async fn release(
        &self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
    ) -> Result<(), StoreError> {
        self.handles(&scope.tenant)
            .await?
            .idempotency
            .release(scope, owner)
            .await
    }
}
