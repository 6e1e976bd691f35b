//! A stand-in OTLP/HTTP receiver for the telemetry figures (`telemetry-cost`, `request-cpu`):
//! reads each export request of a connection and answers `200` with no body, keeping nothing.
use std::io::{BufRead, BufReader, Read, Write};

/// A local OTLP/HTTP receiver on its own thread: answers 200 to every export after reading
/// its body. Its URL.
pub fn sink() -> anyhow::Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || receive(conn));
        }
    });
    Ok(format!("http://{addr}"))
}

/// Reads the exports of one connection, answering each.
fn receive(conn: std::net::TcpStream) {
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    let mut body = Vec::new();
    loop {
        let mut length = 0usize;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        // One buffer for every export of the connection: a receiver that drops what it reads
        // need not page in a new one each time (its cost is the machine's, not the service's).
        body.resize(length, 0);
        if reader.read_exact(&mut body).is_err()
            || out
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .is_err()
        {
            return;
        }
    }
}
