//! What the HTTP figures share: a server child process (the release `reporter serve`, or the
//! bare poem baseline) on a free loopback port, a minimal HTTP/1.1 client for setting it up,
//! `wrk` runs and how their output reads, and a process's RSS from `/proc`.
pub use crate::cpu::cpu_seconds;
use crate::harness::Ctx;
use anyhow::Context;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The HS256 secret every figure's `reporter serve` (and the bare poem + JWT baseline) checks.
pub use crate::bench_auth::{SECRET, token};

/// The variables that would make `reporter serve` take its jobs from RabbitMQ instead of its
/// in-process queue; removed from every figure's `reporter serve` (a figure that wants one
/// sets it in its own environment).
const JOB_QUEUE_VARS: [&str; 2] = ["RABBITMQ_URI", "RABBITMQ_HOST"];

/// A server child process listening on `addr`, killed when dropped.
pub struct Server {
    child: Child,
    /// `127.0.0.1:port`.
    pub addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Spawns `cmd` (which must listen on `addr`) and waits up to 30 s until it accepts.
    pub fn spawn(mut cmd: Command, addr: String) -> anyhow::Result<Self> {
        cmd.stdout(Stdio::null()).stderr(Stdio::inherit());
        let mut s = Self {
            child: cmd.spawn().context("spawning a server")?,
            addr,
        };
        let started = Instant::now();
        while TcpStream::connect(&s.addr).is_err() {
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(30),
                "the server did not listen on {}",
                s.addr
            );
            if let Some(status) = s.child.try_wait()? {
                anyhow::bail!("the server exited: {status}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(s)
    }

    /// The release `reporter serve` (state and job queue in memory, auth on with [`SECRET`], errors only
    /// logged unless `BENCH_REPORTER_LOG_LEVEL` says otherwise, e.g. `info` for the phases of
    /// each report) with the extra environment `env`.
    pub fn reporter(ctx: &Ctx, env: &[(&str, String)]) -> anyhow::Result<Self> {
        let addr = free_addr();
        let mut c = Command::new(&ctx.reporter_bin);
        // The in-process job queue, whatever the caller's environment says: with RABBITMQ_URI
        // inherited (the test services' shared broker) the jobs would go to a queue other
        // processes consume too, and a report could wait forever for a job taken elsewhere.
        for var in JOB_QUEUE_VARS {
            c.env_remove(var);
        }
        c.arg("serve")
            .env("SERVER_ADDRESS", &addr)
            .env("AUTH_JWT_SECRET", SECRET)
            .env(
                "LOG_LEVEL",
                std::env::var("BENCH_REPORTER_LOG_LEVEL").unwrap_or_else(|_| "error".into()),
            );
        for (k, v) in env {
            c.env(k, v);
        }
        Self::spawn(c, addr)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Authorization: Bearer …` request to this server; see [`http`].
    pub fn call(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> anyhow::Result<(u16, Vec<u8>)> {
        http(&self.addr, method, path, content_type, body)
    }
}

/// A free loopback address.
pub fn free_addr() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(4099);
    format!("127.0.0.1:{port}")
}

/// One HTTP/1.1 request with a bearer token for [`SECRET`] (`Connection: close`, 60 s
/// timeout): the status and the body (a `Content-Length` or chunked body, or up to EOF).
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> anyhow::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\n",
        token()?,
        body.len()
    );
    if let Some(ct) = content_type {
        head.push_str(&format!("Content-Type: {ct}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> anyhow::Result<(u16, Vec<u8>)> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no end of the response head")?;
    let head = std::str::from_utf8(&raw[..end])?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no status in the response")?;
    let rest = &raw[end + 4..];
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    if !chunked {
        return Ok((status, rest.to_vec()));
    }
    let (mut body, mut at) = (Vec::new(), 0);
    loop {
        let eol = rest[at..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .context("truncated chunk")?;
        let size = usize::from_str_radix(std::str::from_utf8(&rest[at..at + eol])?.trim(), 16)?;
        at += eol + 2;
        if size == 0 {
            return Ok((status, body));
        }
        body.extend_from_slice(rest.get(at..at + size).context("truncated chunk")?);
        at += size + 2;
    }
}

/// What one `wrk` run measured.
#[derive(Debug, Clone, Copy)]
pub struct WrkRun {
    /// Requests per second.
    pub rps: f64,
    /// 99th percentile latency.
    pub p99_ms: f64,
}

/// `wrk -t2 -c32 -d<secs>s --latency` on `url` with the lua `script` (which sets the method,
/// headers and body); fails when any answer was not 2xx.
pub fn wrk(ctx: &Ctx, script: &str, url: &str, secs: u64) -> anyhow::Result<WrkRun> {
    let path: PathBuf = std::env::temp_dir().join(format!(
        "reporter-bench-{}-{}.lua",
        std::process::id(),
        uuid::Uuid::now_v7().simple()
    ));
    std::fs::write(&path, script)?;
    let out = Command::new(&ctx.wrk)
        .args(["-t2", "-c32", &format!("-d{secs}s"), "--latency", "-s"])
        .arg(&path)
        .arg(url)
        .output();
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&out?.stdout).into_owned();
    let (rps, p99_ms, non2xx) = parse_wrk(&text)?;
    anyhow::ensure!(non2xx == 0, "{non2xx} answers were not 2xx:\n{text}");
    Ok(WrkRun { rps, p99_ms })
}

/// Parses `wrk --latency` output: (req/s, p99 ms, non-2xx count).
pub fn parse_wrk(out: &str) -> anyhow::Result<(f64, f64, u64)> {
    let rps = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .ok_or_else(|| anyhow::anyhow!("no Requests/sec in wrk output:\n{out}"))?;
    let p99 = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("99%"))
        .map(str::trim)
        .and_then(duration_ms)
        .ok_or_else(|| anyhow::anyhow!("no 99% latency in wrk output:\n{out}"))?;
    let non2xx = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Non-2xx or 3xx responses:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    Ok((rps, p99, non2xx))
}

fn duration_ms(v: &str) -> Option<f64> {
    let (num, unit) = v.split_at(v.find(|c: char| c.is_ascii_alphabetic())?);
    let n: f64 = num.parse().ok()?;
    Some(match unit {
        "us" => n / 1000.0,
        "ms" => n,
        "s" => n * 1000.0,
        "m" => n * 60_000.0,
        _ => return None,
    })
}

/// A `/proc/<pid>/status` field in kB (`VmHWM`: peak RSS, `VmRSS`: RSS now), as MB.
pub fn status_mb(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Peak RSS (`VmHWM`) of the process, MB.
pub fn peak_rss_mb(pid: u32) -> f64 {
    status_mb(pid, "VmHWM")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk_output_is_read() {
        let out = "Running 3s test @ http://127.0.0.1:1/v1/deadlines
  Latency Distribution
     50%    1.20ms
     75%    2.00ms
     90%    3.10ms
     99%   12.34ms
  36000 requests in 3.00s, 10.00MB read
Requests/sec:  12000.50
Transfer/sec:      3.33MB
";
        let (rps, p99, non) = parse_wrk(out).unwrap();
        assert_eq!(rps, 12000.5);
        assert_eq!(p99, 12.34);
        assert_eq!(non, 0);
        assert_eq!(duration_ms("850.00us"), Some(0.85));
        assert_eq!(duration_ms("1.50s"), Some(1500.0));
        assert!(parse_wrk("nothing").is_err());
    }

    #[test]
    fn responses_are_read_plain_and_chunked() {
        let plain = b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(parse_response(plain).unwrap(), (201, b"{}".to_vec()));
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked).unwrap(), (200, b"abcde".to_vec()));
    }
}
