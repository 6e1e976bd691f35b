//! RabbitPublisher against a real broker (RABBITMQ_URI).
use crate::common::{Admin, envelope, force_close_connection, uri};
use lapin::types::AMQPValue;
use reporter_adapter_rabbitmq::cloudevents::envelope_to_message;
use reporter_adapter_rabbitmq::{AlternateExchange, RabbitPublisher, RabbitPublisherConfig};
use reporter_contract::services::unique_name;
use reporter_ports::events::{EventEnvelope, EventKey};
use reporter_ports::ports::{EventPublisher, PublishError};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn config(uri: &str, exchange: &str, ae: Option<(&str, &str)>) -> RabbitPublisherConfig {
    let mut c = RabbitPublisherConfig::new(uri);
    c.exchange = exchange.to_owned();
    c.alternate_exchange = ae.map(|(e, q)| AlternateExchange {
        exchange: e.to_owned(),
        queue: q.to_owned(),
        ..AlternateExchange::default()
    });
    c.connection_name = unique_name("pub");
    c
}

fn all_ok(results: &[Result<(), PublishError>]) {
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r, &Ok(()), "event {i}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_arrives_with_the_exact_headers() {
    let Some(uri) = uri() else { return };
    let ex = unique_name("ev");
    let (ae, aeq, q) = (unique_name("ae"), unique_name("aeq"), unique_name("q"));
    let mut admin = Admin::new(&uri).await;
    admin.track(&[&ex, &ae], &[&aeq]);
    let publisher = RabbitPublisher::connect(config(&uri, &ex, Some((&ae, &aeq))))
        .await
        .expect("connect");
    admin.bound_queue(&q, &ex, "#").await;

    let events: Vec<EventEnvelope> = EventKey::ALL
        .iter()
        .enumerate()
        .map(|(i, k)| envelope(*k, i))
        .collect();
    all_ok(&publisher.publish(&events).await);

    for e in &events {
        let m = admin.get(&q).await.expect("message");
        assert_eq!(m.delivery.routing_key.as_str(), e.key.key());
        let props = &m.delivery.properties;
        assert_eq!(
            props.content_type().as_ref().map(|c| c.as_str()),
            Some("application/json")
        );
        assert_eq!(*props.delivery_mode(), Some(2));
        let want = envelope_to_message(e);
        let got = props.headers().clone().expect("headers");
        assert_eq!(got, want.headers, "{}", e.key.key());
        assert_eq!(got.inner().len(), 10);
        assert!(
            got.inner()
                .values()
                .all(|v| matches!(v, AMQPValue::LongString(_)))
        );
        assert_eq!(m.delivery.data, e.payload.as_bytes());
    }
    assert!(admin.get(&q).await.is_none(), "nothing else arrives");
    assert_eq!(admin.count(&aeq).await, 0, "nothing went to the AE");
    publisher.close().await;
    admin.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unroutable_with_an_alternate_exchange_is_kept_and_ok() {
    let Some(uri) = uri() else { return };
    let ex = unique_name("ev");
    let (ae, aeq) = (unique_name("ae"), unique_name("aeq"));
    let mut admin = Admin::new(&uri).await;
    admin.track(&[&ex, &ae], &[&aeq]);
    let publisher = RabbitPublisher::connect(config(&uri, &ex, Some((&ae, &aeq))))
        .await
        .expect("connect");
    let e = envelope(EventKey::ReportFinished, 1);
    assert_eq!(
        publisher.publish(std::slice::from_ref(&e)).await,
        vec![Ok(())]
    );
    let m = admin.get(&aeq).await.expect("kept in the AE queue");
    assert_eq!(m.delivery.routing_key.as_str(), "report.finished");
    assert_eq!(
        m.delivery.properties.headers().clone().expect("headers"),
        envelope_to_message(&e).headers
    );
    publisher.close().await;
    admin.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unroutable_without_an_alternate_exchange_is_err_unroutable() {
    let Some(uri) = uri() else { return };
    let ex = unique_name("ev");
    let q = unique_name("q");
    let mut admin = Admin::new(&uri).await;
    admin.track(&[&ex], &[]);
    let publisher = RabbitPublisher::connect(config(&uri, &ex, None))
        .await
        .expect("connect");
    // Only report.* is bound: a mixed batch tells each event's fate apart.
    admin.bound_queue(&q, &ex, "report.*").await;
    let events: Vec<_> = EventKey::ALL
        .iter()
        .enumerate()
        .map(|(i, k)| envelope(*k, i))
        .collect();
    let results = publisher.publish(&events).await;
    for (e, r) in events.iter().zip(&results) {
        if e.key.resource_type() == "report" {
            assert_eq!(r, &Ok(()), "{}", e.key.key());
        } else {
            match r {
                Err(PublishError::Unroutable(why)) => assert!(why.contains("NO_ROUTE"), "{why}"),
                other => panic!("{}: expected Unroutable, got {other:?}", e.key.key()),
            }
        }
    }
    assert_eq!(admin.count(&q).await, 4);
    publisher.close().await;
    admin.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_exchange_fails_then_the_channel_is_reopened() {
    let Some(uri) = uri() else { return };
    let ex = unique_name("missing");
    let q = unique_name("q");
    let mut admin = Admin::new(&uri).await;
    let mut c = config(&uri, &ex, None);
    c.declare_topology = false;
    let publisher = RabbitPublisher::connect(c).await.expect("connect");
    let events = vec![
        envelope(EventKey::TemplateCreated, 1),
        envelope(EventKey::TemplateUpdated, 2),
    ];
    let results = publisher.publish(&events).await;
    for r in &results {
        match r {
            Err(PublishError::Unavailable(why)) => assert!(
                why.contains("NOT_FOUND") || why.contains("channel"),
                "{why}"
            ),
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }
    admin.topic_exchange(&ex).await;
    admin.bound_queue(&q, &ex, "#").await;
    assert_eq!(publisher.publish(&events).await, vec![Ok(()), Ok(())]);
    assert_eq!(admin.count(&q).await, 2);
    assert!(publisher.check().await.is_ok());
    publisher.close().await;
    admin.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_pipelined_events_all_confirm() {
    let Some(uri) = uri() else { return };
    let ex = unique_name("ev");
    let (ae, aeq, q) = (unique_name("ae"), unique_name("aeq"), unique_name("q"));
    let mut admin = Admin::new(&uri).await;
    admin.track(&[&ex, &ae], &[&aeq]);
    let publisher = RabbitPublisher::connect(config(&uri, &ex, Some((&ae, &aeq))))
        .await
        .expect("connect");
    admin.bound_queue(&q, &ex, "#").await;
    let events: Vec<_> = (0..2000)
        .map(|i| envelope(EventKey::ALL[i % EventKey::COUNT], i))
        .collect();
    let started = Instant::now();
    let results = publisher.publish(&events).await;
    let took = started.elapsed();
    all_ok(&results);
    reporter_contract::figure!(
        "THROUGHPUT: 2000 events published and confirmed in {:?} = {:.0} msg/s",
        took,
        2000.0 / took.as_secs_f64()
    );
    assert_eq!(admin.count(&q).await, 2000);
    publisher.close().await;
    admin.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_confirm_window_is_window_full_and_nothing_of_it_is_sent() {
    let Some(uri) = uri() else { return };
    let (proxied, paused) = proxied(&uri).await;
    let ex = unique_name("ev");
    let q = unique_name("q");
    let mut admin = Admin::new(&uri).await;
    admin.track(&[&ex], &[]);
    // One message in flight at a time, a 1 s deadline.
    let mut c = config(&proxied, &ex, None);
    c.max_in_flight = 1;
    c.publish_timeout = Duration::from_secs(1);
    let publisher = RabbitPublisher::connect(c).await.expect("connect");
    admin.bound_queue(&q, &ex, "#").await;
    let warm = envelope(EventKey::DeadlineCreated, 0);
    assert_eq!(publisher.publish(&[warm]).await, vec![Ok(())]);
    // Call A's message holds the only slot: its confirm cannot come back.
    paused.store(true, Ordering::SeqCst);
    let p = publisher.clone();
    let a = tokio::spawn(async move { p.publish(&[envelope(EventKey::DeadlineCreated, 1)]).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Call B never gets a slot before its deadline (A's slot is held until A's deadline + 1 s).
    let b: Vec<_> = (2..7)
        .map(|i| envelope(EventKey::DeadlineCreated, i))
        .collect();
    let started = Instant::now();
    let got = publisher.publish(&b).await;
    let took = started.elapsed();
    assert_eq!(
        got,
        vec![Err(PublishError::WindowFull); 5],
        "B was never sent"
    );
    assert!(
        took < Duration::from_secs(2),
        "bounded by the deadline: {took:?}"
    );
    assert_eq!(
        a.await.expect("call A"),
        vec![Err(PublishError::Timeout)],
        "A was sent and its confirm did not come: a broker-side timeout"
    );
    paused.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let queued = admin.count(&q).await;
    assert!(
        (1..=2).contains(&queued),
        "{queued} messages queued: the warm-up and perhaps A, none of B"
    );
    reporter_contract::figure!("full confirm window: B answered WindowFull in {took:?}");
    // The link is fine: a later call publishes (after reopening the channel A's timeout
    // discarded).
    let deadline = Instant::now() + Duration::from_secs(10);
    while publisher
        .publish(&[envelope(EventKey::DeadlineCreated, 99)])
        .await
        != vec![Ok(())]
    {
        assert!(Instant::now() < deadline, "never published again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    publisher.close().await;
    admin.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_works_after_the_broker_drops_the_connection() {
    let Some(uri) = uri() else { return };
    let ex = unique_name("ev");
    let q = unique_name("q");
    let mut admin = Admin::new(&uri).await;
    admin.track(&[&ex], &[]);
    let c = config(&uri, &ex, None);
    let name = c.connection_name.clone();
    let publisher = RabbitPublisher::connect(c).await.expect("connect");
    admin.bound_queue(&q, &ex, "#").await;
    assert_eq!(
        publisher
            .publish(&[envelope(EventKey::ReportRequested, 0)])
            .await,
        vec![Ok(())]
    );
    if !force_close_connection(&name) {
        reporter_contract::services::skipped("rabbitmqctl close_connection (part of a test)");
        admin.cleanup().await;
        return;
    }
    // Until lapin has recovered, publishes fail fast (Unavailable), never hang; then they work.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut failures = 0;
    loop {
        let started = Instant::now();
        let r = publisher
            .publish(&[envelope(EventKey::ReportRequested, 1)])
            .await;
        assert!(started.elapsed() < Duration::from_secs(6), "publish hung");
        match &r[0] {
            Ok(()) => break,
            Err(e) => {
                failures += 1;
                assert!(Instant::now() < deadline, "no recovery: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    reporter_contract::figure!("recovered after {failures} failed publishes");
    assert!(publisher.check().await.is_ok());
    assert_eq!(admin.count(&q).await, 2);
    publisher.close().await;
    admin.cleanup().await;
}

/// A TCP proxy that can stop forwarding (both ways), like a broker that blocks a connection.
async fn pausable_proxy(target: std::net::SocketAddr) -> (std::net::SocketAddr, Arc<AtomicBool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let paused = Arc::new(AtomicBool::new(false));
    let p = paused.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(target).await else {
                continue;
            };
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            tokio::spawn(pump(cr, sw, p.clone()));
            tokio::spawn(pump(sr, cw, p.clone()));
        }
    });
    (addr, paused)
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    paused: Arc<AtomicBool>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        while paused.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                while paused.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// `uri` through a [`pausable_proxy`]: the proxied URI and the pause switch.
async fn proxied(uri: &str) -> (String, Arc<AtomicBool>) {
    let parsed: lapin::uri::AMQPUri = uri.parse().expect("uri");
    let target = tokio::net::lookup_host((parsed.authority.host.as_str(), parsed.authority.port))
        .await
        .expect("resolve")
        .next()
        .expect("address");
    let (proxy, paused) = pausable_proxy(target).await;
    let proxied = format!(
        "amqp://{}:{}@{}/{}",
        parsed.authority.userinfo.username,
        parsed.authority.userinfo.password,
        proxy,
        urlencode(&parsed.vhost)
    );
    (proxied, paused)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_broker_surfaces_as_timeout_never_a_hang() {
    let Some(uri) = uri() else { return };
    let (proxied, paused) = proxied(&uri).await;
    let ex = unique_name("ev");
    let q = unique_name("q");
    let mut admin = Admin::new(&uri).await;
    admin.track(&[&ex], &[]);
    let mut c = config(&proxied, &ex, None);
    c.publish_timeout = Duration::from_secs(1);
    let publisher = RabbitPublisher::connect(c).await.expect("connect");
    admin.bound_queue(&q, &ex, "#").await;
    assert_eq!(
        publisher
            .publish(&[envelope(EventKey::DeadlineCreated, 0)])
            .await,
        vec![Ok(())]
    );

    paused.store(true, Ordering::SeqCst);
    let events: Vec<_> = (0..50)
        .map(|i| envelope(EventKey::DeadlineCreated, i))
        .collect();
    let started = Instant::now();
    let results = publisher.publish(&events).await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "bounded by the timeout, took {took:?}"
    );
    assert!(
        results.iter().all(|r| r == &Err(PublishError::Timeout)),
        "{results:?}"
    );
    let started = Instant::now();
    assert!(publisher.check().await.is_err());
    assert!(started.elapsed() < Duration::from_secs(3));

    paused.store(false, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = publisher
            .publish(&[envelope(EventKey::DeadlineCreated, 99)])
            .await;
        if r == vec![Ok(())] {
            break;
        }
        assert!(Instant::now() < deadline, "never recovered: {r:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    publisher.close().await;
    admin.cleanup().await;
}

fn urlencode(vhost: &str) -> String {
    vhost.replace('%', "%25").replace('/', "%2f")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_share_one_window_and_each_return_reaches_its_event() {
    let Some(uri) = uri() else { return };
    let ex = unique_name("ev");
    let q = unique_name("q");
    let mut admin = Admin::new(&uri).await;
    admin.track(&[&ex], &[]);
    let mut c = config(&uri, &ex, None);
    c.max_in_flight = 16;
    let publisher = RabbitPublisher::connect(c).await.expect("connect");
    // Only report.* is bound: every other key is returned (no alternate exchange), and with
    // concurrent calls a return can ride on another call's confirm.
    admin.bound_queue(&q, &ex, "report.*").await;
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (p, peak, on) = (publisher.clone(), peak.clone(), sampling.clone());
        tokio::spawn(async move {
            while on.load(Ordering::SeqCst) {
                peak.fetch_max(p.in_flight(), Ordering::SeqCst);
                tokio::task::yield_now().await;
            }
        })
    };
    let mut calls = Vec::new();
    for call in 0..8 {
        let p = publisher.clone();
        calls.push(tokio::spawn(async move {
            let events: Vec<_> = (0..48)
                .map(|i| envelope(EventKey::ALL[i % EventKey::ALL.len()], call * 1000 + i))
                .collect();
            let results = p.publish(&events).await;
            (events, results)
        }));
    }
    let mut routed = 0;
    for call in calls {
        let (events, results) = call.await.expect("call");
        for (e, r) in events.iter().zip(&results) {
            if e.key.resource_type() == "report" {
                assert_eq!(r, &Ok(()), "{} {}", e.key.key(), e.id);
                routed += 1;
            } else {
                assert!(
                    matches!(r, Err(PublishError::Unroutable(_))),
                    "{} {}: expected Unroutable, got {r:?}",
                    e.key.key(),
                    e.id
                );
            }
        }
    }
    sampling.store(false, Ordering::SeqCst);
    sampler.await.expect("sampler");
    let peak = peak.load(Ordering::SeqCst);
    assert!(
        peak <= 16,
        "the window bounds the messages in flight: {peak}"
    );
    assert!(peak > 1, "calls were pipelined: {peak}");
    assert_eq!(admin.count(&q).await, routed);
    assert_eq!(publisher.in_flight(), 0);
    publisher.close().await;
    admin.cleanup().await;
}

/// A TCP proxy that can go down like a stopped broker: while down it closes every connection
/// and refuses new ones (its port is closed), or, with `drop_mode`, accepts and drops them.
async fn cuttable_proxy(target: std::net::SocketAddr) -> (std::net::SocketAddr, Arc<AtomicBool>) {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = probe.local_addr().expect("addr");
    drop(probe);
    let down = Arc::new(AtomicBool::new(false));
    let d = down.clone();
    tokio::spawn(async move {
        loop {
            while d.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let socket = tokio::net::TcpSocket::new_v4().expect("socket");
            socket.set_reuseaddr(true).expect("reuseaddr");
            if socket.bind(addr).is_err() {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            let listener = socket.listen(64).expect("listen");
            while !d.load(Ordering::SeqCst) {
                let Ok(Ok((client, _))) =
                    tokio::time::timeout(Duration::from_millis(50), listener.accept()).await
                else {
                    continue;
                };
                let Ok(server) = tokio::net::TcpStream::connect(target).await else {
                    continue;
                };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                tokio::spawn(cut_pump(cr, sw, d.clone()));
                tokio::spawn(cut_pump(sr, cw, d.clone()));
            }
            drop(listener);
        }
    });
    (addr, down)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_link_reports_the_brokers_return_within_a_second() {
    let Some(uri) = uri() else { return };
    let parsed: lapin::uri::AMQPUri = uri.parse().expect("uri");
    let target = tokio::net::lookup_host((parsed.authority.host.as_str(), parsed.authority.port))
        .await
        .expect("resolve")
        .next()
        .expect("address");
    let (proxy, down) = cuttable_proxy(target).await;
    let proxied = format!(
        "amqp://{}:{}@{}/{}",
        parsed.authority.userinfo.username,
        parsed.authority.userinfo.password,
        proxy,
        urlencode(&parsed.vhost)
    );
    let ex = unique_name("ev");
    let q = unique_name("q");
    let mut admin = Admin::new(&uri).await;
    admin.track(&[&ex], &[]);
    let mut c = config(&proxied, &ex, None);
    c.publish_timeout = Duration::from_secs(1);
    let publisher = RabbitPublisher::connect(c).await.expect("connect");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    publisher.on_reconnect(Arc::new(move || {
        let _ = tx.send(Instant::now());
    }));
    admin.bound_queue(&q, &ex, "#").await;
    assert!(publisher.ready());

    // Down for 8 s: long enough for lapin's default backoff (1 s, 2 s, 4 s, …) to fall behind.
    down.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!publisher.ready(), "the link knows the broker is gone");
    let started = Instant::now();
    let r = publisher
        .publish(&[envelope(EventKey::DeadlineCreated, 1)])
        .await;
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "a publish while down fails at once"
    );
    assert!(matches!(r[0], Err(PublishError::Unavailable(_))), "{r:?}");
    tokio::time::sleep(Duration::from_millis(7500)).await;
    while rx.try_recv().is_ok() {}
    let back = Instant::now();
    down.store(false, Ordering::SeqCst);
    let ready_at = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("the watcher reported the return")
        .expect("watcher alive");
    let took = ready_at.duration_since(back);
    reporter_contract::figure!("link usable {took:?} after the broker's return");
    assert!(took < Duration::from_secs(2), "reconnected in {took:?}");
    assert!(publisher.ready());
    assert_eq!(
        publisher
            .publish(&[envelope(EventKey::DeadlineCreated, 2)])
            .await,
        vec![Ok(())]
    );
    publisher.close().await;
    admin.cleanup().await;
}

async fn cut_pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    down: Arc<AtomicBool>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let read = tokio::time::timeout(Duration::from_millis(50), from.read(&mut buf)).await;
        if down.load(Ordering::SeqCst) {
            return;
        }
        match read {
            Err(_) => continue,
            Ok(Ok(0) | Err(_)) => return,
            Ok(Ok(n)) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}
