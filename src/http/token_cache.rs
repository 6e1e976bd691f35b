//! Verified bearer tokens, kept so that a client sending the same token again is not verified
//! again (as Envoy's `jwt_cache_config` does): a signature check and two JSON decodes were a
//! third of the CPU of a cheap request.
//!
//! Only a token that passed every check is kept, with the principal it gave and its expiry.
//! The verification keys and rules are fixed for the life of the process, so a kept token
//! stays valid until it expires: a hit checks the expiry again (with the same leeway as the
//! verifier), `nbf` cannot turn a valid token invalid later, and a rejected token is never
//! kept (a forged or altered token misses, because the whole token text is the key).
//! Bounded by count ([`TokenCache::new`]) and by age ([`TOKEN_TTL`]).
use super::auth::Principal;
use std::sync::Arc;
use std::time::Duration;

/// Longest a verified token is kept, however far its expiry.
pub const TOKEN_TTL: Duration = Duration::from_secs(60);

/// What a verified token gave.
#[derive(Clone)]
struct Verified {
    principal: Arc<Principal>,
    /// The `exp` claim (seconds since the epoch).
    exp: u64,
}

/// A bounded cache of verified tokens. Cheap to share (`&self` everywhere).
pub struct TokenCache {
    /// Hashed with foldhash (seeded per process): SipHash of the whole token cost more than
    /// the rest of a hit. Only tokens that passed verification are inserted, so no client can
    /// choose the keys a flood of collisions would need.
    tokens: moka::sync::Cache<Box<str>, Verified, foldhash::quality::RandomState>,
    leeway_seconds: u64,
}

impl TokenCache {
    /// Keeps up to `max_tokens` tokens (`None` when 0: nothing is kept); `leeway_seconds` is
    /// the verifier's tolerance on `exp`.
    pub fn new(max_tokens: u64, leeway_seconds: u64) -> Option<Self> {
        (max_tokens > 0).then(|| Self {
            tokens: moka::sync::Cache::builder()
                .max_capacity(max_tokens)
                .time_to_live(TOKEN_TTL)
                .build_with_hasher(foldhash::quality::RandomState::default()),
            leeway_seconds,
        })
    }

    /// The principal of `token` when it was verified before and has not expired at `now`
    /// (seconds since the epoch). MUST miss for an expired token, as the verifier rejects
    /// `exp < now - leeway`.
    pub fn get(&self, token: &str, now: u64) -> Option<Arc<Principal>> {
        let hit = self.tokens.get(token)?;
        if hit.exp < now.saturating_sub(self.leeway_seconds) {
            self.tokens.invalidate(token);
            return None;
        }
        Some(hit.principal)
    }

    /// Keeps `token`, which the verifier accepted with this principal and expiry.
    pub fn insert(&self, token: &str, principal: Arc<Principal>, exp: u64) {
        self.tokens
            .insert(token.into(), Verified { principal, exp });
    }

    /// Tokens kept (after pending evictions are applied).
    #[cfg(test)]
    fn len(&self) -> u64 {
        self.tokens.run_pending_tasks();
        self.tokens.entry_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::auth::Scopes;
    use reporter_ports::TenantId;

    fn principal(subject: &str) -> Arc<Principal> {
        Arc::new(Principal {
            subject: subject.into(),
            tenant: TenantId::parse("default").expect("a tenant id"),
            scopes: Scopes::all(),
        })
    }

    #[test]
    fn a_kept_token_is_found_until_it_expires() {
        let cache = TokenCache::new(16, 30).expect("a cache");
        cache.insert("t1", principal("alice"), 1_000);
        assert_eq!(
            cache.get("t1", 999).map(|p| p.subject.clone()),
            Some("alice".into())
        );
        assert!(cache.get("t1", 1_030).is_some(), "within the leeway");
        assert!(cache.get("t1", 1_031).is_none(), "expired past the leeway");
        assert!(cache.get("t1", 0).is_none(), "an expired token is dropped");
        assert!(cache.get("t2", 0).is_none(), "never verified");
        assert!(cache.get("t", 0).is_none(), "a prefix is another token");
    }

    #[test]
    fn the_count_is_bounded() {
        let cache = TokenCache::new(8, 0).expect("a cache");
        for i in 0..100 {
            cache.insert(&format!("token-{i}"), principal("bob"), u64::MAX);
        }
        assert!(cache.len() <= 8, "{} kept", cache.len());
    }

    #[test]
    fn a_size_of_zero_keeps_nothing() {
        assert!(TokenCache::new(0, 30).is_none());
    }
}
