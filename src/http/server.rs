//! The HTTP server: poem's endpoint served by hyper with the bounds a public port needs
//! (`HttpLimits`): a request head must arrive within `HTTP_HEADER_READ_TIMEOUT_SECONDS` or
//! the connection is closed (hyper's `header_read_timeout`), at most `HTTP_MAX_CONNECTIONS`
//! connections are served at once (more wait in the listen backlog until one closes), and
//! replies are sent without Nagle's delay. The body's time bound is `request_checks`' (`body_limit`).
//!
//! poem's own `Server` exposes neither bound; this is its connection loop with them.
use crate::config::HttpLimits;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use poem::http::uri::Scheme;
use poem::web::{LocalAddr, RemoteAddr};
use poem::{Addr, Endpoint, Response};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Pause after a failed `accept` (e.g. out of descriptors), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves `endpoint` on `listener` until `shutdown` resolves, then lets the open
/// connections finish their requests for at most `grace`.
pub async fn serve<E: Endpoint<Output = Response> + 'static>(
    listener: TcpListener,
    endpoint: E,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) {
    let endpoint = Arc::new(endpoint);
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let builder = Arc::new(builder);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            a = accept(&listener, &permits) => a,
        };
        let Some((stream, remote, permit)) = accepted else {
            continue;
        };
        let endpoint = endpoint.clone();
        let local = listener.local_addr().ok();
        let service =
            hyper::service::service_fn(move |req| respond(endpoint.clone(), local, remote, req));
        let conn = builder
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            ?grace,
            "connections still open after the grace period were cut"
        );
    }
}

/// The next connection, once a permit for it is free; `None` when `accept` failed.
async fn accept(
    listener: &TcpListener,
    permits: &Arc<Semaphore>,
) -> Option<(TcpStream, SocketAddr, OwnedSemaphorePermit)> {
    let permit = permits.clone().acquire_owned().await.ok()?;
    match listener.accept().await {
        Ok((stream, remote)) => {
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!(error = %e, "TCP_NODELAY could not be set");
            }
            Some((stream, remote, permit))
        }
        Err(e) => {
            tracing::warn!(error = %e, "accepting a connection failed");
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            None
        }
    }
}

/// Answers one request of the connection from `local` to `remote` through `endpoint`.
async fn respond<E: Endpoint<Output = Response>>(
    endpoint: Arc<E>,
    local: Option<SocketAddr>,
    remote: SocketAddr,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<
    hyper::Response<impl hyper::body::Body<Data = bytes::Bytes, Error = std::io::Error>>,
    Infallible,
> {
    let local = LocalAddr(local.map(Addr::SocketAddr).unwrap_or_default());
    let remote = RemoteAddr(Addr::SocketAddr(remote));
    let req = poem::Request::from((req, local, remote, Scheme::HTTP));
    Ok(hyper::Response::from(endpoint.get_response(req).await))
}
