//! A minimal Chrome DevTools Protocol client: launch headless Chromium, talk JSON-RPC over
//! its browser websocket, multiplexing flattened target sessions by id.
use futures_util::{SinkExt, StreamExt};
use reporter_ports::ports::PdfError;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// Largest websocket message accepted (a printed PDF comes back base64 in one message).
const MAX_MESSAGE: usize = 512 * 1024 * 1024;

type Reply = Result<Value, String>;
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Reply>>>>;

/// One running Chromium and its DevTools connection. Dropping it kills the process and
/// removes its profile directory.
pub(crate) struct Browser {
    child: tokio::sync::Mutex<Child>,
    _profile: tempfile::TempDir,
    out: mpsc::UnboundedSender<Message>,
    pending: Pending,
    next_id: AtomicU64,
    closed: Arc<AtomicBool>,
}

fn unavailable(msg: impl std::fmt::Display) -> PdfError {
    PdfError::Unavailable(msg.to_string())
}

fn lock(p: &Pending) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Reply>>> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// Spawns chromium headless on a private profile, DevTools on a free port, stderr piped (it
/// announces the DevTools address there).
fn spawn_chromium(path: &Path, profile: &Path) -> Result<Child, PdfError> {
    chromium_command(path, profile)
        .spawn()
        .map_err(|e| unavailable(format!("cannot start {}: {e}", path.display())))
}

/// The command of a headless Chromium on `profile`. Its `TMPDIR` is the profile too: with
/// `--disable-dev-shm-usage` Chromium keeps its shared memory in `org.chromium.Chromium.*`
/// files of the temporary directory, which a killed browser never removes; under the
/// profile they go with it.
fn chromium_command(path: &Path, profile: &Path) -> Command {
    let mut command = Command::new(path);
    command
        .env("TMPDIR", profile)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            "--mute-audio",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// The DevTools address chromium prints on stderr.
///
/// MUST answer `Unavailable` with the last lines seen when stderr ends first.
async fn devtools_url<R>(lines: &mut tokio::io::Lines<R>) -> Result<String, PdfError>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    let mut seen = std::collections::VecDeque::new();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => {
                if let Some(url) = line.split("DevTools listening on ").nth(1) {
                    return Ok(url.trim().to_owned());
                }
                seen.push_back(line);
                if seen.len() > 20 {
                    seen.pop_front();
                }
            }
            Ok(None) | Err(_) => {
                let seen: Vec<String> = seen.into();
                return Err(unavailable(format!(
                    "chromium exited before listening: {}",
                    seen.join(" | ")
                )));
            }
        }
    }
}

/// Hands each reply from chromium to the call waiting on its id, until the connection
/// ends; then marks it closed and fails every call still waiting.
async fn route_replies<S>(mut stream: S, pending: Pending, closed: Arc<AtomicBool>)
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    while let Some(Ok(msg)) = stream.next().await {
        let text = match &msg {
            Message::Text(t) => t.as_str(),
            Message::Close(_) => break,
            _ => continue,
        };
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        let Some(id) = v.get("id").and_then(Value::as_u64) else {
            continue; // an event: not used
        };
        if let Some(tx) = lock(&pending).remove(&id) {
            let reply = match v.get("error") {
                Some(e) => Err(e.to_string()),
                None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = tx.send(reply);
        }
    }
    closed.store(true, Ordering::SeqCst);
    // Fail every call still waiting.
    lock(&pending).clear();
}

impl Browser {
    /// Starts `path` headless with a fresh private profile and connects to it.
    ///
    /// MUST answer `Unavailable` when the binary is missing, does not start, or does not
    /// announce its DevTools address within `launch_timeout`.
    pub(crate) async fn launch(path: &Path, launch_timeout: Duration) -> Result<Self, PdfError> {
        if !path.is_file() {
            return Err(unavailable(format!(
                "chromium not found at {}",
                path.display()
            )));
        }
        let profile = tempfile::Builder::new()
            .prefix("reporter-chromium-")
            .tempdir()
            .map_err(|e| unavailable(format!("cannot create a profile dir: {e}")))?;
        let mut child = spawn_chromium(path, profile.path())?;
        let Some(stderr) = child.stderr.take() else {
            return Err(unavailable("chromium stderr not captured"));
        };
        let mut lines = BufReader::new(stderr).lines();
        let url = tokio::time::timeout(launch_timeout, devtools_url(&mut lines))
            .await
            .map_err(|_| unavailable("chromium did not start in time"))??;
        // Keep draining stderr so the pipe never fills and blocks the browser.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::trace!(target: "chromium", "{line}");
            }
        });

        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let (ws, _) =
            tokio_tungstenite::connect_async_with_config(url.as_str(), Some(config), true)
                .await
                .map_err(|e| unavailable(format!("cannot connect to chromium: {e}")))?;
        let (mut sink, stream) = ws.split();
        let (out, mut outgoing) = mpsc::unbounded_channel::<Message>();
        let pending: Pending = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));

        tokio::spawn(async move {
            while let Some(msg) = outgoing.recv().await {
                if sink.send(msg).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        tokio::spawn(route_replies(
            stream,
            Arc::clone(&pending),
            Arc::clone(&closed),
        ));

        Ok(Self {
            child: tokio::sync::Mutex::new(child),
            _profile: profile,
            out,
            pending,
            next_id: AtomicU64::new(1),
            closed,
        })
    }

    /// Whether the connection is gone (browser crashed or closed).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Sends one command (to the browser, or to a target when `session` is set) and waits for
    /// its result.
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, PdfError> {
        if self.is_closed() {
            return Err(unavailable("chromium connection closed"));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        if self.is_closed() || self.out.send(Message::text(msg.to_string())).is_err() {
            lock(&self.pending).remove(&id);
            return Err(unavailable("chromium connection closed"));
        }
        match rx.await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(PdfError::Failed(format!("{method}: {e}"))),
            Err(_) => Err(unavailable("chromium connection closed")),
        }
    }

    /// Asks the browser to exit, then kills it if it has not within 5 s.
    pub(crate) async fn close(&self) {
        let _ = tokio::time::timeout(
            Duration::from_secs(2),
            self.call("Browser.close", json!({}), None),
        )
        .await;
        let mut child = self.child.lock().await;
        if tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Chromium writes to the temporary directory lands in its profile (removed with
    /// it), never in the system's.
    #[test]
    fn chromium_keeps_its_temporary_files_in_its_profile() {
        let profile = Path::new("/run/profile-x");
        let command = chromium_command(Path::new("/usr/bin/chromium"), profile);
        let tmpdir = command
            .as_std()
            .get_envs()
            .find(|(k, _)| *k == "TMPDIR")
            .and_then(|(_, v)| v);
        assert_eq!(tmpdir, Some(profile.as_os_str()));
        let args: Vec<_> = command.as_std().get_args().collect();
        assert!(args.contains(&std::ffi::OsStr::new("--user-data-dir=/run/profile-x")));
    }
}
