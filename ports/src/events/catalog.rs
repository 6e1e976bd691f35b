use super::payload::Payload;
use super::payloads::{self, DeadlineChanged, TemplateChanged};
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

/// The resource an event is about: `ce-resourcetype`, the first part of its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resource {
    /// A report template.
    Template,
    /// A report.
    Report,
    /// A filing deadline.
    Deadline,
}

impl Resource {
    /// `ce-resourcetype`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Template => "template",
            Self::Report => "report",
            Self::Deadline => "deadline",
        }
    }
}

/// Declares the catalogue from one row per event: its [`EventKey`] variant, its
/// [`Resource`] and `ce-eventtype`, its [`DeliveryProfile`], its payload type and the seed's
/// "emitted when" sentence. Everything an event is known by is generated from its row (the
/// key, [`EventKey::ALL`] and [`EventKey::COUNT`], the matches of [`EventKey::resource`],
/// [`EventKey::event_type`], [`EventKey::profile`] and [`EventKey::description`], the
/// [`Event`] variant that binds the payload type to the key, and the payload's JSON
/// Schema), so an event cannot be half-declared: a row missing a part does not compile.
macro_rules! catalogue {
    ($(
        $key:ident => $resource:ident . $event:literal, $profile:ident, $payload:ty,
            $description:literal;
    )+) => {
        /// The event definitions, in the manifest's stable order (the rows of the
        /// catalogue).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum EventKey {
            $(
                #[doc = $description]
                $key,
            )+
        }

        impl EventKey {
            /// Every definition, in a stable order.
            pub const ALL: [EventKey; [$(stringify!($key)),+].len()] = [$(Self::$key),+];

            /// How many definitions there are.
            pub const COUNT: usize = Self::ALL.len();

            /// The resource the event is about.
            pub fn resource(&self) -> Resource {
                match self {
                    $(Self::$key => Resource::$resource,)+
                }
            }

            /// `ce-eventtype`.
            pub fn event_type(&self) -> &'static str {
                match self {
                    $(Self::$key => $event,)+
                }
            }

            /// Default delivery profile (the seed's table).
            pub fn profile(&self) -> DeliveryProfile {
                match self {
                    $(Self::$key => DeliveryProfile::$profile,)+
                }
            }

            /// The seed's "emitted when" sentence.
            pub fn description(&self) -> &'static str {
                match self {
                    $(Self::$key => $description,)+
                }
            }

            /// The JSON Schema of the payload type of the event's [`Event`] variant.
            pub(super) fn payload_root_schema(
                &self,
                generator: schemars::SchemaGenerator,
            ) -> schemars::Schema {
                match self {
                    $(Self::$key => generator.into_root_schema_for::<$payload>(),)+
                }
            }
        }

        /// One event to emit: the variant is its key, and the key fixes the payload type, so
        /// a payload cannot be emitted under another event's key.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            $(
                #[doc = $description]
                $key($payload),
            )+
        }

        impl Event {
            /// The event's key.
            pub fn key(&self) -> EventKey {
                match self {
                    $(Self::$key(_) => EventKey::$key,)+
                }
            }

            /// The payload, serialized once. MUST fail only when the payload does not
            /// serialize (the payload types are plain structs: they always do).
            pub fn payload(&self) -> Result<Payload, serde_json::Error> {
                match self {
                    $(Self::$key(p) => Payload::of(p),)+
                }
            }
        }
    };
}

catalogue! {
    TemplateCreated => Template."created", Important, TemplateChanged,
        "A template is uploaded.";
    TemplateUpdated => Template."updated", Important, TemplateChanged,
        "A template's file or metadata changes.";
    TemplateDeleted => Template."deleted", Important, payloads::TemplateDeleted,
        "A template is removed, with the count of deadlines that cascaded.";
    ReportRequested => Report."requested", Important, payloads::ReportRequested,
        "A report request is accepted and queued.";
    ReportFinished => Report."finished", Critical, payloads::ReportFinished,
        "Every data section succeeded and the artifact is stored.";
    ReportPartial => Report."partial", Critical, payloads::ReportPartial,
        "Some sections failed. An artifact exists.";
    ReportErrored => Report."errored", Critical, payloads::ReportErrored,
        "The report ended in error.";
    DeadlineCreated => Deadline."created", Important, DeadlineChanged,
        "A deadline is created.";
    DeadlineUpdated => Deadline."updated", Important, DeadlineChanged,
        "A deadline changes.";
    DeadlineDeleted => Deadline."deleted", Important, payloads::DeadlineDeleted,
        "A deadline is removed.";
    DeadlineDelivered => Deadline."delivered", Critical, payloads::DeadlineDelivered,
        "A deadline is marked delivered.";
    DeadlineDeliveryReverted => Deadline."delivery_reverted", Critical,
        payloads::DeadlineDeliveryReverted, "A delivery mark is cleared.";
}

impl EventKey {
    /// `ce-resourcetype`.
    pub fn resource_type(&self) -> &'static str {
        self.resource().as_str()
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

    /// True for the events whose `ce-id` is derived deterministically.
    pub fn has_deterministic_id(&self) -> bool {
        self.profile() == DeliveryProfile::Critical
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn unique_keys_as_the_seed_spells_them() {
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
        assert_eq!(keys.iter().collect::<HashSet<_>>().len(), EventKey::COUNT);
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
