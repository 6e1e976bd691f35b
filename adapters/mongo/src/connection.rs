//! [`MongoConnection`]: how the service connects to MongoDB (one [`Client`], one pool, shared
//! by every store, tenant database and GridFS bucket of the process).
use crate::error::unavailable;
use mongodb::Client;
use mongodb::options::{ClientOptions, Tls, TlsOptions};
use reporter_ports::{Secret, StoreError};
use std::path::PathBuf;
use std::time::Duration;

/// Default of [`MongoConnection::server_selection_timeout`] when the connection string does
/// not set `serverSelectionTimeoutMS`: how long an operation waits for a reachable server
/// before it fails (the API then answers 503). The driver's own default is 30 s, too long
/// for an HTTP caller.
pub const DEFAULT_SERVER_SELECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// Default connect timeout when the connection string does not set `connectTimeoutMS`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connection settings. Fields left `None` keep what the connection string says (or the
/// driver's default when it says nothing); fields that are set win over the string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MongoConnection {
    /// A complete `mongodb://` or `mongodb+srv://` connection string (it may hold the
    /// password, so it is a [`Secret`]).
    pub uri: Secret,
    /// Most connections in the pool (`maxPoolSize`).
    pub max_pool_size: Option<u32>,
    /// Connections the pool keeps open (`minPoolSize`).
    pub min_pool_size: Option<u32>,
    /// How long an idle pooled connection is kept (`maxIdleTimeMS`).
    pub max_idle_time: Option<Duration>,
    /// PEM file of the certificate authority; setting it turns TLS on.
    pub tls_ca_file: Option<PathBuf>,
    /// How long an operation waits for a reachable server; `None` keeps the connection
    /// string's `serverSelectionTimeoutMS`, else [`DEFAULT_SERVER_SELECTION_TIMEOUT`].
    pub server_selection_timeout: Option<Duration>,
}

impl MongoConnection {
    /// Settings that only name the connection string.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: Secret::new(uri.into()),
            max_pool_size: None,
            min_pool_size: None,
            max_idle_time: None,
            tls_ca_file: None,
            server_selection_timeout: None,
        }
    }

    /// The driver options: the parsed connection string, then every field that is set.
    ///
    /// MUST return `Unavailable` when the string does not parse or an `mongodb+srv` lookup
    /// fails (the message never contains the password).
    pub async fn client_options(&self) -> Result<ClientOptions, StoreError> {
        let mut opts = ClientOptions::parse(self.uri.expose())
            .await
            .map_err(|e| unavailable("connection string", &e))?;
        if opts.app_name.is_none() {
            opts.app_name = Some("reporter".to_owned());
        }
        if let Some(t) = self.server_selection_timeout {
            opts.server_selection_timeout = Some(t);
        } else if opts.server_selection_timeout.is_none() {
            opts.server_selection_timeout = Some(DEFAULT_SERVER_SELECTION_TIMEOUT);
        }
        if opts.connect_timeout.is_none() {
            opts.connect_timeout = Some(DEFAULT_CONNECT_TIMEOUT);
        }
        if let Some(n) = self.max_pool_size {
            opts.max_pool_size = Some(n);
        }
        if let Some(n) = self.min_pool_size {
            opts.min_pool_size = Some(n);
        }
        if let Some(t) = self.max_idle_time {
            opts.max_idle_time = Some(t);
        }
        if let Some(ca) = &self.tls_ca_file {
            let mut tls = match opts.tls.take() {
                Some(Tls::Enabled(t)) => t,
                _ => TlsOptions::default(),
            };
            tls.ca_file_path = Some(ca.clone());
            opts.tls = Some(Tls::Enabled(tls));
        }
        Ok(opts)
    }

    /// A client with [`MongoConnection::client_options`]. Connecting is lazy: an unreachable
    /// server shows on the first operation, after the server selection timeout.
    pub async fn client(&self) -> Result<Client, StoreError> {
        Client::with_options(self.client_options().await?)
            .map_err(|e| unavailable("client options", &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn set_fields_win_and_unset_ones_keep_the_string() {
        let mut c = MongoConnection::new(
            "mongodb://u:p@127.0.0.1:27017/?maxPoolSize=7&serverSelectionTimeoutMS=900&directConnection=true",
        );
        let o = c.client_options().await.expect("options");
        assert_eq!(o.max_pool_size, Some(7));
        assert_eq!(o.server_selection_timeout, Some(Duration::from_millis(900)));
        assert_eq!(o.connect_timeout, Some(DEFAULT_CONNECT_TIMEOUT));
        assert_eq!(o.app_name.as_deref(), Some("reporter"));
        assert!(o.tls.is_none());

        c.max_pool_size = Some(20);
        c.min_pool_size = Some(2);
        c.max_idle_time = Some(Duration::from_secs(60));
        c.server_selection_timeout = Some(Duration::from_secs(2));
        c.tls_ca_file = Some(PathBuf::from("/etc/ssl/ca.pem"));
        let o = c.client_options().await.expect("options");
        assert_eq!(o.max_pool_size, Some(20));
        assert_eq!(o.min_pool_size, Some(2));
        assert_eq!(o.max_idle_time, Some(Duration::from_secs(60)));
        assert_eq!(o.server_selection_timeout, Some(Duration::from_secs(2)));
        match o.tls {
            Some(Tls::Enabled(t)) => {
                assert_eq!(t.ca_file_path, Some(PathBuf::from("/etc/ssl/ca.pem")));
            }
            other => panic!("TLS not enabled: {other:?}"),
        }
    }

    #[tokio::test]
    async fn the_default_server_selection_timeout_is_short() {
        let o = MongoConnection::new("mongodb://127.0.0.1:27017")
            .client_options()
            .await
            .expect("options");
        assert_eq!(
            o.server_selection_timeout,
            Some(DEFAULT_SERVER_SELECTION_TIMEOUT)
        );
    }

    #[tokio::test]
    async fn a_bad_string_is_unavailable_without_the_password() {
        let err = MongoConnection::new("mongodb://u:secret@/?bogus=")
            .client_options()
            .await
            .expect_err("must not parse");
        assert!(matches!(err, StoreError::Unavailable(_)));
        assert!(!err.to_string().contains("secret"), "{err}");
    }
}
