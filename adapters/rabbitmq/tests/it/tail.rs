//! `tail` against a real broker (RABBITMQ_URI).
use crate::common::{Admin, envelope, uri};
use cloudevents::AttributesReader;
use futures_util::StreamExt;
use reporter_adapter_rabbitmq::tail::tail;
use reporter_adapter_rabbitmq::{RabbitPublisher, RabbitPublisherConfig};
use reporter_contract::services::unique_name;
use reporter_ports::events::EventKey;
use reporter_ports::ports::EventPublisher;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_sees_the_matching_events_decoded() {
    let Some(uri) = uri() else { return };
    let mut c = RabbitPublisherConfig::new(&uri);
    c.exchange = unique_name("ev");
    c.alternate_exchange = None;
    let publisher = RabbitPublisher::connect(c.clone()).await.expect("connect");
    let mut admin = Admin::new(&uri).await;
    admin.track(&[&c.exchange], &[]);

    let mut stream = tail(&uri, &c.exchange, "report.*").await.expect("tail");
    let events: Vec<_> = EventKey::ALL
        .iter()
        .enumerate()
        .map(|(i, k)| envelope(*k, i))
        .collect();
    let results = publisher.publish(&events).await;
    for (e, r) in events.iter().zip(&results) {
        // Only the tail queue is bound, and only to report.*.
        assert_eq!(
            r.is_ok(),
            e.key.resource_type() == "report",
            "{}: {r:?}",
            e.key.key()
        );
    }
    let want: Vec<_> = events
        .iter()
        .filter(|e| e.key.resource_type() == "report")
        .collect();
    for e in want {
        let t = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("in time")
            .expect("open")
            .expect("ok");
        assert_eq!(t.routing_key, e.key.key());
        assert_eq!(t.content_type.as_deref(), Some("application/json"));
        assert_eq!(t.delivery_mode, Some(2));
        assert_eq!(t.headers.len(), 10);
        assert_eq!(t.headers["ce-id"], e.id);
        assert_eq!(t.headers["ce-type"], e.key.ce_type());
        assert_eq!(t.headers["ce-tenantid"], "tenant-a");
        assert_eq!(t.payload, e.payload.as_bytes());
        let ev = t.event.expect("decoded");
        assert_eq!(ev.id(), e.id);
        assert_eq!(ev.ty(), e.key.ce_type());
        assert_eq!(ev.subject(), Some(e.subject.as_str()));
    }
    assert!(
        tokio::time::timeout(Duration::from_millis(500), stream.next())
            .await
            .is_err(),
        "nothing else"
    );
    drop(stream);
    publisher.close().await;
    admin.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_of_a_missing_exchange_is_an_error() {
    let Some(uri) = uri() else { return };
    assert!(tail(&uri, &unique_name("missing"), "#").await.is_err());
}
