//! Redis / Valkey adapter of the [`RateLimiter`] port: each request is counted by one Lua
//! script (`INCR`, then `PEXPIRE` when the key has no expiry yet, then `PTTL`), which Redis
//! runs atomically, so every API process sharing the server shares one budget per key and
//! no two processes can both take the last request of a window.
//!
//! The connection is opened on first use and re-opened by the client's connection manager
//! after a failure; every call is bounded by the configured timeout, so an unreachable
//! server costs a request at most that long and answers [`RateLimitError::Unavailable`].
use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use reporter_ports::Secret;
use reporter_ports::ports::{RateDecision, RateLimitError, RateLimiter};
use std::time::Duration;
use tokio::sync::OnceCell;

/// Where the Redis server is and how to reach it (the original's `REDIS_*` settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConnection {
    /// Host name or IP address.
    pub host: String,
    /// Port.
    pub port: u16,
    /// ACL user (`REDIS_USER`), when set.
    pub user: Option<String>,
    /// Password (`REDIS_PASSWORD`), when set.
    pub password: Option<Secret>,
    /// Logical database (`REDIS_DB`).
    pub db: u32,
    /// TLS (`rediss://`).
    pub tls: bool,
    /// PEM of the certificate authority to trust instead of the bundled web roots.
    pub ca_pem: Option<Vec<u8>>,
}

impl RedisConnection {
    /// The connection URL (it may hold the password: never log it).
    fn url(&self) -> String {
        let enc = |s: &str| {
            s.bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                        (b as char).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect::<String>()
        };
        let credentials = match (&self.user, &self.password) {
            (Some(u), Some(p)) => format!("{}:{}@", enc(u), enc(p.expose())),
            (None, Some(p)) => format!(":{}@", enc(p.expose())),
            (Some(u), None) => format!("{}@", enc(u)),
            (None, None) => String::new(),
        };
        let scheme = if self.tls { "rediss" } else { "redis" };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{scheme}://{credentials}{host}:{}/{}", self.port, self.db)
    }

    /// `host:port` for messages (never credentials).
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// The counting script: KEYS[1] the counter, ARGV[1] the window in milliseconds. Returns
/// the count (this request included) and the milliseconds left in the window.
const SCRIPT: &str = r"
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
";

/// Fixed-window counters in Redis, keys `<prefix><key>`.
pub struct RedisRateLimiter {
    client: redis::Client,
    connection: OnceCell<ConnectionManager>,
    timeout: Duration,
    prefix: String,
    script: redis::Script,
    address: String,
}

impl std::fmt::Debug for RedisRateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRateLimiter")
            .field("address", &self.address)
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisRateLimiter {
    /// A limiter on `connection`, each call bounded by `timeout`, its keys under `prefix`.
    /// Connects on first use (a server down at start-up is not an error here).
    ///
    /// # Errors
    /// When the settings do not make a valid client (a bad CA certificate).
    pub fn new(
        connection: &RedisConnection,
        timeout: Duration,
        prefix: impl Into<String>,
    ) -> Result<Self, RateLimitError> {
        let url = connection.url();
        let client = match &connection.ca_pem {
            Some(pem) if connection.tls => redis::Client::build_with_tls(
                url.as_str(),
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem.clone()),
                },
            ),
            _ => redis::Client::open(url.as_str()),
        }
        .map_err(|e| RateLimitError::Unavailable(format!("redis client: {}", e.kind_text())))?;
        Ok(Self {
            client,
            connection: OnceCell::new(),
            timeout,
            prefix: prefix.into(),
            script: redis::Script::new(SCRIPT),
            address: connection.address(),
        })
    }

    /// The server's `host:port`.
    pub fn address(&self) -> &str {
        &self.address
    }

    async fn connection(&self) -> Result<ConnectionManager, RateLimitError> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
            .set_number_of_retries(1);
        self.connection
            .get_or_try_init(|| async {
                ConnectionManager::new_with_config(self.client.clone(), config)
                    .await
                    .map_err(|e| self.unavailable(&e))
            })
            .await
            .cloned()
    }

    fn unavailable(&self, e: &redis::RedisError) -> RateLimitError {
        RateLimitError::Unavailable(format!("redis at {}: {}", self.address, e.kind_text()))
    }

    fn timed_out(&self) -> RateLimitError {
        RateLimitError::Unavailable(format!(
            "redis at {}: no answer within {} ms",
            self.address,
            self.timeout.as_millis()
        ))
    }
}

/// A short description of a Redis error without its detail (which may echo a URL).
trait KindText {
    fn kind_text(&self) -> String;
}

impl KindText for redis::RedisError {
    fn kind_text(&self) -> String {
        if self.is_timeout() {
            "timed out".to_owned()
        } else if self.is_connection_refusal() {
            "connection refused".to_owned()
        } else if self.is_io_error() || self.is_connection_dropped() {
            "connection failed".to_owned()
        } else {
            format!("{:?}", self.kind())
        }
    }
}

#[async_trait]
impl RateLimiter for RedisRateLimiter {
    async fn hit(
        &self,
        key: &str,
        limit: u32,
        window: Duration,
    ) -> Result<RateDecision, RateLimitError> {
        let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX).max(1);
        let work = async {
            let mut conn = self.connection().await?;
            let (count, ttl_ms): (u64, i64) = self
                .script
                .key(format!("{}{key}", self.prefix))
                .arg(window_ms)
                .invoke_async(&mut conn)
                .await
                .map_err(|e| self.unavailable(&e))?;
            Ok::<_, RateLimitError>((count, ttl_ms))
        };
        let (count, ttl_ms) = tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| self.timed_out())??;
        let left = u64::try_from(ttl_ms)
            .unwrap_or(window_ms)
            .clamp(1, window_ms);
        Ok(RateDecision {
            allowed: count <= u64::from(limit),
            count,
            reset_after: Duration::from_millis(left),
        })
    }

    async fn check(&self) -> Result<(), RateLimitError> {
        let work = async {
            let mut conn = self.connection().await?;
            redis::cmd("PING")
                .query_async::<String>(&mut conn)
                .await
                .map(|_| ())
                .map_err(|e| self.unavailable(&e))
        };
        tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| self.timed_out())?
    }

    fn backend(&self) -> &'static str {
        "redis"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_encodes_credentials_and_picks_the_scheme() {
        let mut c = RedisConnection {
            host: "cache".into(),
            port: 6380,
            user: Some("app".into()),
            password: Some(Secret::from("p@ss:w/rd")),
            db: 2,
            tls: true,
            ca_pem: None,
        };
        assert_eq!(c.url(), "rediss://app:p%40ss%3Aw%2Frd@cache:6380/2");
        c.user = None;
        c.tls = false;
        assert_eq!(c.url(), "redis://:p%40ss%3Aw%2Frd@cache:6380/2");
        assert_eq!(c.address(), "cache:6380");
    }
}
