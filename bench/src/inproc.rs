//! Reporter in this process (the real wiring, state in memory) publishing to the private node:
//! for the figures that need to commit events themselves and time them.
use reporter::app::App;
use reporter::config::RawConfig;
use std::sync::Arc;

/// A running instance; stops its dispatcher when dropped.
pub struct Instance {
    /// The application.
    pub app: Arc<App>,
    _stop: tokio::sync::watch::Sender<bool>,
}

/// Builds an instance publishing to `exchange` on `uri` (publication on, the defaults
/// otherwise: a window of 256, a 5 s publish deadline).
pub async fn start(uri: &str, exchange: &str) -> anyhow::Result<Instance> {
    let mut raw = RawConfig::defaults();
    raw.log_level = "error".into();
    raw.auth_jwt_secret = Some("bench-secret-bench-secret-bench-secret-01".into());
    raw.streaming_enabled = "true".into();
    raw.events_exchange = Some(exchange.into());
    raw.streaming_brokers = Some(uri.into());
    raw.streaming_source = Some("reporter".into());
    raw.streaming_alternate_exchange = Some(format!("{exchange}.unroutable"));
    let config = raw
        .validate(&[])
        .map_err(|e| anyhow::anyhow!("configuration: {e:?}"))?;
    let built = reporter::wiring::build(&config, reporter::wiring::Role::Serve).await?;
    let (stop, rx) = tokio::sync::watch::channel(false);
    if let Some(d) = built.dispatcher {
        tokio::spawn(d.run(rx));
    }
    Ok(Instance {
        app: built.app,
        _stop: stop,
    })
}
