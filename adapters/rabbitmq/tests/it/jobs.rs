//! RabbitJobQueue / RabbitJobConsumer against a real broker (RABBITMQ_URI).
use crate::common::{Admin, uri};
use futures_util::FutureExt;
use lapin::BasicProperties;
use lapin::options::BasicPublishOptions;
use lapin::types::{AMQPValue, FieldTable};
use reporter_adapter_rabbitmq::{RabbitJobConsumer, RabbitJobQueue, RabbitJobsConfig};
use reporter_contract::fixtures::{job, tenant_a};
use reporter_contract::jobs::JobDrain;
use reporter_contract::services::unique_name;
use reporter_ports::ports::{JobConsumer, JobDelivery, JobQueue, ReportJob};
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

fn config(uri: &str) -> RabbitJobsConfig {
    let mut c = RabbitJobsConfig::new(uri);
    let id = unique_name("jobs");
    c.exchange = format!("{id}.exchange");
    c.routing_key = format!("{id}.key");
    c.queue = format!("{id}.queue");
    c.retry_queue = format!("{id}.retry");
    c.dead_letter_exchange = format!("{id}.dlx");
    c.dlq = format!("{id}.dlq");
    c.dlq_routing_key = format!("{id}.dlq.key");
    c.prefetch = 10;
    c.max_retries = 2;
    c.retry_base_delay = Duration::from_millis(200);
    c.retry_max_delay = Duration::from_millis(400);
    c.connection_name = id;
    c
}

async fn cleanup(uri: &str, c: &RabbitJobsConfig) {
    let mut admin = Admin::new(uri).await;
    admin.track(
        &[&c.exchange, &c.dead_letter_exchange],
        &[&c.queue, &c.retry_queue, &c.dlq],
    );
    admin.cleanup().await;
}

async fn next(c: &RabbitJobConsumer, within: Duration) -> Option<Box<dyn JobDelivery>> {
    match tokio::time::timeout(within, c.next()).await {
        Ok(r) => r.expect("next"),
        Err(_) => None,
    }
}

fn header(m: &lapin::message::BasicGetMessage, name: &str) -> Option<String> {
    m.delivery
        .properties
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(name))
        .map(reporter_adapter_rabbitmq::cloudevents::value_as_text)
}

struct Drain(RabbitJobConsumer);

impl JobDrain for Drain {
    async fn next_job(&mut self) -> Option<ReportJob> {
        let d = self.0.next().await.expect("next")?;
        let j = d.job().clone();
        d.ack().await.expect("ack");
        Some(j)
    }
}

reporter_contract::jobs_contract!(mod contract, |check| async {
    let Some(uri) = uri() else { return };
    let c = config(&uri);
    let q = RabbitJobQueue::connect(c.clone()).await.expect("queue");
    let consumer = RabbitJobConsumer::connect(c.clone()).await.expect("consumer");
    let outcome = AssertUnwindSafe(check(q, Drain(consumer))).catch_unwind().await;
    cleanup(&uri, &c).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
});

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueued_message_is_persistent_json_with_headers() {
    let Some(uri) = uri() else { return };
    let c = config(&uri);
    let q = RabbitJobQueue::connect(c.clone()).await.expect("queue");
    let mut j = job(&tenant_a());
    j.request_id = Some("req-1".into());
    q.enqueue(&j).await.expect("enqueue");
    let admin = Admin::new(&uri).await;
    let m = admin.get(&c.queue).await.expect("message");
    assert_eq!(*m.delivery.properties.delivery_mode(), Some(2));
    assert_eq!(
        m.delivery
            .properties
            .content_type()
            .as_ref()
            .map(|c| c.as_str()),
        Some("application/json")
    );
    assert_eq!(
        serde_json::from_slice::<ReportJob>(&m.delivery.data).expect("json"),
        j
    );
    assert_eq!(header(&m, "x-retry-count").as_deref(), Some("0"));
    assert_eq!(header(&m, "X-Tenant-ID").as_deref(), Some("tenant-a"));
    assert_eq!(header(&m, "request-id").as_deref(), Some("req-1"));
    assert!(q.check().await.is_ok());
    admin.cleanup().await;
    cleanup(&uri, &c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_removes_the_job() {
    let Some(uri) = uri() else { return };
    let c = config(&uri);
    let q = RabbitJobQueue::connect(c.clone()).await.expect("queue");
    let consumer = RabbitJobConsumer::connect(c.clone())
        .await
        .expect("consumer");
    let j = job(&tenant_a());
    q.enqueue(&j).await.expect("enqueue");
    let d = next(&consumer, Duration::from_secs(5))
        .await
        .expect("delivery");
    assert_eq!(d.job(), &j);
    assert_eq!(d.attempt(), 0);
    d.ack().await.expect("ack");
    consumer.shutdown().await;
    let admin = Admin::new(&uri).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(admin.count(&c.queue).await, 0);
    assert_eq!(admin.count(&c.dlq).await, 0);
    admin.cleanup().await;
    cleanup(&uri, &c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_redelivers_with_attempt_plus_one_after_the_delay() {
    let Some(uri) = uri() else { return };
    let c = config(&uri);
    let q = RabbitJobQueue::connect(c.clone()).await.expect("queue");
    let consumer = RabbitJobConsumer::connect(c.clone())
        .await
        .expect("consumer");
    let j = job(&tenant_a());
    q.enqueue(&j).await.expect("enqueue");
    let d = next(&consumer, Duration::from_secs(5))
        .await
        .expect("delivery");
    assert_eq!(d.attempt(), 0);
    let started = Instant::now();
    d.retry("data source timed out").await.expect("retry");
    let d = next(&consumer, Duration::from_secs(5))
        .await
        .expect("redelivery");
    let took = started.elapsed();
    assert_eq!(d.job(), &j);
    assert_eq!(d.attempt(), 1);
    // Full jitter: anywhere in [0, 200 ms] for the first retry, plus delivery latency.
    assert!(took < Duration::from_secs(2), "took {took:?}");
    d.retry("again").await.expect("retry");
    let d = next(&consumer, Duration::from_secs(5))
        .await
        .expect("redelivery");
    assert_eq!(d.attempt(), 2);
    d.ack().await.expect("ack");
    assert!(next(&consumer, Duration::from_millis(800)).await.is_none());
    consumer.shutdown().await;
    cleanup(&uri, &c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_retries_go_to_the_dlq() {
    let Some(uri) = uri() else { return };
    let c = config(&uri);
    let q = RabbitJobQueue::connect(c.clone()).await.expect("queue");
    let consumer = RabbitJobConsumer::connect(c.clone())
        .await
        .expect("consumer");
    let j = job(&tenant_a());
    q.enqueue(&j).await.expect("enqueue");
    for attempt in 0..=c.max_retries {
        let d = next(&consumer, Duration::from_secs(5))
            .await
            .expect("delivery");
        assert_eq!(d.attempt(), attempt);
        d.retry(&format!("failure {attempt}")).await.expect("retry");
    }
    assert!(
        next(&consumer, Duration::from_secs(1)).await.is_none(),
        "no more deliveries"
    );
    let admin = Admin::new(&uri).await;
    let m = admin.get(&c.dlq).await.expect("in the DLQ");
    assert_eq!(
        serde_json::from_slice::<ReportJob>(&m.delivery.data).expect("json"),
        j
    );
    assert_eq!(
        header(&m, "x-dlq-reason").as_deref(),
        Some("max_retries_exceeded")
    );
    assert_eq!(header(&m, "x-retry-count").as_deref(), Some("2"));
    assert_eq!(header(&m, "x-failure-reason").as_deref(), Some("failure 2"));
    assert_eq!(*m.delivery.properties.delivery_mode(), Some(2));
    assert!(admin.get(&c.dlq).await.is_none(), "exactly one copy");
    consumer.shutdown().await;
    admin.cleanup().await;
    cleanup(&uri, &c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letter_goes_to_the_dlq_with_a_sanitised_reason() {
    let Some(uri) = uri() else { return };
    let c = config(&uri);
    let q = RabbitJobQueue::connect(c.clone()).await.expect("queue");
    let consumer = RabbitJobConsumer::connect(c.clone())
        .await
        .expect("consumer");
    let j = job(&tenant_a());
    q.enqueue(&j).await.expect("enqueue");
    let d = next(&consumer, Duration::from_secs(5))
        .await
        .expect("delivery");
    let reason = format!("invalid template\nline 2\t{}", "x".repeat(400));
    d.dead_letter(&reason).await.expect("dead letter");
    let admin = Admin::new(&uri).await;
    let m = admin.get(&c.dlq).await.expect("in the DLQ");
    let got = header(&m, "x-failure-reason").expect("reason");
    assert_eq!(got.chars().count(), 256);
    assert!(got.starts_with("invalid template line 2 xxx"), "{got}");
    assert_eq!(header(&m, "x-dlq-reason").as_deref(), Some("dead_lettered"));
    assert_eq!(header(&m, "x-retry-count").as_deref(), Some("0"));
    assert!(next(&consumer, Duration::from_millis(800)).await.is_none());
    consumer.shutdown().await;
    admin.cleanup().await;
    cleanup(&uri, &c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_delivery_is_redelivered() {
    let Some(uri) = uri() else { return };
    let c = config(&uri);
    let q = RabbitJobQueue::connect(c.clone()).await.expect("queue");
    let consumer = RabbitJobConsumer::connect(c.clone())
        .await
        .expect("consumer");
    let j = job(&tenant_a());
    q.enqueue(&j).await.expect("enqueue");
    let d = next(&consumer, Duration::from_secs(5))
        .await
        .expect("delivery");
    drop(d);
    let d = next(&consumer, Duration::from_secs(5))
        .await
        .expect("redelivery");
    assert_eq!(d.job(), &j);
    assert_eq!(d.attempt(), 0, "a requeue is not a retry");
    d.ack().await.expect("ack");
    consumer.shutdown().await;
    cleanup(&uri, &c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unacked_jobs_of_a_closed_connection_are_redelivered() {
    let Some(uri) = uri() else { return };
    let c = config(&uri);
    let q = RabbitJobQueue::connect(c.clone()).await.expect("queue");
    let first = RabbitJobConsumer::connect(c.clone())
        .await
        .expect("consumer");
    let j = job(&tenant_a());
    q.enqueue(&j).await.expect("enqueue");
    let d = next(&first, Duration::from_secs(5))
        .await
        .expect("delivery");
    first.shutdown().await;
    let second = RabbitJobConsumer::connect(c.clone())
        .await
        .expect("consumer");
    let again = next(&second, Duration::from_secs(5))
        .await
        .expect("redelivery");
    assert_eq!(again.job(), &j);
    again.ack().await.expect("ack");
    // Settling on the dead channel is an error: the job went back to the queue.
    assert!(d.ack().await.is_err());
    second.shutdown().await;
    cleanup(&uri, &c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_answers_none_after_close() {
    let Some(uri) = uri() else { return };
    let c = config(&uri);
    let consumer = RabbitJobConsumer::connect(c.clone())
        .await
        .expect("consumer");
    let waiting = {
        let consumer = consumer.clone();
        tokio::spawn(async move { consumer.next().await.map(|d| d.is_none()) })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    consumer.close().await;
    let r = tokio::time::timeout(Duration::from_secs(2), waiting)
        .await
        .expect("next returned")
        .expect("task");
    assert_eq!(r, Ok(true));
    assert!(consumer.next().await.expect("next").is_none());
    consumer.shutdown().await;
    cleanup(&uri, &c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_message_goes_to_the_dlq_and_is_skipped() {
    let Some(uri) = uri() else { return };
    let c = config(&uri);
    let q = RabbitJobQueue::connect(c.clone()).await.expect("queue");
    let consumer = RabbitJobConsumer::connect(c.clone())
        .await
        .expect("consumer");
    let admin = Admin::new(&uri).await;
    admin
        .ch
        .basic_publish(
            c.exchange.as_str().into(),
            c.routing_key.as_str().into(),
            BasicPublishOptions::default(),
            b"not json",
            BasicProperties::default().with_headers({
                let mut h = FieldTable::default();
                h.insert("x-retry-count".into(), AMQPValue::LongString("1".into()));
                h
            }),
        )
        .await
        .expect("publish");
    let j = job(&tenant_a());
    q.enqueue(&j).await.expect("enqueue");
    let d = next(&consumer, Duration::from_secs(5))
        .await
        .expect("delivery");
    assert_eq!(d.job(), &j);
    d.ack().await.expect("ack");
    // Two connections give no order: keep the consumer going in case the bad one came second.
    assert!(next(&consumer, Duration::from_secs(1)).await.is_none());
    let m = admin.get(&c.dlq).await.expect("in the DLQ");
    assert_eq!(m.delivery.data, b"not json");
    assert_eq!(
        header(&m, "x-dlq-reason").as_deref(),
        Some("invalid_message")
    );
    assert_eq!(header(&m, "x-retry-count").as_deref(), Some("1"));
    consumer.shutdown().await;
    admin.cleanup().await;
    cleanup(&uri, &c).await;
}
