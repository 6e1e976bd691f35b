//! Bearer-token authentication, scopes and tenant resolution.
//!
//! [`authenticate`] (run by `request_checks`) verifies the `Authorization` header of every request once
//! and stores the outcome in the request; `request_checks` then refuses a caller without the
//! scope the operation declares (`#[oai(scope = "Scope::…")]`, read from the spec) and records
//! it as [`ScopeChecked`]. The [`Auth`] extractor (declared in the spec as the `bearerAuth`
//! security scheme) turns a failed outcome into 401 and hands the operation its [`Caller`] only
//! for that recorded scope: the scope is written once, in the declaration, and an operation
//! cannot enforce another one.
use crate::app::{AppError, Caller, Code};
use crate::config::{AuthKey, AuthSettings, Tenancy};
use crate::http::error::ApiError;
use crate::http::token_cache::TokenCache;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use poem::Request;
use poem_openapi::registry::{MetaSecurityScheme, Registry};
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};
use reporter_ports::TenantId;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// OAuth2-style scopes, carried space-separated in the `scope` claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Read templates.
    TemplatesRead,
    /// Create, update, delete templates.
    TemplatesWrite,
    /// Read reports and download artifacts.
    ReportsRead,
    /// Request reports.
    ReportsWrite,
    /// Read deadlines and notifications.
    DeadlinesRead,
    /// Create, update, deliver, delete deadlines.
    DeadlinesWrite,
    /// Read data sources and their schemas.
    DataSourcesRead,
    /// Read dashboard metrics.
    MetricsRead,
    /// Read the streaming manifest.
    StreamingRead,
    /// Operate the event outbox (redrive).
    StreamingAdmin,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 10] = [
        Self::TemplatesRead,
        Self::TemplatesWrite,
        Self::ReportsRead,
        Self::ReportsWrite,
        Self::DeadlinesRead,
        Self::DeadlinesWrite,
        Self::DataSourcesRead,
        Self::MetricsRead,
        Self::StreamingRead,
        Self::StreamingAdmin,
    ];

    /// The claim spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::TemplatesRead => "templates:read",
            Self::TemplatesWrite => "templates:write",
            Self::ReportsRead => "reports:read",
            Self::ReportsWrite => "reports:write",
            Self::DeadlinesRead => "deadlines:read",
            Self::DeadlinesWrite => "deadlines:write",
            Self::DataSourcesRead => "data-sources:read",
            Self::MetricsRead => "metrics:read",
            Self::StreamingRead => "streaming:read",
            Self::StreamingAdmin => "streaming:admin",
        }
    }

    /// Parses a claim spelling.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }

    /// This scope's bit in a [`Scopes`] set.
    const fn bit(self) -> u16 {
        1 << self as u16
    }

    /// Every scope, space-separated (the dev token's `scope` claim).
    pub fn all_claim() -> String {
        Self::ALL
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// An operation declares its scope beside it (`#[oai(scope = "Scope::…")]` on its [`Auth`]
/// parameter): the generated document lists it, and `request_checks` reads it from there to refuse a
/// caller without it (403) before the body is read.
impl poem_openapi::OAuthScopes for Scope {
    fn meta() -> Vec<poem_openapi::registry::MetaOAuthScope> {
        Self::ALL
            .iter()
            .map(|s| poem_openapi::registry::MetaOAuthScope {
                name: s.as_str(),
                description: None,
            })
            .collect()
    }

    fn name(&self) -> &'static str {
        self.as_str()
    }
}

/// A set of scopes (one bit per [`Scope`]): checked on every request, so it is `Copy` and
/// allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes(u16);

impl Scopes {
    /// Every scope.
    pub fn all() -> Self {
        Scope::ALL.into_iter().collect()
    }

    /// Whether `scope` is in the set.
    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        Self(iter.into_iter().fold(0, |bits, s| bits | s.bit()))
    }
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// `sub` claim (or `anonymous` with auth off).
    pub subject: String,
    /// Resolved tenant.
    pub tenant: TenantId,
    /// Granted scopes.
    pub scopes: Scopes,
}

/// Why a request is not authenticated. The message is safe to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthFailure(pub String);

/// The claims Reporter reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    /// Subject.
    #[serde(default)]
    pub sub: Option<String>,
    /// Expiry (seconds since the epoch). Required.
    pub exp: i64,
    /// Space-separated scopes.
    #[serde(default)]
    pub scope: Option<String>,
    /// Tenant (required in multi-tenant mode).
    #[serde(default)]
    pub tenant_id: Option<String>,
    /// Issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    /// Audience.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
    /// Issued at (seconds since the epoch): with `exp`, the token's lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
}

enum Mode {
    Disabled,
    Jwt {
        key: DecodingKey,
        validation: Box<Validation>,
        lifetime: Lifetime,
    },
}

/// The bound on a token's lifetime (`AUTH_MAX_TOKEN_LIFETIME_SECONDS`): a token that lives
/// longer, or says it was issued in the future, is refused even when its signature is good.
#[derive(Debug, Clone, Copy)]
struct Lifetime {
    max_seconds: u64,
    leeway_seconds: u64,
}

impl Lifetime {
    /// MUST refuse an `iat` later than `now` plus the leeway, and an `exp` more than
    /// `max_seconds` after `iat` (after `now` when the token has no `iat`).
    fn check(&self, claims: &Claims, now: u64) -> Result<(), AuthFailure> {
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        let leeway = i64::try_from(self.leeway_seconds).unwrap_or(i64::MAX);
        if claims
            .iat
            .is_some_and(|iat| iat > now.saturating_add(leeway))
        {
            return Err(AuthFailure(
                "the token was issued in the future (iat)".into(),
            ));
        }
        let issued = claims.iat.unwrap_or(now);
        let max = i64::try_from(self.max_seconds).unwrap_or(i64::MAX);
        if claims.exp.saturating_sub(issued) > max {
            return Err(AuthFailure(format!(
                "the token lives longer than this service accepts (exp - iat above {max} s)"
            )));
        }
        Ok(())
    }
}

/// Verifies bearer tokens.
pub struct Authenticator {
    mode: Mode,
    tenancy: Tenancy,
    /// Tokens verified before (`AUTH_TOKEN_CACHE_SIZE`; `None` when 0 or auth is off).
    cache: Option<TokenCache>,
}

/// True when the PEM is an RSA or EC public key jsonwebtoken can use.
pub fn public_key_is_usable(pem: &str) -> bool {
    DecodingKey::from_rsa_pem(pem.as_bytes()).is_ok()
        || DecodingKey::from_ec_pem(pem.as_bytes()).is_ok()
}

impl Authenticator {
    /// Builds the verifier. `generated_secret` is used when the settings name no key.
    pub fn new(
        settings: &AuthSettings,
        tenancy: Tenancy,
        generated_secret: Option<&[u8]>,
    ) -> Result<Self, String> {
        if !settings.enabled {
            return Ok(Self {
                mode: Mode::Disabled,
                tenancy,
                cache: None,
            });
        }
        let (key, alg) = match &settings.key {
            AuthKey::Secret(s) => (
                DecodingKey::from_secret(s.expose().as_bytes()),
                Algorithm::HS256,
            ),
            AuthKey::Generated => match generated_secret {
                Some(s) => (DecodingKey::from_secret(s), Algorithm::HS256),
                None => return Err("no verification key configured".into()),
            },
            AuthKey::PublicKeyPem(pem) => match DecodingKey::from_rsa_pem(pem.as_bytes()) {
                Ok(k) => (k, Algorithm::RS256),
                Err(_) => (
                    DecodingKey::from_ec_pem(pem.as_bytes()).map_err(|e| e.to_string())?,
                    Algorithm::ES256,
                ),
            },
        };
        let mut validation = Validation::new(alg);
        validation.set_required_spec_claims(&["exp"]);
        validation.leeway = settings.leeway_seconds;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        match &settings.issuer {
            Some(iss) => validation.set_issuer(&[iss]),
            None => validation.iss = None,
        }
        match &settings.audience {
            Some(aud) => validation.set_audience(&[aud]),
            None => validation.validate_aud = false,
        }
        Ok(Self {
            mode: Mode::Jwt {
                key,
                validation: Box::new(validation),
                lifetime: Lifetime {
                    max_seconds: settings.max_token_lifetime_seconds,
                    leeway_seconds: settings.leeway_seconds,
                },
            },
            tenancy,
            cache: TokenCache::new(settings.token_cache_size, settings.leeway_seconds),
        })
    }

    /// True when auth is on.
    pub fn enabled(&self) -> bool {
        matches!(self.mode, Mode::Jwt { .. })
    }

    /// Verifies an `Authorization` header value; a token verified before and not expired is
    /// taken from the cache without a second verification (see `token_cache`).
    pub fn verify_shared(&self, header: Option<&str>) -> Result<Arc<Principal>, AuthFailure> {
        let (Mode::Jwt { .. }, Some(cache)) = (&self.mode, &self.cache) else {
            return self.verify(header).map(Arc::new);
        };
        let token = bearer_token(header)?;
        let now = jsonwebtoken::get_current_timestamp();
        if let Some(principal) = cache.get(token, now) {
            return Ok(principal);
        }
        let (principal, exp) = self.verify_token(token)?;
        let principal = Arc::new(principal);
        cache.insert(token, principal.clone(), exp);
        Ok(principal)
    }

    /// Verifies an `Authorization` header value.
    pub fn verify(&self, header: Option<&str>) -> Result<Principal, AuthFailure> {
        match &self.mode {
            Mode::Disabled => {
                let tenant = match &self.tenancy {
                    Tenancy::Single(t) => t.clone(),
                    Tenancy::Multi => {
                        return Err(AuthFailure("multi-tenant mode needs authentication".into()));
                    }
                };
                Ok(Principal {
                    subject: "anonymous".into(),
                    tenant,
                    scopes: Scopes::all(),
                })
            }
            Mode::Jwt { .. } => self.verify_token(bearer_token(header)?).map(|(p, _)| p),
        }
    }

    /// Verifies a bearer token: the principal and the token's `exp`.
    fn verify_token(&self, token: &str) -> Result<(Principal, u64), AuthFailure> {
        let Mode::Jwt {
            key,
            validation,
            lifetime,
        } = &self.mode
        else {
            return Err(AuthFailure("authentication is off".into()));
        };
        let data = jsonwebtoken::decode::<Claims>(token, key, validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            let why = match e.kind() {
                K::ExpiredSignature => "the token has expired",
                K::InvalidSignature => "the token signature is invalid",
                K::InvalidAlgorithm => "the token uses an algorithm this service does not accept",
                K::MissingRequiredClaim(_) => "the token lacks a required claim (exp)",
                K::InvalidIssuer => "the token issuer is not accepted",
                K::InvalidAudience => "the token audience is not accepted",
                K::ImmatureSignature => "the token is not valid yet",
                _ => "the token is malformed",
            };
            AuthFailure(why.into())
        })?;
        let claims = data.claims;
        lifetime.check(&claims, jsonwebtoken::get_current_timestamp())?;
        // jsonwebtoken accepted it as an unsigned number of seconds.
        let exp = u64::try_from(claims.exp).unwrap_or_default();
        let tenant = match &self.tenancy {
            Tenancy::Single(t) => t.clone(),
            Tenancy::Multi => {
                let raw = claims
                    .tenant_id
                    .as_deref()
                    .ok_or_else(|| AuthFailure("the token has no tenant_id claim".into()))?;
                TenantId::parse(raw).map_err(|_| {
                    AuthFailure("the token's tenant_id claim is not a valid tenant id".into())
                })?
            }
        };
        let scopes = claims
            .scope
            .as_deref()
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(Scope::parse)
            .collect();
        let principal = Principal {
            subject: claims.sub.unwrap_or_else(|| "unknown".into()),
            tenant,
            scopes,
        };
        Ok((principal, exp))
    }
}

/// The token of an `Authorization: Bearer <JWT>` header value.
fn bearer_token(header: Option<&str>) -> Result<&str, AuthFailure> {
    let header = header.ok_or_else(|| {
        AuthFailure("missing Authorization header; send 'Authorization: Bearer <JWT>'".into())
    })?;
    header
        .strip_prefix("Bearer ")
        .or_else(|| header.strip_prefix("bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| AuthFailure("the Authorization header must be 'Bearer <JWT>'".into()))
}

/// Mints an HS256 token (the development token of `serve`, and tests).
pub fn mint_hs256(secret: &[u8], claims: &Claims) -> Result<String, String> {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret),
    )
    .map_err(|e| e.to_string())
}

/// The authentication outcome stored in each request by [`authenticate`] (shared with the
/// operation's [`Auth`] without a copy).
#[derive(Debug, Clone)]
pub struct AuthOutcome(pub Result<Arc<Principal>, AuthFailure>);

/// Verifies the bearer token of a `/v1` request once and stores the outcome in the request
/// (read by [`Auth`]); other paths are public.
pub fn authenticate(auth: &Authenticator, req: &mut Request) {
    if req.uri().path().starts_with("/v1/") {
        let header = req
            .headers()
            .get(poem::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let outcome = auth.verify_shared(header);
        req.extensions_mut().insert(AuthOutcome(outcome));
    }
}

/// The scope the request's operation declares, recorded by `request_checks` once the caller
/// was found to hold it (see [`scope_refusal`]): what [`Auth`] hands a caller for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScopeChecked(pub Scope);

/// The authenticated caller of an operation (security scheme `bearerAuth`), holding the scope
/// the operation declares (`#[oai(scope = "Scope::…")]` on this parameter).
#[derive(Debug, Clone)]
pub struct Auth {
    principal: Arc<Principal>,
    scope: Scope,
}

impl Auth {
    /// The caller, whose token holds [`Self::scope`] (checked when the extractor ran).
    pub fn caller(&self) -> Caller {
        Caller {
            tenant: self.principal.tenant.clone(),
            subject: self.principal.subject.clone(),
        }
    }

    /// The scope the operation declares, which the caller holds.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The extractor's decision for `req`: 401 when authentication failed; 403 when the
    /// operation declares no scope (no [`ScopeChecked`]: a token alone MUST NOT be enough) or
    /// the token lacks the declared one.
    fn of(req: &Request) -> Result<Self, AppError> {
        let principal = principal(req)?;
        let Some(ScopeChecked(scope)) = req.extensions().get::<ScopeChecked>().copied() else {
            return Err(AppError::new(
                Code::Forbidden,
                "the operation declares no scope, so no token is enough",
            ));
        };
        if !principal.scopes.contains(scope) {
            return Err(scope.missing());
        }
        Ok(Self {
            principal: principal.clone(),
            scope,
        })
    }
}

impl Scope {
    /// The 403 of a caller whose token lacks this scope.
    pub fn missing(self) -> AppError {
        AppError::new(
            Code::Forbidden,
            format!("the token lacks the '{}' scope", self.as_str()),
        )
    }
}

/// The refusal of a request to an operation that needs `scope`, decided from the outcome
/// [`authenticate`] stored: 401 when the token failed (or none was checked), 403 when it
/// lacks the scope. MUST be decided before the body is read, so a caller without the right
/// learns nothing from how its body is parsed.
pub fn scope_refusal(req: &Request, scope: Scope) -> Option<AppError> {
    match principal(req) {
        Ok(p) if p.scopes.contains(scope) => None,
        Ok(_) => Some(scope.missing()),
        Err(e) => Some(e),
    }
}

/// The principal [`authenticate`] stored in `req`, or the 401 of its failed (or missing)
/// verification.
fn principal(req: &Request) -> Result<&Arc<Principal>, AppError> {
    match req.extensions().get::<AuthOutcome>() {
        Some(AuthOutcome(Ok(p))) => Ok(p),
        Some(AuthOutcome(Err(f))) => Err(AppError::new(Code::Unauthorized, f.0.clone())),
        None => Err(AppError::new(Code::Unauthorized, "authentication required")),
    }
}

impl<'a> ApiExtractor<'a> for Auth {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::SecurityScheme];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        registry.create_security_scheme(
            "bearerAuth",
            MetaSecurityScheme {
                ty: "http",
                description: Some(
                    "JWT bearer token (HS256, RS256 or ES256). `exp` is required. Scopes, space-separated in the `scope` claim: templates:read templates:write reports:read reports:write deadlines:read deadlines:write data-sources:read metrics:read streaming:read streaming:admin. In multi-tenant mode the `tenant_id` claim selects the tenant.",
                ),
                name: None,
                key_in: None,
                scheme: Some("bearer"),
                bearer_format: Some("JWT"),
                flows: None,
                openid_connect_url: None,
            },
        );
    }

    fn security_schemes() -> Vec<&'static str> {
        vec!["bearerAuth"]
    }

    async fn from_request(
        req: &'a Request,
        _body: &mut poem::RequestBody,
        _opts: ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        Self::of(req).map_err(|e| ApiError::from(e).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"unit-test-secret-unit-test-secret-0123";

    fn authenticator(token_cache_size: u64) -> Authenticator {
        let settings = AuthSettings {
            enabled: true,
            key: AuthKey::Secret(reporter_ports::Secret::from(
                std::str::from_utf8(SECRET).unwrap_or_default(),
            )),
            issuer: None,
            audience: None,
            leeway_seconds: 30,
            token_cache_size,
            max_token_lifetime_seconds: 86_400,
        };
        let tenant = TenantId::parse("default").expect("a tenant id");
        Authenticator::new(&settings, Tenancy::Single(tenant), None).expect("an authenticator")
    }

    fn bearer(exp_from_now: i64) -> String {
        let claims = Claims {
            sub: Some("alice".into()),
            exp: chrono::Utc::now().timestamp() + exp_from_now,
            scope: Some("templates:read".into()),
            tenant_id: None,
            iss: None,
            aud: None,
            iat: None,
        };
        format!("Bearer {}", mint_hs256(SECRET, &claims).expect("a token"))
    }

    #[test]
    fn a_verified_token_is_taken_from_the_cache() {
        let auth = authenticator(16);
        let header = bearer(3600);
        let first = auth.verify_shared(Some(&header)).expect("valid");
        let again = auth.verify_shared(Some(&header)).expect("valid");
        assert!(Arc::ptr_eq(&first, &again), "the second use is a cache hit");
        assert_eq!(first.subject, "alice");
        assert!(first.scopes.contains(Scope::TemplatesRead));
        assert!(!first.scopes.contains(Scope::TemplatesWrite));
    }

    #[test]
    fn an_altered_token_misses_the_cache_and_is_refused() {
        let auth = authenticator(16);
        let header = bearer(3600);
        auth.verify_shared(Some(&header)).expect("valid");
        let mut altered = header.clone();
        let last = altered.pop().expect("a signature");
        altered.push(if last == 'A' { 'B' } else { 'A' });
        let refused = auth.verify_shared(Some(&altered)).expect_err("altered");
        assert!(
            refused.0.contains("signature") || refused.0.contains("malformed"),
            "{refused}"
        );
        let header_prefix = &header[..header.len() - 10];
        assert!(auth.verify_shared(Some(header_prefix)).is_err());
    }

    #[test]
    fn an_expired_token_is_refused_every_time() {
        let auth = authenticator(16);
        let header = bearer(-3600);
        for _ in 0..2 {
            let refused = auth.verify_shared(Some(&header)).expect_err("expired");
            assert_eq!(refused.0, "the token has expired");
        }
    }

    #[test]
    fn a_missing_or_malformed_header_is_refused_with_the_cache_on() {
        let auth = authenticator(16);
        assert!(auth.verify_shared(None).is_err());
        assert!(auth.verify_shared(Some("Basic abc")).is_err());
        assert!(auth.verify_shared(Some("Bearer ")).is_err());
    }

    #[test]
    fn with_the_cache_off_every_use_is_verified() {
        let auth = authenticator(0);
        let header = bearer(3600);
        let first = auth.verify_shared(Some(&header)).expect("valid");
        let again = auth.verify_shared(Some(&header)).expect("valid");
        assert!(!Arc::ptr_eq(&first, &again), "verified twice");
        assert_eq!(first, again);
    }

    fn bearer_with(exp_from_now: i64, iat_from_now: Option<i64>) -> String {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            sub: Some("alice".into()),
            exp: now + exp_from_now,
            scope: Some("templates:read".into()),
            tenant_id: None,
            iss: None,
            aud: None,
            iat: iat_from_now.map(|d| now + d),
        };
        format!("Bearer {}", mint_hs256(SECRET, &claims).expect("a token"))
    }

    #[test]
    fn a_token_living_longer_than_the_maximum_is_refused() {
        let auth = authenticator(16);
        let refused = auth
            .verify_shared(Some(&bearer_with(1 << 62, Some(0))))
            .expect_err("exp of 2^62");
        assert!(refused.0.contains("lives longer"), "{refused}");
        let refused = auth
            .verify_shared(Some(&bearer_with(2 * 86_400, None)))
            .expect_err("two days without iat");
        assert!(refused.0.contains("lives longer"), "{refused}");
        let refused = auth
            .verify_shared(Some(&bearer_with(86_400, Some(-3600))))
            .expect_err("issued an hour ago, valid a day from now");
        assert!(refused.0.contains("lives longer"), "{refused}");
        auth.verify_shared(Some(&bearer_with(86_400, Some(0))))
            .expect("exactly the maximum");
        auth.verify_shared(Some(&bearer_with(3600, None)))
            .expect("an hour, no iat");
    }

    #[test]
    fn a_token_issued_in_the_future_is_refused_past_the_leeway() {
        let auth = authenticator(16);
        let refused = auth
            .verify_shared(Some(&bearer_with(7200, Some(3600))))
            .expect_err("issued in an hour");
        assert_eq!(refused.0, "the token was issued in the future (iat)");
        auth.verify_shared(Some(&bearer_with(3600, Some(20))))
            .expect("20 s ahead is within the 30 s leeway");
    }

    fn principal_with(scopes: &[Scope]) -> AuthOutcome {
        AuthOutcome(Ok(Arc::new(Principal {
            subject: "alice".into(),
            tenant: TenantId::parse("default").expect("a tenant id"),
            scopes: scopes.iter().copied().collect(),
        })))
    }

    fn request(outcome: Option<AuthOutcome>, checked: Option<Scope>) -> Request {
        let mut req = Request::builder().uri_str("/v1/templates").finish();
        if let Some(o) = outcome {
            req.extensions_mut().insert(o);
        }
        if let Some(s) = checked {
            req.extensions_mut().insert(ScopeChecked(s));
        }
        req
    }

    #[test]
    fn the_extractor_hands_a_caller_only_for_the_checked_scope() {
        let granted = request(
            Some(principal_with(&[Scope::ReportsRead])),
            Some(Scope::ReportsRead),
        );
        let auth = Auth::of(&granted).expect("holds the declared scope");
        assert_eq!(auth.scope(), Scope::ReportsRead);
        assert_eq!(auth.caller().subject, "alice");
        assert_eq!(auth.caller().tenant.as_str(), "default");

        let lacking = request(
            Some(principal_with(&[Scope::ReportsRead])),
            Some(Scope::ReportsWrite),
        );
        let refused = Auth::of(&lacking).expect_err("lacks the declared scope");
        assert_eq!(refused.code, Code::Forbidden);
        assert!(refused.message.contains("reports:write"), "{refused:?}");

        let undeclared = request(Some(principal_with(&Scope::ALL)), None);
        let refused = Auth::of(&undeclared).expect_err("no declared scope");
        assert_eq!(refused.code, Code::Forbidden);

        let failed = request(
            Some(AuthOutcome(Err(AuthFailure("bad token".into())))),
            Some(Scope::ReportsRead),
        );
        assert_eq!(Auth::of(&failed).expect_err("401").code, Code::Unauthorized);
        assert_eq!(
            Auth::of(&request(None, Some(Scope::ReportsRead)))
                .expect_err("401")
                .code,
            Code::Unauthorized
        );
    }

    fn token(scopes: &[&str]) -> String {
        let claims = Claims {
            sub: Some("alice".into()),
            exp: chrono::Utc::now().timestamp() + 3600,
            scope: Some(scopes.join(" ")),
            tenant_id: None,
            iss: None,
            aud: None,
            iat: None,
        };
        format!("Bearer {}", mint_hs256(SECRET, &claims).expect("a token"))
    }

    /// For every operation of the published document: the scope it documents
    /// (`x-required-scopes`) is the one the request checks demand and the one its [`Auth`]
    /// holds; a caller with every other scope is refused naming it. The handler names no
    /// scope, so the documented one is the only one enforced.
    #[tokio::test]
    async fn every_operation_enforces_the_scope_it_documents() {
        use crate::http::query::QueryContract;
        use crate::http::request_checks::RequestChecks;
        use crate::http::spec;
        let checks = RequestChecks {
            contract: Arc::new(QueryContract::from_spec(&spec::raw())),
            authenticator: Arc::new(authenticator(0)),
            max_body_bytes: 1 << 20,
            body_read_timeout: std::time::Duration::from_secs(5),
        };
        let published = spec::value(spec::DEFAULT_LIMITS);
        let mut checked = 0;
        for (path, item) in published["paths"].as_object().expect("paths") {
            for (method, op) in item.as_object().expect("operations") {
                let Some(documented) = op["x-required-scopes"].as_array() else {
                    continue;
                };
                let [documented] = documented.as_slice() else {
                    panic!("{method} {path}: {documented:?}");
                };
                let documented = documented.as_str().expect("a scope");
                let filled = path
                    .replace("{id}", "019826f4-6a9c-7b31-9d40-2f1e8c5a4b77")
                    .replace("{dataSourceId}", "bank");
                let send = |scopes: Vec<&str>| {
                    Request::builder()
                        .method(
                            poem::http::Method::from_bytes(method.to_uppercase().as_bytes())
                                .expect("a method"),
                        )
                        .uri_str(&filled)
                        .header(poem::http::header::AUTHORIZATION, token(&scopes))
                        .finish()
                };
                let others = Scope::ALL
                    .iter()
                    .map(|s| s.as_str())
                    .filter(|s| *s != documented)
                    .collect();
                let m = checks.contract.path_match(&filled);
                let mut req = send(others);
                let refused = checks.refusal(&mut req, m).await.expect("refused");
                assert_eq!(refused.status().as_u16(), 403, "{method} {path}");
                let body = refused.into_body().into_string().await.expect("a body");
                assert!(body.contains(documented), "{method} {path}: {body}");

                let mut req = send(vec![documented]);
                assert!(
                    checks.refusal(&mut req, m).await.is_none(),
                    "{method} {path} with only '{documented}'"
                );
                let auth = Auth::of(&req).expect("the operation's caller");
                assert_eq!(auth.scope().as_str(), documented, "{method} {path}");
                checked += 1;
            }
        }
        assert!(checked > 20, "{checked} operations");
    }
}
