//! The streaming manifest (`GET /v1/streaming/events`) and the AsyncAPI document, both built
//! from the one event catalog in `reporter_ports::events`.
use poem_openapi::{Enum, Object};
use reporter_ports::events::{DeliveryProfile, EVENT_CLASS, EventKey, SCHEMA_VERSION};
use serde_json::json;

/// Semantic version of the manifest wire format.
pub const MANIFEST_VERSION: &str = "1.0.0";
/// Path of the manifest operation.
pub const ROUTE_PATH: &str = "/v1/streaming/events";

/// Who publishes.
#[derive(Debug, Clone, Object)]
#[oai(rename = "StreamingPublisher", rename_all = "camelCase")]
pub struct PublisherDto {
    /// Always `reporter`.
    pub service_name: String,
    /// The `ce-source` of every event: `reporter`.
    pub source: String,
    /// This operation's path.
    pub route_path: String,
    /// Events are written to a transactional outbox.
    pub outbox_supported: bool,
    /// Reporter version.
    pub app_version: String,
    /// Version of the streaming implementation.
    pub lib_version: String,
}

/// Delivery profile of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "DeliveryProfile")]
pub enum DeliveryProfileDto {
    /// Published directly with confirms; falls back to the outbox when the breaker is open.
    Important,
    /// Never published directly; always through the outbox and its dispatcher.
    Critical,
}

/// A delivery policy, in lib-streaming's shape and vocabulary (`enabled`, `direct`
/// `direct|skip`, `outbox` `never|fallback_on_circuit_open|always`, `dlq`
/// `never|on_routable_failure`).
#[derive(Debug, Clone, Object)]
#[oai(rename = "DeliveryPolicy")]
pub struct PolicyDto {
    /// Publication enabled for this event.
    pub enabled: bool,
    /// `direct` (Important) or `skip` (Critical).
    pub direct: String,
    /// `fallback_on_circuit_open` (Important) or `always` (Critical).
    pub outbox: String,
    /// `on_routable_failure` for every event, as the seed says: the policy requests
    /// dead-letter handling for routable failures, but the RabbitMQ route configures no DLQ
    /// destination, so none is produced (a routable failure stays in the outbox and is
    /// retried; unroutable messages are kept by the alternate exchange).
    pub dlq: String,
}

/// One event definition.
#[derive(Debug, Clone, Object)]
#[oai(rename = "StreamingEventDefinition", rename_all = "camelCase")]
pub struct EventDefinitionDto {
    /// Definition key, also the AMQP routing key, verbatim.
    pub key: String,
    /// `<resourceType>.<eventType>`.
    pub event_key: String,
    /// `ce-resourcetype`.
    pub resource_type: String,
    /// `ce-eventtype`.
    pub event_type: String,
    /// Always `fact`.
    pub class: String,
    /// `ce-schemaversion`.
    pub schema_version: String,
    /// Content type of the payload.
    pub data_content_type: String,
    /// `ce-type`.
    pub ce_type: String,
    /// When it is emitted.
    pub description: String,
    /// Delivery profile.
    pub delivery_profile: DeliveryProfileDto,
    /// Default delivery policy of the profile.
    pub default_policy: PolicyDto,
    /// True when `ce-id` is derived deterministically (see docs/src/events/consumers.md).
    pub deterministic_id: bool,
    /// JSON Schema of the payload.
    pub payload_schema: serde_json::Value,
}

/// The streaming manifest.
#[derive(Debug, Clone, Object)]
#[oai(rename = "StreamingManifest")]
pub struct ManifestDto {
    /// Semantic version of this document's wire format.
    pub version: String,
    /// Who publishes.
    pub publisher: PublisherDto,
    /// One entry per event definition, in a stable order.
    pub events: Vec<EventDefinitionDto>,
}

/// lib-streaming's `dlq` mode that requests dead-letter handling of routable failures.
const DLQ_ON_ROUTABLE_FAILURE: &str = "on_routable_failure";

/// The seed's delivery table as lib-streaming policies.
fn policy(profile: DeliveryProfile) -> PolicyDto {
    match profile {
        DeliveryProfile::Important => PolicyDto {
            enabled: true,
            direct: "direct".into(),
            outbox: "fallback_on_circuit_open".into(),
            dlq: DLQ_ON_ROUTABLE_FAILURE.into(),
        },
        DeliveryProfile::Critical => PolicyDto {
            enabled: true,
            direct: "skip".into(),
            outbox: "always".into(),
            dlq: DLQ_ON_ROUTABLE_FAILURE.into(),
        },
    }
}

/// The manifest. Identical whether or not publication is enabled.
pub fn manifest() -> ManifestDto {
    ManifestDto {
        version: MANIFEST_VERSION.into(),
        publisher: PublisherDto {
            service_name: "reporter".into(),
            source: reporter_ports::events::CE_SOURCE.into(),
            route_path: ROUTE_PATH.into(),
            outbox_supported: true,
            app_version: env!("CARGO_PKG_VERSION").into(),
            lib_version: format!("reporter-streaming/{}", env!("CARGO_PKG_VERSION")),
        },
        events: EventKey::ALL
            .iter()
            .map(|k| EventDefinitionDto {
                key: k.key(),
                event_key: k.key(),
                resource_type: k.resource_type().into(),
                event_type: k.event_type().into(),
                class: EVENT_CLASS.into(),
                schema_version: SCHEMA_VERSION.into(),
                data_content_type: "application/json".into(),
                ce_type: k.ce_type(),
                description: k.description().into(),
                delivery_profile: match k.profile() {
                    DeliveryProfile::Important => DeliveryProfileDto::Important,
                    DeliveryProfile::Critical => DeliveryProfileDto::Critical,
                },
                default_policy: policy(k.profile()),
                deterministic_id: k.has_deterministic_id(),
                payload_schema: k.payload_schema(),
            })
            .collect(),
    }
}

fn message_name(k: EventKey) -> String {
    k.key()
        .split(['.', '_'])
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The AsyncAPI 3.0 document of the events channel.
/// Long by design: the document is one JSON literal, read best as a whole.
pub fn asyncapi() -> serde_json::Value {
    let mut channels = serde_json::Map::new();
    let mut operations = serde_json::Map::new();
    let mut messages = serde_json::Map::new();
    for k in EventKey::ALL {
        let name = message_name(k);
        let key = k.key();
        channels.insert(
            name.clone(),
            json!({
                "address": key,
                "description": format!("Routing key `{key}` on the events exchange. {}", k.description()),
                "messages": { name.clone(): { "$ref": format!("#/components/messages/{name}") } },
                "bindings": { "amqp": {
                    "is": "routingKey",
                    "exchange": { "name": "reporter.events", "type": "topic", "durable": true, "autoDelete": false, "vhost": "/" },
                    "bindingVersion": "0.3.0"
                } }
            }),
        );
        operations.insert(
            format!("publish{name}"),
            json!({
                "action": "send",
                "channel": { "$ref": format!("#/channels/{name}") },
                "summary": k.description(),
                "description": match k.profile() {
                    DeliveryProfile::Important => "Delivery profile Important: published directly with publisher confirms through a circuit breaker; written to the outbox in the same transaction as the state change and dispatched from there when the breaker is open or the publish fails.",
                    DeliveryProfile::Critical => "Delivery profile Critical: never published directly; written to the outbox in the same transaction as the state change and published by the dispatcher, retried until delivered.",
                },
                "bindings": { "amqp": { "deliveryMode": 2, "mandatory": true, "bindingVersion": "0.3.0" } }
            }),
        );
        let mut headers = json!({
            "type": "object",
            "required": ["ce-specversion", "ce-id", "ce-source", "ce-type", "ce-time", "ce-subject", "ce-resourcetype", "ce-eventtype", "ce-schemaversion", "ce-tenantid"],
            "properties": {
                "ce-specversion": { "type": "string", "const": "1.0" },
                "ce-id": { "type": "string", "description": if k.has_deterministic_id() { "Deterministic: UUIDv5 (see docs/src/events/consumers.md, 'Deduplicate on (ce-source, ce-id)')" } else { "Opaque UUIDv7" } },
                "ce-source": { "type": "string", "const": "reporter" },
                "ce-type": { "type": "string", "const": k.ce_type() },
                "ce-time": { "type": "string", "format": "date-time" },
                "ce-subject": { "type": "string", "description": format!("The {} id", k.resource_type()) },
                "ce-resourcetype": { "type": "string", "const": k.resource_type() },
                "ce-eventtype": { "type": "string", "const": k.event_type() },
                "ce-schemaversion": { "type": "string", "const": SCHEMA_VERSION },
                "ce-tenantid": { "type": "string", "description": "The tenant that owns the change (stamped in single-tenant mode too)" },
                "ce-sequence": { "type": "string", "pattern": "^[0-9]{20}$", "description": "CloudEvents sequence extension: the resource's version after the change, 20 zero-padded digits. Grows with every event of one resource (with gaps); order one resource's events by it. Absent only on events written by builds before it existed." }
            }
        });
        if let Some(o) = headers.as_object_mut() {
            o.insert("additionalProperties".into(), json!(true));
        }
        let mut payload = k.payload_schema();
        if let Some(o) = payload.as_object_mut() {
            o.remove("$schema");
        }
        messages.insert(
            name.clone(),
            json!({
                "name": key,
                "title": k.ce_type(),
                "summary": k.description(),
                "contentType": "application/json",
                "headers": headers,
                "payload": { "schemaFormat": "application/schema+json;version=draft-2020-12", "schema": payload },
                "bindings": { "amqp": { "messageType": key, "bindingVersion": "0.3.0" } }
            }),
        );
    }
    json!({
        "asyncapi": "3.0.0",
        "info": {
            "title": "Reporter events",
            "version": MANIFEST_VERSION,
            "description": "CloudEvents 1.0 in binary mode over AMQP 0-9-1: context attributes travel as `ce-*` message headers, the JSON payload is the message body (content type application/json, delivery mode 2). Bind a queue to the exchange named by RABBITMQ_REPORT_EVENTS_EXCHANGE (reference value `reporter.events`, a durable topic exchange) with the routing keys you need; each message's routing key is its definition key verbatim. Delivery is at-least-once: deduplicate on (ce-source, ce-id)."
        },
        "defaultContentType": "application/json",
        "servers": { "rabbitmq": { "host": "localhost:5672", "protocol": "amqp", "protocolVersion": "0.9.1", "description": "The RabbitMQ broker: the amqp(s):// URIs of STREAMING_BROKERS, or RABBITMQ_URI when STREAMING_BROKERS names none (e.g. the original's `rabbitmq:5672`). Messages no binding routes go to the alternate exchange (STREAMING_ALTERNATE_EXCHANGE, default `<exchange>.unroutable`) and its queue, bounded by STREAMING_UNROUTABLE_TTL_SECONDS and STREAMING_UNROUTABLE_MAX_LENGTH." } },
        "channels": channels,
        "operations": operations,
        "components": { "messages": messages }
    })
}

/// The AsyncAPI document as YAML (committed as `openapi/asyncapi.yaml`).
pub fn asyncapi_yaml() -> String {
    serde_yaml::to_string(&crate::http::spec::sorted(asyncapi())).unwrap_or_default()
}
