//! External tools and corpora against the service: schemathesis, generated SDK clients, the golden corpus through real data sources, hostile templates.

mod api_contract;
mod golden_corpus;
mod hostile_templates;
mod sdk_clients;

/// The tests that drive a released `reporter serve` under a time bound (schemathesis, the SDK
/// smoke flows) and the one that saturates the CPU on purpose (hostile templates) run one at
/// a time: side by side on two cores, a smoke flow's report stayed `Processing` past its 60 s
/// bound once. Each takes this guard first.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
