//! Findings of the security probe (issue 30) tried against the released binary, as an
//! attacker would: no token, only the port.
use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// `reporter serve` in memory on a free port with `env`, killed when dropped.
fn serve(env: &[(&str, &str)]) -> common::served::IsolatedServe {
    common::served::IsolatedServe::start(env)
}

/// One keep-alive connection sending requests one after another.
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    fn open(addr: &str) -> Self {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("a read timeout");
        s.set_nodelay(true).expect("TCP_NODELAY");
        Self {
            writer: s.try_clone().expect("clone"),
            reader: BufReader::new(s),
        }
    }

    /// `GET path`: the status and the body.
    fn get(&mut self, path: &str) -> (u16, Vec<u8>) {
        // One write: a request cut into several small segments waits on the peer's delayed
        // acknowledgement (Nagle) for each.
        let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
        self.writer.write_all(request.as_bytes()).expect("send");
        let mut status_line = String::new();
        self.reader
            .read_line(&mut status_line)
            .expect("status line");
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("status line {status_line:?}"));
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).expect("header");
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().expect("a length");
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).expect("body");
        (status, body)
    }
}

/// A path no route serves, different for every `n` (as the probe sent them).
fn unknown_path(n: usize) -> String {
    let segment = format!("{n:0>39}");
    format!("/v1/{n}/{}", vec![segment.as_str(); 20].join("/"))
}

/// Finding 1: every label of the request metrics comes from a closed set, so 10,000 distinct
/// unknown paths, sent without a token, leave `/metrics` and the memory as they were.
#[test]
fn unknown_paths_leave_the_metrics_and_the_memory_as_they_were() {
    let s = serve(&[]);
    let mut conn = Conn::open(&s.addr);
    // Warm up: the `unmatched` and `/metrics` series, the connection's buffers, the
    // allocator's pools.
    for n in 0..500 {
        assert_eq!(conn.get(&unknown_path(n)).0, 404);
    }
    assert_eq!(conn.get("/metrics").0, 200);
    let metrics_before = conn.get("/metrics").1.len();
    let rss_before = s.rss();
    for n in 500..10_500 {
        assert_eq!(conn.get(&unknown_path(n)).0, 404);
    }
    let (status, metrics) = conn.get("/metrics");
    assert_eq!(status, 200);
    let text = String::from_utf8_lossy(&metrics);
    let grown = metrics.len().saturating_sub(metrics_before);
    let rss_grown = s.rss().saturating_sub(rss_before);
    reporter_contract::figure!(
        "HARDENING unknown paths: 10,000 sent, /metrics {metrics_before} -> {} bytes, RSS +{} KiB",
        metrics.len(),
        rss_grown / 1024
    );
    assert!(
        grown < 512,
        "/metrics grew by {grown} bytes with 10,000 unknown paths"
    );
    assert!(
        text.contains(r#"route="unmatched""#),
        "the unknown paths are counted under one label:\n{text}"
    );
    assert!(
        !text.contains(&format!("{:0>39}", 600)),
        "no path text reaches a label"
    );
    assert!(
        rss_grown < 16 * 1024 * 1024,
        "the RSS grew by {} KiB with 10,000 unknown paths",
        rss_grown / 1024
    );
}

/// Reads until the server closes the connection or `limit` passes: what it sent, and whether
/// it closed.
fn read_until_closed(s: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    let started = std::time::Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("a read timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while started.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return (got, true),
        }
    }
    (got, false)
}

/// Finding 8: a client sending its request head slowly is cut off after
/// `HTTP_HEADER_READ_TIMEOUT_SECONDS`, whatever it keeps sending.
#[test]
fn a_slow_request_head_is_cut_off() {
    let s = serve(&[("HTTP_HEADER_READ_TIMEOUT_SECONDS", "1")]);
    let mut conn = TcpStream::connect(&s.addr).expect("connect");
    conn.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        .expect("the start of a head");
    let started = std::time::Instant::now();
    let mut closed = false;
    // One header byte every 200 ms, for 10 s at most: the head never completes.
    for _ in 0..50 {
        if conn.write_all(b"X").is_err() {
            closed = true;
            break;
        }
        let (_, done) = read_until_closed(&mut conn, Duration::from_millis(200));
        if done {
            closed = true;
            break;
        }
    }
    assert!(
        closed,
        "the connection stayed open for 10 s of a trickled head"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "cut off after {:?}",
        started.elapsed()
    );
}

/// Finding 8: a body that does not arrive within `HTTP_BODY_READ_TIMEOUT_SECONDS` answers 408
/// `TPL-0408` (the caller's token and scope were checked first).
#[test]
fn a_slow_request_body_answers_408() {
    let s = serve(&[("HTTP_BODY_READ_TIMEOUT_SECONDS", "1")]);
    let token = common::token();
    let mut conn = TcpStream::connect(&s.addr).expect("connect");
    let head = format!(
        "POST /v1/deadlines HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"name\":"
    );
    conn.write_all(head.as_bytes())
        .expect("the head and a part of the body");
    let (answer, _) = read_until_closed(&mut conn, Duration::from_secs(10));
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("TPL-0408"), "{answer}");
}

/// Finding 8: at most `HTTP_MAX_CONNECTIONS` connections are served at once; one more waits
/// until another closes, then is served.
#[test]
fn connections_over_the_limit_wait_for_a_free_one() {
    let s = serve(&[
        ("HTTP_MAX_CONNECTIONS", "2"),
        ("HTTP_HEADER_READ_TIMEOUT_SECONDS", "60"),
    ]);
    let mut held: Vec<Conn> = (0..2).map(|_| Conn::open(&s.addr)).collect();
    for c in &mut held {
        assert_eq!(c.get("/health").0, 200);
    }
    let mut third = TcpStream::connect(&s.addr).expect("the kernel's backlog takes it");
    third
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("a request");
    let (early, _) = read_until_closed(&mut third, Duration::from_secs(1));
    assert!(
        early.is_empty(),
        "a third connection was served while two were open: {}",
        String::from_utf8_lossy(&early)
    );
    held.pop();
    let (answer, _) = read_until_closed(&mut third, Duration::from_secs(10));
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}
