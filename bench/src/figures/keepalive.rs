//! A minimal keep-alive HTTP/1.1 load driver: a fixed list of requests sent over a few
//! persistent connections, each connection one request at a time. Exact request counts (what
//! `wrk`, which runs for a duration, cannot give) at little cost to the process measured: no
//! connection set-up per request.
use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One request: method, path and JSON body (empty for none).
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `POST`, `PATCH`, …
    pub method: &'static str,
    /// Path and query.
    pub path: String,
    /// JSON body.
    pub body: String,
}

/// One persistent connection with a bearer token.
struct Conn {
    stream: TcpStream,
    head: String,
    buf: Vec<u8>,
}

impl Conn {
    async fn open(addr: &str, token: &str) -> anyhow::Result<Self> {
        let stream = TcpStream::connect(addr)
            .await
            .with_context(|| format!("connecting to {addr}"))?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            head: format!("Host: {addr}\r\nAuthorization: Bearer {token}\r\n"),
            buf: Vec::with_capacity(16 * 1024),
        })
    }

    /// Sends `r` and reads its answer: the status and the body.
    async fn send(&mut self, r: &Request) -> anyhow::Result<(u16, Vec<u8>)> {
        let mut out = format!("{} {} HTTP/1.1\r\n{}", r.method, r.path, self.head);
        if !r.body.is_empty() {
            out.push_str("Content-Type: application/json\r\n");
        }
        out.push_str(&format!("Content-Length: {}\r\n\r\n", r.body.len()));
        out.push_str(&r.body);
        self.stream.write_all(out.as_bytes()).await?;
        loop {
            if let Some(answer) = take_response(&mut self.buf)? {
                return Ok(answer);
            }
            let mut chunk = [0u8; 16 * 1024];
            let n = self.stream.read(&mut chunk).await?;
            anyhow::ensure!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Takes one complete response (with a `Content-Length` body) off the front of `buf`; `None`
/// while it is incomplete. Fails on a response without `Content-Length` (chunked answers are
/// not expected from the JSON endpoints driven here).
fn take_response(buf: &mut Vec<u8>) -> anyhow::Result<Option<(u16, Vec<u8>)>> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = std::str::from_utf8(&buf[..end])?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no status in the response")?;
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .with_context(|| format!("no Content-Length in the response head:\n{head}"))?;
    let total = end + 4 + length;
    if buf.len() < total {
        return Ok(None);
    }
    let body = buf[end + 4..total].to_vec();
    buf.drain(..total);
    Ok(Some((status, body)))
}

/// Sends every request of `requests` to `addr` over `connections` persistent connections
/// (request `i` on connection `i % connections`, each connection in order), with a bearer
/// token, at `rate` requests per second in all when given (each connection paced at its share,
/// late ticks caught up at once, so the average holds at the timer's 1 ms grain). Answers the
/// bodies in request order; fails on the first answer that is not 2xx.
pub async fn drive(
    addr: &str,
    token: &str,
    requests: Vec<Request>,
    connections: usize,
    rate: Option<f64>,
) -> anyhow::Result<Vec<Vec<u8>>> {
    let connections = connections.max(1);
    let n = requests.len();
    let mut lanes: Vec<Vec<(usize, Request)>> = (0..connections).map(|_| Vec::new()).collect();
    for (i, r) in requests.into_iter().enumerate() {
        lanes[i % connections].push((i, r));
    }
    let mut tasks = Vec::with_capacity(connections);
    for lane in lanes {
        let (addr, token) = (addr.to_owned(), token.to_owned());
        let mut pace = rate.filter(|r| *r > 0.0).map(|r| {
            let mut tick =
                tokio::time::interval(std::time::Duration::from_secs_f64(connections as f64 / r));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            tick
        });
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::open(&addr, &token).await?;
            let mut bodies = Vec::with_capacity(lane.len());
            for (i, r) in lane {
                if let Some(tick) = pace.as_mut() {
                    tick.tick().await;
                }
                let (status, body) = conn.send(&r).await?;
                anyhow::ensure!(
                    (200..300).contains(&status),
                    "{} {} answered {status}: {}",
                    r.method,
                    r.path,
                    String::from_utf8_lossy(&body)
                );
                bodies.push((i, body));
            }
            anyhow::Ok(bodies)
        }));
    }
    let mut out = vec![Vec::new(); n];
    for t in tasks {
        for (i, body) in t.await?? {
            out[i] = body;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_taken_whole_and_in_turn() {
        let mut buf = b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab".to_vec();
        assert_eq!(
            take_response(&mut buf).unwrap(),
            Some((201, b"{}".to_vec()))
        );
        assert_eq!(take_response(&mut buf).unwrap(), None, "body incomplete");
        buf.extend_from_slice(b"cde");
        assert_eq!(
            take_response(&mut buf).unwrap(),
            Some((200, b"abcde".to_vec()))
        );
        assert!(buf.is_empty());
        let mut chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec();
        assert!(take_response(&mut chunked).is_err());
    }
}
