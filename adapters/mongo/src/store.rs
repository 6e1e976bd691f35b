//! [`MongoStore`]: templates, deadlines, reports, units of work and the outbox in one MongoDB
//! database. The outbox side lives in [`crate::outbox`].
use crate::docs::{DeadlineDoc, OutboxDoc, ReportDoc, TemplateDoc};
use crate::error::{
    duplicate_key_message, is_transient, is_unknown_commit, is_unreachable, unavailable,
};
use crate::time::{ceil_ms, floor_ms};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use mongodb::bson::{Bson, Document, doc, to_document};
use mongodb::options::{IndexOptions, ReadConcern, ReturnDocument, WriteConcern};
use mongodb::{Client, ClientSession, Collection, Database, IndexModel};
use reporter_ports::deadline::{Deadline, DeadlineStatus};
use reporter_ports::page::{Page, PageRequest, SortOrder};
use reporter_ports::ports::{
    Change, DeadlineQuery, DeadlineRepository, IdempotencyCompletion, ReportQuery,
    ReportRepository, TemplateQuery, TemplateRepository, UnitOfWork, UnitOfWorkPort,
};
use reporter_ports::report::{Report, ReportStatus};
use reporter_ports::template::Template;
use reporter_ports::{Backoff, DeadlineId, ReportId, StoreError, TemplateId, TenantId};
use serde::de::DeserializeOwned;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The rule named by `StoreError::Duplicate` when two live deadlines of a tenant would share
/// (type, template, due date, frequency). Same text as the memory adapter's.
pub const DEADLINE_UNIQUENESS_RULE: &str = "deadline_type_template_due_date_frequency";

/// Name of the unique partial index that enforces [`DEADLINE_UNIQUENESS_RULE`].
pub const DEADLINE_UNIQUE_INDEX: &str = "deadlines_live_unique";
/// Name of the TTL index on `outbox.published_at`.
pub const OUTBOX_TTL_INDEX: &str = "outbox_published_ttl";

pub(crate) const TEMPLATES: &str = "templates";
pub(crate) const DEADLINES: &str = "deadlines";
pub(crate) const REPORTS: &str = "reports";
pub(crate) const OUTBOX: &str = "outbox";
pub(crate) const OUTBOX_SEQUENCES: &str = "outbox_sequences";

/// Tuning of a [`MongoStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MongoStoreConfig {
    /// How long a published outbox row is kept before the TTL monitor deletes it (the TTL
    /// index's `expireAfterSeconds`). Default 7 days. Changing it on an existing database
    /// updates the index with `collMod` at the next [`MongoStore::ensure_indexes`].
    pub outbox_retention: Duration,
    /// Most attempts of one unit of work when the server labels an error
    /// `TransientTransactionError` (write conflicts). Default 50.
    pub max_transaction_attempts: u32,
    /// Time budget of one commit including its retries. Default 30 s.
    pub transaction_timeout: Duration,
    /// Most `commitTransaction` retries on `UnknownTransactionCommitResult`. Default 5.
    pub max_commit_retries: u32,
    /// Most rows one [`Outbox::claim`](reporter_ports::ports::Outbox::claim) inspects beyond
    /// `limit` (rows held back by their aggregate, rows taken by another claimer). Rows further
    /// back wait for the next claim. Default 500.
    pub claim_scan_limit: usize,
}

impl Default for MongoStoreConfig {
    fn default() -> Self {
        Self {
            outbox_retention: Duration::from_secs(7 * 24 * 3600),
            max_transaction_attempts: 50,
            transaction_timeout: Duration::from_secs(30),
            max_commit_retries: 5,
            claim_scan_limit: 500,
        }
    }
}

/// MongoDB implementation of [`TemplateRepository`], [`DeadlineRepository`],
/// [`ReportRepository`], [`UnitOfWorkPort`] and [`reporter_ports::ports::Outbox`] over one
/// database (see the crate docs for the collections and indexes).
///
/// Cloning is cheap and shares the client's connection pool. Every document carries its
/// tenant and every read filters on it, so several tenants may share one database; the
/// multi-tenant deployment uses one database per tenant instead
/// ([`crate::tenant_database_name`]), each with its own `MongoStore` built from one shared
/// [`Client`] with [`MongoStore::from_client`].
#[derive(Clone)]
pub struct MongoStore {
    pub(crate) client: Client,
    pub(crate) db: Database,
    pub(crate) config: Arc<MongoStoreConfig>,
}

impl fmt::Debug for MongoStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MongoStore")
            .field("database", &self.db.name())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Checks a `hello` reply for multi-document transaction support.
///
/// Transactions need a replica set member (`setName` present) or a `mongos` (`msg:
/// "isdbgrid"`), and sessions (`logicalSessionTimeoutMinutes` present). A standalone `mongod`
/// has neither `setName` nor `isdbgrid`, and is refused with a message saying how to turn it
/// into a single-node replica set.
pub fn check_transaction_support(hello: &Document) -> Result<(), StoreError> {
    let replica_set = matches!(hello.get("setName"), Some(Bson::String(s)) if !s.is_empty());
    let mongos = matches!(hello.get("msg"), Some(Bson::String(s)) if s == "isdbgrid");
    let sessions = hello
        .get("logicalSessionTimeoutMinutes")
        .is_some_and(|v| !matches!(v, Bson::Null));
    if (replica_set || mongos) && sessions {
        return Ok(());
    }
    let what = if replica_set || mongos {
        "does not support sessions (no logicalSessionTimeoutMinutes in hello)"
    } else {
        "is a standalone server (hello has no setName)"
    };
    Err(StoreError::Unavailable(format!(
        "MongoDB {what}; Reporter commits every change with its events in one multi-document \
         transaction, which needs a replica set. Run a single-node replica set: start mongod \
         with `--replSet rs0`, run `mongosh --eval 'rs.initiate()'` once, and connect with \
         `mongodb://HOST:27017/?replicaSet=rs0` (or `?directConnection=true`)"
    )))
}

impl MongoStore {
    /// Connects with the default [`MongoStoreConfig`]; see [`MongoStore::connect_with`].
    pub async fn connect(uri: &str, db_name: &str) -> Result<Self, StoreError> {
        Self::connect_with(uri, db_name, MongoStoreConfig::default()).await
    }

    /// Connects to `uri`, refuses a server without transaction support
    /// ([`check_transaction_support`]) and creates the indexes ([`MongoStore::ensure_indexes`]).
    pub async fn connect_with(
        uri: &str,
        db_name: &str,
        config: MongoStoreConfig,
    ) -> Result<Self, StoreError> {
        let client = Client::with_uri_str(uri)
            .await
            .map_err(|e| unavailable("connect", &e))?;
        Self::from_client(client, db_name, config).await
    }

    /// A store over `db_name` on an existing client (one client, many tenant databases). Runs
    /// the same checks and index creation as [`MongoStore::connect_with`].
    pub async fn from_client(
        client: Client,
        db_name: &str,
        config: MongoStoreConfig,
    ) -> Result<Self, StoreError> {
        let hello = client
            .database("admin")
            .run_command(doc! { "hello": 1 })
            .await
            .map_err(|e| unavailable("hello", &e))?;
        check_transaction_support(&hello)?;
        let store = Self {
            db: client.database(db_name),
            client,
            config: Arc::new(config),
        };
        store.ensure_indexes().await?;
        Ok(store)
    }

    /// The database.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// The client (shared connection pool).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The configuration.
    pub fn config(&self) -> &MongoStoreConfig {
        &self.config
    }

    pub(crate) fn coll<T: Send + Sync>(&self, name: &str) -> Collection<T> {
        self.db.collection(name)
    }

    /// Creates every index of the crate docs' table; idempotent (safe at every start-up and
    /// from several processes). A changed outbox retention is applied with `collMod`.
    /// Long by design: the index table itself, one statement per index, in the order of the
    /// crate docs' table.
    pub async fn ensure_indexes(&self) -> Result<(), StoreError> {
        let idx = |keys: Document, name: &str| {
            IndexModel::builder()
                .keys(keys)
                .options(IndexOptions::builder().name(name.to_owned()).build())
                .build()
        };
        let plan: Vec<(&str, Vec<IndexModel>)> = vec![
            (
                TEMPLATES,
                vec![idx(
                    doc! { "tenant": 1, "deleted": 1, "created_at": 1, "_id": 1 },
                    "templates_list",
                )],
            ),
            (
                DEADLINES,
                vec![
                    idx(
                        doc! { "tenant": 1, "deleted": 1, "created_at": 1, "_id": 1 },
                        "deadlines_list",
                    ),
                    idx(
                        doc! { "tenant": 1, "template_id": 1, "deleted": 1 },
                        "deadlines_by_template",
                    ),
                    idx(
                        doc! { "tenant": 1, "deleted": 1, "active": 1, "due_date": 1 },
                        "deadlines_due",
                    ),
                    IndexModel::builder()
                        .keys(doc! {
                            "tenant": 1, "kind": 1, "template_id": 1, "due_date": 1, "frequency": 1
                        })
                        .options(
                            IndexOptions::builder()
                                .name(DEADLINE_UNIQUE_INDEX.to_owned())
                                .unique(true)
                                .partial_filter_expression(doc! {
                                    "deleted": false,
                                    "template_id": { "$type": "string" },
                                })
                                .build(),
                        )
                        .build(),
                ],
            ),
            (
                REPORTS,
                vec![
                    idx(
                        doc! { "tenant": 1, "created_at": 1, "_id": 1 },
                        "reports_list",
                    ),
                    idx(
                        doc! { "tenant": 1, "template_id": 1, "created_at": 1 },
                        "reports_by_template",
                    ),
                    idx(
                        doc! { "tenant": 1, "status": 1, "created_at": 1 },
                        "reports_by_status",
                    ),
                    idx(doc! { "status": 1, "updated_at": 1 }, "reports_stale"),
                ],
            ),
            (
                OUTBOX,
                vec![
                    idx(
                        doc! { "status": 1, "available_at": 1, "created_at": 1 },
                        "outbox_claim",
                    ),
                    idx(
                        doc! { "status": 1, "created_at": 1, "pos": 1, "_id": 1 },
                        "outbox_claim_order",
                    ),
                    idx(
                        doc! { "aggregate": 1, "status": 1, "agg_seq": 1 },
                        "outbox_aggregate_order",
                    ),
                    idx(doc! { "status": 1, "created_at": 1 }, "outbox_backlog"),
                    idx(doc! { "status": 1, "tenant": 1 }, "outbox_redrive"),
                ],
            ),
        ];
        for (coll, models) in plan {
            self.coll::<Document>(coll)
                .create_indexes(models)
                .await
                .map_err(|e| unavailable(&format!("create indexes on {coll}"), &e))?;
        }
        self.ensure_outbox_ttl().await
    }

    async fn ensure_outbox_ttl(&self) -> Result<(), StoreError> {
        let model = IndexModel::builder()
            .keys(doc! { "published_at": 1 })
            .options(
                IndexOptions::builder()
                    .name(OUTBOX_TTL_INDEX.to_owned())
                    .expire_after(self.config.outbox_retention)
                    .build(),
            )
            .build();
        match self.coll::<Document>(OUTBOX).create_index(model).await {
            Ok(_) => Ok(()),
            // IndexOptionsConflict / IndexKeySpecsConflict: same name, other retention.
            Err(e) if matches!(crate::error::code(&e), Some(85) | Some(86)) => {
                let secs =
                    i64::try_from(self.config.outbox_retention.as_secs()).unwrap_or(i64::MAX);
                self.db
                    .run_command(doc! {
                        "collMod": OUTBOX,
                        "index": { "name": OUTBOX_TTL_INDEX, "expireAfterSeconds": secs },
                    })
                    .await
                    .map(|_| ())
                    .map_err(|e| unavailable("update outbox TTL", &e))
            }
            Err(e) => Err(unavailable("create outbox TTL index", &e)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// unit of work

/// One planned record write.
struct Write {
    collection: &'static str,
    id: String,
    expected_version: Option<i64>,
    doc: Document,
}

/// Why one attempt of a transaction stopped.
enum TxError {
    /// A domain answer (conflict, not found, duplicate) or a permanent failure: give up.
    Fail(StoreError),
    /// A transient failure: run the whole transaction again.
    Retry(String),
}

fn driver(what: &str, e: mongodb::error::Error) -> TxError {
    // The driver labels a failed server selection inside a transaction as transient, but
    // with no reachable server another attempt would only wait the selection timeout again.
    if is_transient(&e) && !is_unreachable(&e) {
        TxError::Retry(format!("{what}: {e}"))
    } else {
        TxError::Fail(unavailable(what, &e))
    }
}

fn to_doc<T: serde::Serialize>(v: &T) -> Result<Document, StoreError> {
    to_document(v).map_err(|e| StoreError::Unavailable(format!("bson encoding: {e}")))
}

/// Validates tenants and maps every change to its document.
fn plan(tenant: &TenantId, uow: &UnitOfWork) -> Result<Vec<Write>, StoreError> {
    let version = |v: Option<u64>| -> Result<Option<i64>, StoreError> {
        v.map(|v| i64::try_from(v).map_err(|_| StoreError::VersionConflict))
            .transpose()
    };
    let mut writes = Vec::with_capacity(uow.changes.len());
    for change in &uow.changes {
        let (owner, w) = match change {
            Change::Template {
                record,
                expected_version,
            } => (
                &record.tenant,
                Write {
                    collection: TEMPLATES,
                    id: record.id.to_string(),
                    expected_version: version(*expected_version)?,
                    doc: to_doc(&TemplateDoc::from_record(record)?)?,
                },
            ),
            Change::Deadline {
                record,
                expected_version,
            } => (
                &record.tenant,
                Write {
                    collection: DEADLINES,
                    id: record.id.to_string(),
                    expected_version: version(*expected_version)?,
                    doc: to_doc(&DeadlineDoc::from_record(record)?)?,
                },
            ),
            Change::Report {
                record,
                expected_version,
            } => (
                &record.tenant,
                Write {
                    collection: REPORTS,
                    id: record.id.to_string(),
                    expected_version: version(*expected_version)?,
                    doc: to_doc(&ReportDoc::from_record(record)?)?,
                },
            ),
        };
        if owner != tenant {
            // A record of another tenant is not in this tenant: like a missing one.
            return Err(StoreError::NotFound);
        }
        writes.push(w);
    }
    for row in &uow.outbox {
        if &row.tenant != tenant || &row.event.tenant != tenant {
            return Err(StoreError::NotFound);
        }
    }
    Ok(writes)
}

/// The error of a duplicate key on a record write: the deadline rule when the deadline
/// uniqueness index fired, otherwise an id collision.
fn duplicate_error(collection: &str, message: &str) -> StoreError {
    if collection == DEADLINES && message.contains(DEADLINE_UNIQUE_INDEX) {
        StoreError::Duplicate(DEADLINE_UNIQUENESS_RULE.into())
    } else {
        StoreError::VersionConflict
    }
}

impl MongoStore {
    /// The unit's writes inside `session`: its idempotency completion, each record write
    /// (an insert, or a replace guarded by the expected version), then its outbox rows with
    /// their per-aggregate sequence numbers.
    async fn apply(
        &self,
        session: &mut ClientSession,
        tenant: &TenantId,
        writes: &[Write],
        uow: &UnitOfWork,
    ) -> Result<(), TxError> {
        if let Some(c) = &uow.idempotency {
            self.complete_idempotency(session, c).await?;
        }
        for w in writes {
            self.write_record(session, tenant, w).await?;
        }
        if uow.outbox.is_empty() {
            return Ok(());
        }
        let first = self.reserve_sequences(session, &uow.outbox).await?;
        self.insert_outbox(session, &uow.outbox, first).await
    }

    /// One record write: an insert when no version is expected, else a replace of the
    /// version expected.
    ///
    /// MUST fail with `VersionConflict` when the record exists at another version, `NotFound`
    /// when it does not exist, and `duplicate_error`'s answer on a duplicate key.
    async fn write_record(
        &self,
        session: &mut ClientSession,
        tenant: &TenantId,
        w: &Write,
    ) -> Result<(), TxError> {
        let coll = self.coll::<Document>(w.collection);
        let duplicate_or = |e: mongodb::error::Error, op: &str| match duplicate_key_message(&e) {
            Some(msg) => TxError::Fail(duplicate_error(w.collection, &msg)),
            None => driver(op, e),
        };
        let Some(expected) = w.expected_version else {
            return coll
                .insert_one(&w.doc)
                .session(&mut *session)
                .await
                .map(|_| ())
                .map_err(|e| duplicate_or(e, "insert"));
        };
        let filter = doc! { "_id": &w.id, "tenant": tenant.as_str(), "version": expected };
        let res = coll
            .replace_one(filter, &w.doc)
            .session(&mut *session)
            .await
            .map_err(|e| duplicate_or(e, "replace"))?;
        if res.matched_count == 1 {
            return Ok(());
        }
        let exists = coll
            .find_one(doc! { "_id": &w.id, "tenant": tenant.as_str() })
            .projection(doc! { "_id": 1 })
            .session(&mut *session)
            .await
            .map_err(|e| driver("find", e))?;
        Err(TxError::Fail(if exists.is_some() {
            StoreError::VersionConflict
        } else {
            StoreError::NotFound
        }))
    }

    /// Bumps each aggregate's counter by its number of rows: the first sequence number of
    /// each aggregate's rows. Because the counter is bumped inside the transaction, two
    /// transactions adding rows to one aggregate conflict and commit one after the other, in
    /// counter order (per-aggregate commit order).
    async fn reserve_sequences<'a>(
        &self,
        session: &mut ClientSession,
        rows: &'a [reporter_ports::ports::OutboxRecord],
    ) -> Result<Vec<(&'a str, i64)>, TxError> {
        let mut aggregates: Vec<(&str, i64)> = Vec::new();
        for row in rows {
            match aggregates.iter_mut().find(|(a, _)| *a == row.aggregate) {
                Some((_, n)) => *n += 1,
                None => aggregates.push((row.aggregate.as_str(), 1)),
            }
        }
        let seqs = self.coll::<Document>(OUTBOX_SEQUENCES);
        let mut first = Vec::with_capacity(aggregates.len());
        for (agg, n) in aggregates {
            let res = seqs
                .find_one_and_update(doc! { "_id": agg }, doc! { "$inc": { "seq": n } })
                .upsert(true)
                .return_document(ReturnDocument::After)
                .session(&mut *session)
                .await;
            let last = match res {
                Ok(Some(d)) => d.get_i64("seq").map_err(|_| {
                    TxError::Fail(StoreError::Unavailable(
                        "mongodb: outbox sequence is not an int64".into(),
                    ))
                })?,
                Ok(None) => {
                    return Err(TxError::Retry(
                        "outbox sequence upsert returned nothing".into(),
                    ));
                }
                // Two transactions creating the same counter: the loser retries and sees it.
                Err(e) if duplicate_key_message(&e).is_some() => {
                    return Err(TxError::Retry(format!("outbox sequence race: {e}")));
                }
                Err(e) => return Err(driver("outbox sequence", e)),
            };
            first.push((agg, last - n + 1));
        }
        Ok(first)
    }

    /// Inserts the outbox rows, numbered from each aggregate's `first` sequence number and
    /// by their position in the unit of work.
    async fn insert_outbox(
        &self,
        session: &mut ClientSession,
        rows: &[reporter_ports::ports::OutboxRecord],
        mut first: Vec<(&str, i64)>,
    ) -> Result<(), TxError> {
        let mut docs = Vec::with_capacity(rows.len());
        for (pos, row) in rows.iter().enumerate() {
            let Some((_, seq)) = first.iter_mut().find(|(a, _)| *a == row.aggregate) else {
                return Err(TxError::Fail(StoreError::Unavailable(
                    "outbox aggregate without a sequence".into(),
                )));
            };
            let pos = i64::try_from(pos).unwrap_or(i64::MAX);
            let d = OutboxDoc::from_record(row, *seq, pos).map_err(TxError::Fail)?;
            *seq += 1;
            docs.push(to_doc(&d).map_err(TxError::Fail)?);
        }
        if let Err(e) = self
            .coll::<Document>(OUTBOX)
            .insert_many(docs)
            .session(&mut *session)
            .await
        {
            if duplicate_key_message(&e).is_some() {
                return Err(TxError::Fail(StoreError::VersionConflict));
            }
            return Err(driver("outbox insert", e));
        }
        Ok(())
    }

    /// Completes the unit's idempotency key in the transaction, only while its owner holds it.
    async fn complete_idempotency(
        &self,
        session: &mut ClientSession,
        c: &IdempotencyCompletion,
    ) -> Result<(), TxError> {
        let (filter, update) = crate::idempotency::completion_write(c.clone());
        let r = self
            .coll::<Document>(crate::idempotency::IDEMPOTENCY_COLLECTION)
            .update_one(filter, update)
            .session(&mut *session)
            .await
            .map_err(|e| driver("idempotency complete", e))?;
        if r.matched_count == 1 {
            Ok(())
        } else {
            Err(TxError::Fail(StoreError::IdempotencyLost))
        }
    }

    /// Commits, retrying the commit alone on `UnknownTransactionCommitResult`.
    async fn commit_transaction(&self, session: &mut ClientSession) -> Result<(), TxError> {
        let mut retries = 0;
        loop {
            match session.commit_transaction().await {
                Ok(()) => return Ok(()),
                Err(e)
                    if is_unknown_commit(&e)
                        && !is_unreachable(&e)
                        && retries < self.config.max_commit_retries =>
                {
                    retries += 1;
                    tracing::debug!(error = %e, retries, "retrying commitTransaction");
                }
                Err(e) => return Err(driver("commit", e)),
            }
        }
    }
}

/// The pause before a transaction's next attempt: full jitter from 2 ms doubling up to
/// 100 ms, at least 1 ms.
const TRANSACTION_BACKOFF: Backoff = Backoff {
    base: Duration::from_millis(2),
    cap: Duration::from_millis(100),
};

#[async_trait]
impl UnitOfWorkPort for MongoStore {
    /// Runs every change and every outbox insert in one multi-document transaction (snapshot
    /// read concern, majority write concern) on one session.
    ///
    /// Inserts are `insert_one` (duplicate `_id` → `VersionConflict`); updates are
    /// `replace_one` on `{_id, tenant, version: expected}` (no match → `NotFound` when the id
    /// is not in the tenant, else `VersionConflict`); the deadline rule is the unique partial
    /// index [`DEADLINE_UNIQUE_INDEX`] (→ `Duplicate`). Changes apply in order, so a unit that
    /// soft-deletes a deadline and then inserts its twin succeeds, while the reverse order is
    /// refused. A record or outbox row of another tenant → `NotFound`; a duplicate outbox id →
    /// `VersionConflict`.
    ///
    /// `TransientTransactionError` (write conflicts with a concurrent unit) reruns the whole
    /// transaction with jittered backoff, at most `max_transaction_attempts` times within
    /// `transaction_timeout`; `UnknownTransactionCommitResult` retries the commit alone. When
    /// retries run out the answer is `Unavailable` and nothing was applied, except after an
    /// exhausted `UnknownTransactionCommitResult`, when the outcome is unknown (the error text
    /// says so). No server reachable (server selection timed out) MUST answer `Unavailable`
    /// at once, without further attempts: during an outage a call fails within one server
    /// selection timeout instead of `transaction_timeout`. Either way the records and their
    /// outbox rows are committed together or not at all.
    async fn commit(&self, tenant: &TenantId, uow: UnitOfWork) -> Result<(), StoreError> {
        let writes = plan(tenant, &uow)?;
        if writes.is_empty() && uow.outbox.is_empty() && uow.idempotency.is_none() {
            return Ok(());
        }
        let mut session = self
            .client
            .start_session()
            .await
            .map_err(|e| unavailable("start session", &e))?;
        let started = Instant::now();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            session
                .start_transaction()
                .read_concern(ReadConcern::snapshot())
                .write_concern(WriteConcern::majority())
                .await
                .map_err(|e| unavailable("start transaction", &e))?;
            let outcome = match self.apply(&mut session, tenant, &writes, &uow).await {
                Ok(()) => self.commit_transaction(&mut session).await,
                Err(e) => {
                    // The server may already have aborted it; a failed abort changes nothing.
                    let _ = session.abort_transaction().await;
                    Err(e)
                }
            };
            let reason = match outcome {
                Ok(()) => return Ok(()),
                Err(TxError::Fail(e)) => return Err(e),
                Err(TxError::Retry(reason)) => reason,
            };
            if attempt >= self.config.max_transaction_attempts
                || started.elapsed() >= self.config.transaction_timeout
            {
                return Err(StoreError::Unavailable(format!(
                    "mongodb transaction gave up after {attempt} attempts: {reason}"
                )));
            }
            tracing::debug!(attempt, %reason, "retrying transaction");
            let pause = TRANSACTION_BACKOFF.full_jitter(attempt);
            tokio::time::sleep(pause.max(Duration::from_millis(1))).await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// reads

/// Decodes documents read from a typed collection into records.
async fn collect<D, R>(
    cursor: mongodb::Cursor<D>,
    into: impl Fn(D) -> Result<R, StoreError>,
) -> Result<Vec<R>, StoreError>
where
    D: DeserializeOwned + Send + Sync + Unpin,
{
    let docs: Vec<D> = cursor
        .try_collect()
        .await
        .map_err(|e| unavailable("read cursor", &e))?;
    docs.into_iter().map(into).collect()
}

fn direction(sort: SortOrder) -> i32 {
    match sort {
        SortOrder::Asc => 1,
        SortOrder::Desc => -1,
    }
}

fn page_sort(sort: SortOrder) -> Document {
    let d = direction(sort);
    doc! { "created_at": d, "_id": d }
}

fn skip_limit(page: PageRequest) -> (u64, i64) {
    (page.offset(), i64::from(page.limit()))
}

/// Escapes every regular-expression metacharacter so the text matches literally.
pub(crate) fn escape_regex(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        match c {
            '\\' | '^' | '$' | '.' | '|' | '?' | '*' | '+' | '(' | ')' | '[' | ']' | '{' | '}'
            | '-' | '#' | '/' => {
                out.push('\\');
                out.push(c);
            }
            // A NUL cannot appear in a BSON regex (a C string); match it by escape.
            '\0' => out.push_str("\\x00"),
            c => out.push(c),
        }
    }
    out
}

fn created_range(filter: &mut Document, from: Option<DateTime<Utc>>, to: Option<DateTime<Utc>>) {
    let mut range = Document::new();
    if let Some(from) = from {
        range.insert("$gte", ceil_ms(from));
    }
    if let Some(to) = to {
        range.insert("$lt", ceil_ms(to));
    }
    if !range.is_empty() {
        filter.insert("created_at", range);
    }
}

fn template_filter(tenant: &TenantId, q: &TemplateQuery) -> Document {
    let mut f = doc! { "tenant": tenant.as_str(), "deleted": false };
    if let Some(fmt) = q.output_format {
        f.insert("output_format", fmt.as_str());
    }
    if let Some(text) = &q.description_contains {
        f.insert(
            "description",
            doc! { "$regex": escape_regex(text), "$options": "i" },
        );
    }
    created_range(&mut f, q.created_from, q.created_to);
    f
}

/// The status / effective-due-date part of a deadline query as a filter that answers exactly
/// what [`DeadlineQuery::matches`] answers on the stored records at `now`.
///
/// With `N = ceil_ms(now)`, a stored deadline has *rolled* (its delivered recurring occurrence
/// passed) when `delivered_at != null && next_due_date != null && due_date < N`; its effective
/// due date is then `next_due_date`, else `due_date`:
/// - `Delivered`: `delivered_at != null` and not rolled;
/// - `Pending`: rolled with `next_due_date >= N`, or undelivered with `due_date >= N`;
/// - `Overdue`: rolled with `next_due_date < N`, or undelivered with `due_date < N`.
pub(crate) fn deadline_view_filter(q: &DeadlineQuery, now: DateTime<Utc>) -> Vec<Document> {
    let n = ceil_ms(now);
    let mut and = Vec::new();
    let delivered = doc! { "delivered_at": { "$ne": Bson::Null } };
    let not_rolled = doc! { "$or": [
        { "delivered_at": Bson::Null },
        { "next_due_date": Bson::Null },
        { "due_date": { "$gte": n } },
    ] };
    match q.status {
        None => {}
        Some(DeadlineStatus::Delivered) => {
            and.push(delivered.clone());
            and.push(doc! { "$or": [
                { "next_due_date": Bson::Null },
                { "due_date": { "$gte": n } },
            ] });
        }
        Some(DeadlineStatus::Pending) => and.push(doc! { "$or": [
            { "delivered_at": { "$ne": Bson::Null }, "due_date": { "$lt": n }, "next_due_date": { "$gte": n } },
            { "delivered_at": Bson::Null, "due_date": { "$gte": n } },
        ] }),
        Some(DeadlineStatus::Overdue) => and.push(doc! { "$or": [
            { "delivered_at": { "$ne": Bson::Null }, "due_date": { "$lt": n }, "next_due_date": { "$lt": n } },
            { "delivered_at": Bson::Null, "due_date": { "$lt": n } },
        ] }),
    }
    if q.due_from.is_some() || q.due_to.is_some() {
        let mut range = Document::new();
        if let Some(from) = q.due_from {
            range.insert("$gte", ceil_ms(from));
        }
        if let Some(to) = q.due_to {
            range.insert("$lte", floor_ms(to));
        }
        and.push(doc! { "$or": [
            { "delivered_at": { "$ne": Bson::Null }, "due_date": { "$lt": n }, "next_due_date": range.clone() },
            { "$and": [ not_rolled, { "due_date": range } ] },
        ] });
    }
    and
}

fn deadline_filter(tenant: &TenantId, q: &DeadlineQuery, now: DateTime<Utc>) -> Document {
    let mut f = doc! { "tenant": tenant.as_str(), "deleted": false };
    if let Some(active) = q.active {
        f.insert("active", active);
    }
    if let Some(kind) = q.kind {
        f.insert("kind", kind.as_str());
    }
    let view = deadline_view_filter(q, now);
    if !view.is_empty() {
        f.insert("$and", view);
    }
    f
}

fn report_filter(tenant: &TenantId, q: &ReportQuery) -> Document {
    let mut f = doc! { "tenant": tenant.as_str() };
    if let Some(status) = q.status {
        // Every stored spelling: records written as `Errored` by earlier builds count as
        // `Error` in lists and in the dashboard's error counts.
        f.insert("status", doc! { "$in": status.stored_names() });
    }
    if let Some(t) = q.template_id {
        f.insert("template_id", t.to_string());
    }
    if let Some(fmt) = q.output_format {
        f.insert("output_format", fmt.as_str());
    }
    if let Some(text) = &q.description_contains {
        f.insert(
            "template_description",
            doc! { "$regex": escape_regex(text), "$options": "i" },
        );
    }
    created_range(&mut f, q.created_from, q.created_to);
    f
}

impl MongoStore {
    async fn get_one<D>(&self, collection: &str, filter: Document) -> Result<Option<D>, StoreError>
    where
        D: DeserializeOwned + Send + Sync,
    {
        self.coll::<D>(collection)
            .find_one(filter)
            .await
            .map_err(|e| unavailable("find_one", &e))
    }

    async fn page<D, R>(
        &self,
        collection: &str,
        filter: Document,
        page: PageRequest,
        into: impl Fn(D) -> Result<R, StoreError>,
    ) -> Result<Page<R>, StoreError>
    where
        D: DeserializeOwned + Send + Sync + Unpin,
    {
        let coll = self.coll::<D>(collection);
        let total = coll
            .count_documents(filter.clone())
            .await
            .map_err(|e| unavailable("count", &e))?;
        let (skip, limit) = skip_limit(page);
        let items = if skip >= total {
            Vec::new()
        } else {
            let cursor = coll
                .find(filter)
                .sort(page_sort(page.sort))
                .skip(skip)
                .limit(limit)
                .await
                .map_err(|e| unavailable("find", &e))?;
            collect(cursor, into).await?
        };
        Ok(Page {
            items,
            page: page.page(),
            limit: page.limit(),
            total,
        })
    }
}

#[async_trait]
impl TemplateRepository for MongoStore {
    async fn get(
        &self,
        tenant: &TenantId,
        id: TemplateId,
        include_deleted: bool,
    ) -> Result<Option<Template>, StoreError> {
        let mut f = doc! { "_id": id.to_string(), "tenant": tenant.as_str() };
        if !include_deleted {
            f.insert("deleted", false);
        }
        self.get_one::<TemplateDoc>(TEMPLATES, f)
            .await?
            .map(TemplateDoc::into_record)
            .transpose()
    }

    /// The description filter is a case-insensitive regex over the text with every regex
    /// metacharacter escaped, never the caller's pattern.
    async fn list(
        &self,
        tenant: &TenantId,
        query: &TemplateQuery,
        page: PageRequest,
    ) -> Result<Page<Template>, StoreError> {
        self.page(
            TEMPLATES,
            template_filter(tenant, query),
            page,
            TemplateDoc::into_record,
        )
        .await
    }

    async fn count(&self, tenant: &TenantId) -> Result<u64, StoreError> {
        self.coll::<Document>(TEMPLATES)
            .count_documents(doc! { "tenant": tenant.as_str(), "deleted": false })
            .await
            .map_err(|e| unavailable("count", &e))
    }
}

#[async_trait]
impl DeadlineRepository for MongoStore {
    async fn get(
        &self,
        tenant: &TenantId,
        id: DeadlineId,
        include_deleted: bool,
    ) -> Result<Option<Deadline>, StoreError> {
        let mut f = doc! { "_id": id.to_string(), "tenant": tenant.as_str() };
        if !include_deleted {
            f.insert("deleted", false);
        }
        self.get_one::<DeadlineDoc>(DEADLINES, f)
            .await?
            .map(DeadlineDoc::into_record)
            .transpose()
    }

    /// Status and due-date filters run in the database on the stored `due_date`,
    /// `next_due_date` and `delivered_at`, answering exactly what [`DeadlineQuery::matches`]
    /// answers on the stored records at `now` (status derived as in
    /// [`Deadline::view`]), so `total` is exact.
    async fn list(
        &self,
        tenant: &TenantId,
        query: &DeadlineQuery,
        page: PageRequest,
        now: DateTime<Utc>,
    ) -> Result<Page<Deadline>, StoreError> {
        self.page(
            DEADLINES,
            deadline_filter(tenant, query, now),
            page,
            DeadlineDoc::into_record,
        )
        .await
    }

    /// Ordered by `created_at` then id, oldest first.
    async fn list_by_template(
        &self,
        tenant: &TenantId,
        template_id: TemplateId,
    ) -> Result<Vec<Deadline>, StoreError> {
        let cursor = self
            .coll::<DeadlineDoc>(DEADLINES)
            .find(doc! {
                "tenant": tenant.as_str(),
                "template_id": template_id.to_string(),
                "deleted": false,
            })
            .sort(page_sort(SortOrder::Asc))
            .await
            .map_err(|e| unavailable("find", &e))?;
        collect(cursor, DeadlineDoc::into_record).await
    }

    /// Two indexed queries, each at most `cap` long — undelivered deadlines by `due_date`, and
    /// delivered recurring ones that rolled over by `next_due_date` — merged by effective due
    /// date, then `created_at`, then id.
    async fn list_undelivered_active(
        &self,
        tenant: &TenantId,
        now: DateTime<Utc>,
        cap: usize,
    ) -> Result<Vec<Deadline>, StoreError> {
        if cap == 0 {
            return Ok(Vec::new());
        }
        let n = ceil_ms(now);
        let limit = i64::try_from(cap).unwrap_or(i64::MAX);
        let coll = self.coll::<DeadlineDoc>(DEADLINES);
        let base = doc! { "tenant": tenant.as_str(), "deleted": false, "active": true };
        let mut undelivered = base.clone();
        undelivered.insert("delivered_at", Bson::Null);
        let mut rolled = base;
        rolled.insert("delivered_at", doc! { "$ne": Bson::Null });
        rolled.insert("next_due_date", doc! { "$ne": Bson::Null });
        rolled.insert("due_date", doc! { "$lt": n });
        let mut all: Vec<(mongodb::bson::DateTime, DeadlineDoc)> = Vec::new();
        for (filter, key) in [(undelivered, "due_date"), (rolled, "next_due_date")] {
            let docs: Vec<DeadlineDoc> = coll
                .find(filter)
                .sort(doc! { key: 1, "created_at": 1, "_id": 1 })
                .limit(limit)
                .await
                .map_err(|e| unavailable("find", &e))?
                .try_collect()
                .await
                .map_err(|e| unavailable("read cursor", &e))?;
            for d in docs {
                let eff = if key == "due_date" {
                    d.due_date
                } else {
                    d.next_due_date.unwrap_or(d.due_date)
                };
                all.push((eff, d));
            }
        }
        all.sort_by(|(ea, a), (eb, b)| (ea, a.created_at, &a.id).cmp(&(eb, b.created_at, &b.id)));
        all.truncate(cap);
        all.into_iter().map(|(_, d)| d.into_record()).collect()
    }
}

#[async_trait]
impl ReportRepository for MongoStore {
    async fn get(&self, tenant: &TenantId, id: ReportId) -> Result<Option<Report>, StoreError> {
        self.get_one::<ReportDoc>(
            REPORTS,
            doc! { "_id": id.to_string(), "tenant": tenant.as_str() },
        )
        .await?
        .map(ReportDoc::into_record)
        .transpose()
    }

    async fn list(
        &self,
        tenant: &TenantId,
        query: &ReportQuery,
        page: PageRequest,
    ) -> Result<Page<Report>, StoreError> {
        self.page(
            REPORTS,
            report_filter(tenant, query),
            page,
            ReportDoc::into_record,
        )
        .await
    }

    async fn count(&self, tenant: &TenantId, query: &ReportQuery) -> Result<u64, StoreError> {
        self.coll::<Document>(REPORTS)
            .count_documents(report_filter(tenant, query))
            .await
            .map_err(|e| unavailable("count", &e))
    }

    async fn list_stale_processing(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Report>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let cursor = self
            .coll::<ReportDoc>(REPORTS)
            .find(doc! {
                "status": ReportStatus::Processing.as_str(),
                "updated_at": { "$lt": ceil_ms(before) },
            })
            .sort(doc! { "updated_at": 1, "_id": 1 })
            .limit(i64::try_from(limit).unwrap_or(i64::MAX))
            .await
            .map_err(|e| unavailable("find stale reports", &e))?;
        collect(cursor, ReportDoc::into_record).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standalone_is_refused_with_a_replica_set_hint() {
        let standalone = doc! {
            "isWritablePrimary": true, "maxWireVersion": 21, "logicalSessionTimeoutMinutes": 30
        };
        let err = check_transaction_support(&standalone).expect_err("standalone refused");
        let StoreError::Unavailable(msg) = err else {
            panic!("unexpected error {err:?}")
        };
        assert!(msg.contains("standalone"), "{msg}");
        assert!(msg.contains("--replSet"), "{msg}");
        assert!(msg.contains("rs.initiate()"), "{msg}");
    }

    #[test]
    fn replica_sets_and_mongos_are_accepted() {
        let rs = doc! { "setName": "rs0", "logicalSessionTimeoutMinutes": 30, "isWritablePrimary": true };
        assert_eq!(check_transaction_support(&rs), Ok(()));
        let mongos = doc! { "msg": "isdbgrid", "logicalSessionTimeoutMinutes": 30 };
        assert_eq!(check_transaction_support(&mongos), Ok(()));
    }

    #[test]
    fn missing_sessions_are_refused() {
        let rs = doc! { "setName": "rs0" };
        let err = check_transaction_support(&rs).expect_err("no sessions");
        assert!(matches!(err, StoreError::Unavailable(m) if m.contains("sessions")));
        let empty_name = doc! { "setName": "", "logicalSessionTimeoutMinutes": 30 };
        assert!(check_transaction_support(&empty_name).is_err());
        let null_sessions = doc! { "setName": "rs0", "logicalSessionTimeoutMinutes": Bson::Null };
        assert!(check_transaction_support(&null_sessions).is_err());
    }

    #[test]
    fn regex_escape_is_literal() {
        assert_eq!(escape_regex("a.c (regex?)"), "a\\.c \\(regex\\?\\)");
        assert_eq!(escape_regex("x\0y"), "x\\x00y");
        assert_eq!(escape_regex("[a-z]+$"), "\\[a\\-z\\]\\+\\$");
    }
}
