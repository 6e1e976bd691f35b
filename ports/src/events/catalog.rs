use serde::{Deserialize, Serialize};

/// `ce-source` of every event.
pub const CE_SOURCE: &str = "reporter";
/// `ce-specversion` of every event.
pub const CE_SPECVERSION: &str = "1.0";
/// Prefix of `ce-type`: the full type is `studio.lerian.reporter.<resource>.<event>`.
pub const CE_TYPE_PREFIX: &str = "studio.lerian.reporter";
/// Schema version of every payload.
pub const SCHEMA_VERSION: &str = "1.0.0";
/// Class of every event: Reporter emits facts only.
pub const EVENT_CLASS: &str = "fact";

/// Delivery profile of an event definition (the seed's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeliveryProfile {
    /// Direct publish with confirms; falls back to the outbox when the breaker is open.
    Important,
    /// Never published directly; always through the outbox and its dispatcher.
    Critical,
}

/// The twelve event definitions, in the manifest's stable order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EventKey {
    /// A template is uploaded.
    TemplateCreated,
    /// A template's file or metadata changes.
    TemplateUpdated,
    /// A template is removed, with the count of deadlines that cascaded.
    TemplateDeleted,
    /// A report request is accepted and queued.
    ReportRequested,
    /// Every data section succeeded and the artifact is stored.
    ReportFinished,
    /// Some sections failed. An artifact exists.
    ReportPartial,
    /// The report ended in error.
    ReportErrored,
    /// A deadline is created.
    DeadlineCreated,
    /// A deadline changes.
    DeadlineUpdated,
    /// A deadline is removed.
    DeadlineDeleted,
    /// A deadline is marked delivered.
    DeadlineDelivered,
    /// A delivery mark is cleared.
    DeadlineDeliveryReverted,
}

impl EventKey {
    /// Every definition, in a stable order.
    pub const ALL: [EventKey; 12] = [
        Self::TemplateCreated,
        Self::TemplateUpdated,
        Self::TemplateDeleted,
        Self::ReportRequested,
        Self::ReportFinished,
        Self::ReportPartial,
        Self::ReportErrored,
        Self::DeadlineCreated,
        Self::DeadlineUpdated,
        Self::DeadlineDeleted,
        Self::DeadlineDelivered,
        Self::DeadlineDeliveryReverted,
    ];

    /// `ce-resourcetype`.
    pub fn resource_type(&self) -> &'static str {
        match self {
            Self::TemplateCreated | Self::TemplateUpdated | Self::TemplateDeleted => "template",
            Self::ReportRequested
            | Self::ReportFinished
            | Self::ReportPartial
            | Self::ReportErrored => "report",
            _ => "deadline",
        }
    }

    /// `ce-eventtype`.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::TemplateCreated | Self::DeadlineCreated => "created",
            Self::TemplateUpdated | Self::DeadlineUpdated => "updated",
            Self::TemplateDeleted | Self::DeadlineDeleted => "deleted",
            Self::ReportRequested => "requested",
            Self::ReportFinished => "finished",
            Self::ReportPartial => "partial",
            Self::ReportErrored => "errored",
            Self::DeadlineDelivered => "delivered",
            Self::DeadlineDeliveryReverted => "delivery_reverted",
        }
    }

    /// The definition key, also the AMQP routing key verbatim: `<resource>.<event>`.
    pub fn key(&self) -> String {
        format!("{}.{}", self.resource_type(), self.event_type())
    }

    /// `ce-type`: `studio.lerian.reporter.<resource>.<event>`.
    pub fn ce_type(&self) -> String {
        format!("{CE_TYPE_PREFIX}.{}", self.key())
    }

    /// Parses a definition key.
    pub fn parse(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.key() == key)
    }

    /// Default delivery profile (the seed's table).
    pub fn profile(&self) -> DeliveryProfile {
        match self {
            Self::ReportFinished
            | Self::ReportPartial
            | Self::ReportErrored
            | Self::DeadlineDelivered
            | Self::DeadlineDeliveryReverted => DeliveryProfile::Critical,
            _ => DeliveryProfile::Important,
        }
    }

    /// True for the events whose `ce-id` is derived deterministically.
    pub fn has_deterministic_id(&self) -> bool {
        self.profile() == DeliveryProfile::Critical
    }

    /// The seed's "emitted when" sentence.
    pub fn description(&self) -> &'static str {
        match self {
            Self::TemplateCreated => "A template is uploaded.",
            Self::TemplateUpdated => "A template's file or metadata changes.",
            Self::TemplateDeleted => {
                "A template is removed, with the count of deadlines that cascaded."
            }
            Self::ReportRequested => "A report request is accepted and queued.",
            Self::ReportFinished => "Every data section succeeded and the artifact is stored.",
            Self::ReportPartial => "Some sections failed. An artifact exists.",
            Self::ReportErrored => "The report ended in error.",
            Self::DeadlineCreated => "A deadline is created.",
            Self::DeadlineUpdated => "A deadline changes.",
            Self::DeadlineDeleted => "A deadline is removed.",
            Self::DeadlineDelivered => "A deadline is marked delivered.",
            Self::DeadlineDeliveryReverted => "A delivery mark is cleared.",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn twelve_unique_keys_as_the_seed_spells_them() {
        let keys: Vec<String> = EventKey::ALL.iter().map(|k| k.key()).collect();
        assert_eq!(
            keys,
            [
                "template.created",
                "template.updated",
                "template.deleted",
                "report.requested",
                "report.finished",
                "report.partial",
                "report.errored",
                "deadline.created",
                "deadline.updated",
                "deadline.deleted",
                "deadline.delivered",
                "deadline.delivery_reverted"
            ]
        );
        assert_eq!(keys.iter().collect::<HashSet<_>>().len(), 12);
        for k in EventKey::ALL {
            assert_eq!(EventKey::parse(&k.key()), Some(k));
        }
        assert_eq!(
            EventKey::ReportFinished.ce_type(),
            "studio.lerian.reporter.report.finished"
        );
        let critical: Vec<_> = EventKey::ALL
            .iter()
            .filter(|k| k.profile() == DeliveryProfile::Critical)
            .collect();
        assert_eq!(critical.len(), 5);
    }
}
