//! A headless Chromium driven over the DevTools protocol (as `adapters/pdf/src/cdp.rs` does),
//! for tests that open what a person would open: one request at a time, events skipped.
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A running headless Chromium with a fresh profile; killed when dropped.
pub struct Chromium {
    child: Child,
    _profile: tempfile::TempDir,
    ws: Socket,
    next: u64,
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Chromium {
    /// Starts `path` headless and connects to its browser websocket.
    pub async fn launch(path: &str) -> Self {
        let profile = tempfile::tempdir().expect("profile dir");
        // Chromium's own temporary files (`org.chromium.Chromium.*`) go with the profile.
        let mut child = Command::new(path)
            .env("TMPDIR", profile.path())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.split("DevTools listening on ").nth(1) {
                    let _ = tx.send(url.trim().to_owned());
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("chromium did not announce its DevTools endpoint");
        let (ws, _) = tokio_tungstenite::connect_async(url.as_str())
            .await
            .expect("connect to chromium");
        Self {
            child,
            _profile: profile,
            ws,
            next: 1,
        }
    }

    /// One command (to a target when `session` is set); its result.
    pub async fn call(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        let id = self.next;
        self.next += 1;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.ws
            .send(Message::text(msg.to_string()))
            .await
            .expect("send to chromium");
        let wait = async {
            while let Some(Ok(m)) = self.ws.next().await {
                let Message::Text(t) = m else { continue };
                let v: Value = serde_json::from_str(t.as_str()).unwrap_or(Value::Null);
                if v["id"].as_u64() == Some(id) {
                    assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                    return v["result"].clone();
                }
            }
            panic!("chromium closed the connection during {method}");
        };
        tokio::time::timeout(Duration::from_secs(30), wait)
            .await
            .unwrap_or_else(|_| panic!("{method} got no answer"))
    }

    /// Opens `url` in a new tab; the tab's session id.
    pub async fn open(&mut self, url: &str) -> String {
        let target = self
            .call("Target.createTarget", json!({"url": "about:blank"}), None)
            .await;
        let target_id = target["targetId"].as_str().expect("targetId").to_owned();
        let attached = self
            .call(
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
                None,
            )
            .await;
        let session = attached["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_owned();
        self.call("Page.enable", json!({}), Some(&session)).await;
        self.call("Page.navigate", json!({"url": url}), Some(&session))
            .await;
        session
    }

    /// Evaluates `expression` in the tab (DevTools evaluation, not page script); its value.
    pub async fn eval(&mut self, session: &str, expression: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
                Some(session),
            )
            .await;
        r["result"]["value"].clone()
    }
}
