//! `/v1/streaming/*`: the event manifest, the in-memory broker's deliveries, the parked
//! events and the outbox redrive.
use super::auth::{Auth, Scope};
use super::error::{AUTH, ApiResult, NOT_FOUND, PAYLOAD_TOO_LARGE, UNAVAILABLE};
use super::tags::ApiTags;
use crate::app::App;
use crate::streaming::manifest::{ManifestDto, manifest};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};
use reporter_ports::ports::ParkedEvent;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What the streaming operations need besides the application.
#[derive(Clone)]
pub struct StreamingView {
    /// The events exchange.
    pub exchange: String,
}

/// Manifest response: `Cache-Control: no-store`.
#[derive(Debug, ApiResponse)]
pub enum ManifestResponse {
    /// The event catalog. The same whether or not this deployment publishes events.
    #[oai(status = 200)]
    Ok(Json<ManifestDto>, #[oai(header = "Cache-Control")] String),
}

/// One message as it went (or would go) on the wire.
#[derive(Debug, Clone, Object)]
#[oai(rename = "StreamingDelivery", rename_all = "camelCase")]
pub struct DeliveryDto {
    /// Exchange.
    pub exchange: String,
    /// Routing key (the definition key).
    pub routing_key: String,
    /// AMQP content type.
    pub content_type: String,
    /// AMQP delivery mode (2 = persistent).
    pub delivery_mode: u8,
    /// CloudEvents binary-mode headers.
    pub headers: BTreeMap<String, String>,
    /// JSON payload.
    pub payload: serde_json::Value,
}

/// Recent deliveries of the in-memory broker, oldest first.
#[derive(Debug, Clone, Object)]
#[oai(rename = "StreamingDeliveries")]
pub struct DeliveriesDto {
    /// Deliveries.
    pub items: Vec<DeliveryDto>,
}

/// A parked event: what an operator needs to decide on a redrive, never its payload.
#[derive(Debug, Clone, Object)]
#[oai(rename = "ParkedEvent", rename_all = "camelCase")]
pub struct ParkedEventDto {
    /// Outbox row id (not the event id).
    pub outbox_id: String,
    /// Definition key, the routing key (e.g. `deadline.created`).
    pub event_key: String,
    /// CloudEvents type (`ce-type`).
    pub ce_type: String,
    /// Event id (`ce-id`), kept by a redrive.
    pub ce_id: String,
    /// Event subject (`ce-subject`): the resource's id.
    pub subject: String,
    /// Ordering key of the row (events of one aggregate are published in commit order).
    pub aggregate: String,
    /// Failed publish attempts, the one that parked it included.
    pub attempts: u32,
    /// Why it was parked (the broker's reason, no payload data).
    pub reason: Option<String>,
    /// When it was parked (absent for rows parked by a build that did not record it).
    pub parked_at: Option<DateTime<Utc>>,
    /// When the event was committed.
    pub created_at: DateTime<Utc>,
}

impl From<ParkedEvent> for ParkedEventDto {
    fn from(p: ParkedEvent) -> Self {
        Self {
            outbox_id: p.id.to_string(),
            event_key: p.key.key(),
            ce_type: p.key.ce_type(),
            ce_id: p.event_id,
            subject: p.subject,
            aggregate: p.aggregate,
            attempts: p.attempts,
            reason: p.reason,
            parked_at: p.parked_at,
            created_at: p.created_at,
        }
    }
}

/// The caller's tenant's parked events, newest parked first.
#[derive(Debug, Clone, Object)]
#[oai(rename = "ParkedEvents")]
pub struct ParkedEventsDto {
    /// Parked events.
    pub items: Vec<ParkedEventDto>,
}

/// Redrive result.
#[derive(Debug, Clone, Object)]
#[oai(rename = "OutboxRedrive")]
pub struct RedriveDto {
    /// Parked rows returned to pending.
    pub redriven: u64,
}

/// Streaming operations.
#[derive(Default)]
pub struct StreamingApi;

#[OpenApi(tag = "ApiTags::Streaming")]
impl StreamingApi {
    /// Streaming events manifest
    ///
    /// The static event catalog: every event definition with its key, CloudEvents
    /// type, delivery profile, default policy and payload JSON Schema. Answers
    /// `Cache-Control: no-store`, the same whether or not this deployment publishes events.
    /// Scope `streaming:read`.
    #[oai(
        path = "/v1/streaming/events",
        method = "get",
        operation_id = "getStreamingEvents"
    )]
    async fn manifest(
        &self,
        // The caller's scope is checked by the extractor; a static manifest needs no caller.
        #[oai(scope = "Scope::StreamingRead")] _auth: Auth,
        // A static manifest: it touches no storage.
    ) -> ApiResult<ManifestResponse, AUTH> {
        Ok(ManifestResponse::Ok(Json(manifest()), "no-store".into()))
    }

    /// Recent deliveries of the in-memory broker
    ///
    /// Only with `STREAMING_BROKERS=memory://` (otherwise 404): the last deliveries (up to
    /// `limit`, default 100, max 1000) with their exact CloudEvents headers and payloads, so a
    /// tester can see what would have gone on the wire. Scope `streaming:read`.
    #[oai(
        path = "/v1/streaming/deliveries",
        method = "get",
        operation_id = "listStreamingDeliveries"
    )]
    async fn deliveries(
        &self,
        app: Data<&Arc<App>>,
        ops: Data<&Arc<super::request_data::OpsData>>,
        #[oai(scope = "Scope::StreamingRead")] auth: Auth,
        /// 1-1000, default 100.
        limit: Query<Option<i64>>,
        // 404 unless the in-memory broker records deliveries.
    ) -> ApiResult<Json<DeliveriesDto>, { AUTH | NOT_FOUND }> {
        let caller = auth.caller();
        let items = app
            .recent_deliveries(&caller, limit.0)?
            .into_iter()
            .map(|e| DeliveryDto {
                exchange: ops.streaming.exchange.clone(),
                routing_key: e.key.key(),
                content_type: "application/json".into(),
                delivery_mode: 2,
                headers: e
                    .ce_headers()
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect(),
                payload: e.payload.value(),
            })
            .collect();
        Ok(Json(DeliveriesDto { items }))
    }

    /// Parked events
    ///
    /// The caller's tenant's parked outbox rows (events the broker refused as unroutable
    /// `STREAMING_OUTBOX_MAX_ATTEMPTS` times), newest parked first, up to `limit` (default
    /// 100, 1-1000; otherwise 400 TPL-0024): outbox id, event key and `ce-type`, `ce-id`,
    /// subject, aggregate, attempts, the reason and when it was parked. Never the payload.
    /// `POST /v1/streaming/outbox/redrive` returns them to pending. Scope `streaming:admin`.
    #[oai(
        path = "/v1/streaming/outbox/parked",
        method = "get",
        operation_id = "listParkedEvents"
    )]
    async fn parked(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::StreamingAdmin")] auth: Auth,
        /// 1-1000, default 100.
        limit: Query<Option<i64>>,
        // 400 (a limit outside 1-1000, TPL-0024) is one every operation may answer.
    ) -> ApiResult<Json<ParkedEventsDto>, { AUTH | UNAVAILABLE }> {
        let caller = auth.caller();
        let items = app
            .parked_events(&caller, limit.0)
            .await?
            .into_iter()
            .map(ParkedEventDto::from)
            .collect();
        Ok(Json(ParkedEventsDto { items }))
    }

    /// Redrive parked events
    ///
    /// Returns the caller's tenant's parked outbox rows (events that failed too many times) to
    /// pending, so the dispatcher publishes them again with their original `ce-id`. Scope
    /// `streaming:admin`.
    #[oai(
        path = "/v1/streaming/outbox/redrive",
        method = "post",
        operation_id = "redriveOutbox"
    )]
    async fn redrive(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::StreamingAdmin")] auth: Auth,
    ) -> ApiResult<Json<RedriveDto>, { AUTH | PAYLOAD_TOO_LARGE | UNAVAILABLE }> {
        let caller = auth.caller();
        let redriven = app.redrive_outbox(&caller).await?;
        Ok(Json(RedriveDto { redriven }))
    }
}
