//! The Prometheus metrics (what `/metrics` serves) also exported over OTLP: every family of
//! the registry becomes an observable OpenTelemetry instrument of the same name, read at
//! each export. Counters stay monotonic counters and gauges gauges; a histogram travels as
//! three monotonic counters, `<name>_count`, `<name>_sum` and `<name>_bucket` (attribute
//! `le`, cumulative as Prometheus keeps them), which is what `/metrics` shows too.
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Meter, MeterProvider as _};
use prometheus::Registry;
use prometheus::proto::{MetricFamily, MetricType};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One gather shared by every instrument's callback of one export.
struct Snapshot {
    registry: Registry,
    last: Mutex<Option<(Instant, Arc<Vec<MetricFamily>>)>>,
}

impl Snapshot {
    fn families(&self) -> Arc<Vec<MetricFamily>> {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, f)) = last.as_ref()
            && at.elapsed() < Duration::from_secs(1)
        {
            return f.clone();
        }
        let fresh = Arc::new(self.registry.gather());
        *last = Some((Instant::now(), fresh.clone()));
        fresh
    }
}

fn attributes(m: &prometheus::proto::Metric) -> Vec<KeyValue> {
    m.get_label()
        .iter()
        .map(|l| KeyValue::new(l.name().to_owned(), l.value().to_owned()))
        .collect()
}

/// Starts the bridge on `provider`: new families are looked for every `every` (the export
/// interval), so a family first observed later is exported from then on. Ends with the
/// runtime.
pub fn start(
    provider: &opentelemetry_sdk::metrics::SdkMeterProvider,
    scope: &str,
    registry: Registry,
    every: Duration,
) {
    let meter = provider
        .meter_with_scope(opentelemetry::InstrumentationScope::builder(scope.to_owned()).build());
    let snapshot = Arc::new(Snapshot {
        registry,
        last: Mutex::new(None),
    });
    tokio::spawn(async move {
        let mut seen: HashSet<String> = HashSet::new();
        loop {
            for family in snapshot.families().iter() {
                if seen.insert(family.name().to_owned()) {
                    register(&meter, &snapshot, family);
                }
            }
            tokio::time::sleep(every).await;
        }
    });
}

fn register(meter: &Meter, snapshot: &Arc<Snapshot>, family: &MetricFamily) {
    let name = family.name().to_owned();
    let help = family.help().to_owned();
    let of = |snapshot: &Arc<Snapshot>, name: &str| {
        let snapshot = snapshot.clone();
        let name = name.to_owned();
        move || {
            let families = snapshot.families();
            families
                .iter()
                .find(|f| f.name() == name)
                .map(|f| f.get_metric().to_vec())
                .unwrap_or_default()
        }
    };
    match family.get_field_type() {
        MetricType::COUNTER => {
            let read = of(snapshot, &name);
            meter
                .f64_observable_counter(name)
                .with_description(help)
                .with_callback(move |o| {
                    for m in read() {
                        o.observe(m.get_counter().get_value(), &attributes(&m));
                    }
                })
                .build();
        }
        MetricType::GAUGE => {
            let read = of(snapshot, &name);
            meter
                .f64_observable_gauge(name)
                .with_description(help)
                .with_callback(move |o| {
                    for m in read() {
                        o.observe(m.get_gauge().get_value(), &attributes(&m));
                    }
                })
                .build();
        }
        MetricType::HISTOGRAM => {
            let read = of(snapshot, &name);
            meter
                .u64_observable_counter(format!("{name}_count"))
                .with_description(help.clone())
                .with_callback(move |o| {
                    for m in read() {
                        o.observe(m.get_histogram().get_sample_count(), &attributes(&m));
                    }
                })
                .build();
            let read = of(snapshot, &name);
            meter
                .f64_observable_counter(format!("{name}_sum"))
                .with_description(help.clone())
                .with_callback(move |o| {
                    for m in read() {
                        o.observe(m.get_histogram().get_sample_sum(), &attributes(&m));
                    }
                })
                .build();
            let read = of(snapshot, &name);
            meter
                .u64_observable_counter(format!("{name}_bucket"))
                .with_description(help)
                .with_callback(move |o| {
                    for m in read() {
                        let base = attributes(&m);
                        for b in m.get_histogram().get_bucket() {
                            let mut attrs = base.clone();
                            attrs.push(KeyValue::new("le", b.upper_bound().to_string()));
                            o.observe(b.cumulative_count(), &attrs);
                        }
                    }
                })
                .build();
        }
        _ => {}
    }
}
