//! The events topology on a real broker (RABBITMQ_URI): what is missing is declared (the
//! unroutable queue bounded), what an operator declared differently is used as it is, and a
//! real failure names its cause.
use crate::common::{Admin, envelope, uri};
use lapin::options::{ExchangeDeclareOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::{Connection, ConnectionProperties, ExchangeKind};
use reporter_adapter_rabbitmq::{
    AlternateExchange, EventsTopology, RabbitError, RabbitPublisher, RabbitPublisherConfig,
    ensure_events_topology,
};
use reporter_contract::services::unique_name;
use reporter_ports::events::EventKey;
use reporter_ports::ports::EventPublisher;
use std::time::Duration;

async fn connection(uri: &str) -> Connection {
    Connection::connect(uri, ConnectionProperties::default())
        .await
        .expect("connect")
}

/// True when the broker accepts redeclaring `queue` with exactly `args` (it refuses any
/// difference with PRECONDITION_FAILED): the AMQP way to read a queue's arguments.
async fn queue_has_arguments(conn: &Connection, queue: &str, args: FieldTable) -> bool {
    let ch = conn.create_channel().await.expect("channel");
    ch.queue_declare(queue.into(), QueueDeclareOptions::durable(), args)
        .await
        .is_ok()
}

fn bounded(ttl_ms: i64, max: i64) -> FieldTable {
    let mut t = FieldTable::default();
    t.insert("x-message-ttl".into(), AMQPValue::LongLongInt(ttl_ms));
    t.insert("x-max-length".into(), AMQPValue::LongLongInt(max));
    t
}

/// `rabbitmqctl list_queues name arguments` line of `queue`, when rabbitmqctl is usable.
fn listed_arguments(queue: &str) -> Option<String> {
    let out = std::process::Command::new("rabbitmqctl")
        .args([
            "list_queues",
            "-q",
            "--no-table-headers",
            "name",
            "arguments",
        ])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.split_whitespace().next() == Some(queue))
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_topology_is_declared_and_the_unroutable_queue_is_bounded() {
    let Some(uri) = uri() else { return };
    let (ex, ae, aeq) = (unique_name("ev"), unique_name("ae"), unique_name("aeq"));
    let mut admin = Admin::new(&uri).await;
    admin.track(&[&ex, &ae], &[&aeq]);
    let conn = connection(&uri).await;
    let topology = EventsTopology {
        exchange: ex.clone(),
        alternate: Some(AlternateExchange {
            exchange: ae.clone(),
            queue: aeq.clone(),
            ..AlternateExchange::default()
        }),
    };
    let report = ensure_events_topology(&conn, &topology)
        .await
        .expect("ensure");
    assert_eq!(
        report.declared,
        [
            format!("exchange '{ae}'"),
            format!("queue '{aeq}'"),
            format!("exchange '{ex}'")
        ]
    );
    assert!(report.differences.is_empty(), "{report:?}");
    // The queue carries the original DLQ's bounds: 7 days and 10,000 messages.
    assert!(queue_has_arguments(&conn, &aeq, bounded(604_800_000, 10_000)).await);
    assert!(!queue_has_arguments(&conn, &aeq, FieldTable::default()).await);
    if let Some(line) = listed_arguments(&aeq) {
        assert!(
            line.contains("x-message-ttl") && line.contains("604800000"),
            "{line}"
        );
        assert!(
            line.contains("x-max-length") && line.contains("10000"),
            "{line}"
        );
    }
    // The events exchange names the alternate exchange.
    let ch = conn.create_channel().await.unwrap();
    let mut args = FieldTable::default();
    args.insert(
        "alternate-exchange".into(),
        AMQPValue::LongString(LongString::from(ae.as_str())),
    );
    ch.exchange_declare(
        ex.as_str().into(),
        ExchangeKind::Topic,
        ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        },
        args,
    )
    .await
    .expect("the events exchange has exactly Reporter's arguments");
    // A second run finds everything in place and changes nothing.
    let again = ensure_events_topology(&conn, &topology).await.unwrap();
    assert!(
        again.declared.is_empty() && again.differences.is_empty(),
        "{again:?}"
    );
    let _ = conn.close(200, "bye".into()).await;
    admin.cleanup().await;
}

/// Configured bounds are enforced by the broker: beyond `max_length` the oldest unroutable
/// event is dropped, and after `message_ttl` they expire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unroutable_queue_drops_the_oldest_beyond_its_length_and_expires_by_ttl() {
    let Some(uri) = uri() else { return };
    let admin_names = (unique_name("ev"), unique_name("ae"), unique_name("aeq"));
    let (ex, ae, aeq) = &admin_names;
    let mut admin = Admin::new(&uri).await;
    admin.track(&[ex, ae], &[aeq]);
    let mut c = RabbitPublisherConfig::new(&uri);
    c.exchange = ex.clone();
    c.connection_name = unique_name("pub");
    c.alternate_exchange = Some(AlternateExchange {
        exchange: ae.clone(),
        queue: aeq.clone(),
        message_ttl: Some(Duration::from_millis(1500)),
        max_length: Some(3),
    });
    let publisher = RabbitPublisher::connect(c).await.expect("connect");
    let events: Vec<_> = (0..5)
        .map(|i| envelope(EventKey::ReportFinished, i))
        .collect();
    for r in publisher.publish(&events).await {
        assert_eq!(r, Ok(()));
    }
    assert_eq!(admin.count(aeq).await, 3, "bounded at 3");
    let first = admin.get(aeq).await.expect("a kept event");
    let kept: serde_json::Value = serde_json::from_slice(&first.delivery.data).unwrap();
    assert_eq!(kept["n"], 2, "the two oldest were dropped");
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(admin.count(aeq).await, 0, "expired after the TTL");
    publisher.close().await;
    admin.cleanup().await;
}

/// The operator owns the exchange: one declared without `alternate-exchange`, and an
/// unroutable queue left by an older version without bounds, do not stop start-up; the
/// differences are reported and publishing works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_topology_declared_differently_does_not_stop_start_up() {
    let Some(uri) = uri() else { return };
    let (ex, ae, aeq, q) = (
        unique_name("ev"),
        unique_name("ae"),
        unique_name("aeq"),
        unique_name("q"),
    );
    let mut admin = Admin::new(&uri).await;
    admin.topic_exchange(&ex).await;
    admin
        .ch
        .queue_declare(
            aeq.as_str().into(),
            QueueDeclareOptions::durable(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    admin.track(&[&ae], &[&aeq]);
    admin.bound_queue(&q, &ex, "#").await;
    let conn = connection(&uri).await;
    let topology = EventsTopology {
        exchange: ex.clone(),
        alternate: Some(AlternateExchange {
            exchange: ae.clone(),
            queue: aeq.clone(),
            ..AlternateExchange::default()
        }),
    };
    let report = ensure_events_topology(&conn, &topology)
        .await
        .expect("start-up goes on");
    assert_eq!(report.declared, [format!("exchange '{ae}'")]);
    assert_eq!(report.differences.len(), 2, "{report:?}");
    assert!(
        report.differences[0].starts_with(&format!("queue '{aeq}'"))
            && report.differences[0].contains("PRECONDITION_FAILED")
            && report.differences[0].contains("x-"),
        "{report:?}"
    );
    assert!(
        report.differences[1].starts_with(&format!("exchange '{ex}'"))
            && report.differences[1].contains("alternate-exchange"),
        "{report:?}"
    );
    // Left as the operator declared them.
    assert!(queue_has_arguments(&conn, &aeq, FieldTable::default()).await);
    // The publisher starts on that topology and publishes.
    let mut c = RabbitPublisherConfig::new(&uri);
    c.exchange = ex.clone();
    c.connection_name = unique_name("pub");
    c.alternate_exchange = topology.alternate.clone();
    let publisher = RabbitPublisher::connect(c).await.expect("connect");
    let e = envelope(EventKey::TemplateCreated, 1);
    assert_eq!(publisher.publish(&[e]).await, vec![Ok(())]);
    assert_eq!(admin.count(&q).await, 1);
    publisher.close().await;
    let _ = conn.close(200, "bye".into()).await;
    admin.cleanup().await;
}

/// A user without configure permission: an existing exchange is used; a missing one is an
/// error that names the exchange and the broker's reply (ACCESS_REFUSED). The user is created
/// with rabbitmqctl and removed afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_exchange_the_user_may_not_declare_is_an_error_naming_the_cause() {
    let Some(uri) = uri() else { return };
    let user = unique_name("ro");
    let ctl = |args: &[&str]| {
        std::process::Command::new("rabbitmqctl")
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !ctl(&["add_user", &user, "pw-for-tests"]) {
        assert!(
            !reporter_contract::services::required(),
            "rabbitmqctl add_user failed (REPORTER_REQUIRE_SERVICES=1)"
        );
        reporter_contract::services::skipped("rabbitmqctl add_user");
        return;
    }
    struct DropUser(String);
    impl Drop for DropUser {
        fn drop(&mut self) {
            let _ = std::process::Command::new("rabbitmqctl")
                .args(["delete_user", &self.0])
                .output();
        }
    }
    let _cleanup = DropUser(user.clone());
    assert!(ctl(&[
        "set_permissions",
        "-p",
        "/",
        &user,
        "^$",
        ".*",
        ".*"
    ]));
    let (scheme, rest) = uri.split_once("://").unwrap();
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let restricted = format!("{scheme}://{user}:pw-for-tests@{host}");
    let ex = unique_name("missing");
    let mut c = RabbitPublisherConfig::new(&restricted);
    c.exchange = ex.clone();
    c.alternate_exchange = None;
    c.connection_name = unique_name("pub");
    let err = match RabbitPublisher::connect(c.clone()).await {
        Ok(_) => panic!("a missing exchange it may not declare must fail"),
        Err(e) => e,
    };
    match &err {
        RabbitError::Topology(why) => assert!(
            why.contains(&format!("exchange '{ex}'")) && why.contains("ACCESS_REFUSED"),
            "{why}"
        ),
        other => panic!("expected a topology error, got {other:?}"),
    }
    // Once the operator declared it, the same user starts (nothing to declare, the
    // comparison refused by permissions is only logged).
    let mut admin = Admin::new(&uri).await;
    admin.topic_exchange(&ex).await;
    let publisher = RabbitPublisher::connect(c).await.expect("connect");
    publisher.close().await;
    admin.cleanup().await;
}
