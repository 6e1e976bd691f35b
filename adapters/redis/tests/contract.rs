//! The rate-limiter contract against a real Redis / Valkey: `REDIS_URL`
//! (`redis://127.0.0.1:6379`, exported by `scripts/services.sh env`); skipped with a printed
//! reason when unset, failed when unset under `REPORTER_REQUIRE_SERVICES=1`. Each test counts
//! under its own key prefix.
use reporter_adapter_redis::{RedisConnection, RedisRateLimiter};
use std::time::Duration;

/// `REDIS_URL` as a connection (`redis://host:port[/db]`), or `None` (skipped).
fn connection() -> Option<RedisConnection> {
    let url = reporter_contract::services::service_url("REDIS_URL", "Redis")?;
    let rest = url
        .strip_prefix("redis://")
        .unwrap_or_else(|| panic!("REDIS_URL must be redis://host:port, not {url}"));
    let (addr, db) = rest.split_once('/').unwrap_or((rest, "0"));
    let (host, port) = addr.rsplit_once(':').unwrap_or((addr, "6379"));
    Some(RedisConnection {
        host: host.to_owned(),
        port: port.parse().expect("port"),
        user: None,
        password: None,
        db: db.parse().unwrap_or(0),
        tls: false,
        ca_pem: None,
    })
}

fn limiter(c: &RedisConnection) -> RedisRateLimiter {
    let prefix = format!(
        "{}:",
        reporter_contract::services::unique_name("rl_contract")
    );
    RedisRateLimiter::new(c, Duration::from_secs(5), prefix).expect("client")
}

reporter_contract::rate_limit_contract!(mod rate_limit, |check| async {
    if let Some(c) = connection() {
        check(limiter(&c)).await
    }
});

/// A closed port answers `Unavailable` within the timeout, for a hit and for the check.
#[tokio::test]
async fn an_unreachable_server_is_unavailable_within_the_timeout() {
    let closed = RedisConnection {
        host: "127.0.0.1".into(),
        port: closed_port(),
        user: None,
        password: None,
        db: 0,
        tls: false,
        ca_pem: None,
    };
    let l = RedisRateLimiter::new(&closed, Duration::from_millis(300), "x:").expect("client");
    use reporter_ports::ports::{RateLimitError, RateLimiter};
    let start = std::time::Instant::now();
    let e = l.hit("k", 5, Duration::from_secs(60)).await.unwrap_err();
    assert!(matches!(e, RateLimitError::Unavailable(_)), "{e}");
    assert!(l.check().await.is_err());
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "bounded by the timeout, not a hang"
    );
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}
