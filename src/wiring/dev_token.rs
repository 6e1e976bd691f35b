//! The development credentials of a deployment without a verification key.
use crate::config::{AuthKey, Config, Tenancy};
use crate::http::auth::{Claims, Scope, mint_hs256};
use reporter_ports::{Secret, TenantId};

/// A secret generated for this run and a token signed with it (all scopes, 12 h), when auth
/// is on and no key is configured (never in production: the configuration refuses that);
/// otherwise nothing.
pub(super) fn dev_credentials(config: &Config) -> anyhow::Result<(Option<Secret>, Option<Secret>)> {
    if !matches!(
        (&config.auth.key, config.auth.enabled),
        (AuthKey::Generated, true)
    ) {
        return Ok((None, None));
    }
    let secret: [u8; 32] = rand::random();
    let secret = Secret::new(hex::encode(secret));
    let tenant = match &config.tenancy {
        Tenancy::Single(t) => t.clone(),
        Tenancy::Multi => TenantId::default_tenant(),
    };
    let now = chrono::Utc::now();
    let claims = Claims {
        sub: Some("dev".into()),
        exp: (now + chrono::Duration::hours(12)).timestamp(),
        scope: Some(Scope::all_claim()),
        tenant_id: Some(tenant.to_string()),
        iss: config.auth.issuer.clone(),
        aud: config.auth.audience.clone(),
        iat: Some(now.timestamp()),
    };
    let token = mint_hs256(secret.expose().as_bytes(), &claims)
        .map_err(|e| anyhow::anyhow!("minting the development token: {e}"))?;
    Ok((Some(secret), Some(Secret::new(token))))
}
