//! One span while it runs, as the service records it (issue 32: telemetry's cost per request):
//! its ids, parent, name, kind, start time, attributes and status, nothing else. It becomes
//! the SDK's [`SpanData`] only when it ends ([`SpanRecord::finish`]), for the span processor
//! of the configured protocol. The SDK's `SpanBuilder` → `Span` → `SpanData` path and
//! `tracing-opentelemetry`'s per-span builder and context copies are not paid per span.
use super::encoded_attributes::EncodedAttributes;
use super::fixed_attributes::FixedAttributes;
use super::otlp_body::SpanView;
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::SpanData;
use std::borrow::Cow;
use std::time::SystemTime;

/// A span that has started and not yet ended.
#[derive(Debug, Clone)]
pub struct SpanRecord {
    /// Its own ids, trace flags (sampled or not) and trace state.
    pub context: SpanContext,
    /// Its parent's span id (`SpanId::INVALID` for a root).
    pub parent: SpanId,
    /// The parent came from another process (a `traceparent` or a carrier).
    pub parent_is_remote: bool,
    /// Server, client, producer, consumer or internal.
    pub kind: SpanKind,
    /// The span's name.
    pub name: Cow<'static, str>,
    /// When it started.
    pub start: SystemTime,
    /// Its first attributes when they are shared with other spans and encoded once (a
    /// route's server spans).
    pub fixed: Option<&'static FixedAttributes>,
    /// Its next attributes, recorded already encoded (a use case's fields, a server span's
    /// status code).
    pub encoded: EncodedAttributes,
    /// Its other attributes; a key appears once among all ([`SpanRecord::set_attribute`]).
    pub attributes: Vec<KeyValue>,
    /// Unset, Ok or Error.
    pub status: Status,
}

impl SpanRecord {
    /// Sets `attribute`, replacing the value of the same key if the span has one.
    pub fn set_attribute(&mut self, attribute: KeyValue) {
        if self.fixed.is_some_and(|f| f.has_key(&attribute.key)) || !self.encoded.is_empty() {
            // A fixed value replaced, or encoded ones that may hold the key: this span's
            // attributes become its own values.
            self.attributes = self.take_all_attributes();
        }
        match self
            .attributes
            .iter_mut()
            .find(|kv| kv.key == attribute.key)
        {
            Some(kv) => kv.value = attribute.value,
            None => self.attributes.push(attribute),
        }
    }

    /// True when the span is exported when it ends (its trace is sampled).
    pub fn is_sampled(&self) -> bool {
        self.context.is_sampled()
    }

    /// The span, ended at `end`, as the encoder reads it, keeping its first `max_attributes`
    /// attributes (the others counted as dropped): no copy of it is made.
    pub fn view(&self, end: SystemTime, max_attributes: usize) -> SpanView<'_> {
        let fixed = self.fixed.map_or(0, FixedAttributes::len);
        let encoded = self.encoded.len();
        let all = fixed + encoded + self.attributes.len();
        let kept = all.min(max_attributes);
        let encoded_kept = kept.saturating_sub(fixed).min(encoded);
        let own_kept = kept.saturating_sub(fixed + encoded);
        SpanView {
            context: &self.context,
            parent: self.parent,
            parent_is_remote: self.parent_is_remote,
            kind: &self.kind,
            name: &self.name,
            start: self.start,
            end: end.max(self.start),
            encoded_attributes: [
                self.fixed.map_or(&[], |f| f.encoded(kept)),
                self.encoded.encoded(encoded_kept),
            ],
            attributes: &self.attributes[..own_kept],
            dropped_attributes: u32::try_from(all - kept).unwrap_or(u32::MAX),
            events: &[],
            dropped_events: 0,
            links: &[],
            dropped_links: 0,
            status: &self.status,
        }
    }

    /// Every attribute in order (fixed, encoded, own) as the span's own values (`fixed` and
    /// `encoded` taken).
    fn take_all_attributes(&mut self) -> Vec<KeyValue> {
        let own = std::mem::take(&mut self.attributes);
        let encoded = std::mem::take(&mut self.encoded);
        let fixed = self.fixed.take();
        if fixed.is_none() && encoded.is_empty() {
            return own;
        }
        let fixed = fixed.map_or(&[][..], FixedAttributes::attributes);
        fixed
            .iter()
            .cloned()
            .chain(encoded.values())
            .chain(own)
            .collect()
    }

    /// The span, ended at `end`, as the span processors take it, keeping its first
    /// `max_attributes` attributes (the others counted as dropped, as [`Self::view`] does).
    pub fn finish(
        mut self,
        end: SystemTime,
        scope: &InstrumentationScope,
        max_attributes: usize,
    ) -> SpanData {
        let mut attributes = self.take_all_attributes();
        let dropped = attributes.len().saturating_sub(max_attributes);
        attributes.truncate(max_attributes);
        SpanData {
            span_context: self.context,
            parent_span_id: self.parent,
            parent_span_is_remote: self.parent_is_remote,
            span_kind: self.kind,
            name: self.name,
            start_time: self.start,
            end_time: end.max(self.start),
            attributes,
            dropped_attributes_count: u32::try_from(dropped).unwrap_or(u32::MAX),
            events: Default::default(),
            links: Default::default(),
            status: self.status,
            instrumentation_scope: scope.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{TraceFlags, TraceId, TraceState};
    use std::time::Duration;

    fn record() -> SpanRecord {
        SpanRecord {
            context: SpanContext::new(
                TraceId::from(7),
                SpanId::from(8),
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent: SpanId::from(9),
            parent_is_remote: true,
            kind: SpanKind::Consumer,
            name: "x".into(),
            start: SystemTime::UNIX_EPOCH + Duration::from_secs(10),
            fixed: None,
            encoded: EncodedAttributes::default(),
            attributes: vec![KeyValue::new("a", 1)],
            status: Status::Unset,
        }
    }

    #[test]
    fn an_attribute_set_twice_keeps_its_last_value_once() {
        let mut r = record();
        r.set_attribute(KeyValue::new("b", "x"));
        r.set_attribute(KeyValue::new("a", 2));
        assert_eq!(
            r.attributes,
            vec![KeyValue::new("a", 2), KeyValue::new("b", "x")]
        );
    }

    #[test]
    fn a_finished_span_carries_what_was_recorded() {
        let scope = InstrumentationScope::builder("reporter").build();
        let data = record().finish(
            SystemTime::UNIX_EPOCH + Duration::from_secs(11),
            &scope,
            usize::MAX,
        );
        assert_eq!(data.span_context.span_id(), SpanId::from(8));
        assert_eq!(data.parent_span_id, SpanId::from(9));
        assert!(data.parent_span_is_remote);
        assert_eq!(data.span_kind, SpanKind::Consumer);
        assert_eq!(data.name, "x");
        assert_eq!(
            data.end_time.duration_since(data.start_time).ok(),
            Some(Duration::from_secs(1))
        );
        assert_eq!(data.instrumentation_scope, scope);
    }

    #[test]
    fn a_view_reads_the_record_and_counts_the_attributes_past_the_limit() {
        let mut r = record();
        r.set_attribute(KeyValue::new("b", "x"));
        let end = SystemTime::UNIX_EPOCH + Duration::from_secs(11);
        let view = r.view(end, 1);
        assert_eq!(view.context.span_id(), SpanId::from(8));
        assert_eq!(view.parent, SpanId::from(9));
        assert!(view.parent_is_remote);
        assert_eq!(*view.kind, SpanKind::Consumer);
        assert_eq!(view.name, "x");
        assert_eq!((view.start, view.end), (r.start, end));
        assert_eq!(view.attributes, &[KeyValue::new("a", 1)]);
        assert_eq!(view.dropped_attributes, 1);
        assert_eq!(r.view(SystemTime::UNIX_EPOCH, usize::MAX).end, r.start);
        assert_eq!(r.view(end, usize::MAX).dropped_attributes, 0);
    }

    /// A span with fixed attributes encodes, finishes and takes a replaced value as the same
    /// span with all of them its own.
    #[test]
    fn fixed_attributes_are_the_span_s_first_attributes() {
        use crate::telemetry::otlp_body::encode_span;
        let fixed: &'static FixedAttributes = Box::leak(Box::new(FixedAttributes::new(vec![
            KeyValue::new("http.route", "/x"),
            KeyValue::new("url.scheme", "http"),
        ])));
        let mut with_fixed = record();
        with_fixed.fixed = Some(fixed);
        let mut own = record();
        own.attributes = fixed
            .attributes()
            .iter()
            .cloned()
            .chain(own.attributes)
            .collect();
        let end = SystemTime::UNIX_EPOCH + Duration::from_secs(11);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for max in 0..=4 {
            encode_span(&with_fixed.view(end, max), &mut a);
            encode_span(&own.view(end, max), &mut b);
            assert_eq!(a, b, "at most {max} attributes");
            assert_eq!(
                with_fixed.view(end, max).dropped_attributes,
                own.view(end, max).dropped_attributes
            );
        }
        let scope = InstrumentationScope::builder("reporter").build();
        assert_eq!(
            with_fixed
                .clone()
                .finish(end, &scope, usize::MAX)
                .attributes,
            own.clone().finish(end, &scope, usize::MAX).attributes
        );
        with_fixed.set_attribute(KeyValue::new("url.scheme", "https"));
        own.set_attribute(KeyValue::new("url.scheme", "https"));
        assert_eq!(with_fixed.fixed, None);
        assert_eq!(with_fixed.attributes, own.attributes);
    }

    #[test]
    fn a_clock_stepping_back_gives_no_negative_duration() {
        let scope = InstrumentationScope::builder("reporter").build();
        let data = record().finish(SystemTime::UNIX_EPOCH, &scope, usize::MAX);
        assert_eq!(data.end_time, data.start_time);
    }
}
