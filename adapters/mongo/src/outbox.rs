//! The [`Outbox`] side of [`MongoStore`]: collection `outbox`, rows inserted by
//! [`UnitOfWorkPort::commit`](reporter_ports::ports::UnitOfWorkPort::commit).
//!
//! Claims are lease-based and safe with any number of dispatcher processes: every row is
//! taken with its own atomic compare-and-set on the row's revision (`update_one` on
//! `{_id, rev}`), which fails when anything changed the row since it was read as claimable, so
//! two claimers can never both win a row while a lease holds. Every update of a row bumps
//! `rev`. Settling (`mark_published`, `mark_failed`, `park`) is a conditional update on
//! `{_id, status: pending, lease_token}`.
use crate::docs::{OutboxDoc, ParkedDoc, status_name};
use crate::error::unavailable;
use crate::store::{MongoStore, OUTBOX};
use crate::time::{ceil_ms, floor_ms, from_bson};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use reporter_ports::ids::OutboxId;
use reporter_ports::ports::{Outbox, OutboxRecord, OutboxStats, OutboxStatus, ParkedEvent};
use reporter_ports::{StoreError, TenantId};
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

const PENDING: &str = "pending";

fn released() -> Document {
    doc! { "lease_token": Bson::Null, "lease_owner": Bson::Null, "lease_until": Bson::Null }
}

/// Adds `rev + 1` to an update, so a concurrent claim's compare-and-set on the revision fails.
fn bump(mut update: Document) -> Document {
    match update.get_document_mut("$inc") {
        Ok(inc) => {
            inc.insert("rev", 1i64);
        }
        Err(_) => {
            update.insert("$inc", doc! { "rev": 1i64 });
        }
    }
    update
}

impl MongoStore {
    /// The next `window` rows matching `claimable`, oldest first (by `created_at`, position in
    /// the unit of work, id), leaving out the `blocked` aggregates.
    async fn candidates(
        &self,
        claimable: &Document,
        blocked: &HashSet<String>,
        window: i64,
    ) -> Result<Vec<OutboxDoc>, StoreError> {
        let mut filter = claimable.clone();
        if !blocked.is_empty() {
            filter.insert(
                "aggregate",
                doc! { "$nin": blocked.iter().collect::<Vec<_>>() },
            );
        }
        self.coll::<OutboxDoc>(OUTBOX)
            .find(filter)
            .sort(doc! { "created_at": 1, "pos": 1, "_id": 1 })
            .limit(window)
            .await
            .map_err(|e| unavailable("outbox find", &e))?
            .try_collect()
            .await
            .map_err(|e| unavailable("outbox cursor", &e))
    }

    /// The row a claim walking to candidate `c` may take in its aggregate's commit order:
    /// `c` itself when no pending row of its aggregate with a smaller `agg_seq` exists
    /// (other than `ahead`, the rows this claim already took), else the aggregate's head
    /// when that is claimable at `nf` and not yet seen. `Err(aggregate)` when the aggregate
    /// must wait for the rest of the claim.
    ///
    /// The walk goes by event time, which a later commit may carry earlier than an older
    /// one: blocking on `c` alone would hold the head back for good, since the head comes
    /// after `c` in the walk.
    async fn in_order(
        &self,
        c: OutboxDoc,
        ahead: &[&String],
        nf: mongodb::bson::DateTime,
        seen: &mut HashSet<String>,
    ) -> Result<Result<OutboxDoc, String>, StoreError> {
        let older = self
            .coll::<Document>(OUTBOX)
            .count_documents(doc! {
                "aggregate": &c.aggregate,
                "status": PENDING,
                "agg_seq": { "$lt": c.agg_seq },
                "_id": { "$nin": ahead },
            })
            .limit(1)
            .await
            .map_err(|e| unavailable("outbox order check", &e))?;
        if older == 0 {
            return Ok(Ok(c));
        }
        let head = self
            .coll::<OutboxDoc>(OUTBOX)
            .find_one(doc! {
                "aggregate": &c.aggregate,
                "status": PENDING,
                "_id": { "$nin": ahead },
            })
            .sort(doc! { "agg_seq": 1 })
            .await
            .map_err(|e| unavailable("outbox head", &e))?;
        let now = nf.timestamp_millis();
        Ok(match head {
            Some(h)
                if h.available_at.timestamp_millis() <= now
                    && h.lease_until.is_none_or(|u| u.timestamp_millis() <= now)
                    && seen.insert(h.id.clone()) =>
            {
                Ok(h)
            }
            _ => Err(c.aggregate),
        })
    }

    /// Leases the candidate `c` to `owner` until `lease_until` if it is unchanged since it was
    /// read (same `rev`); answers the new lease token, or `None` when another writer came
    /// between.
    async fn lease(
        &self,
        c: &OutboxDoc,
        owner: &str,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<Uuid>, StoreError> {
        let raw = self.coll::<Document>(OUTBOX);
        // A cheap read first: under contention most candidates were just taken by another
        // claimer, and a failed conditional write costs far more than a read.
        let unchanged = raw
            .find_one(doc! { "_id": &c.id, "rev": c.rev })
            .projection(doc! { "_id": 1 })
            .await
            .map_err(|e| unavailable("outbox recheck", &e))?
            .is_some();
        if !unchanged {
            return Ok(None);
        }
        let token = Uuid::new_v4();
        let res = raw
            .update_one(
                doc! { "_id": &c.id, "rev": c.rev },
                doc! {
                    "$set": {
                        "lease_token": token.to_string(),
                        "lease_owner": owner,
                        "lease_until": floor_ms(lease_until),
                    },
                    "$inc": { "rev": 1i64 },
                },
            )
            .await
            .map_err(|e| unavailable("outbox claim", &e))?;
        Ok((res.matched_count == 1).then_some(token))
    }

    /// The rows `taken` (id, lease token) read back in one query, in that order; a row whose
    /// lease was lost again meanwhile is left out.
    async fn read_back(&self, taken: Vec<(String, Uuid)>) -> Result<Vec<OutboxRecord>, StoreError> {
        if taken.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&String> = taken.iter().map(|(id, _)| id).collect();
        let mut rows: HashMap<String, OutboxDoc> = self
            .coll::<OutboxDoc>(OUTBOX)
            .find(doc! { "_id": { "$in": ids } })
            .await
            .map_err(|e| unavailable("outbox read back", &e))?
            .try_collect::<Vec<_>>()
            .await
            .map_err(|e| unavailable("outbox cursor", &e))?
            .into_iter()
            .map(|d| (d.id.clone(), d))
            .collect();
        let mut out = Vec::with_capacity(taken.len());
        for (id, token) in taken {
            let Some(d) = rows.remove(&id) else { continue };
            if d.lease_token.as_deref() == Some(token.to_string().as_str()) {
                out.push(d.into_record()?);
            }
        }
        Ok(out)
    }

    /// Runs a settling update on a row held by `token`; `NotFound` for an unknown id,
    /// `VersionConflict` when the row is not pending or `token` is not its lease token.
    async fn settle(&self, id: OutboxId, token: Uuid, update: Document) -> Result<(), StoreError> {
        let coll = self.coll::<Document>(OUTBOX);
        let res = coll
            .update_one(
                doc! { "_id": id.to_string(), "status": PENDING, "lease_token": token.to_string() },
                bump(update),
            )
            .await
            .map_err(|e| unavailable("outbox settle", &e))?;
        if res.matched_count == 1 {
            return Ok(());
        }
        let exists = coll
            .find_one(doc! { "_id": id.to_string() })
            .projection(doc! { "_id": 1 })
            .await
            .map_err(|e| unavailable("outbox find", &e))?;
        Err(if exists.is_some() {
            StoreError::VersionConflict
        } else {
            StoreError::NotFound
        })
    }
}

#[async_trait]
impl Outbox for MongoStore {
    /// Walks claimable rows (pending, `available_at <= now`, no lease or a lease ending at or
    /// before `now`) oldest first — by `created_at`, then position in the unit of work, then
    /// id — in windows, and takes each row with an atomic compare-and-set `update_one` on
    /// `{_id, rev}` (the revision it was read at, so the row is taken only if nothing touched
    /// it since it was seen claimable), giving it a fresh token and lease.
    ///
    /// Per-aggregate order: before taking a row it checks that no *pending* row of its
    /// aggregate with a smaller `agg_seq` (commit order) exists other than rows taken earlier
    /// in this same claim; otherwise the aggregate is held back for the rest of the claim. A
    /// leased, delayed or concurrently taken older row therefore blocks its successors;
    /// published and parked rows do not. At most `limit + claim_scan_limit` rows are inspected.
    ///
    /// The taken rows are read back in one query and returned in walk order (instants in
    /// milliseconds); a row whose lease was already lost again by then (a lease ending before
    /// the read) is left out.
    async fn claim(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxRecord>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let nf = floor_ms(now);
        // No `$or`: `$not: {$gt}` also matches a null lease, and keeps the filter one
        // predicate per field.
        let claimable = doc! {
            "status": PENDING,
            "available_at": { "$lte": nf },
            "lease_until": { "$not": { "$gt": nf } },
        };
        let window = i64::try_from(limit.saturating_mul(2).clamp(16, 256)).unwrap_or(256);
        let budget = limit.saturating_add(self.config.claim_scan_limit);

        // (row id, token) in walk order.
        let mut taken: Vec<(String, Uuid)> = Vec::new();
        let mut mine: HashMap<String, Vec<String>> = HashMap::new();
        let mut seen: HashSet<String> = HashSet::new();
        let mut blocked: HashSet<String> = HashSet::new();
        let mut scanned = 0usize;

        'walk: while taken.len() < limit && scanned < budget {
            let candidates = self.candidates(&claimable, &blocked, window).await?;
            let mut progressed = false;
            for c in candidates {
                if !seen.insert(c.id.clone()) || blocked.contains(&c.aggregate) {
                    continue;
                }
                progressed = true;
                scanned += 1;
                let ahead: Vec<&String> = mine.get(&c.aggregate).into_iter().flatten().collect();
                let c = match self.in_order(c, &ahead, nf, &mut seen).await? {
                    Ok(row) => row,
                    Err(aggregate) => {
                        blocked.insert(aggregate);
                        continue;
                    }
                };
                if let Some(token) = self.lease(&c, owner, lease_until).await? {
                    mine.entry(c.aggregate).or_default().push(c.id.clone());
                    taken.push((c.id, token));
                    if taken.len() >= limit {
                        break 'walk;
                    }
                } else {
                    // Changed since it was read (most likely taken by another claimer): its
                    // successors must wait for it.
                    blocked.insert(c.aggregate);
                }
                if scanned >= budget {
                    break 'walk;
                }
            }
            if !progressed {
                break;
            }
        }
        self.read_back(taken).await
    }

    /// `NotFound` for an unknown id; `VersionConflict` unless the row is pending and `token`
    /// is its current lease token (an expired lease nobody re-claimed still counts as held).
    async fn mark_published(
        &self,
        id: OutboxId,
        token: Uuid,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut set = released();
        set.insert("status", status_name(OutboxStatus::Published));
        set.insert("published_at", floor_ms(now));
        self.settle(id, token, doc! { "$set": set }).await
    }

    /// Same errors as `mark_published`. `attempts + 1`, `last_error`, lease released,
    /// `available_at = retry_at`.
    async fn mark_failed(
        &self,
        id: OutboxId,
        token: Uuid,
        error: &str,
        retry_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut set = released();
        set.insert("last_error", error);
        set.insert("available_at", floor_ms(retry_at));
        self.settle(
            id,
            token,
            doc! { "$set": set, "$inc": { "attempts": 1i64 } },
        )
        .await
    }

    /// Same errors as `mark_published`. Lease released, `available_at = now`; attempts and
    /// `last_error` untouched.
    async fn release(
        &self,
        id: OutboxId,
        token: Uuid,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut set = released();
        set.insert("available_at", floor_ms(now));
        self.settle(id, token, doc! { "$set": set }).await
    }

    /// Same errors as `mark_published`. `attempts + 1`; the reason goes to `last_error`, `now`
    /// to `parked_at`.
    async fn park(
        &self,
        id: OutboxId,
        token: Uuid,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut set = released();
        set.insert("status", status_name(OutboxStatus::Parked));
        set.insert("last_error", reason);
        set.insert("parked_at", floor_ms(now));
        self.settle(
            id,
            token,
            doc! { "$set": set, "$inc": { "attempts": 1i64 } },
        )
        .await
    }

    /// One `update_many`; redriven rows are claimable at `now`, `last_error` is kept.
    async fn redrive(
        &self,
        tenant: Option<TenantId>,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let mut filter = doc! { "status": status_name(OutboxStatus::Parked) };
        if let Some(t) = tenant {
            filter.insert("tenant", t.as_str());
        }
        let mut set = released();
        set.insert("status", PENDING);
        set.insert("attempts", 0i64);
        set.insert("available_at", floor_ms(now));
        set.insert("parked_at", Bson::Null);
        let res = self
            .coll::<Document>(OUTBOX)
            .update_many(filter, bump(doc! { "$set": set }))
            .await
            .map_err(|e| unavailable("outbox redrive", &e))?;
        Ok(res.modified_count)
    }

    /// One `find` on `{status: parked[, tenant]}` (index `outbox_redrive`), sorted by
    /// `parked_at`, then `created_at`, position and id, all descending (a top-`limit` sort),
    /// reading only the listed fields: the payload never leaves the database.
    async fn list_parked(
        &self,
        tenant: Option<TenantId>,
        limit: usize,
    ) -> Result<Vec<ParkedEvent>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut filter = doc! { "status": status_name(OutboxStatus::Parked) };
        if let Some(t) = tenant {
            filter.insert("tenant", t.as_str());
        }
        self.coll::<ParkedDoc>(OUTBOX)
            .find(filter)
            .projection(ParkedDoc::projection())
            .sort(doc! { "parked_at": -1, "created_at": -1, "pos": -1, "_id": -1 })
            .limit(i64::try_from(limit).unwrap_or(i64::MAX))
            .await
            .map_err(|e| unavailable("outbox parked", &e))?
            .try_collect::<Vec<_>>()
            .await
            .map_err(|e| unavailable("outbox cursor", &e))?
            .into_iter()
            .map(ParkedDoc::into_parked)
            .collect()
    }

    /// Pending counts leased rows too; the oldest age is `now - created_at` in whole seconds,
    /// never negative.
    async fn stats(&self, now: DateTime<Utc>) -> Result<OutboxStats, StoreError> {
        let coll = self.coll::<OutboxDoc>(OUTBOX);
        let count = |status: &'static str| {
            let coll = coll.clone();
            async move {
                coll.count_documents(doc! { "status": status })
                    .await
                    .map_err(|e| unavailable("outbox count", &e))
            }
        };
        let pending = count(PENDING).await?;
        let parked = count(status_name(OutboxStatus::Parked)).await?;
        let oldest = coll
            .find_one(doc! { "status": PENDING })
            .sort(doc! { "created_at": 1 })
            .await
            .map_err(|e| unavailable("outbox oldest", &e))?;
        Ok(OutboxStats {
            pending,
            parked,
            oldest_pending_age_secs: oldest
                .map(|d| (now - from_bson(d.created_at)).num_seconds().max(0)),
        })
    }

    /// Deletes published rows with `published_at < before`. The TTL index does the same on
    /// its own after the configured retention.
    async fn purge_published(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let res = self
            .coll::<Document>(OUTBOX)
            .delete_many(doc! {
                "status": status_name(OutboxStatus::Published),
                "published_at": { "$lt": ceil_ms(before) },
            })
            .await
            .map_err(|e| unavailable("outbox purge", &e))?;
        Ok(res.deleted_count)
    }

    async fn get(&self, id: OutboxId) -> Result<Option<OutboxRecord>, StoreError> {
        self.coll::<OutboxDoc>(OUTBOX)
            .find_one(doc! { "_id": id.to_string() })
            .await
            .map_err(|e| unavailable("outbox get", &e))?
            .map(OutboxDoc::into_record)
            .transpose()
    }
}
