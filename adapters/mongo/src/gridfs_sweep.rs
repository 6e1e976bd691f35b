//! The sweep of [`GridFsStorage`](crate::GridFsStorage): chunks of uploads that never wrote
//! their `files` document (the writer died before commit, abort or drop).
use crate::error::unavailable;
use futures_util::TryStreamExt;
use mongodb::Database;
use mongodb::bson::{Bson, Document, doc, oid::ObjectId};
use reporter_ports::StoreError;
use std::time::{Duration, SystemTime};

/// File ids checked against the `files` collection at once.
const BATCH: usize = 500;

/// The smallest ObjectId of second `secs`: ids below it were made before it.
fn first_id_of(secs: u32) -> ObjectId {
    let mut bytes = [0u8; 12];
    bytes[..4].copy_from_slice(&secs.to_be_bytes());
    ObjectId::from_bytes(bytes)
}

/// The cutoff id for uploads started more than `older_than` ago (by the id's time, which
/// the writer's driver takes from its clock when the upload starts).
fn cutoff_id(older_than: Duration) -> ObjectId {
    let cutoff = SystemTime::now()
        .checked_sub(older_than)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let secs = cutoff
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    first_id_of(u32::try_from(secs).unwrap_or(u32::MAX))
}

/// Deletes the chunks of bucket `bucket` whose file (`files_id`, an ObjectId of an upload
/// started before the cutoff) has no `files` document. Answers how many such files' chunks
/// were deleted. Reads every distinct `files_id` older than the cutoff (the `files_id_1_n_1`
/// index GridFS creates), so it costs a pass over the bucket's older files.
pub(crate) async fn sweep_orphan_chunks(
    db: &Database,
    bucket: &str,
    older_than: Duration,
) -> Result<u64, StoreError> {
    let chunks = db.collection::<Document>(&format!("{bucket}.chunks"));
    let files = db.collection::<Document>(&format!("{bucket}.files"));
    let mut ids = chunks
        .aggregate([
            doc! { "$match": { "files_id": { "$lt": cutoff_id(older_than) } } },
            doc! { "$group": { "_id": "$files_id" } },
        ])
        .await
        .map_err(|e| unavailable("gridfs sweep: list chunks", &e))?;
    let mut removed = 0;
    let mut batch: Vec<Bson> = Vec::with_capacity(BATCH);
    loop {
        let next = ids
            .try_next()
            .await
            .map_err(|e| unavailable("gridfs sweep: chunk cursor", &e))?;
        if let Some(id) = next.as_ref().and_then(|d| d.get("_id")) {
            batch.push(id.clone());
        }
        if batch.len() == BATCH || (next.is_none() && !batch.is_empty()) {
            removed += remove_orphans(&chunks, &files, std::mem::take(&mut batch)).await?;
        }
        if next.is_none() {
            return Ok(removed);
        }
    }
}

/// Deletes the chunks of each file of `ids` that has no `files` document.
async fn remove_orphans(
    chunks: &mongodb::Collection<Document>,
    files: &mongodb::Collection<Document>,
    ids: Vec<Bson>,
) -> Result<u64, StoreError> {
    let present: Vec<Bson> = files
        .find(doc! { "_id": { "$in": ids.clone() } })
        .projection(doc! { "_id": 1 })
        .await
        .map_err(|e| unavailable("gridfs sweep: list files", &e))?
        .try_collect::<Vec<Document>>()
        .await
        .map_err(|e| unavailable("gridfs sweep: files cursor", &e))?
        .into_iter()
        .filter_map(|d| d.get("_id").cloned())
        .collect();
    let mut removed = 0;
    for id in ids.into_iter().filter(|id| !present.contains(id)) {
        let deleted = chunks
            .delete_many(doc! { "files_id": id.clone() })
            .await
            .map_err(|e| unavailable("gridfs sweep: delete chunks", &e))?;
        if deleted.deleted_count > 0 {
            tracing::info!(files_id = %id, chunks = deleted.deleted_count, "chunks of an abandoned GridFS upload removed");
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cutoff_id_orders_before_ids_of_its_second_and_after() {
        let now = ObjectId::new();
        assert!(cutoff_id(Duration::from_secs(5)) < now);
        assert!(cutoff_id(Duration::ZERO) <= now);
        assert!(
            cutoff_id(Duration::from_secs(5))
                > first_id_of(now.timestamp().timestamp_millis() as u32 / 1000 - 10)
        );
        assert_eq!(first_id_of(7).timestamp().timestamp_millis(), 7_000);
        assert_eq!(cutoff_id(Duration::MAX), first_id_of(0));
    }
}
