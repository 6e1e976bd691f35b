//! `/v1/deadlines` operations.
use super::auth::{Auth, Scope};
use super::dto::{either, instant_or_day, list_paging, path_uuid};
use super::error::{
    AUTH, ApiResult, CONFLICT, NOT_FOUND, PAYLOAD_TOO_LARGE, UNAVAILABLE, UNPROCESSABLE,
};
use super::string_field::Text;
use super::tags::ApiTags;
use crate::app::{App, AppError, Code, CreateDeadline, Severity, UpdateDeadline};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::{Example, MaybeUndefined};
use poem_openapi::{ApiResponse, Enum, Object, OpenApi};
use reporter_ports::DeadlineId;
use reporter_ports::deadline::{Deadline, DeadlineStatus, DeadlineType, Frequency};
use reporter_ports::ports::DeadlineQuery;
use std::sync::Arc;

/// Deadline type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "DeadlineType", rename_all = "lowercase")]
pub enum DeadlineTypeDto {
    /// Imposed by a regulator.
    Regulatory,
    /// Defined by the user.
    Custom,
}

/// Recurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "Frequency", rename_all = "lowercase")]
pub enum FrequencyDto {
    /// One-off.
    Once,
    /// Every day.
    Daily,
    /// Every 7 days.
    Weekly,
    /// Every month on the same day (clamped to the month's length).
    Monthly,
    /// Twice a year, in `monthsOfYear`.
    Semiannual,
    /// Once a year, in `monthsOfYear`.
    Annual,
}

/// Derived status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "DeadlineStatus", rename_all = "lowercase")]
pub enum DeadlineStatusDto {
    /// Not delivered, not yet due.
    Pending,
    /// Not delivered, past due.
    Overdue,
    /// Delivered.
    Delivered,
}

fn kind_dto(k: DeadlineType) -> DeadlineTypeDto {
    match k {
        DeadlineType::Regulatory => DeadlineTypeDto::Regulatory,
        DeadlineType::Custom => DeadlineTypeDto::Custom,
    }
}
fn freq_dto(f: Frequency) -> FrequencyDto {
    match f {
        Frequency::Once => FrequencyDto::Once,
        Frequency::Daily => FrequencyDto::Daily,
        Frequency::Weekly => FrequencyDto::Weekly,
        Frequency::Monthly => FrequencyDto::Monthly,
        Frequency::Semiannual => FrequencyDto::Semiannual,
        Frequency::Annual => FrequencyDto::Annual,
    }
}
fn status_dto(s: DeadlineStatus) -> DeadlineStatusDto {
    match s {
        DeadlineStatus::Pending => DeadlineStatusDto::Pending,
        DeadlineStatus::Overdue => DeadlineStatusDto::Overdue,
        DeadlineStatus::Delivered => DeadlineStatusDto::Delivered,
    }
}

fn ts(raw: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(raw)
        .map(|d| d.with_timezone(&Utc))
        .unwrap_or_default()
}

/// A filing deadline, as seen now (recurrence applied).
#[derive(Debug, Clone, Object)]
#[oai(rename = "Deadline", rename_all = "camelCase", example)]
pub struct DeadlineDto {
    /// Deadline id.
    pub id: uuid::Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Type.
    #[oai(rename = "type")]
    pub kind: DeadlineTypeDto,
    /// Linked template.
    pub template_id: Option<uuid::Uuid>,
    /// The linked template's description when the link was made.
    pub template_name: Option<String>,
    /// Due instant of the current occurrence.
    pub due_date: DateTime<Utc>,
    /// Recurrence.
    pub frequency: FrequencyDto,
    /// Months of semiannual / annual recurrence.
    pub months_of_year: Vec<u32>,
    /// Active deadlines are notified.
    pub active: bool,
    /// Days before the due date notifications start.
    pub notify_days_before: u32,
    /// `#RRGGBB`.
    pub color: String,
    /// pending, overdue or delivered.
    pub status: DeadlineStatusDto,
    /// Delivery instant of the current occurrence.
    pub delivered_at: Option<DateTime<Utc>>,
    /// Creation instant.
    pub created_at: DateTime<Utc>,
    /// Last change instant.
    pub updated_at: DateTime<Utc>,
}

impl Example for DeadlineDto {
    fn example() -> Self {
        Self {
            id: uuid::Uuid::parse_str("0198a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b").unwrap_or_default(),
            name: "Quarterly liquidity report".into(),
            description: Some("Filed with the central bank".into()),
            kind: DeadlineTypeDto::Regulatory,
            template_id: uuid::Uuid::parse_str("8f2c1a9e-4b30-4c02-9a1b-2d5e6f7a1c33").ok(),
            template_name: Some("Monthly account statement".into()),
            due_date: ts("2027-03-31T23:59:59Z"),
            frequency: FrequencyDto::Semiannual,
            months_of_year: vec![3, 9],
            active: true,
            notify_days_before: 10,
            color: "#1E88E5".into(),
            status: DeadlineStatusDto::Pending,
            delivered_at: None,
            created_at: ts("2026-11-30T12:00:00Z"),
            updated_at: ts("2026-11-30T12:00:00Z"),
        }
    }
}

impl DeadlineDto {
    /// The deadline as seen at `now`.
    pub fn at(d: &Deadline, now: DateTime<Utc>) -> Self {
        let v = d.view(now);
        Self {
            id: d.id.uuid(),
            name: d.name.clone(),
            description: d.description.clone(),
            kind: kind_dto(d.kind),
            template_id: d.template_id.map(|t| t.uuid()),
            template_name: d.template_name.clone(),
            due_date: v.due_date,
            frequency: freq_dto(d.frequency),
            months_of_year: d.months_of_year.clone(),
            active: d.active,
            notify_days_before: d.notify_days_before,
            color: d.color.as_str().to_owned(),
            status: status_dto(v.status),
            delivered_at: v.delivered_at,
            created_at: d.created_at,
            updated_at: d.updated_at,
        }
    }
}

/// Create a deadline. Types are validated by the service so each rule answers its own code.
#[derive(Debug, Clone, Object)]
#[oai(
    rename = "CreateDeadlineInput",
    rename_all = "camelCase",
    deny_unknown_fields,
    example
)]
pub struct CreateDeadlineInput {
    /// Required, 1-200 characters.
    pub name: Option<Text>,
    /// Optional, at most 2000 characters.
    pub description: Option<Text>,
    /// Required: `regulatory` or `custom`.
    #[oai(rename = "type")]
    pub kind: Option<Text>,
    /// Optional id of a live template.
    pub template_id: Option<Text>,
    /// Required RFC 3339 date-time, not before today (UTC).
    pub due_date: Option<Text>,
    /// Required: once, daily, weekly, monthly, semiannual or annual.
    pub frequency: Option<Text>,
    /// semiannual: exactly 2 distinct months; annual: exactly 1; others: none. Each 1-12.
    pub months_of_year: Option<Vec<i64>>,
    /// Default true.
    pub active: Option<bool>,
    /// 0-366, default 0.
    pub notify_days_before: Option<i64>,
    /// Required `#RRGGBB`.
    pub color: Option<Text>,
}

impl Example for CreateDeadlineInput {
    fn example() -> Self {
        Self {
            name: Some(Text::from("Quarterly liquidity report")),
            description: Some(Text::from("Filed with the central bank")),
            kind: Some(Text::from("regulatory")),
            template_id: None,
            due_date: Some(Text::from("2027-03-31T23:59:59Z")),
            frequency: Some(Text::from("semiannual")),
            months_of_year: Some(vec![3, 9]),
            active: Some(true),
            notify_days_before: Some(10),
            color: Some(Text::from("#1E88E5")),
        }
    }
}

/// Partial update: absent fields are kept; `null` clears `description` or `templateId`.
#[derive(Debug, Clone, Object)]
#[oai(
    rename = "UpdateDeadlineInput",
    rename_all = "camelCase",
    deny_unknown_fields,
    example
)]
pub struct UpdateDeadlineInput {
    /// New name.
    pub name: Option<Text>,
    /// New description, or null to clear.
    pub description: MaybeUndefined<Text>,
    /// New type.
    #[oai(rename = "type")]
    pub kind: Option<Text>,
    /// New template id, or null to unlink.
    pub template_id: MaybeUndefined<Text>,
    /// New due date (not before today).
    pub due_date: Option<Text>,
    /// New frequency.
    pub frequency: Option<Text>,
    /// New months.
    pub months_of_year: Option<Vec<i64>>,
    /// New active flag.
    pub active: Option<bool>,
    /// New lead time.
    pub notify_days_before: Option<i64>,
    /// New colour.
    pub color: Option<Text>,
}

impl Example for UpdateDeadlineInput {
    fn example() -> Self {
        Self {
            name: None,
            description: MaybeUndefined::Undefined,
            kind: None,
            template_id: MaybeUndefined::Undefined,
            due_date: None,
            frequency: None,
            months_of_year: None,
            active: Some(false),
            notify_days_before: Some(15),
            color: None,
        }
    }
}

fn maybe(v: MaybeUndefined<Text>) -> Option<Option<String>> {
    match v {
        MaybeUndefined::Undefined => None,
        MaybeUndefined::Null => Some(None),
        MaybeUndefined::Value(s) => Some(Some(s.0)),
    }
}

fn text(v: Option<Text>) -> Option<String> {
    v.map(Text::into_inner)
}

/// Deliver or revert.
#[derive(Debug, Clone, Object)]
#[oai(rename = "DeliverDeadlineInput", deny_unknown_fields)]
pub struct DeliverInput {
    /// `true` marks the current occurrence delivered, `false` reverts its delivery.
    pub delivered: Option<bool>,
}

/// A page of deadlines.
#[derive(Debug, Clone, Object)]
#[oai(rename = "DeadlinePage")]
pub struct DeadlinePage {
    /// Deadlines of this page.
    pub items: Vec<DeadlineDto>,
    /// Page number.
    pub page: u32,
    /// Page size.
    pub limit: u32,
    /// Matches across all pages.
    pub total: u64,
}

/// Notification severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "Severity", rename_all = "lowercase")]
pub enum SeverityDto {
    /// Past due.
    Overdue,
    /// Due within 7 days.
    Warning,
    /// Due later, inside the notification window.
    Info,
}

/// One notification.
#[derive(Debug, Clone, Object)]
#[oai(rename = "DeadlineNotification", rename_all = "camelCase")]
pub struct NotificationDto {
    /// Deadline id.
    pub id: uuid::Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Type.
    #[oai(rename = "type")]
    pub kind: DeadlineTypeDto,
    /// Due instant of the current occurrence.
    pub due_date: DateTime<Utc>,
    /// Recurrence.
    pub frequency: FrequencyDto,
    /// Months.
    pub months_of_year: Vec<u32>,
    /// Colour.
    pub color: String,
    /// overdue, warning (≤ 7 days) or info.
    pub severity: SeverityDto,
    /// Calendar days until due; negative when overdue.
    pub days_until_due: i64,
    /// Notification window.
    pub notify_days_before: u32,
}

/// The notification feed.
#[derive(Debug, Clone, Object)]
#[oai(rename = "DeadlineNotifications")]
pub struct NotificationsDto {
    /// Most urgent first.
    pub items: Vec<NotificationDto>,
    /// Notifications before the limit was applied.
    pub total: u64,
}

/// 201 with the created deadline.
#[derive(Debug, ApiResponse)]
pub enum CreatedDeadline {
    /// The deadline was stored.
    #[oai(status = 201)]
    Created(Json<DeadlineDto>),
}

/// 204.
#[derive(Debug, ApiResponse)]
pub enum Deleted {
    /// Soft-deleted.
    #[oai(status = 204)]
    NoContent,
}

/// Deadline operations.
#[derive(Default)]
pub struct DeadlinesApi;

#[OpenApi(tag = "ApiTags::Deadlines")]
impl DeadlinesApi {
    /// Create a deadline
    ///
    /// Rules: `name`, `type`, `dueDate`, `frequency` and `color` are required; `monthsOfYear`
    /// takes exactly 2 distinct months for semiannual, 1 for annual, none otherwise; the due
    /// date must not be before today (UTC, 422); a live deadline with the same type, template,
    /// due date and frequency answers 409. Scope `deadlines:write`.
    #[oai(
        path = "/v1/deadlines",
        method = "post",
        operation_id = "createDeadline"
    )]
    async fn create(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::DeadlinesWrite")] auth: Auth,
        body: Json<CreateDeadlineInput>,
    ) -> ApiResult<
        CreatedDeadline,
        { AUTH | NOT_FOUND | CONFLICT | PAYLOAD_TOO_LARGE | UNPROCESSABLE | UNAVAILABLE },
    > {
        let caller = auth.caller();
        let b = body.0;
        let d = app
            .create_deadline(
                &caller,
                CreateDeadline {
                    name: text(b.name),
                    description: text(b.description),
                    kind: text(b.kind),
                    template_id: text(b.template_id),
                    due_date: text(b.due_date),
                    frequency: text(b.frequency),
                    months_of_year: b.months_of_year,
                    active: b.active,
                    notify_days_before: b.notify_days_before,
                    color: text(b.color),
                },
            )
            .await?;
        Ok(CreatedDeadline::Created(Json(DeadlineDto::at(
            &d,
            d.created_at,
        ))))
    }

    /// List deadlines
    ///
    /// Live deadlines, newest first by default. `status` is computed at request time
    /// (recurrence applied), so the filter and the displayed status always agree. `start_date`
    /// / `end_date` bound the current occurrence's due date (RFC 3339 or `YYYY-MM-DD`); each
    /// snake_case name also has its camelCase alias (`startDate`, `endDate`, `sortOrder`). An
    /// unknown query parameter answers 400 TPL-0019; an empty one counts as absent.
    /// Scope `deadlines:read`.
    #[oai(path = "/v1/deadlines", method = "get", operation_id = "listDeadlines")]
    #[allow(clippy::too_many_arguments)]
    async fn list(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::DeadlinesRead")] auth: Auth,
        /// Page number, from 1.
        page: Query<Option<i64>>,
        /// Page size, 1 to MAX_PAGINATION_LIMIT (default 10).
        limit: Query<Option<i64>>,
        /// `asc` or `desc` (default) by creation time.
        sort_order: Query<Option<String>>,
        /// Alias of `sort_order`.
        #[oai(name = "sortOrder")]
        sort_order_alias: Query<Option<String>>,
        /// The original's pagination cursor (base64 of `{"id", "points_next"}`): validated,
        /// not used for paging (use `page`).
        cursor: Query<Option<String>>,
        /// pending, overdue or delivered.
        status: Query<Option<String>>,
        /// true or false.
        active: Query<Option<bool>>,
        /// regulatory or custom.
        #[oai(name = "type")]
        kind: Query<Option<String>>,
        /// Earliest due date.
        start_date: Query<Option<String>>,
        /// Alias of `start_date`.
        #[oai(name = "startDate")]
        start_date_alias: Query<Option<String>>,
        /// Latest due date.
        end_date: Query<Option<String>>,
        /// Alias of `end_date`.
        #[oai(name = "endDate")]
        end_date_alias: Query<Option<String>>,
    ) -> ApiResult<Json<DeadlinePage>, { AUTH | UNAVAILABLE }> {
        let caller = auth.caller();
        let req = list_paging(
            page.0,
            limit.0,
            (sort_order.0, sort_order_alias.0),
            cursor.0.as_deref(),
            app.settings().max_page_limit,
        )?;
        let from = either(start_date.0, start_date_alias.0, "start_date", "startDate")?;
        let to = either(end_date.0, end_date_alias.0, "end_date", "endDate")?;
        let (due_from, due_to) = due_window(from, to)?;
        let q = DeadlineQuery {
            active: active.0,
            status: deadline_status_filter(status.0.as_deref())?,
            kind: deadline_type_filter(kind.0.as_deref())?,
            due_from,
            due_to,
        };
        let (page, now) = app.list_deadlines(&caller, &q, req).await?;
        Ok(Json(DeadlinePage {
            items: page.items.iter().map(|d| DeadlineDto::at(d, now)).collect(),
            page: page.page,
            limit: page.limit,
            total: page.total,
        }))
    }

    /// Deadline notifications
    ///
    /// Active, undelivered deadlines that are overdue or inside their `notifyDaysBefore`
    /// window; severity `overdue`, `warning` (due within 7 days) or `info`; most urgent first.
    /// `total` counts every notification before `limit` (1-100, default 10). Scope `deadlines:read`.
    #[oai(
        path = "/v1/deadlines/notifications",
        method = "get",
        operation_id = "listDeadlineNotifications"
    )]
    async fn notifications(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::DeadlinesRead")] auth: Auth,
        /// 1-100, default 10.
        limit: Query<Option<i64>>,
    ) -> ApiResult<Json<NotificationsDto>, { AUTH | UNAVAILABLE }> {
        let caller = auth.caller();
        let limit = limit.0.unwrap_or(10);
        if !(1..=100).contains(&limit) {
            return Err(
                AppError::new(Code::PaginationLimit, "limit must be between 1 and 100")
                    .field("limit", "1..=100")
                    .into(),
            );
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let n = app.deadline_notifications(&caller, limit as usize).await?;
        let items = n
            .items
            .iter()
            .map(|i| NotificationDto {
                id: i.deadline.id.uuid(),
                name: i.deadline.name.clone(),
                description: i.deadline.description.clone(),
                kind: kind_dto(i.deadline.kind),
                due_date: i.due_date,
                frequency: freq_dto(i.deadline.frequency),
                months_of_year: i.deadline.months_of_year.clone(),
                color: i.deadline.color.as_str().to_owned(),
                severity: match i.severity {
                    Severity::Overdue => SeverityDto::Overdue,
                    Severity::Warning => SeverityDto::Warning,
                    Severity::Info => SeverityDto::Info,
                },
                days_until_due: i.days_until_due,
                notify_days_before: i.deadline.notify_days_before,
            })
            .collect();
        Ok(Json(NotificationsDto {
            items,
            total: n.total,
        }))
    }

    /// Get a deadline
    ///
    /// Scope `deadlines:read`.
    #[oai(
        path = "/v1/deadlines/:id",
        method = "get",
        operation_id = "getDeadline"
    )]
    async fn get(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::DeadlinesRead")] auth: Auth,
        /// Deadline id.
        id: Path<String>,
    ) -> ApiResult<Json<DeadlineDto>, { AUTH | NOT_FOUND | UNAVAILABLE }> {
        let caller = auth.caller();
        let id: DeadlineId = path_uuid(&id.0, "id")?;
        let d = app.get_deadline(&caller, id).await?;
        Ok(Json(DeadlineDto::at(&d, app.now())))
    }

    /// Update a deadline
    ///
    /// Partial update; the merged deadline must satisfy every creation rule. Scope `deadlines:write`.
    #[oai(
        path = "/v1/deadlines/:id",
        method = "patch",
        operation_id = "updateDeadline"
    )]
    async fn update(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::DeadlinesWrite")] auth: Auth,
        /// Deadline id.
        id: Path<String>,
        body: Json<UpdateDeadlineInput>,
    ) -> ApiResult<
        Json<DeadlineDto>,
        { AUTH | NOT_FOUND | CONFLICT | PAYLOAD_TOO_LARGE | UNPROCESSABLE | UNAVAILABLE },
    > {
        let caller = auth.caller();
        let id: DeadlineId = path_uuid(&id.0, "id")?;
        let b = body.0;
        let d = app
            .update_deadline(
                &caller,
                id,
                UpdateDeadline {
                    name: text(b.name),
                    description: maybe(b.description),
                    kind: text(b.kind),
                    template_id: maybe(b.template_id),
                    due_date: text(b.due_date),
                    frequency: text(b.frequency),
                    months_of_year: b.months_of_year,
                    active: b.active,
                    notify_days_before: b.notify_days_before,
                    color: text(b.color),
                },
            )
            .await?;
        Ok(Json(DeadlineDto::at(&d, d.updated_at)))
    }

    /// Delete a deadline
    ///
    /// Soft delete. Scope `deadlines:write`.
    #[oai(
        path = "/v1/deadlines/:id",
        method = "delete",
        operation_id = "deleteDeadline"
    )]
    async fn delete(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::DeadlinesWrite")] auth: Auth,
        /// Deadline id.
        id: Path<String>,
    ) -> ApiResult<Deleted, { AUTH | NOT_FOUND | CONFLICT | UNAVAILABLE }> {
        let caller = auth.caller();
        let id: DeadlineId = path_uuid(&id.0, "id")?;
        app.delete_deadline(&caller, id).await?;
        Ok(Deleted::NoContent)
    }

    /// Deliver a deadline or revert its delivery
    ///
    /// `{"delivered": true}` marks the current occurrence delivered (422 TPL-0065 if it
    /// already is); `{"delivered": false}` clears the delivery (422 TPL-0066 if it is not
    /// delivered). Delivering a recurring deadline whose previous occurrence was delivered acts
    /// on the next occurrence. Scope `deadlines:write`.
    #[oai(
        path = "/v1/deadlines/:id/deliver",
        method = "patch",
        operation_id = "deliverDeadline"
    )]
    async fn deliver(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::DeadlinesWrite")] auth: Auth,
        /// Deadline id.
        id: Path<String>,
        body: Json<DeliverInput>,
    ) -> ApiResult<
        Json<DeadlineDto>,
        { AUTH | NOT_FOUND | CONFLICT | PAYLOAD_TOO_LARGE | UNPROCESSABLE | UNAVAILABLE },
    > {
        let caller = auth.caller();
        let id: DeadlineId = path_uuid(&id.0, "id")?;
        let delivered = body.0.delivered.ok_or_else(|| {
            AppError::new(Code::MissingFields, "delivered is required")
                .field("delivered", "required")
        })?;
        let d = app.set_delivery(&caller, id, delivered).await?;
        Ok(Json(DeadlineDto::at(&d, d.updated_at)))
    }
}

/// The `status` filter of the deadlines list.
///
/// MUST answer `InvalidQueryParameter` for anything but pending, overdue or delivered.
fn deadline_status_filter(raw: Option<&str>) -> Result<Option<DeadlineStatus>, AppError> {
    raw.map(|s| {
        DeadlineStatus::parse(s).ok_or_else(|| {
            AppError::new(
                Code::InvalidQueryParameter,
                format!("status '{s}' is not pending, overdue or delivered"),
            )
            .field("status", "pending|overdue|delivered")
        })
    })
    .transpose()
}

/// The `type` filter of the deadlines list.
///
/// MUST answer `InvalidDeadlineType` for anything but regulatory or custom.
fn deadline_type_filter(raw: Option<&str>) -> Result<Option<DeadlineType>, AppError> {
    raw.map(|k| {
        DeadlineType::parse(k).ok_or_else(|| {
            AppError::new(
                Code::InvalidDeadlineType,
                format!("type '{k}' is not regulatory or custom"),
            )
            .field("type", "regulatory|custom")
        })
    })
    .transpose()
}

/// The due-date window of the deadlines list, both ends inclusive.
///
/// MUST answer `InvalidDateRange` when the start is after the end.
#[allow(clippy::type_complexity)]
fn due_window(
    from: Option<(String, &str)>,
    to: Option<(String, &str)>,
) -> Result<(Option<DateTime<Utc>>, Option<DateTime<Utc>>), AppError> {
    let from = from
        .map(|(s, name)| instant_or_day(&s, name, false))
        .transpose()?;
    let to = to
        .map(|(s, name)| instant_or_day(&s, name, true))
        .transpose()?;
    if let (Some(a), Some(b)) = (from, to)
        && a > b
    {
        return Err(AppError::new(
            Code::InvalidDateRange,
            "start_date is after end_date",
        ));
    }
    Ok((from, to))
}
