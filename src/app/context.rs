//! Who is calling.
use reporter_ports::TenantId;

/// The authenticated caller of a use case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Tenant every read and write is scoped to.
    pub tenant: TenantId,
    /// Token subject, for logs.
    pub subject: String,
}
