//! Free ports for the servers tests start.
/// A free loopback port for a server under test: outside the kernel's ephemeral range
/// (`ip_local_port_range`), so that no outgoing connection and no `bind(:0)` takes it before
/// the server binds it, or while a test has stopped the server (a chaos scenario's RabbitMQ
/// node once failed to start again with `eaddrinuse`). Never the same port twice in this
/// process; another process could pick it too, but among about 12,000 ports at random.
pub fn free_port() -> u16 {
    use rand::Rng;
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let first_ephemeral = ephemeral_range_start();
    let mut handed = HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner());
    let mut rng = rand::rng();
    for _ in 0..1000 {
        let port = rng.random_range(FIRST_PORT..first_ephemeral);
        if !handed.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed.push(port);
            return port;
        }
    }
    panic!("no free port in {FIRST_PORT}..{first_ephemeral}")
}

/// The lowest port [`free_port`] hands out (above the well-known and registered services most
/// hosts run).
const FIRST_PORT: u16 = 20_000;

/// The first port of the kernel's ephemeral range (32768 when it cannot be read).
fn ephemeral_range_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .filter(|p| *p > FIRST_PORT + 1000)
        .unwrap_or(32_768)
}
