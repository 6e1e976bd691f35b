//! Query strings: every operation accepts exactly the query parameters its spec documents.
//!
//! A silently ignored parameter is a wrong answer (`?template_id=<T>` must filter, or fail), so
//! [`QueryCheck`] answers 400 `TPL-0019` to any key the matched operation does not declare,
//! naming the key(s) and the accepted ones. The set of keys comes from the generated OpenAPI
//! document itself, so the spec and the check can never disagree.
//!
//! A parameter given with an empty value (`?limit=`) counts as absent, as in the original
//! (whose handlers read an empty string as "not set"): it is removed before the operation
//! parses its parameters, so `limit=` takes the default.
//!
//! Runs after authentication (`request_checks`): a request whose token failed goes on to its operation
//! untouched and gets the 401.
use super::auth::{AuthOutcome, Scope};
use super::error::error_response;
use crate::app::{AppError, Code};
use poem::http::Method;
use poem::http::uri::{PathAndQuery, Uri};
use poem::{Request, Response};
use std::collections::{BTreeMap, BTreeSet};

/// One path segment of an operation: a literal, or a `{parameter}`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Parameter,
}

/// A request path cut into its segments once (`/v1/templates/x` → `v1`, `templates`, `x`; a
/// trailing `/` is ignored), so that matching it against every route splits nothing again.
/// `None` when it has more segments than any route can have.
struct PathParts<'a> {
    parts: [&'a str; MAX_SEGMENTS],
    len: usize,
}

/// More segments than any operation's path has.
const MAX_SEGMENTS: usize = 8;

impl<'a> PathParts<'a> {
    /// The segments of `path` as `path.trim_end_matches('/').split('/').skip(1)` cuts them,
    /// found in one pass over the bytes (`split`'s searcher cost a thousand instructions per
    /// request path).
    fn of(path: &'a str) -> Option<Self> {
        let path = path.trim_end_matches('/');
        let mut parts = [""; MAX_SEGMENTS];
        let mut len = 0;
        // Start of the segment being read: none before the first `/` (`skip(1)`).
        let mut start = None;
        for (i, b) in path.bytes().enumerate() {
            if b == b'/' {
                if let Some(s) = start {
                    *parts.get_mut(len)? = path.get(s..i)?;
                    len += 1;
                }
                start = Some(i + 1);
            }
        }
        if let Some(s) = start {
            *parts.get_mut(len)? = path.get(s..)?;
            len += 1;
        }
        Some(Self { parts, len })
    }

    fn as_slice(&self) -> &[&'a str] {
        &self.parts[..self.len]
    }
}

/// One path of the API (several operations may share it).
#[derive(Debug, Clone)]
struct RoutePath {
    /// As the document spells it (`/v1/templates/{id}`): the route label of its requests.
    template: String,
    segments: Vec<Segment>,
}

impl RoutePath {
    /// Whether `parts` is this path (segment by segment, without allocating: this runs on
    /// every request).
    fn matches(&self, parts: &PathParts<'_>) -> bool {
        let parts = parts.as_slice();
        self.segments.len() == parts.len()
            && self.segments.iter().zip(parts).all(|(s, p)| match s {
                Segment::Literal(l) => l == p,
                Segment::Parameter => !p.is_empty(),
            })
    }
}

/// The API paths a request path matches, found once per request ([`QueryContract::path_match`])
/// and reused by every check that asks about the request's operation, instead of matching the
/// path against every route once per check (four times per request before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathMatch {
    /// Bit `i` set: the path at index `i` of [`QueryContract::paths`] matches (`i` < 64).
    bits: u64,
    /// The contract has more paths than `bits` holds: the match is recomputed from the path.
    unbounded: bool,
}

/// The indices of the bits set in `bits`, the lowest first.
fn set_bits(mut bits: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (bits != 0).then(|| {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            i
        })
    })
}

/// Paths a [`PathMatch`] holds as bits.
const MATCH_BITS: usize = u64::BITS as usize;

/// The query parameters one operation declares.
#[derive(Debug, Clone)]
struct Operation {
    method: Method,
    /// Index of its path in [`QueryContract::paths`].
    path: usize,
    known: BTreeSet<String>,
    /// The scope its `bearerAuth` requirement names (`None` for a public operation).
    scope: Option<Scope>,
    /// Whether it declares the `X-Idempotency` header (`idempotency` then applies).
    idempotent: bool,
}

/// Every operation's declared query parameters, read from the OpenAPI document.
#[derive(Debug, Clone, Default)]
pub struct QueryContract {
    /// The API's paths, the most literal first (`/v1/deadlines/notifications` before
    /// `/v1/deadlines/{id}`), as the router prefers them.
    paths: Vec<RoutePath>,
    /// By segment count: bit `i` set when the path at index `i` of [`Self::paths`] has that
    /// many segments (`i` < 64), so a request's path is compared with those paths only.
    by_length: [u64; MAX_SEGMENTS + 1],
    operations: Vec<Operation>,
}

impl QueryContract {
    /// Reads the operations and their `in: query` parameters from an OpenAPI 3 document.
    pub fn from_spec(spec: &serde_json::Value) -> Self {
        let Some(spec_paths) = spec.get("paths").and_then(|p| p.as_object()) else {
            return Self::default();
        };
        let mut paths: Vec<(RoutePath, &serde_json::Map<String, serde_json::Value>)> = spec_paths
            .iter()
            .filter_map(|(path, item)| {
                let route = RoutePath {
                    template: path.clone(),
                    segments: segments(path),
                };
                Some((route, item.as_object()?))
            })
            .collect();
        // Literal segments win over parameters, as in the router.
        paths.sort_by_key(|(p, _)| {
            p.segments
                .iter()
                .map(|s| u8::from(*s == Segment::Parameter))
                .collect::<Vec<_>>()
        });
        let mut operations = Vec::new();
        for (index, (_, item)) in paths.iter().enumerate() {
            for (method, op) in *item {
                let Ok(method) = Method::from_bytes(method.to_ascii_uppercase().as_bytes()) else {
                    continue;
                };
                let known = op
                    .get("parameters")
                    .and_then(|p| p.as_array())
                    .into_iter()
                    .flatten()
                    .filter(|p| p.get("in").and_then(|i| i.as_str()) == Some("query"))
                    .filter_map(|p| p.get("name").and_then(|n| n.as_str()))
                    .map(str::to_owned)
                    .collect();
                operations.push(Operation {
                    method,
                    path: index,
                    known,
                    scope: required_scope(op),
                    idempotent: declares_header(op, IDEMPOTENCY_HEADER),
                });
            }
        }
        let paths: Vec<RoutePath> = paths.into_iter().map(|(p, _)| p).collect();
        let mut by_length = [0u64; MAX_SEGMENTS + 1];
        for (i, p) in paths.iter().enumerate().take(MATCH_BITS) {
            if let Some(mask) = by_length.get_mut(p.segments.len()) {
                *mask |= 1 << i;
            }
        }
        Self {
            paths,
            by_length,
            operations,
        }
    }

    /// The API paths `path` matches (a trailing `/` ignored). The `*_in` methods given it and
    /// the same `path` answer exactly what their plain forms answer for `path`.
    pub fn path_match(&self, path: &str) -> PathMatch {
        let unbounded = self.paths.len() > MATCH_BITS;
        let Some(parts) = PathParts::of(path).filter(|_| !unbounded) else {
            return PathMatch { bits: 0, unbounded };
        };
        let same_length = self.by_length.get(parts.len).copied().unwrap_or(0);
        let bits = set_bits(same_length)
            .filter(|i| self.paths.get(*i).is_some_and(|p| p.matches(&parts)))
            .fold(0u64, |bits, i| bits | (1 << i));
        PathMatch { bits, unbounded }
    }

    /// The indices of the paths `m` (of `path`) holds, the most literal first.
    fn matching<'a>(&'a self, m: PathMatch, path: &'a str) -> impl Iterator<Item = usize> + 'a {
        let parts = if m.unbounded {
            PathParts::of(path)
        } else {
            None
        };
        let scanned = parts.map(|parts| {
            self.paths
                .iter()
                .enumerate()
                .filter(move |(_, p)| p.matches(&parts))
                .map(|(i, _)| i)
        });
        let held = set_bits(m.bits);
        held.chain(scanned.into_iter().flatten())
    }

    /// [`Self::known_in`] with `path` matched here (the tests' shorthand).
    #[cfg(test)]
    pub fn known(&self, method: &Method, path: &str) -> Option<&BTreeSet<String>> {
        self.known_in(self.path_match(path), method, path)
    }

    /// The query keys the operation at `method` + `path` accepts; `None` when no operation
    /// matches (the router answers 404 / 405 then). `HEAD` is checked as `GET`.
    /// `m` is `path`'s match ([`Self::path_match`]), made once per request.
    pub fn known_in(&self, m: PathMatch, method: &Method, path: &str) -> Option<&BTreeSet<String>> {
        self.resolve(m, method, path).map(|o| &o.known)
    }

    /// [`Self::scope_in`] with `path` matched here (the tests' shorthand).
    #[cfg(test)]
    pub fn scope(&self, method: &Method, path: &str) -> Option<Scope> {
        self.scope_in(self.path_match(path), method, path)
    }

    /// The scope the operation at `method` + `path` requires; `None` for a public operation
    /// and when no operation matches.
    /// `m` is `path`'s match ([`Self::path_match`]), made once per request.
    pub fn scope_in(&self, m: PathMatch, method: &Method, path: &str) -> Option<Scope> {
        self.resolve(m, method, path).and_then(|o| o.scope)
    }

    /// [`Self::idempotent_in`] with `path` matched here (the tests' shorthand).
    #[cfg(test)]
    pub fn idempotent(&self, method: &Method, path: &str) -> bool {
        self.idempotent_in(self.path_match(path), method, path)
    }

    /// Whether the operation at `method` + `path` declares the `X-Idempotency` header (its
    /// `#[oai(name = "X-Idempotency")]` parameter): the one declaration the spec shows and
    /// `idempotency` applies. False when no operation matches.
    /// `m` is `path`'s match ([`Self::path_match`]), made once per request.
    pub fn idempotent_in(&self, m: PathMatch, method: &Method, path: &str) -> bool {
        self.resolve(m, method, path).is_some_and(|o| o.idempotent)
    }

    /// The route `path` resolves to, as the document spells it (`/v1/templates/{id}`), or
    /// `None` when no path of the API matches: a value from a closed set, fit for a metric
    /// label whatever the client sends.
    pub fn route_template(&self, path: &str) -> Option<&str> {
        self.route_index(path).map(|(_, template)| template)
    }

    /// [`Self::route_template`] with the route's place among the document's paths (below
    /// [`Self::route_count`]), one per template.
    pub fn route_index(&self, path: &str) -> Option<(usize, &str)> {
        self.route(path)
            .and_then(|i| self.paths.get(i).map(|p| (i, p.template.as_str())))
    }

    /// How many paths the document has.
    pub fn route_count(&self) -> usize {
        self.paths.len()
    }

    /// The operation at `method` + `path` (matched as `m`), the most literal path first.
    /// `HEAD` is `GET`.
    fn resolve(&self, m: PathMatch, method: &Method, path: &str) -> Option<&Operation> {
        let method = as_get(method);
        self.matching(m, path)
            .find_map(|index| self.operation(index, method))
    }

    /// The methods of the route `path` resolves to, as the router resolves it: the most
    /// literal matching path wins (`/v1/deadlines/notifications` is the GET of that path, not
    /// `{id}`). Empty when no operation has the path.
    pub fn methods(&self, path: &str) -> Vec<Method> {
        let Some(route) = self.route(path) else {
            return Vec::new();
        };
        self.operations
            .iter()
            .filter(|o| o.path == route)
            .map(|o| o.method.clone())
            .collect()
    }

    /// [`Self::allows_in`] with `path` matched here (the tests' shorthand).
    #[cfg(test)]
    pub fn allows(&self, method: &Method, path: &str) -> bool {
        self.allows_in(self.path_match(path), method, path)
    }

    /// Whether `method` may reach the route `path` resolves to: true when the route takes it,
    /// and when no operation has the path (the router answers 404 then). `HEAD` is `GET`.
    /// The same answer as [`Self::methods`], without allocating.
    /// `m` is `path`'s match ([`Self::path_match`]), made once per request.
    pub fn allows_in(&self, m: PathMatch, method: &Method, path: &str) -> bool {
        let method = as_get(method);
        self.matching(m, path)
            .next()
            .is_none_or(|route| self.operation(route, method).is_some())
    }

    /// The index of the path `path` resolves to, the most literal first.
    fn route(&self, path: &str) -> Option<usize> {
        self.matching(self.path_match(path), path).next()
    }

    /// The operation of `method` on the path at `index`.
    fn operation(&self, index: usize, method: &Method) -> Option<&Operation> {
        self.operations
            .iter()
            .find(|o| o.path == index && o.method == *method)
    }
}

/// `HEAD` is answered as `GET`.
fn as_get(method: &Method) -> &Method {
    if method == Method::HEAD {
        &Method::GET
    } else {
        method
    }
}

/// The scope an operation's `bearerAuth` security requirement names (the operation's
/// `#[oai(scope = …)]`).
fn required_scope(op: &serde_json::Value) -> Option<Scope> {
    op.get("security")?
        .as_array()?
        .iter()
        .filter_map(|r| r.get("bearerAuth")?.as_array())
        .flatten()
        .find_map(|s| Scope::parse(s.as_str()?))
}

/// The header an idempotent operation declares.
pub const IDEMPOTENCY_HEADER: &str = "X-Idempotency";

/// Whether `op` declares the header parameter `name` (case-insensitive, as headers are).
fn declares_header(op: &serde_json::Value, name: &str) -> bool {
    op.get("parameters")
        .and_then(|p| p.as_array())
        .into_iter()
        .flatten()
        .filter(|p| p.get("in").and_then(|i| i.as_str()) == Some("header"))
        .filter_map(|p| p.get("name").and_then(|n| n.as_str()))
        .any(|n| n.eq_ignore_ascii_case(name))
}

fn segments(path: &str) -> Vec<Segment> {
    path.trim_end_matches('/')
        .split('/')
        .skip(1)
        .map(|s| {
            if s.starts_with('{') && s.ends_with('}') {
                Segment::Parameter
            } else {
                Segment::Literal(s.to_owned())
            }
        })
        .collect()
}

/// What [`check`] decided about one query string.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every key is known; nothing to change.
    Keep,
    /// Every key is known; the query string without its empty-valued parameters.
    Rewrite(String),
    /// Keys the operation does not declare.
    Unknown(Vec<String>),
}

/// Checks `query` (raw, percent-encoded) against the `known` keys.
pub fn check(query: &str, known: &BTreeSet<String>) -> Verdict {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let unknown: BTreeSet<String> = pairs
        .iter()
        .filter(|(k, _)| !known.contains(k))
        .map(|(k, _)| k.clone())
        .collect();
    if !unknown.is_empty() {
        return Verdict::Unknown(unknown.into_iter().collect());
    }
    if pairs.iter().all(|(_, v)| !v.is_empty()) {
        return Verdict::Keep;
    }
    let kept = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs.iter().filter(|(_, v)| !v.is_empty()))
        .finish();
    Verdict::Rewrite(kept)
}

/// The 400 of unknown keys: the keys in `fields`, the accepted ones in the message.
pub fn unknown_error(unknown: &[String], known: &BTreeSet<String>) -> AppError {
    let accepted = if known.is_empty() {
        "none".to_owned()
    } else {
        known.iter().cloned().collect::<Vec<_>>().join(", ")
    };
    let fields: BTreeMap<String, String> = unknown
        .iter()
        .map(|k| {
            (
                k.clone(),
                format!("unknown query parameter; this operation accepts: {accepted}"),
            )
        })
        .collect();
    AppError::new(
        Code::InvalidQueryParameter,
        format!(
            "unknown query parameter(s): {}; this operation accepts: {accepted}",
            unknown.join(", ")
        ),
    )
    .fields(fields)
}

/// Rejects unknown query keys and drops empty-valued parameters (see the module docs): the
/// 400 of a request with an unknown key, if it is; a query with empty values is rewritten in
/// place.
///
/// `m` is the match of the request's path (`QueryContract::path_match`).
pub fn refusal(contract: &QueryContract, m: PathMatch, req: &mut Request) -> Option<Response> {
    let query = req.uri().query()?;
    let known = contract.known_in(m, req.method(), req.uri().path())?;
    // Authentication comes first: an unauthenticated caller learns nothing about the
    // operation's parameters (the operation answers 401).
    if matches!(
        req.extensions().get::<AuthOutcome>(),
        Some(AuthOutcome(Err(_)))
    ) {
        return None;
    }
    match check(query, known) {
        Verdict::Keep => None,
        Verdict::Unknown(keys) => Some(error_response(&unknown_error(&keys, known))),
        Verdict::Rewrite(kept) => {
            let pq = if kept.is_empty() {
                req.uri().path().to_owned()
            } else {
                format!("{}?{kept}", req.uri().path())
            };
            let mut parts = req.uri().clone().into_parts();
            parts.path_and_query = PathAndQuery::try_from(pq).ok();
            if let Ok(uri) = Uri::from_parts(parts) {
                *req.uri_mut() = uri;
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(keys: &[&str]) -> BTreeSet<String> {
        keys.iter().map(|k| (*k).to_owned()).collect()
    }

    #[test]
    fn unknown_keys_are_listed_and_empty_values_dropped() {
        let k = known(&["limit", "page", "output_format", "outputFormat"]);
        assert_eq!(check("limit=5&page=2", &k), Verdict::Keep);
        assert_eq!(check("", &k), Verdict::Keep);
        assert_eq!(
            check("limit=&page=2", &k),
            Verdict::Rewrite("page=2".into())
        );
        assert_eq!(check("limit=", &k), Verdict::Rewrite(String::new()));
        assert_eq!(
            check("output_format=a%20b&limit=", &k),
            Verdict::Rewrite("output_format=a+b".into())
        );
        // Only an empty value is absent; a blank one is a value (and fails its parse).
        assert_eq!(check("limit=%20", &k), Verdict::Keep);
        assert_eq!(
            check("limit=1&foo=1&bar=&foo=2", &k),
            Verdict::Unknown(vec!["bar".into(), "foo".into()])
        );
    }

    /// Whether `path` is the route spelled `template`, compared as text segment by segment:
    /// the oracle the matching above is checked against (it shares none of its code).
    #[test]
    fn a_path_is_cut_as_split_cuts_it() {
        for path in [
            "",
            "/",
            "//",
            "/v1/templates/019826f4-6a9c-7b31-9d40-2f1e8c5a4b77",
            "/v1/templates/",
            "/v1//templates///",
            "v1/templates",
            "nothing",
            "/ünï/✓/",
            "/a/b/c/d/e/f/g/h",
            "/a/b/c/d/e/f/g/h/i",
            "/a/b/c/d/e/f/g/h/",
        ] {
            let split: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
            let ours = PathParts::of(path).map(|p| p.as_slice().to_vec());
            let expected = (split.len() <= MAX_SEGMENTS).then_some(split);
            assert_eq!(ours, expected, "{path:?}");
        }
    }

    fn spelled_match(template: &str, path: &str) -> bool {
        let t: Vec<&str> = template.split('/').collect();
        let p: Vec<&str> = path.trim_end_matches('/').split('/').collect();
        t.len() == p.len()
            && t.iter().zip(&p).all(|(t, p)| {
                if t.starts_with('{') {
                    !p.is_empty()
                } else {
                    t == p
                }
            })
    }

    /// Every `*_in` answer given a path's match is what a plain scan of the document's paths
    /// finds (the most literal matching path that has the method's operation, `HEAD` as
    /// `GET`), on every route of the API, literals shadowing parameters, unknown and
    /// over-long paths alike, for every method.
    #[test]
    fn a_paths_match_gives_the_answers_of_a_plain_scan() {
        let c = QueryContract::from_spec(&crate::http::spec::raw());
        let mut paths: Vec<String> = c
            .paths
            .iter()
            .map(|p| p.template.replace("{id}", "x1").replace(['{', '}'], ""))
            .collect();
        paths.extend(
            [
                "/v1/deadlines/notifications",
                "/v1/deadlines/notifications/",
                "/v1/templates/",
                "/",
                "/v1/x",
                "/a/b/c/d/e/f/g/h/i/j",
            ]
            .map(str::to_owned),
        );
        let methods = [
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PATCH,
            Method::PUT,
            Method::DELETE,
        ];
        let mut matched = 0;
        for path in &paths {
            let m = c.path_match(path);
            let routes: Vec<usize> = (0..c.paths.len())
                .filter(|&i| spelled_match(&c.paths[i].template, path))
                .collect();
            matched += usize::from(!routes.is_empty());
            for method in &methods {
                let wanted = if *method == Method::HEAD {
                    &Method::GET
                } else {
                    method
                };
                let op_of = |i: &usize| {
                    c.operations
                        .iter()
                        .find(|o| o.path == *i && o.method == *wanted)
                };
                let scanned = routes.iter().find_map(op_of);
                let allowed = routes.first().is_none_or(|i| op_of(i).is_some());
                assert_eq!(c.allows_in(m, method, path), allowed, "{method} {path}");
                assert_eq!(
                    c.scope_in(m, method, path),
                    scanned.and_then(|o| o.scope),
                    "{method} {path}"
                );
                assert_eq!(
                    c.known_in(m, method, path),
                    scanned.map(|o| &o.known),
                    "{method} {path}"
                );
                assert_eq!(
                    c.idempotent_in(m, method, path),
                    scanned.is_some_and(|o| o.idempotent),
                    "{method} {path}"
                );
            }
        }
        assert!(
            matched >= c.paths.len(),
            "every route's own path matches it"
        );
        assert_eq!(c.path_match("/v1/x").bits, 0);
    }

    /// A contract of more paths than a match holds as bits still matches exactly.
    #[test]
    fn a_contract_past_the_bits_matches_by_scanning() {
        let paths: serde_json::Map<String, serde_json::Value> = (0..70)
            .map(|i| {
                (
                    format!("/p{i}/{{id}}"),
                    serde_json::json!({"get": {"parameters": [{"in": "query", "name": format!("k{i}")}]}}),
                )
            })
            .collect();
        let c = QueryContract::from_spec(&serde_json::json!({ "paths": paths }));
        let m = c.path_match("/p69/a");
        assert!(m.unbounded);
        let known = c
            .known_in(m, &Method::GET, "/p69/a")
            .expect("the last path's operation");
        assert!(known.contains("k69"), "{known:?}");
        assert!(
            c.known_in(c.path_match("/p70/a"), &Method::GET, "/p70/a")
                .is_none()
        );
    }

    #[test]
    fn operations_match_literals_before_parameters() {
        let spec = serde_json::json!({"paths": {
            "/v1/deadlines/{id}": {"get": {"parameters": [{"in": "path", "name": "id"}]}},
            "/v1/deadlines/notifications": {"get": {"parameters": [{"in": "query", "name": "limit"}]}},
            "/v1/deadlines": {"get": {"parameters": [{"in": "query", "name": "status"}, {"in": "header", "name": "X"}]},
                              "post": {}}
        }});
        let c = QueryContract::from_spec(&spec);
        assert_eq!(
            c.known(&Method::GET, "/v1/deadlines/notifications"),
            Some(&known(&["limit"]))
        );
        assert_eq!(
            c.known(&Method::GET, "/v1/deadlines/0190"),
            Some(&known(&[]))
        );
        assert_eq!(
            c.known(&Method::HEAD, "/v1/deadlines/"),
            Some(&known(&["status"]))
        );
        assert_eq!(c.known(&Method::POST, "/v1/deadlines"), Some(&known(&[])));
        assert_eq!(c.known(&Method::GET, "/v1/nothing"), None);
        assert_eq!(c.known(&Method::DELETE, "/v1/deadlines"), None);
    }

    #[test]
    fn allows_gives_the_answer_of_methods() {
        let spec = serde_json::json!({"paths": {
            "/v1/deadlines/{id}": {"get": {}, "delete": {}},
            "/v1/deadlines/notifications": {"get": {}},
            "/v1/deadlines": {"get": {}, "post": {}}
        }});
        let c = QueryContract::from_spec(&spec);
        let paths = [
            "/v1/deadlines",
            "/v1/deadlines/",
            "/v1/deadlines/notifications",
            "/v1/deadlines/0190",
            "/v1/deadlines/0190/x",
            "/v1/nothing",
            "/",
        ];
        let methods = [
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::DELETE,
            Method::PUT,
        ];
        for path in paths {
            let listed = c.methods(path);
            for m in &methods {
                let as_get = if *m == Method::HEAD { &Method::GET } else { m };
                let want = listed.is_empty() || listed.contains(as_get);
                assert_eq!(c.allows(m, path), want, "{m} {path}");
            }
        }
        assert!(!c.allows(&Method::DELETE, "/v1/deadlines/notifications"));
        assert!(c.allows(&Method::DELETE, "/v1/deadlines/0190"));
        assert!(!c.allows(&Method::POST, "/v1/deadlines/0190"));
    }

    #[test]
    fn an_operation_is_idempotent_when_it_declares_the_header() {
        let spec = serde_json::json!({"paths": {
            "/v1/things": {"post": {"parameters": [{"in": "header", "name": "x-idempotency"}]},
                           "get": {"parameters": [{"in": "query", "name": "X-Idempotency"}]}},
            "/v1/things/{id}": {"patch": {"parameters": [{"in": "header", "name": "X-Other"}]}}
        }});
        let c = QueryContract::from_spec(&spec);
        assert!(c.idempotent(&Method::POST, "/v1/things"));
        assert!(c.idempotent(&Method::POST, "/v1/things/"));
        assert!(
            !c.idempotent(&Method::GET, "/v1/things"),
            "a query parameter is not it"
        );
        assert!(!c.idempotent(&Method::PATCH, "/v1/things/1"));
        assert!(!c.idempotent(&Method::POST, "/v1/nothing"));
    }

    /// The API's idempotent operations are the two creates that declare `X-Idempotency`.
    #[test]
    fn the_api_idempotent_operations_are_the_ones_declaring_the_header() {
        let spec: serde_json::Value =
            serde_json::from_str(&crate::http::api_service().spec()).expect("the spec");
        let c = QueryContract::from_spec(&spec);
        let idempotent: Vec<String> = c
            .operations
            .iter()
            .filter(|o| o.idempotent)
            .map(|o| format!("{} {}", o.method, c.paths[o.path].template))
            .collect();
        assert_eq!(idempotent.len(), 2, "{idempotent:?}");
        assert!(idempotent.contains(&"POST /v1/templates".to_owned()));
        assert!(idempotent.contains(&"POST /v1/reports".to_owned()));
    }

    #[test]
    fn every_path_of_the_api_fits_the_segment_bound() {
        let spec: serde_json::Value =
            serde_json::from_str(&crate::http::api_service().spec()).expect("the spec");
        let c = QueryContract::from_spec(&spec);
        assert!(c.paths.len() > 10, "the API's paths were read");
        for p in &c.paths {
            assert!(
                p.segments.len() <= MAX_SEGMENTS,
                "a path with {} segments could never match; raise MAX_SEGMENTS",
                p.segments.len()
            );
        }
        assert!(PathParts::of("/a/b/c/d/e/f/g/h").is_some());
        assert!(PathParts::of("/a/b/c/d/e/f/g/h/i").is_none());
        assert!(!c.allows(&Method::DELETE, "/v1/templates"));
        assert!(c.allows(&Method::GET, "/v1/templates/x/"));
    }
}
