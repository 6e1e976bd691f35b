//! Mapping driver errors to the ports' errors.
use mongodb::error::{
    Error, ErrorKind, TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT, WriteFailure,
};
use reporter_ports::StoreError;

/// MongoDB's duplicate-key error code.
pub(crate) const DUPLICATE_KEY: i32 = 11000;

/// A driver error as `Unavailable`, with `what` for the logs.
pub(crate) fn unavailable(what: &str, e: &Error) -> StoreError {
    StoreError::Unavailable(format!("mongodb {what}: {e}"))
}

/// The message of a duplicate-key error (code 11000), whatever shape the driver reported it
/// in; `None` for any other error.
pub(crate) fn duplicate_key_message(e: &Error) -> Option<String> {
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(we)) if we.code == DUPLICATE_KEY => {
            Some(we.message.clone())
        }
        ErrorKind::InsertMany(im) => im
            .write_errors
            .as_ref()?
            .iter()
            .find(|we| we.code == DUPLICATE_KEY)
            .map(|we| we.message.clone()),
        ErrorKind::Command(ce) if ce.code == DUPLICATE_KEY => Some(ce.message.clone()),
        _ => None,
    }
}

/// The server error code, when the error carries one.
pub(crate) fn code(e: &Error) -> Option<i32> {
    match e.kind.as_ref() {
        ErrorKind::Command(ce) => Some(ce.code),
        ErrorKind::Write(WriteFailure::WriteError(we)) => Some(we.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(wc)) => Some(wc.code),
        _ => None,
    }
}

/// MongoDB's `MaxTimeMSExpired` error code.
pub(crate) const MAX_TIME_MS_EXPIRED: i32 = 50;

/// True when the operation ran out of its `maxTimeMS` (e.g. waiting for a record another
/// transaction holds).
pub(crate) fn is_time_limit(e: &Error) -> bool {
    code(e) == Some(MAX_TIME_MS_EXPIRED)
}

/// True when the whole transaction may be retried.
pub(crate) fn is_transient(e: &Error) -> bool {
    e.contains_label(TRANSIENT_TRANSACTION_ERROR)
}

/// True when a commit's outcome is unknown and the commit may be retried.
pub(crate) fn is_unknown_commit(e: &Error) -> bool {
    e.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
}

/// True when no server could be selected: the driver already waited its server selection
/// timeout, so retrying only multiplies the caller's wait during an outage.
pub(crate) fn is_unreachable(e: &Error) -> bool {
    matches!(e.kind.as_ref(), ErrorKind::ServerSelection { .. })
}
