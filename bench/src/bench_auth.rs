//! The bench's JWT secret and a token for it, shared by `reporter-bench` and `request-cpu`.

/// The HS256 secret every service of the bench runs with.
pub const SECRET: &str = "bench-secret-bench-secret-bench-secret-01";

/// A token for [`SECRET`] with every scope, valid two hours.
pub fn token() -> anyhow::Result<String> {
    let scopes: Vec<&str> = reporter::http::auth::Scope::ALL
        .iter()
        .map(|s| s.as_str())
        .collect();
    let claims = reporter::http::auth::Claims {
        sub: Some("bench".into()),
        exp: (chrono::Utc::now() + chrono::Duration::hours(2)).timestamp(),
        scope: Some(scopes.join(" ")),
        tenant_id: Some("default".into()),
        iss: None,
        aud: None,
        iat: None,
    };
    reporter::http::auth::mint_hs256(SECRET.as_bytes(), &claims).map_err(|e| anyhow::anyhow!(e))
}
