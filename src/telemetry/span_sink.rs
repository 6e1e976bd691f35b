//! Where the service's spans start and end (telemetry on): ids, the sampling decision and
//! the span processor of the configured protocol (over OTLP/HTTP the
//! [`EncodingProcessor`](super::encoding_processor::EncodingProcessor), over gRPC the SDK's
//! batch span processor and the stock exporter). The request's server span
//! ([`server_span`](super::server_span)) and every `tracing` span of the service
//! ([`span_layer`](super::span_layer)) go through it.
//!
//! Sampling is the SDK's sampler as the standard variables configure it
//! (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`; default `parentbased_always_on`, as the
//! original), asked for every span that starts a trace in this process: a root span and a
//! span continuing a remote parent. A span under a local parent inherits its parent's
//! decision: for each standard sampler that is the decision the sampler would make (a
//! parent-based one follows the parent; `always_on`, `always_off` and `traceidratio` decide
//! the same for every span of a trace).
use super::encoded_attributes::EncodedAttributes;
use super::encoding_processor::{EncodingProcessor, ScopeId};
use super::span_record::SpanRecord;
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Context, InstrumentationScope};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SamplingDecision, ShouldSample, SpanProcessor};
use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};
use std::borrow::Cow;
use std::cell::RefCell;
use std::time::{Duration, SystemTime};

/// What a starting span continues.
#[derive(Debug, Clone, Copy)]
pub enum Parent<'a> {
    /// Nothing: the span starts a new trace.
    Root,
    /// A span of this process.
    Local(&'a SpanContext),
    /// A span of another process (an incoming `traceparent`, a job's or an event's carrier).
    Remote(&'a SpanContext),
}

/// Where ended, sampled spans go.
pub enum Processor {
    /// The OTLP/HTTP processor: a span is encoded straight from its record.
    Encoding(EncodingProcessor),
    /// Any SDK span processor (over gRPC, the batch processor): a span is handed over as the
    /// SDK's `SpanData`.
    Sdk(Box<dyn SpanProcessor>),
}

impl Processor {
    fn as_sdk(&self) -> &dyn SpanProcessor {
        match self {
            Self::Encoding(p) => p,
            Self::Sdk(p) => p.as_ref(),
        }
    }

    /// Gives the processor the process's resource, which every export carries.
    pub fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        match self {
            Self::Encoding(p) => p.set_resource(resource),
            Self::Sdk(p) => p.set_resource(resource),
        }
    }
}

/// Starts and ends the service's spans (see the module's documentation).
pub struct SpanSink {
    processor: Processor,
    sampler: Box<dyn ShouldSample>,
    scope: InstrumentationScope,
    scope_id: ScopeId,
    max_attributes: usize,
}

impl std::fmt::Debug for SpanSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpanSink")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// The ids' generator of this thread, seeded from the operating system: a small fast
    /// generator, as the SDK's own id generator uses (the thread's ChaCha generator cost a
    /// request's two ids a block refill now and then and a reference-counted handle each).
    static IDS: RefCell<SmallRng> = RefCell::new(SmallRng::from_os_rng());
}

/// A new trace id: random, never the invalid all-zero id.
fn new_trace_id() -> TraceId {
    TraceId::from(IDS.with(|ids| ids.borrow_mut().random::<u128>()).max(1))
}

/// A new span id: random, never the invalid all-zero id.
fn new_span_id() -> SpanId {
    SpanId::from(IDS.with(|ids| ids.borrow_mut().random::<u64>()).max(1))
}

impl SpanSink {
    /// A sink whose ended, sampled spans go to `processor` (its resource already set), each
    /// carrying `scope`; `sampler` decides for the spans that start a trace here.
    pub fn new(
        processor: Processor,
        sampler: Box<dyn ShouldSample>,
        scope: InstrumentationScope,
    ) -> Self {
        Self {
            processor,
            sampler,
            scope,
            scope_id: ScopeId::new(),
            max_attributes: usize::MAX,
        }
    }

    /// The same sink keeping at most `max` attributes per span (the SDK's
    /// `OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT`): the first `max` set, the others dropped and counted.
    pub fn with_max_attributes(self, max: u32) -> Self {
        Self {
            max_attributes: usize::try_from(max).unwrap_or(usize::MAX),
            ..self
        }
    }

    /// Starts a span now. A root gets a new trace id; a remote parent's trace continues with
    /// the sampler's decision; a local parent's trace continues with its decision.
    pub fn start(
        &self,
        parent: Parent<'_>,
        name: Cow<'static, str>,
        kind: SpanKind,
        encoded: EncodedAttributes,
    ) -> SpanRecord {
        let (context, parent_id, parent_is_remote) =
            self.context_under(parent, new_span_id(), &name, &kind);
        SpanRecord {
            context,
            parent: parent_id,
            parent_is_remote,
            kind,
            name,
            start: SystemTime::now(),
            fixed: None,
            encoded,
            attributes: Vec::new(),
            status: Status::Unset,
        }
    }

    /// Moves a started span under the remote parent `remote` (a job taken from the queue, an
    /// event replayed from the outbox): its trace becomes the parent's, sampled as the sampler
    /// decides; its span id stays.
    pub fn continue_remote(&self, record: &mut SpanRecord, remote: &SpanContext) {
        let (context, parent, remote) = self.context_under(
            Parent::Remote(remote),
            record.context.span_id(),
            &record.name,
            &record.kind,
        );
        record.context = context;
        record.parent = parent;
        record.parent_is_remote = remote;
    }

    /// Ends `record` now: a sampled span goes to the processor, any other is dropped.
    pub fn end(&self, record: SpanRecord) {
        if !record.is_sampled() {
            return;
        }
        let end = SystemTime::now();
        match &self.processor {
            Processor::Encoding(p) => p.end_view_in(
                &record.view(end, self.max_attributes),
                &self.scope,
                Some(self.scope_id),
            ),
            Processor::Sdk(p) => p.on_end(record.finish(end, &self.scope, self.max_attributes)),
        }
    }

    /// Exports the pending spans and waits for them.
    pub fn force_flush(&self) -> OTelSdkResult {
        self.processor.as_sdk().force_flush()
    }

    /// Exports the pending spans and stops the processor, waiting at most `timeout`.
    pub fn shutdown(&self, timeout: Duration) -> OTelSdkResult {
        self.processor.as_sdk().shutdown_with_timeout(timeout)
    }

    /// The span context of span `span_id` under `parent`, with the parent's id and whether
    /// it is remote.
    fn context_under(
        &self,
        parent: Parent<'_>,
        span_id: SpanId,
        name: &str,
        kind: &SpanKind,
    ) -> (SpanContext, SpanId, bool) {
        let context =
            |trace_id, flags, state| SpanContext::new(trace_id, span_id, flags, false, state);
        match parent {
            Parent::Local(p) if p.is_valid() => (
                context(p.trace_id(), p.trace_flags(), p.trace_state().clone()),
                p.span_id(),
                false,
            ),
            Parent::Remote(p) if p.is_valid() => {
                let cx = Context::new().with_remote_span_context(p.clone());
                let (flags, state) = self.sample(Some(&cx), p.trace_id(), name, kind);
                (context(p.trace_id(), flags, state), p.span_id(), true)
            }
            _ => {
                let trace_id = new_trace_id();
                let (flags, state) = self.sample(None, trace_id, name, kind);
                (context(trace_id, flags, state), SpanId::INVALID, false)
            }
        }
    }

    /// The sampler's flags and trace state for a span starting a trace here.
    fn sample(
        &self,
        parent: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        kind: &SpanKind,
    ) -> (TraceFlags, TraceState) {
        let result = self
            .sampler
            .should_sample(parent, trace_id, name, kind, &[], &[]);
        let flags = match result.decision {
            SamplingDecision::RecordAndSample => TraceFlags::SAMPLED,
            SamplingDecision::RecordOnly | SamplingDecision::Drop => TraceFlags::default(),
        };
        (flags, result.trace_state)
    }
}

/// A sink whose processor keeps what it is given, for the tests of the span modules.
#[cfg(test)]
pub(crate) mod collect {
    use super::*;
    use opentelemetry_sdk::trace::{Sampler, Span, SpanData};
    use std::sync::{Arc, Mutex};

    /// The spans a sink ended.
    #[derive(Debug, Clone, Default)]
    pub struct Collect(pub Arc<Mutex<Vec<SpanData>>>);

    impl SpanProcessor for Collect {
        fn on_start(&self, _: &mut Span, _: &Context) {}
        fn on_end(&self, span: SpanData) {
            self.0.lock().unwrap().push(span);
        }
        fn force_flush(&self) -> OTelSdkResult {
            Ok(())
        }
        fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
            Ok(())
        }
    }

    /// A sink with scope `reporter` deciding with `sampler`, and what it ends.
    pub fn sink(sampler: Sampler) -> (SpanSink, Collect) {
        let collect = Collect::default();
        let scope = InstrumentationScope::builder("reporter").build();
        (
            SpanSink::new(
                Processor::Sdk(Box::new(collect.clone())),
                Box::new(sampler),
                scope,
            ),
            collect,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::collect::sink;
    use super::*;
    use opentelemetry::KeyValue;
    use opentelemetry_sdk::trace::Sampler;

    fn remote(flags: TraceFlags) -> SpanContext {
        SpanContext::new(
            TraceId::from(0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736),
            SpanId::from(0x00f0_67aa_0ba9_02b7),
            flags,
            true,
            TraceState::from_key_value([("vendor", "v")]).unwrap(),
        )
    }

    fn none() -> EncodedAttributes {
        EncodedAttributes::default()
    }

    fn always_on() -> Sampler {
        Sampler::ParentBased(Box::new(Sampler::AlwaysOn))
    }

    #[test]
    fn a_root_starts_a_new_sampled_trace_and_children_share_it() {
        let (sink, collect) = sink(always_on());
        let root = sink.start(Parent::Root, "root".into(), SpanKind::Server, none());
        assert!(root.context.is_valid() && root.is_sampled());
        assert_eq!(root.parent, SpanId::INVALID);
        let child = sink.start(
            Parent::Local(&root.context),
            "child".into(),
            SpanKind::Internal,
            none(),
        );
        assert_eq!(child.context.trace_id(), root.context.trace_id());
        assert_ne!(child.context.span_id(), root.context.span_id());
        assert_eq!(child.parent, root.context.span_id());
        assert!(!child.parent_is_remote);
        let other = sink.start(Parent::Root, "root".into(), SpanKind::Server, none());
        assert_ne!(other.context.trace_id(), root.context.trace_id());
        sink.end(child);
        sink.end(root);
        let ended = collect.0.lock().unwrap();
        assert_eq!(
            ended.iter().map(|s| s.name.as_ref()).collect::<Vec<_>>(),
            ["child", "root"]
        );
        assert!(
            ended
                .iter()
                .all(|s| s.instrumentation_scope.name() == "reporter")
        );
    }

    #[test]
    fn a_remote_parent_continues_its_trace_state_and_decision() {
        let (sink, collect) = sink(always_on());
        let parent = remote(TraceFlags::SAMPLED);
        let span = sink.start(
            Parent::Remote(&parent),
            "s".into(),
            SpanKind::Server,
            none(),
        );
        assert_eq!(span.context.trace_id(), parent.trace_id());
        assert_eq!(span.parent, parent.span_id());
        assert!(span.parent_is_remote && span.is_sampled());
        assert_eq!(span.context.trace_state().get("vendor"), Some("v"));
        let unsampled = remote(TraceFlags::default());
        let dropped = sink.start(
            Parent::Remote(&unsampled),
            "d".into(),
            SpanKind::Server,
            none(),
        );
        assert!(
            !dropped.is_sampled(),
            "parent-based: an unsampled parent is followed"
        );
        let child = sink.start(
            Parent::Local(&dropped.context),
            "c".into(),
            SpanKind::Internal,
            none(),
        );
        assert!(!child.is_sampled(), "a local child inherits the decision");
        sink.end(child);
        sink.end(dropped);
        sink.end(span);
        assert_eq!(
            collect.0.lock().unwrap().len(),
            1,
            "only the sampled span is exported"
        );
    }

    #[test]
    fn a_started_span_moves_under_a_remote_parent_keeping_its_id() {
        let (sink, _) = sink(always_on());
        let mut span = sink.start(Parent::Root, "job".into(), SpanKind::Consumer, none());
        let id = span.context.span_id();
        let parent = remote(TraceFlags::SAMPLED);
        sink.continue_remote(&mut span, &parent);
        assert_eq!(span.context.span_id(), id);
        assert_eq!(span.context.trace_id(), parent.trace_id());
        assert_eq!(span.parent, parent.span_id());
        assert!(span.parent_is_remote);
    }

    #[test]
    fn attributes_past_the_limit_are_dropped_and_counted() {
        let (sink, collect) = sink(always_on());
        let sink = sink.with_max_attributes(2);
        let attributes: Vec<_> = (0..5).map(|i| KeyValue::new(format!("k{i}"), i)).collect();
        let encoded = EncodedAttributes::of(&attributes);
        sink.end(sink.start(Parent::Root, "s".into(), SpanKind::Internal, encoded));
        let ended = collect.0.lock().unwrap();
        assert_eq!(
            ended[0].attributes,
            vec![KeyValue::new("k0", 0), KeyValue::new("k1", 1)]
        );
        assert_eq!(ended[0].dropped_attributes_count, 3);
    }

    #[test]
    fn the_configured_sampler_decides_for_roots() {
        let (off, collect) = sink(Sampler::AlwaysOff);
        let root = off.start(Parent::Root, "r".into(), SpanKind::Server, none());
        assert!(
            root.context.is_valid(),
            "an unsampled span still has ids to propagate"
        );
        assert!(!root.is_sampled());
        off.end(root);
        let (ratio, _) = sink(Sampler::TraceIdRatioBased(0.5));
        let sampled = (0..400)
            .filter(|_| {
                ratio
                    .start(Parent::Root, "r".into(), SpanKind::Server, none())
                    .is_sampled()
            })
            .count();
        assert!(
            (100..300).contains(&sampled),
            "about half of 400: {sampled}"
        );
        assert!(collect.0.lock().unwrap().is_empty());
    }
}
