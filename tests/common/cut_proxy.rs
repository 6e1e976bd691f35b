//! A loopback TCP proxy that can be cut and restored: the outage of one server for one test,
//! without stopping the server every other test shares (what Toxiproxy's connection-loss toxic
//! does for the reference's chaos tests).
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

/// Forwards 127.0.0.1:`addr` to `target` until [`CutProxy::cut`].
pub struct CutProxy {
    addr: SocketAddr,
    target: SocketAddr,
    accept: Mutex<Option<JoinHandle<()>>>,
    conns: Arc<Mutex<Vec<AbortHandle>>>,
    hold: Arc<AtomicBool>,
}

impl CutProxy {
    /// Listens on a free loopback port and forwards to `target`.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let proxy = Self {
            addr,
            target,
            accept: Mutex::new(None),
            conns: Arc::new(Mutex::new(Vec::new())),
            hold: Arc::new(AtomicBool::new(false)),
        };
        proxy.serve(listener);
        proxy
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn serve(&self, listener: TcpListener) {
        let target = self.target;
        let conns = self.conns.clone();
        let hold = self.hold.clone();
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let hold = hold.clone();
                let conn = tokio::spawn(async move {
                    if let Ok(outbound) = TcpStream::connect(target).await {
                        let (client_read, client_write) = inbound.into_split();
                        let (server_read, server_write) = outbound.into_split();
                        let never = Arc::new(AtomicBool::new(false));
                        tokio::join!(
                            pump(client_read, server_write, never),
                            pump(server_read, client_write, hold)
                        );
                    }
                });
                conns.lock().expect("conns").push(conn.abort_handle());
            }
        });
        *self.accept.lock().expect("accept") = Some(task);
    }

    /// While `on`, what the server sends is held back (not read, so it waits in the socket)
    /// and what clients send still reaches it: for a broker, publishes are routed but their
    /// confirms never come back. Off: the held bytes flow again.
    pub fn hold_replies(&self, on: bool) {
        self.hold.store(on, Ordering::SeqCst);
    }

    /// The outage: every open connection is closed and new ones are refused.
    pub async fn cut(&self) {
        let task = self.accept.lock().expect("accept").take();
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
        }
        for c in self.conns.lock().expect("conns").drain(..) {
            c.abort();
        }
    }

    /// The server is back: connections are accepted (on the same port) again.
    pub async fn restore(&self) {
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) if tries < 50 => {
                    tries += 1;
                    eprintln!("proxy rebind {}: {e}; retrying", self.addr);
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(e) => panic!("proxy rebind {}: {e}", self.addr),
            }
        };
        self.serve(listener);
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        if let Some(task) = self.accept.lock().expect("accept").take() {
            task.abort();
        }
        for c in self.conns.lock().expect("conns").drain(..) {
            c.abort();
        }
    }
}

/// Copies `from` to `to` until either side closes, pausing while `held`.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    held: Arc<AtomicBool>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        while held.load(Ordering::SeqCst) {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return;
            }
            Ok(n) => {
                while held.load(Ordering::SeqCst) {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}
