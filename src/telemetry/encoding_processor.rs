//! The span processor of the OTLP/HTTP protocol (issue 32: telemetry's cost per request).
//!
//! The SDK's batch span processor moves every ended [`SpanData`] (~350 bytes, with its name,
//! attribute `Vec` and strings, all allocated by the request thread) through a channel to its
//! own thread, which encodes and frees them: every free then lands in another thread's malloc
//! arena (glibc's lock contention, `malloc_consolidate`) and the batch `Vec` is page-faulted
//! anew. This processor instead encodes the span where it ended, on the request thread, as
//! the bytes of one `ScopeSpans.spans` field ([`otlp_body::encode_span`]), appends them to the
//! pending bytes of its instrumentation scope under a short mutex and drops the `SpanData`
//! there. A dedicated export thread swaps the pending bytes out, writes the
//! `ExportTraceServiceRequest` around them ([`otlp_body::export_request_encoded`]: the same
//! bytes as [`otlp_body::export_request`] of the same spans) and hands it to an [`Export`]
//! (over HTTP: [`HttpSpanExport`](super::span_export::HttpSpanExport)). The byte buffers are
//! reused from export to export: in the steady state a span costs no allocation beyond the
//! SDK's own.
//!
//! Limits ([`Limits`], the SDK's `OTEL_BSP_*` variables): at most `max_queue` spans wait for
//! export, past it a span is dropped and counted ([`EncodingProcessor::dropped`]), the request
//! thread never blocks; an export leaves when `max_batch` spans are pending or every
//! `schedule_delay`, and one request carries at most `max_batch` spans. While one export is in
//! flight, up to `max_queue` more spans may wait: at most twice the queue's bytes are held,
//! besides at most two emptied request buffers kept for the next requests
//! ([`BodyPool`](super::export_body::BodyPool)).
use super::export_body::{Body, BodyPool};
use super::otlp_body::{self, EncodedResource, SpanView};
use opentelemetry::{Context, InstrumentationScope};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where the export thread sends each `ExportTraceServiceRequest`.
pub trait Export: Send + 'static {
    /// Why a request did not arrive.
    type Error: std::error::Error;

    /// Sends one request's `body`, blocking the export thread until done. It MUST return in
    /// bounded time (the processor's flush and shutdown wait for it). Dropping `body` (here or
    /// later, where the bytes went) gives its buffer back for a later request.
    fn export(&mut self, body: Body) -> Result<(), Self::Error>;
}

/// The processor's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Spans waiting for export at most; past it new spans are dropped.
    pub max_queue: usize,
    /// Pending spans that start an export; also the most spans one request carries (at
    /// least 1, at most `max_queue` unless that is 0).
    pub max_batch: usize,
    /// An export leaves this long after the previous one when no batch filled up (at least
    /// 1 ms: the export thread never spins).
    pub schedule_delay: Duration,
}

impl Limits {
    /// The standard variables as the SDK's batch span processor reads them
    /// (`OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`,
    /// `OTEL_BSP_SCHEDULE_DELAY` in milliseconds; a value that is no number is ignored), else
    /// `queue`, `batch` and the SDK's 5 s.
    pub fn from_env(queue: usize, batch: usize) -> Self {
        fn var<T: std::str::FromStr>(name: &str) -> Option<T> {
            std::env::var(name).ok()?.trim().parse().ok()
        }
        Self::new(
            var("OTEL_BSP_MAX_QUEUE_SIZE").unwrap_or(queue),
            var("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").unwrap_or(batch),
            var("OTEL_BSP_SCHEDULE_DELAY")
                .map(Duration::from_millis)
                .unwrap_or(DEFAULT_SCHEDULE_DELAY),
        )
    }

    /// The limits, the batch brought within the queue (as the SDK does) and to at least 1,
    /// the delay to at least 1 ms.
    pub fn new(max_queue: usize, max_batch: usize, schedule_delay: Duration) -> Self {
        Self {
            max_queue,
            max_batch: max_batch.min(max_queue).max(1),
            schedule_delay: schedule_delay.max(Duration::from_millis(1)),
        }
    }
}

/// The SDK's default schedule delay.
pub const DEFAULT_SCHEDULE_DELAY: Duration = Duration::from_secs(5);

/// How long [`SpanProcessor::force_flush`] waits for the pending spans' export: an export in
/// flight, then the flush's own, each bounded by the client's export time.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(25);

/// Why the processor could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProcessorError {
    /// The export thread could not be spawned.
    #[error("the span export thread did not start: {0}")]
    Spawn(#[source] std::io::Error),
}

/// The pending spans of one instrumentation scope.
#[derive(Debug)]
struct Pending {
    scope: InstrumentationScope,
    /// The scope's [`ScopeId`], when its spans came with one.
    scope_id: Option<ScopeId>,
    /// `ScopeSpans.spans` fields, in the order the spans ended.
    fields: Vec<u8>,
    spans: usize,
}

/// What the request threads and the export thread share, under [`Shared::queue`].
#[derive(Debug, Default)]
struct Queue {
    /// One entry per scope, in order of first appearance since the last export.
    pending: Vec<Pending>,
    /// Spans in `pending`.
    spans: usize,
    /// Emptied buffers, given back by the export thread for the next spans.
    free: Vec<Vec<u8>>,
    /// Flushes asked (a counter), and the last one whose spans were exported.
    flush_asked: u64,
    flush_done: u64,
    /// Shutdown asked: new spans are dropped, the thread exports what is pending and ends.
    shutdown: bool,
    /// The export thread ended.
    stopped: bool,
}

#[derive(Debug)]
struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the export thread: a batch is pending, a flush or the shutdown is asked.
    work: Condvar,
    /// Wakes flush and shutdown waiters: an export round ended.
    round: Condvar,
    limits: Limits,
    dropped: AtomicUsize,
    resource: Mutex<EncodedResource>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for export rounds until `done` says the wait is over (`Ok(true)`) or failed, or
    /// until `deadline` (then `Timeout(timeout)`).
    fn wait_rounds<'a>(
        &'a self,
        mut queue: MutexGuard<'a, Queue>,
        deadline: Instant,
        timeout: Duration,
        done: impl Fn(&Queue) -> Result<bool, OTelSdkError>,
    ) -> Result<MutexGuard<'a, Queue>, OTelSdkError> {
        while !done(&queue)? {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(OTelSdkError::Timeout(timeout));
            }
            queue = self
                .round
                .wait_timeout(queue, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Ok(queue)
    }
}

/// Names one instrumentation scope for the life of the process (see [`ScopeId::new`]): spans
/// ending with the same id share their scope without comparing it (the SDK's comparison of
/// two scopes costs a span about 300 instructions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScopeId(u64);

impl ScopeId {
    /// An id no other call answers.
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl Default for ScopeId {
    fn default() -> Self {
        Self::new()
    }
}

thread_local! {
    /// The request thread's encoding buffer, kept from span to span.
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Encodes spans on the threads that end them and exports them from a thread of its own (see
/// the module's documentation).
#[derive(Debug)]
pub struct EncodingProcessor {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl EncodingProcessor {
    /// Starts the export thread, which sends every request through `export`.
    pub fn start<E: Export>(export: E, limits: Limits) -> Result<Self, ProcessorError> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            work: Condvar::new(),
            round: Condvar::new(),
            limits,
            dropped: AtomicUsize::new(0),
            resource: Mutex::new(EncodedResource::default()),
        });
        let thread = std::thread::Builder::new()
            .name("otlp-span-export".into())
            .spawn({
                let shared = shared.clone();
                move || run(&shared, export)
            })
            .map_err(ProcessorError::Spawn)?;
        Ok(Self {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Encodes the ended span `span` of `scope` on this thread and queues its bytes, or drops
    /// it when `max_queue` spans are pending or the processor is shut down. Never blocks but
    /// on the queue's short mutex; allocates nothing in the steady state.
    pub fn end_view(&self, span: &SpanView<'_>, scope: &InstrumentationScope) {
        self.end_view_in(span, scope, None);
    }

    /// [`Self::end_view`] of a span whose `scope` is the one `scope_id` names (`None`: an
    /// unnamed scope, compared as a whole).
    pub fn end_view_in(
        &self,
        span: &SpanView<'_>,
        scope: &InstrumentationScope,
        scope_id: Option<ScopeId>,
    ) {
        let mut scratch = SCRATCH.take();
        otlp_body::encode_span(span, &mut scratch);
        let limits = &self.shared.limits;
        let mut queue = self.shared.lock();
        if queue.shutdown || queue.spans >= limits.max_queue {
            drop(queue);
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        } else {
            let same = |p: &Pending| match (p.scope_id, scope_id) {
                (Some(a), Some(b)) if a == b => true,
                _ => p.scope == *scope,
            };
            let at = match queue.pending.iter().position(same) {
                Some(at) => at,
                None => {
                    let fields = queue.free.pop().unwrap_or_default();
                    queue.pending.push(Pending {
                        scope: scope.clone(),
                        scope_id,
                        fields,
                        spans: 0,
                    });
                    queue.pending.len() - 1
                }
            };
            let pending = &mut queue.pending[at];
            otlp_body::put_encoded_span(&scratch, &mut pending.fields);
            pending.spans += 1;
            queue.spans += 1;
            let batch_ready = queue.spans == limits.max_batch;
            drop(queue);
            if batch_ready {
                self.shared.work.notify_one();
            }
        }
        SCRATCH.set(scratch);
    }

    /// Spans dropped so far because `max_queue` were pending (or after shutdown).
    pub fn dropped(&self) -> usize {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Exports everything pending and waits for it, at most `timeout`.
    fn flush(&self, timeout: Duration) -> OTelSdkResult {
        let deadline = Instant::now() + timeout;
        let mut queue = self.shared.lock();
        if queue.stopped || queue.shutdown {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        queue.flush_asked += 1;
        let asked = queue.flush_asked;
        self.shared.work.notify_one();
        let _exported = self.shared.wait_rounds(queue, deadline, timeout, |q| {
            if q.flush_done >= asked {
                Ok(true)
            } else if q.stopped {
                Err(OTelSdkError::AlreadyShutdown)
            } else {
                Ok(false)
            }
        })?;
        Ok(())
    }
}

impl SpanProcessor for EncodingProcessor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    /// Encodes `span` on this thread, queues its bytes (or drops it when `max_queue` spans are
    /// pending) and drops the `SpanData` here. Never blocks but on the queue's short mutex.
    fn on_end(&self, span: SpanData) {
        self.end_view(&SpanView::of_data(&span), &span.instrumentation_scope);
    }

    /// Exports every pending span and waits, at most [`FLUSH_TIMEOUT`].
    fn force_flush(&self) -> OTelSdkResult {
        self.flush(FLUSH_TIMEOUT)
    }

    /// Drops spans ended from now on, exports the pending ones and joins the export thread,
    /// waiting at most `timeout` (past it the thread is left to finish on its own).
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let deadline = Instant::now() + timeout;
        let mut queue = self.shared.lock();
        if queue.shutdown {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        queue.shutdown = true;
        self.shared.work.notify_one();
        let queue = self
            .shared
            .wait_rounds(queue, deadline, timeout, |q| Ok(q.stopped))?;
        drop(queue);
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread
            && thread.join().is_err()
        {
            return Err(OTelSdkError::InternalFailure(
                "the span export thread panicked".into(),
            ));
        }
        let dropped = self.dropped();
        if dropped > 0 {
            tracing::warn!(
                dropped,
                max_queue = self.shared.limits.max_queue,
                "span export: spans were dropped because the queue was full"
            );
        }
        Ok(())
    }

    fn set_resource(&mut self, resource: &Resource) {
        *self
            .shared
            .resource
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = otlp_body::resource(resource);
    }
}

impl Drop for EncodingProcessor {
    /// Ends the export thread (after it exported what is pending) without waiting for it,
    /// when no shutdown did.
    fn drop(&mut self) {
        let mut queue = self.shared.lock();
        if !queue.shutdown {
            queue.shutdown = true;
            self.shared.work.notify_one();
        }
    }
}

/// The export thread: waits for a batch, a flush, the shutdown or the schedule delay, takes
/// every pending span and exports them, then gives the buffers back.
fn run<E: Export>(shared: &Shared, mut export: E) {
    let limits = shared.limits;
    let mut taken: Vec<Pending> = Vec::new();
    let pool = BodyPool::new();
    let mut next = Instant::now() + limits.schedule_delay;
    let mut failing = false;
    let mut warned_drop = false;
    loop {
        let (flush, stop) = {
            let mut queue = shared.lock();
            loop {
                if queue.shutdown
                    || queue.flush_asked > queue.flush_done
                    || queue.spans >= limits.max_batch
                {
                    break;
                }
                let left = next.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                queue = shared
                    .work
                    .wait_timeout(queue, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            std::mem::swap(&mut queue.pending, &mut taken);
            queue.spans = 0;
            (queue.flush_asked, queue.shutdown)
        };
        next = Instant::now() + limits.schedule_delay;
        let bodies = {
            let resource = shared
                .resource
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            requests(&taken, limits.max_batch, &resource, &pool)
        };
        for body in bodies {
            match export.export(body) {
                Ok(()) if failing => {
                    failing = false;
                    tracing::info!("span export: the collector takes spans again");
                }
                Ok(()) => {}
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(error = %e, "span export failed (further failures are not logged until one succeeds)");
                }
                Err(_) => {}
            }
        }
        let mut queue = shared.lock();
        for p in taken.drain(..) {
            let mut fields = p.fields;
            fields.clear();
            queue.free.push(fields);
        }
        queue.flush_done = flush;
        if stop {
            queue.stopped = true;
        }
        drop(queue);
        shared.round.notify_all();
        if stop {
            return;
        }
        if !warned_drop && shared.dropped.load(Ordering::Relaxed) > 0 {
            warned_drop = true;
            tracing::warn!(
                max_queue = limits.max_queue,
                "span export: a span was dropped because the queue was full (no further line until shutdown, which tells the count)"
            );
        }
    }
}

/// The requests of the `taken` spans, at most `max_batch` spans each, the spans in order
/// (scope by scope), written into buffers of `pool`.
fn requests(
    taken: &[Pending],
    max_batch: usize,
    resource: &EncodedResource,
    pool: &Arc<BodyPool>,
) -> Vec<Body> {
    let request = |parts: &[(&InstrumentationScope, &[u8])]| {
        let mut buf = pool.take();
        otlp_body::export_request_encoded_into(parts, resource, &mut buf);
        Body::new(buf, pool)
    };
    let mut bodies = Vec::new();
    let mut parts: Vec<(&InstrumentationScope, &[u8])> = Vec::with_capacity(taken.len());
    let mut in_request = 0;
    for p in taken {
        let mut rest = p.fields.as_slice();
        let mut left = p.spans;
        while !rest.is_empty() {
            let room = max_batch.saturating_sub(in_request).max(1);
            let (count, cut) = if left <= room {
                (left, rest.len())
            } else {
                otlp_body::leading_spans(rest, room)
            };
            // Bytes that are no whole span (never written so) go with the last part.
            let (count, cut) = if cut == 0 {
                (left, rest.len())
            } else {
                (count, cut)
            };
            parts.push((&p.scope, &rest[..cut]));
            rest = &rest[cut..];
            left = left.saturating_sub(count);
            in_request += count;
            if in_request >= max_batch {
                bodies.push(request(&parts));
                parts.clear();
                in_request = 0;
            }
        }
    }
    if !parts.is_empty() {
        bodies.push(request(&parts));
    }
    bodies
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::otlp_body::tests::{resource, spans, stock_request};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message as _;
    use std::sync::mpsc;

    /// Hands every body to the test; waits for `gate` (when given) before answering.
    struct Sink {
        bodies: mpsc::Sender<Vec<u8>>,
        gate: Option<mpsc::Receiver<()>>,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("never")]
    struct Never;

    impl Export for Sink {
        type Error = Never;
        fn export(&mut self, body: Body) -> Result<(), Never> {
            let _ = self.bodies.send(body.to_vec());
            if let Some(gate) = &self.gate {
                let _ = gate.recv_timeout(Duration::from_secs(10));
            }
            Ok(())
        }
    }

    const LONG: Duration = Duration::from_secs(3600);
    const WAIT: Duration = Duration::from_secs(10);

    /// A processor exporting to the returned channel, its resource `resource` (a
    /// [`Resource`] lists its attributes in a random order: a comparison of bytes MUST encode
    /// the same instance).
    fn processor_of(
        limits: Limits,
        gate: Option<mpsc::Receiver<()>>,
        resource: &Resource,
    ) -> (EncodingProcessor, mpsc::Receiver<Vec<u8>>) {
        let (tx, rx) = mpsc::channel();
        let mut p = EncodingProcessor::start(Sink { bodies: tx, gate }, limits).expect("starts");
        p.set_resource(resource);
        (p, rx)
    }

    fn processor(
        limits: Limits,
        gate: Option<mpsc::Receiver<()>>,
    ) -> (EncodingProcessor, mpsc::Receiver<Vec<u8>>) {
        processor_of(limits, gate, &resource())
    }

    fn span_count(body: &[u8]) -> usize {
        let request = ExportTraceServiceRequest::decode(body).expect("decodes");
        request
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len())
            .sum()
    }

    #[test]
    fn the_request_is_the_one_otlp_body_writes_for_the_same_spans() {
        let resource = resource();
        let (p, bodies) = processor_of(Limits::new(100, 100, LONG), None, &resource);
        let spans = spans();
        for span in spans.clone() {
            p.on_end(span);
        }
        p.force_flush().expect("flushes");
        let body = bodies.recv_timeout(WAIT).expect("one request");
        let expected = otlp_body::export_request(&spans, &otlp_body::resource(&resource));
        assert_eq!(body, expected, "byte for byte");
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).expect("decodes");
        assert_eq!(decoded, stock_request(spans, &resource));
        assert_eq!(decoded.resource_spans[0].scope_spans.len(), 2, "two scopes");
        assert!(bodies.try_recv().is_err(), "one request only");
    }

    #[test]
    fn a_full_batch_starts_an_export() {
        let (p, bodies) = processor(Limits::new(100, 3, LONG), None);
        for span in spans().into_iter().take(3) {
            p.on_end(span);
        }
        let body = bodies.recv_timeout(WAIT).expect("exported without a flush");
        assert_eq!(span_count(&body), 3);
    }

    #[test]
    fn the_schedule_delay_exports_a_partial_batch() {
        let (p, bodies) = processor(Limits::new(100, 50, Duration::from_millis(50)), None);
        p.on_end(spans().remove(0));
        let body = bodies.recv_timeout(WAIT).expect("exported on schedule");
        assert_eq!(span_count(&body), 1);
    }

    #[test]
    fn a_flush_exports_what_is_pending_and_waits() {
        let (p, bodies) = processor(Limits::new(100, 50, LONG), None);
        for span in spans().into_iter().take(2) {
            p.on_end(span);
        }
        assert!(bodies.try_recv().is_err(), "no batch yet");
        p.force_flush().expect("flushes");
        let body = bodies
            .try_recv()
            .expect("exported before the flush returned");
        assert_eq!(span_count(&body), 2);
        p.force_flush().expect("an empty flush");
        assert!(bodies.try_recv().is_err(), "nothing pending, nothing sent");
    }

    #[test]
    fn past_the_queue_spans_are_dropped_and_counted() {
        let (open, gate) = mpsc::channel();
        let (p, bodies) = processor(Limits::new(3, 3, LONG), Some(gate));
        let span = spans().remove(0);
        for _ in 0..3 {
            p.on_end(span.clone());
        }
        // The export thread took the first three and waits at the gate.
        assert_eq!(span_count(&bodies.recv_timeout(WAIT).expect("first")), 3);
        for _ in 0..5 {
            p.on_end(span.clone());
        }
        assert_eq!(p.dropped(), 2, "three queued, two dropped");
        open.send(()).expect("gate");
        open.send(()).expect("gate");
        assert_eq!(span_count(&bodies.recv_timeout(WAIT).expect("second")), 3);
        p.shutdown().expect("shuts down");
        assert_eq!(p.dropped(), 2);
    }

    #[test]
    fn shutdown_exports_what_is_pending_then_drops_new_spans() {
        let (p, bodies) = processor(Limits::new(100, 50, LONG), None);
        let span = spans().remove(0);
        p.on_end(span.clone());
        p.shutdown().expect("shuts down");
        assert_eq!(span_count(&bodies.try_recv().expect("exported")), 1);
        p.on_end(span);
        assert_eq!(p.dropped(), 1);
        assert!(matches!(p.shutdown(), Err(OTelSdkError::AlreadyShutdown)));
        assert!(p.force_flush().is_err());
    }

    #[test]
    fn limits_are_brought_within_bounds() {
        let l = Limits::new(10, 50, Duration::ZERO);
        assert_eq!(
            (l.max_queue, l.max_batch),
            (10, 10),
            "the batch within the queue"
        );
        assert_eq!(
            l.schedule_delay,
            Duration::from_millis(1),
            "no spinning thread"
        );
        assert_eq!(Limits::new(0, 0, LONG).max_batch, 1);
    }

    #[test]
    fn requests_carry_at_most_a_batch_and_every_span_once() {
        let resource = otlp_body::resource(&resource());
        let spans = spans();
        let mut taken: Vec<Pending> = Vec::new();
        let mut scratch = Vec::new();
        for span in &spans {
            let at = match taken
                .iter()
                .position(|p| p.scope == span.instrumentation_scope)
            {
                Some(at) => at,
                None => {
                    taken.push(Pending {
                        scope: span.instrumentation_scope.clone(),
                        scope_id: None,
                        fields: Vec::new(),
                        spans: 0,
                    });
                    taken.len() - 1
                }
            };
            otlp_body::encode_span(&otlp_body::SpanView::of_data(span), &mut scratch);
            otlp_body::put_encoded_span(&scratch, &mut taken[at].fields);
            taken[at].spans += 1;
        }
        for batch in 1..=6 {
            let bodies = requests(&taken, batch, &resource, &BodyPool::new());
            let counts: Vec<usize> = bodies.iter().map(|b| span_count(b)).collect();
            assert!(counts.iter().all(|c| *c <= batch && *c > 0), "{counts:?}");
            assert_eq!(counts.iter().sum::<usize>(), spans.len());
            assert_eq!(bodies.len(), spans.len().div_ceil(batch), "{counts:?}");
            let mut ids: Vec<_> = bodies
                .iter()
                .flat_map(|b| {
                    ExportTraceServiceRequest::decode(&b[..])
                        .expect("decodes")
                        .resource_spans
                })
                .flat_map(|r| r.scope_spans)
                .flat_map(|s| s.spans)
                .map(|s| (s.span_id, s.kind))
                .collect();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), spans.len(), "every span once");
        }
        let whole: Vec<Vec<u8>> = requests(&taken, 100, &resource, &BodyPool::new())
            .iter()
            .map(|b| b.to_vec())
            .collect();
        assert_eq!(
            whole,
            vec![otlp_body::export_request(&spans, &resource)],
            "one batch is export_request's bytes"
        );
    }
}
