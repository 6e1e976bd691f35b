//! Deadline use cases.
use super::emission::{EventIdentity, EventSubject};
use super::error::{AppError, AppResult, Code};
use super::optimistic::Attempt;
use super::{App, Caller};
use chrono::Datelike;
use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use reporter_ports::deadline::{
    Color, Deadline, DeadlineRuleError, DeadlineStatus, DeadlineType, Frequency,
    MAX_DESCRIPTION_LEN, MAX_NAME_LEN, MAX_NOTIFY_DAYS_BEFORE, start_of_today, validate_months,
};
use reporter_ports::events::Event;
use reporter_ports::events::payloads::{
    DeadlineChanged, DeadlineDeleted, DeadlineDelivered, DeadlineDeliveryReverted,
};
use reporter_ports::page::{Page, PageRequest};
use reporter_ports::ports::{Change, DeadlineQuery, OutboxRecord, UnitOfWork};
use reporter_ports::{DeadlineId, Revisioned, StoreError, TemplateId};

/// `POST /v1/deadlines`, fields as sent (validated here so every rule has its own code).
#[derive(Debug, Clone, Default)]
pub struct CreateDeadline {
    /// Required.
    pub name: Option<String>,
    /// Optional.
    pub description: Option<String>,
    /// Required: regulatory | custom.
    pub kind: Option<String>,
    /// Optional UUID of a live template.
    pub template_id: Option<String>,
    /// Required RFC 3339 instant, not before today (UTC).
    pub due_date: Option<String>,
    /// Required.
    pub frequency: Option<String>,
    /// Semiannual: 2 months, annual: 1, others: none.
    pub months_of_year: Option<Vec<i64>>,
    /// Default true.
    pub active: Option<bool>,
    /// Default 0; 0..=366.
    pub notify_days_before: Option<i64>,
    /// Required `#RRGGBB`.
    pub color: Option<String>,
}

/// `PATCH /v1/deadlines/{id}`: absent fields are kept; `Some(None)` clears a nullable field.
#[derive(Debug, Clone, Default)]
pub struct UpdateDeadline {
    /// New name.
    pub name: Option<String>,
    /// New description, or clear it.
    pub description: Option<Option<String>>,
    /// New type.
    pub kind: Option<String>,
    /// New template link, or unlink.
    pub template_id: Option<Option<String>>,
    /// New due date.
    pub due_date: Option<String>,
    /// New frequency.
    pub frequency: Option<String>,
    /// New months.
    pub months_of_year: Option<Vec<i64>>,
    /// New active flag.
    pub active: Option<bool>,
    /// New lead time.
    pub notify_days_before: Option<i64>,
    /// New colour.
    pub color: Option<String>,
}

impl UpdateDeadline {
    fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.description.is_none()
            && self.kind.is_none()
            && self.template_id.is_none()
            && self.due_date.is_none()
            && self.frequency.is_none()
            && self.months_of_year.is_none()
            && self.active.is_none()
            && self.notify_days_before.is_none()
            && self.color.is_none()
    }
}

/// An [`UpdateDeadline`] parsed and checked field by field; applied to the stored deadline on
/// each attempt of the write.
struct DeadlineChanges {
    name: Option<String>,
    description: Option<Option<String>>,
    kind: Option<DeadlineType>,
    frequency: Option<Frequency>,
    months: Option<Vec<u32>>,
    color: Option<Color>,
    notify: Option<u32>,
    active: Option<bool>,
    due: Option<DateTime<Utc>>,
    template: Option<Option<(TemplateId, String)>>,
}

impl DeadlineChanges {
    /// Applies the changes to `next` and checks the merged deadline's rules (months follow
    /// the merged frequency; a new due date MUST NOT be before today).
    fn apply(&self, next: &mut Deadline, now: DateTime<Utc>) -> AppResult<()> {
        if let Some(n) = &self.name {
            next.name = n.clone();
        }
        if let Some(d) = &self.description {
            next.description = d.clone();
        }
        if let Some(k) = self.kind {
            next.kind = k;
        }
        if let Some(f) = self.frequency {
            next.frequency = f;
        }
        // Months follow the merged frequency: changing to a frequency that takes none clears
        // them unless the client sent some (which is then an error).
        let merged_months = match &self.months {
            Some(m) => m.clone(),
            None if next.frequency.required_months().is_none() => Vec::new(),
            None => next.months_of_year.clone(),
        };
        next.months_of_year =
            validate_months(next.frequency, &merged_months).map_err(rule_error)?;
        if let Some(c) = &self.color {
            next.color = c.clone();
        }
        if let Some(n) = self.notify {
            next.notify_days_before = n;
        }
        if let Some(a) = self.active {
            next.active = a;
        }
        if let Some(d) = self.due {
            if d < start_of_today(now) {
                return Err(rule_error(DeadlineRuleError::DueDateInPast));
            }
            next.due_date = d;
            next.anchor_day = d.day();
        }
        if let Some(t) = &self.template {
            next.template_id = t.as_ref().map(|(id, _)| *id);
            next.template_name = t.as_ref().map(|(_, n)| n.clone());
        }
        Ok(())
    }
}

/// Notification severity (reference A.3.18).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Past due.
    Overdue,
    /// Due within 7 days.
    Warning,
    /// Due later.
    Info,
}

/// One notification.
#[derive(Debug, Clone)]
pub struct DeadlineNotification {
    /// The deadline.
    pub deadline: Deadline,
    /// Effective due date.
    pub due_date: DateTime<Utc>,
    /// Severity.
    pub severity: Severity,
    /// Calendar days until due (negative when overdue).
    pub days_until_due: i64,
}

/// The notification feed.
#[derive(Debug, Clone)]
pub struct Notifications {
    /// Items, most urgent first, at most `limit`.
    pub items: Vec<DeadlineNotification>,
    /// Number of notifications before truncation.
    pub total: u64,
}

fn rule_error(e: DeadlineRuleError) -> AppError {
    let (code, field) = match &e {
        DeadlineRuleError::InvalidName => (Code::InvalidFieldValue, "name"),
        DeadlineRuleError::InvalidDescription => (Code::InvalidFieldValue, "description"),
        DeadlineRuleError::InvalidType => (Code::InvalidDeadlineType, "type"),
        DeadlineRuleError::InvalidFrequency => (Code::InvalidFrequency, "frequency"),
        DeadlineRuleError::InvalidColor => (Code::InvalidColor, "color"),
        DeadlineRuleError::MonthsNotApplicable => (Code::MonthsNotApplicable, "monthsOfYear"),
        DeadlineRuleError::MonthsRequired => (Code::MonthsRequired, "monthsOfYear"),
        DeadlineRuleError::MonthOutOfRange => (Code::MonthOutOfRange, "monthsOfYear"),
        DeadlineRuleError::MonthsCount { .. } => (Code::MonthsCount, "monthsOfYear"),
        DeadlineRuleError::InvalidNotifyDays => (Code::InvalidFieldValue, "notifyDaysBefore"),
        DeadlineRuleError::DueDateInPast => (Code::DueDateInPast, "dueDate"),
    };
    AppError::new(code, e.to_string()).field(field, e.to_string())
}

fn check_name(raw: &str) -> AppResult<String> {
    let n = raw.trim();
    if n.is_empty() || raw.chars().count() > MAX_NAME_LEN {
        return Err(rule_error(DeadlineRuleError::InvalidName));
    }
    super::human_text::check_human_text("name", raw)?;
    Ok(n.to_owned())
}

fn check_description(raw: Option<&str>) -> AppResult<Option<String>> {
    match raw {
        Some(d) if d.chars().count() > MAX_DESCRIPTION_LEN => {
            Err(rule_error(DeadlineRuleError::InvalidDescription))
        }
        Some(d) => {
            super::human_text::check_human_text("description", d)?;
            Ok(Some(d.trim().to_owned()).filter(|d| !d.is_empty()))
        }
        None => Ok(None),
    }
}

fn parse_due(raw: &str) -> AppResult<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(raw.trim())
        .map(|d| d.with_timezone(&Utc).trunc_subsecs(3))
        .map_err(|_| {
            AppError::new(
                Code::InvalidDate,
                format!("dueDate '{raw}' is not an RFC 3339 date-time (e.g. 2027-03-31T23:59:59Z)"),
            )
            .field("dueDate", "RFC 3339 date-time")
        })
}

/// The months as sent. A value that is no `u32` (negative, or huge) becomes 0, which
/// `validate_months` rejects as out of range with the same precedence as 0 or 13: a month list
/// on a frequency that takes none is `MonthsNotApplicable` whatever its values.
fn parse_months(raw: &[i64]) -> Vec<u32> {
    raw.iter().map(|m| u32::try_from(*m).unwrap_or(0)).collect()
}

fn parse_notify(raw: i64) -> AppResult<u32> {
    if !(0..=MAX_NOTIFY_DAYS_BEFORE).contains(&raw) {
        return Err(rule_error(DeadlineRuleError::InvalidNotifyDays));
    }
    u32::try_from(raw).map_err(|_| rule_error(DeadlineRuleError::InvalidNotifyDays))
}

fn parse_template_id(raw: &str) -> AppResult<TemplateId> {
    raw.trim().parse::<TemplateId>().map_err(|_| {
        AppError::new(
            Code::InvalidTemplateId,
            format!("templateId '{raw}' is not a UUID"),
        )
        .field("templateId", "must be a UUID")
    })
}

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

impl App {
    fn deadline_changed(
        &self,
        event: fn(DeadlineChanged) -> Event,
        d: &Deadline,
        now: DateTime<Utc>,
    ) -> Option<OutboxRecord> {
        let view = d.view(now);
        let payload = DeadlineChanged {
            deadline_id: d.id.to_string(),
            name: d.name.clone(),
            kind: d.kind.as_str().to_owned(),
            template_id: d.template_id.map(|t| t.to_string()),
            due_date: view.due_date,
            frequency: d.frequency.as_str().to_owned(),
            months_of_year: d.months_of_year.clone(),
            active: d.active,
            notify_days_before: d.notify_days_before,
            color: d.color.as_str().to_owned(),
            status: view.status.as_str().to_owned(),
            created_at: d.created_at,
            updated_at: d.updated_at,
        };
        self.emitter.row(
            event(payload),
            EventSubject::new(&d.tenant, &d.id.to_string(), d.version),
            EventIdentity::Fresh,
            now,
        )
    }

    /// Looks up the template a deadline links to and answers its description.
    async fn linked_template_name(&self, caller: &Caller, id: TemplateId) -> AppResult<String> {
        let t = self.get_template(caller, id).await.map_err(|e| {
            if e.code == Code::NotFound {
                AppError::not_found("Template").field("templateId", "no such template")
            } else {
                e
            }
        })?;
        Ok(t.description)
    }

    /// Creates a deadline (every rule of reference B.3).
    ///
    /// MUST answer `MissingFields` listing every missing required field, the rule's own code for
    /// a broken rule, `DueDateInPast` (422) for a due date before today (UTC), NotFound for an
    /// unknown template and `DuplicateDeadline` (409) for a live twin.
    pub async fn create_deadline(
        &self,
        caller: &Caller,
        cmd: CreateDeadline,
    ) -> AppResult<Deadline> {
        let span = crate::use_case_span!("create_deadline", tenant = %caller.tenant);
        span.run(async move {
            require_create_fields(&cmd)?;
            let name = check_name(cmd.name.as_deref().unwrap_or_default())?;
            let description = check_description(cmd.description.as_deref())?;
            let kind = DeadlineType::parse(cmd.kind.as_deref().unwrap_or_default())
                .ok_or_else(|| rule_error(DeadlineRuleError::InvalidType))?;
            let frequency = Frequency::parse(cmd.frequency.as_deref().unwrap_or_default())
                .ok_or_else(|| rule_error(DeadlineRuleError::InvalidFrequency))?;
            let months = validate_months(
                frequency,
                &parse_months(cmd.months_of_year.as_deref().unwrap_or_default()),
            )
            .map_err(rule_error)?;
            let color = Color::parse(cmd.color.as_deref().unwrap_or_default().trim())
                .ok_or_else(|| rule_error(DeadlineRuleError::InvalidColor))?;
            let notify = parse_notify(cmd.notify_days_before.unwrap_or(0))?;
            let due = parse_due(cmd.due_date.as_deref().unwrap_or_default())?;
            let now = self.now();
            if due < start_of_today(now) {
                return Err(rule_error(DeadlineRuleError::DueDateInPast));
            }
            let template_id = cmd
                .template_id
                .as_deref()
                .map(parse_template_id)
                .transpose()?;
            let template_name = match template_id {
                Some(t) => Some(self.linked_template_name(caller, t).await?),
                None => None,
            };
            let deadline = Deadline {
                id: DeadlineId::new(),
                tenant: caller.tenant.clone(),
                name,
                description,
                kind,
                template_id,
                template_name,
                due_date: due,
                anchor_day: due.day(),
                frequency,
                months_of_year: months,
                active: cmd.active.unwrap_or(true),
                notify_days_before: notify,
                color,
                delivered_at: None,
                version: 1,
                created_at: now,
                updated_at: now,
                deleted_at: None,
            };
            let uow = UnitOfWork::new()
                .change(Change::Deadline {
                    record: deadline.clone(),
                    expected_version: None,
                })
                .with_outbox(self.deadline_changed(Event::DeadlineCreated, &deadline, now));
            self.commit(&caller.tenant, uow)
                .await
                .map_err(duplicate_or_store)?;
            tracing::info!(deadline_id = %deadline.id, "deadline created");
            Ok(deadline)
        })
        .await
    }

    /// A live deadline. MUST answer NotFound for a missing, deleted or foreign id.
    pub async fn get_deadline(&self, caller: &Caller, id: DeadlineId) -> AppResult<Deadline> {
        let span =
            crate::use_case_span!("get_deadline", tenant = %caller.tenant, deadline_id = %id);
        span.run(async move {
            self.ports
                .deadlines
                .get(&caller.tenant, id, false)
                .await
                .map_err(|e| AppError::store(e, "Deadline"))?
                .ok_or_else(|| AppError::not_found("Deadline"))
        })
        .await
    }

    /// Lists live deadlines; status is evaluated at the current instant.
    pub async fn list_deadlines(
        &self,
        caller: &Caller,
        query: &DeadlineQuery,
        page: PageRequest,
    ) -> AppResult<(Page<Deadline>, DateTime<Utc>)> {
        let span = crate::use_case_span!("list_deadlines", tenant = %caller.tenant);
        span.run(async move {
            let now = self.now();
            let page = self
                .ports
                .deadlines
                .list(&caller.tenant, query, page, now)
                .await
                .map_err(|e| AppError::store(e, "Deadline"))?;
            Ok((page, now))
        })
        .await
    }

    /// Applies a partial update; the merged deadline is re-validated as a whole. MUST answer
    /// `MissingFields` for an update with no field, and re-check the rules on every retry
    /// (another writer may have changed the frequency the months depend on).
    pub async fn update_deadline(
        &self,
        caller: &Caller,
        id: DeadlineId,
        cmd: UpdateDeadline,
    ) -> AppResult<Deadline> {
        let span =
            crate::use_case_span!("update_deadline", tenant = %caller.tenant, deadline_id = %id);
        span.run(async move {
            let changes = &self.deadline_changes(caller, cmd).await?;
            self.write_retrying(&caller.tenant, duplicate_or_store, || async move {
                let current = self.get_deadline(caller, id).await?;
                let now = self.now();
                let mut next = current.next_revision(now);
                changes.apply(&mut next, now)?;
                let row = self.deadline_changed(Event::DeadlineUpdated, &next, now);
                let uow = UnitOfWork::new()
                    .change(current.update(next.clone()))
                    .with_outbox(row);
                Ok(Attempt::commit(uow, next))
            })
            .await
        })
        .await
    }

    /// Parses and checks every field of `cmd` (the linked template's name read once).
    async fn deadline_changes(
        &self,
        caller: &Caller,
        cmd: UpdateDeadline,
    ) -> AppResult<DeadlineChanges> {
        if cmd.is_empty() {
            return Err(AppError::new(
                Code::MissingFields,
                "send at least one field to update",
            ));
        }
        let mut changes = DeadlineChanges {
            name: cmd.name.as_deref().map(check_name).transpose()?,
            description: cmd
                .description
                .as_ref()
                .map(|d| check_description(d.as_deref()))
                .transpose()?,
            kind: cmd
                .kind
                .as_deref()
                .map(|k| {
                    DeadlineType::parse(k).ok_or_else(|| rule_error(DeadlineRuleError::InvalidType))
                })
                .transpose()?,
            frequency: cmd
                .frequency
                .as_deref()
                .map(|f| {
                    Frequency::parse(f)
                        .ok_or_else(|| rule_error(DeadlineRuleError::InvalidFrequency))
                })
                .transpose()?,
            months: cmd.months_of_year.as_deref().map(parse_months),
            color: cmd
                .color
                .as_deref()
                .map(|c| {
                    Color::parse(c.trim())
                        .ok_or_else(|| rule_error(DeadlineRuleError::InvalidColor))
                })
                .transpose()?,
            notify: cmd.notify_days_before.map(parse_notify).transpose()?,
            active: cmd.active,
            due: cmd.due_date.as_deref().map(parse_due).transpose()?,
            template: None,
        };
        // Last: a field's own problem is answered before the linked template is read.
        changes.template = match &cmd.template_id {
            None => None,
            Some(None) => Some(None),
            Some(Some(raw)) => {
                let t = parse_template_id(raw)?;
                Some(Some((t, self.linked_template_name(caller, t).await?)))
            }
        };
        Ok(changes)
    }

    /// Soft-deletes a deadline.
    pub async fn delete_deadline(&self, caller: &Caller, id: DeadlineId) -> AppResult<()> {
        let span =
            crate::use_case_span!("delete_deadline", tenant = %caller.tenant, deadline_id = %id);
        span.run(async move {
            let on_store = |e| AppError::store(e, "Deadline");
            self.write_retrying(&caller.tenant, on_store, || async move {
                let current = self.get_deadline(caller, id).await?;
                let now = self.now();
                let mut next = current.next_revision(now);
                next.deleted_at = Some(now);
                let payload = DeadlineDeleted {
                    deadline_id: id.to_string(),
                    template_id: current.template_id.map(|t| t.to_string()),
                    deleted_at: now,
                    cascaded: false,
                };
                let row = self.emitter.row(
                    Event::DeadlineDeleted(payload),
                    EventSubject::new(&caller.tenant, &id.to_string(), next.version),
                    EventIdentity::Fresh,
                    now,
                );
                let uow = UnitOfWork::new()
                    .change(current.update(next))
                    .with_outbox(row);
                Ok(Attempt::commit(uow, ()))
            })
            .await
        })
        .await
    }

    /// Marks the current occurrence delivered (`true`) or clears its delivery (`false`).
    ///
    /// MUST answer `AlreadyDelivered` (422) when delivering a delivered occurrence and
    /// `NotDelivered` (422) when reverting one that is not delivered. Delivering a rolled-over
    /// recurring deadline persists the occurrence it delivered. Emits `deadline.delivered` /
    /// `deadline.delivery_reverted` with a deterministic `ce-id`.
    pub async fn set_delivery(
        &self,
        caller: &Caller,
        id: DeadlineId,
        delivered: bool,
    ) -> AppResult<Deadline> {
        let span = crate::use_case_span!(
            "set_delivery",
            tenant = %caller.tenant,
            deadline_id = %id,
            delivered,
        );
        span.run(async move {
            self.write_retrying(&caller.tenant, duplicate_or_store, || async move {
                let current = self.get_deadline(caller, id).await?;
                let now = self.now();
                let view = current.view(now);
                let mut next = current.next_revision(now);
                let row = if delivered {
                    if view.status == DeadlineStatus::Delivered {
                        return Err(AppError::new(
                            Code::AlreadyDelivered,
                            "the current occurrence of this deadline is already delivered",
                        )
                        .entity("Deadline"));
                    }
                    next.due_date = view.due_date;
                    next.delivered_at = Some(now);
                    let payload = DeadlineDelivered {
                        deadline_id: id.to_string(),
                        template_id: current.template_id.map(|t| t.to_string()),
                        due_date: view.due_date,
                        delivered_at: now,
                        status: DeadlineStatus::Delivered.as_str().to_owned(),
                    };
                    let disc = format!("{}|{}", ts(view.due_date), ts(now));
                    self.emitter.row(
                        Event::DeadlineDelivered(payload),
                        EventSubject::new(&caller.tenant, &id.to_string(), next.version),
                        EventIdentity::Deterministic(disc),
                        now,
                    )
                } else {
                    if view.status != DeadlineStatus::Delivered {
                        return Err(AppError::new(
                            Code::NotDelivered,
                            "the current occurrence of this deadline is not delivered",
                        )
                        .entity("Deadline"));
                    }
                    next.delivered_at = None;
                    let status = next.view(now).status;
                    let payload = DeadlineDeliveryReverted {
                        deadline_id: id.to_string(),
                        template_id: current.template_id.map(|t| t.to_string()),
                        due_date: current.due_date,
                        reverted_at: now,
                        status: status.as_str().to_owned(),
                    };
                    let disc = format!("{}|{}", ts(current.due_date), ts(now));
                    self.emitter.row(
                        Event::DeadlineDeliveryReverted(payload),
                        EventSubject::new(&caller.tenant, &id.to_string(), next.version),
                        EventIdentity::Deterministic(disc),
                        now,
                    )
                };
                let uow = UnitOfWork::new()
                    .change(current.update(next.clone()))
                    .with_outbox(row);
                Ok(Attempt::commit(uow, next))
            })
            .await
        })
        .await
    }

    /// Deadlines that need attention: active, not delivered, and overdue or within their
    /// `notifyDaysBefore` window; most urgent first, at most `limit`.
    pub async fn deadline_notifications(
        &self,
        caller: &Caller,
        limit: usize,
    ) -> AppResult<Notifications> {
        let span = crate::use_case_span!("deadline_notifications", tenant = %caller.tenant);
        span.run(async move {
            let now = self.now();
            let candidates = self
                .ports
                .deadlines
                .list_undelivered_active(&caller.tenant, now, 10_000)
                .await
                .map_err(|e| AppError::store(e, "Deadline"))?;
            let mut items: Vec<DeadlineNotification> = candidates
                .into_iter()
                .filter_map(|d| {
                    let view = d.view(now);
                    let days = d.days_until_due(now);
                    let overdue = view.status == DeadlineStatus::Overdue;
                    if !(overdue || days <= i64::from(d.notify_days_before)) {
                        return None;
                    }
                    let severity = if overdue {
                        Severity::Overdue
                    } else if days <= 7 {
                        Severity::Warning
                    } else {
                        Severity::Info
                    };
                    Some(DeadlineNotification {
                        due_date: view.due_date,
                        deadline: d,
                        severity,
                        days_until_due: days,
                    })
                })
                .collect();
            items.sort_by(|a, b| {
                (a.severity, a.due_date, a.deadline.id).cmp(&(
                    b.severity,
                    b.due_date,
                    b.deadline.id,
                ))
            });
            let total = items.len() as u64;
            items.truncate(limit);
            Ok(Notifications { items, total })
        })
        .await
    }
}

fn duplicate_or_store(e: StoreError) -> AppError {
    match e {
        StoreError::Duplicate(_) => AppError::new(
            Code::DuplicateDeadline,
            "a live deadline with the same type, template, due date and frequency already exists",
        )
        .entity("Deadline"),
        other => AppError::store(other, "Deadline"),
    }
}

/// MUST answer `MissingFields` listing every required field of a create that is absent.
fn require_create_fields(cmd: &CreateDeadline) -> AppResult<()> {
    let missing: std::collections::BTreeMap<String, String> = [
        ("name", cmd.name.is_some()),
        ("type", cmd.kind.is_some()),
        ("dueDate", cmd.due_date.is_some()),
        ("frequency", cmd.frequency.is_some()),
        ("color", cmd.color.is_some()),
    ]
    .into_iter()
    .filter(|(_, present)| !present)
    .map(|(field, _)| (field.to_owned(), "required".to_owned()))
    .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(AppError::new(Code::MissingFields, "required fields are missing").fields(missing))
}
