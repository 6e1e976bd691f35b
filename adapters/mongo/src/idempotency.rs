//! [`MongoIdempotencyStore`]: idempotency reservations and stored responses in one collection.
use crate::error::{duplicate_key_message, is_time_limit, unavailable};
use crate::time::floor_ms;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mongodb::bson::{Binary, Bson, Document, doc, spec::BinarySubtype};
use mongodb::options::{IndexOptions, ReturnDocument};
use mongodb::{Client, Collection, Database, IndexModel};
use reporter_ports::StoreError;
use reporter_ports::ports::{
    IdempotencyBegin, IdempotencyCompletion, IdempotencyOwner, IdempotencyScope, IdempotencyStore,
    StoredResponse,
};
use std::time::Duration;

/// Default collection name.
pub const IDEMPOTENCY_COLLECTION: &str = "idempotency";
/// Name of the TTL index on `expires_at`.
pub const IDEMPOTENCY_TTL_INDEX: &str = "idempotency_expiry_ttl";

const IN_FLIGHT: &str = "in_flight";
const COMPLETED: &str = "completed";
/// `begin` rounds: a record that expires or disappears between the reserve attempt and the
/// read of the holder is retried this many times.
const BEGIN_ROUNDS: usize = 5;
/// The longest `begin` waits for a record another unit of work has locked. A process killed
/// mid-commit leaves its transaction open, holding the record, until the server aborts it
/// (`transactionLifetimeLimitSeconds`, 60 s by default); a write outside a transaction waits
/// for that lock, so without a bound a retry of the dead request's key would hang that long.
pub const BEGIN_LOCK_WAIT: Duration = Duration::from_secs(1);

/// MongoDB implementation of [`IdempotencyStore`].
///
/// One document per scope in collection `idempotency`:
/// `{_id: {tenant, operation, key}, state: "in_flight" | "completed", owner, expires_at, status,
/// content_type, body}`. `expires_at` is the reservation's lease end (renewed by its `owner`)
/// or the response's `expires_at`; a record with `expires_at <= now` counts as free, and the TTL
/// index on `expires_at` (`expireAfterSeconds: 0`) deletes it within the TTL monitor's period
/// (about a minute), so the collection does not grow with old keys.
///
/// `begin` is one atomic `find_one_and_update` with `upsert` on `{_id, expires_at <= now}`:
/// it either takes over a free record or inserts a new one (→ `Started`); when a live record
/// exists the upsert's insert fails with a duplicate `_id`, and the live record is read back
/// (→ `InFlight` or `Completed`). Concurrent `begin`s of one key therefore start it exactly
/// once. A record still locked by an open transaction after [`BEGIN_LOCK_WAIT`] (its request
/// is committing, or its process died mid-commit) is `InFlight` as well: the caller answers
/// at once and retries, rather than waiting for the server to end that transaction.
#[derive(Debug, Clone)]
pub struct MongoIdempotencyStore {
    coll: Collection<Document>,
}

fn owner_str(owner: IdempotencyOwner) -> String {
    owner.0.to_string()
}

/// The filter of `owner`'s reservation of `scope`.
fn held(scope: &IdempotencyScope, owner: IdempotencyOwner) -> Document {
    doc! { "_id": id(scope), "state": IN_FLIGHT, "owner": owner_str(owner) }
}

/// The update that turns a record into the completed `response`.
fn completed(response: StoredResponse, expires_at: DateTime<Utc>) -> Document {
    let body = Binary {
        subtype: BinarySubtype::Generic,
        bytes: response.body,
    };
    doc! {
        "$set": {
            "state": COMPLETED,
            "expires_at": floor_ms(expires_at),
            "status": i32::from(response.status),
            "content_type": response.content_type,
            "body": body,
        },
        "$unset": { "owner": "" },
    }
}

/// (filter, update) that complete `c` inside a unit of work's transaction: the filter matches
/// only while `c.owner` holds the key, so no match means `IdempotencyLost`.
pub(crate) fn completion_write(c: IdempotencyCompletion) -> (Document, Document) {
    (held(&c.scope, c.owner), completed(c.response, c.expires_at))
}

fn id(scope: &IdempotencyScope) -> Document {
    doc! {
        "tenant": scope.tenant.as_str(),
        "operation": &scope.operation,
        "key": &scope.key,
    }
}

fn corrupt() -> StoreError {
    StoreError::Unavailable("mongodb: invalid idempotency record".into())
}

fn response_of(d: &Document) -> Result<StoredResponse, StoreError> {
    let status = match d.get("status") {
        Some(Bson::Int32(s)) => u16::try_from(*s).map_err(|_| corrupt())?,
        Some(Bson::Int64(s)) => u16::try_from(*s).map_err(|_| corrupt())?,
        _ => return Err(corrupt()),
    };
    let content_type = d.get_str("content_type").map_err(|_| corrupt())?.to_owned();
    let body = d.get_binary_generic("body").map_err(|_| corrupt())?.clone();
    Ok(StoredResponse {
        status,
        content_type,
        body,
    })
}

impl MongoIdempotencyStore {
    /// Connects to `uri` and uses collection `idempotency` of `db_name`.
    pub async fn connect(uri: &str, db_name: &str) -> Result<Self, StoreError> {
        let client = Client::with_uri_str(uri)
            .await
            .map_err(|e| unavailable("connect", &e))?;
        Self::new(&client.database(db_name)).await
    }

    /// Uses collection `idempotency` of `db`, creating its TTL index.
    pub async fn new(db: &Database) -> Result<Self, StoreError> {
        Self::with_collection(db, IDEMPOTENCY_COLLECTION).await
    }

    /// Uses collection `name` of `db`, creating its TTL index (idempotent).
    pub async fn with_collection(db: &Database, name: &str) -> Result<Self, StoreError> {
        let coll = db.collection::<Document>(name);
        coll.create_index(
            IndexModel::builder()
                .keys(doc! { "expires_at": 1 })
                .options(
                    IndexOptions::builder()
                        .name(IDEMPOTENCY_TTL_INDEX.to_owned())
                        .expire_after(Duration::ZERO)
                        .build(),
                )
                .build(),
        )
        .await
        .map_err(|e| unavailable("create idempotency TTL index", &e))?;
        Ok(Self { coll })
    }
}

#[async_trait]
impl IdempotencyStore for MongoIdempotencyStore {
    /// Instants are compared in milliseconds: a record is live while `expires_at > now`.
    async fn begin(
        &self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<IdempotencyBegin, StoreError> {
        let now_ms = floor_ms(now);
        for _ in 0..BEGIN_ROUNDS {
            let reserved = self
                .coll
                .find_one_and_update(
                    doc! { "_id": id(scope), "expires_at": { "$lte": now_ms } },
                    doc! {
                        "$set": {
                            "state": IN_FLIGHT,
                            "owner": owner_str(owner),
                            "expires_at": floor_ms(lease_until),
                        },
                        "$unset": { "status": "", "content_type": "", "body": "" },
                    },
                )
                .upsert(true)
                .return_document(ReturnDocument::After)
                .max_time(BEGIN_LOCK_WAIT)
                .await;
            match reserved {
                Ok(Some(_)) => return Ok(IdempotencyBegin::Started),
                Ok(None) => continue,
                Err(e) if duplicate_key_message(&e).is_some() => {}
                Err(e) if is_time_limit(&e) => return Ok(IdempotencyBegin::InFlight),
                Err(e) => return Err(unavailable("idempotency begin", &e)),
            }
            // A live record holds the key: read it.
            let Some(held) = self
                .coll
                .find_one(doc! { "_id": id(scope) })
                .await
                .map_err(|e| unavailable("idempotency read", &e))?
            else {
                continue;
            };
            let live = held
                .get_datetime("expires_at")
                .map_err(|_| corrupt())?
                .timestamp_millis()
                > now_ms.timestamp_millis();
            if !live {
                continue;
            }
            return match held.get_str("state").map_err(|_| corrupt())? {
                IN_FLIGHT => Ok(IdempotencyBegin::InFlight),
                COMPLETED => Ok(IdempotencyBegin::Completed(response_of(&held)?)),
                _ => Err(corrupt()),
            };
        }
        Err(StoreError::Unavailable(
            "idempotency begin: the key kept changing under the reservation".into(),
        ))
    }

    /// Moves the lease end of `owner`'s reservation.
    async fn renew(
        &self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let r = self
            .coll
            .update_one(
                held(scope, owner),
                doc! { "$set": { "expires_at": floor_ms(lease_until) } },
            )
            .await
            .map_err(|e| unavailable("idempotency renew", &e))?;
        Ok(r.matched_count == 1)
    }

    /// Upserts the completed record (whether or not the reservation is still held).
    async fn complete(
        &self,
        scope: &IdempotencyScope,
        response: StoredResponse,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.coll
            .update_one(doc! { "_id": id(scope) }, completed(response, expires_at))
            .upsert(true)
            .await
            .map_err(|e| unavailable("idempotency complete", &e))?;
        Ok(())
    }

    /// Deletes the record only while it is `owner`'s reservation; a completed response stays.
    async fn release(
        &self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
    ) -> Result<(), StoreError> {
        self.coll
            .delete_one(held(scope, owner))
            .await
            .map_err(|e| unavailable("idempotency release", &e))?;
        Ok(())
    }
}
