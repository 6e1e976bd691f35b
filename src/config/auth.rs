//! The auth and tenancy sections.
use super::{AuthKey, AuthSettings, Checker, RawConfig, Tenancy, problem};
use reporter_ports::{Secret, TenantId};

impl RawConfig {
    /// `AUTH_ENABLED`, the verification key (`AUTH_JWT_SECRET` or `AUTH_JWT_PUBLIC_KEY`,
    /// exactly one; one of them in production), issuer, audience and leeway.
    pub(super) fn auth(&self, c: &mut Checker, production: bool) -> AuthSettings {
        let auth_enabled = c.boolean("AUTH_ENABLED", &self.auth_enabled);
        let key = self.auth_key(c, production, auth_enabled);
        if production && !auth_enabled {
            c.problems.push(problem(
                "AUTH_ENABLED",
                "auth is off in production",
                "AUTH_ENABLED must be true when ENV_NAME=production",
            ));
        }
        let leeway_seconds = c.int::<u64>("AUTH_JWT_LEEWAY_SECONDS", &self.auth_jwt_leeway_seconds);
        let token_cache_size = c.int::<u64>("AUTH_TOKEN_CACHE_SIZE", &self.auth_token_cache_size);
        let max_token_lifetime_seconds = c.int::<u64>(
            "AUTH_MAX_TOKEN_LIFETIME_SECONDS",
            &self.auth_max_token_lifetime_seconds,
        );
        AuthSettings {
            enabled: auth_enabled,
            token_cache_size,
            max_token_lifetime_seconds,
            key,
            issuer: self
                .auth_jwt_issuer
                .clone()
                .filter(|s| !s.trim().is_empty()),
            audience: self
                .auth_jwt_audience
                .clone()
                .filter(|s| !s.trim().is_empty()),
            leeway_seconds,
        }
    }

    /// The verification key: `AUTH_JWT_SECRET` (at least 32 bytes) or `AUTH_JWT_PUBLIC_KEY`
    /// (PEM text or a PEM file; RSA or EC P-256), exactly one; in production with auth on, one
    /// of them MUST be set. Without one, a key is generated for this run.
    fn auth_key(&self, c: &mut Checker, production: bool, auth_enabled: bool) -> AuthKey {
        let secret = self
            .auth_jwt_secret
            .as_ref()
            .map(|s| s.expose().trim())
            .filter(|s| !s.is_empty());
        let public_key = self
            .auth_jwt_public_key
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        match (secret, public_key) {
            (Some(_), Some(_)) => {
                c.problems.push(problem(
                    "AUTH_JWT_SECRET",
                    "both AUTH_JWT_SECRET and AUTH_JWT_PUBLIC_KEY are set",
                    "set exactly one verification key",
                ));
                AuthKey::Generated
            }
            (Some(s), None) => {
                if s.len() < 32 {
                    c.problems.push(problem(
                        "AUTH_JWT_SECRET",
                        format!("the secret is {} bytes long", s.len()),
                        "at least 32 bytes",
                    ));
                }
                AuthKey::Secret(Secret::from(s))
            }
            (None, Some(k)) => {
                let pem = if k.starts_with("-----BEGIN") {
                    Some(k.to_owned())
                } else {
                    std::fs::read_to_string(k).ok()
                };
                match pem {
                    Some(pem) if crate::http::auth::public_key_is_usable(&pem) => {
                        AuthKey::PublicKeyPem(pem)
                    }
                    Some(_) => {
                        c.problems.push(problem(
                            "AUTH_JWT_PUBLIC_KEY",
                            "the PEM is not an RSA or EC (P-256) public key",
                            "a PEM public key for RS256 or ES256",
                        ));
                        AuthKey::Generated
                    }
                    None => {
                        c.problems.push(problem(
                            "AUTH_JWT_PUBLIC_KEY",
                            format!("'{k}' is neither PEM text nor a readable file"),
                            "PEM text or a path to a PEM file",
                        ));
                        AuthKey::Generated
                    }
                }
            }
            (None, None) => {
                if production && auth_enabled {
                    c.problems.push(problem(
                        "AUTH_JWT_SECRET",
                        "no verification key is configured in production",
                        "set AUTH_JWT_SECRET or AUTH_JWT_PUBLIC_KEY when ENV_NAME=production",
                    ));
                }
                AuthKey::Generated
            }
        }
    }

    /// `MULTI_TENANT_ENABLED` (needs auth: the tenant comes from the token) or
    /// `DEFAULT_TENANT_ID`.
    pub(super) fn tenancy(&self, c: &mut Checker, auth_enabled: bool) -> Tenancy {
        let multi = c.boolean("MULTI_TENANT_ENABLED", &self.multi_tenant_enabled);
        if multi {
            if !auth_enabled {
                c.problems.push(problem(
                    "MULTI_TENANT_ENABLED",
                    "multi-tenant mode with AUTH_ENABLED=false",
                    "multi-tenant mode takes the tenant from the token, so it needs AUTH_ENABLED=true",
                ));
            }
            Tenancy::Multi
        } else {
            match TenantId::parse(self.default_tenant_id.trim()) {
                Ok(t) => Tenancy::Single(t),
                Err(e) => {
                    c.problems.push(problem(
                        "DEFAULT_TENANT_ID",
                        format!("'{}' is not a valid tenant id", self.default_tenant_id),
                        &e.to_string(),
                    ));
                    Tenancy::Single(TenantId::default_tenant())
                }
            }
        }
    }
}
