//! The deployment database as the application holds it: readiness, files, the transaction
//! check. The application names this type, never a driver type.
use crate::gridfs::GridFsStorage;
use crate::store::check_transaction_support;
use mongodb::bson::doc;
use mongodb::{Client, Database};
use reporter_ports::StoreError;

/// The database a deployment keeps its state (and GridFS its files) in.
#[derive(Clone, Debug)]
pub struct DeploymentDatabase {
    db: Database,
}

impl DeploymentDatabase {
    /// The database `name` of `client`.
    pub fn new(client: &Client, name: &str) -> Self {
        Self {
            db: client.database(name),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        self.db.name()
    }

    /// The driver handle, for this crate's store constructors.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Readiness. MUST answer `Err` with the driver's message when the server does not
    /// answer a `ping`.
    pub async fn ping(&self) -> Result<(), String> {
        self.db
            .run_command(doc! { "ping": 1 })
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Object storage in this database's GridFS.
    pub fn gridfs(&self) -> GridFsStorage {
        GridFsStorage::new(self.db.clone())
    }
}

/// Why [`require_transactions`] refused a server.
#[derive(Debug, thiserror::Error)]
pub enum TransactionCheck {
    /// The server did not answer `hello` (the driver's message).
    #[error("{0}")]
    Unreachable(String),
    /// It answered, and cannot run multi-document transactions (how to fix it).
    #[error(transparent)]
    Unsupported(StoreError),
}

/// Refuses a server that cannot run multi-document transactions (a standalone `mongod`),
/// with a message saying how to fix it: runs `hello` and checks its answer
/// ([`check_transaction_support`]).
pub async fn require_transactions(client: &Client) -> Result<(), TransactionCheck> {
    let hello = client
        .database("admin")
        .run_command(doc! { "hello": 1 })
        .await
        .map_err(|e| TransactionCheck::Unreachable(e.to_string()))?;
    check_transaction_support(&hello).map_err(TransactionCheck::Unsupported)
}
