//! TLS variables of a SQL data source: Reporter's `_SSLMODE` / `_SSLROOTCERT` and the
//! original's `_SSL`, `_SSLCA`, `_SSLCA_BASE64` (reference E.1), read into one [`SqlTls`].
use super::datasources::{RootCert, SqlTls};
use super::{ConfigProblem, problem};
use base64::Engine as _;
use std::path::PathBuf;

const PEM_HEADER: &str = "-----BEGIN CERTIFICATE-----";

/// `_SSLMODE`, `_SSL`, `_SSLROOTCERT`, `_SSLCA`, `_SSLCA_BASE64` of one source. `get` answers a
/// variable's trimmed value (empty counts as absent); `var` its full name. Rules:
/// - `_SSLMODE` wins; without it `_SSL=true` means `require` and `_SSL=false` `disable`; a
///   `_SSL` that contradicts `_SSLMODE` (`true` with `disable`, `false` with a TLS mode) is a
///   problem, so TLS is never silently dropped or added;
/// - `_SSLCA` is `_SSLROOTCERT` under the original's name (a PEM file); both naming different
///   files is a problem;
/// - `_SSLCA_BASE64` is a CA given inline: base64 of a PEM file or of one DER certificate;
///   with a CA file as well it is a problem (which one would be meant?).
pub(super) fn sql_tls<M>(
    get: &dyn Fn(&str) -> Option<String>,
    var: &dyn Fn(&str) -> String,
    problems: &mut Vec<ConfigProblem>,
) -> SqlTls<M>
where
    M: std::str::FromStr<Err = String> + Default + PartialEq,
{
    SqlTls {
        mode: mode(get, var, problems),
        root_cert: root_cert(get, var, problems),
    }
}

fn mode<M>(
    get: &dyn Fn(&str) -> Option<String>,
    var: &dyn Fn(&str) -> String,
    problems: &mut Vec<ConfigProblem>,
) -> M
where
    M: std::str::FromStr<Err = String> + Default + PartialEq,
{
    let ssl = get("SSL").and_then(|v| match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => {
            problems.push(problem(
                &var("SSL"),
                format!("'{v}' is not a boolean"),
                "true|false (the original's switch; _SSLMODE says more)",
            ));
            None
        }
    });
    let Some(m) = get("SSLMODE") else {
        return match ssl {
            Some(true) => "require".parse().unwrap_or_default(),
            _ => M::default(),
        };
    };
    let mode = m.parse::<M>().unwrap_or_else(|e| {
        problems.push(problem(
            &var("SSLMODE"),
            e,
            "disable|require|verify-ca|verify-full",
        ));
        M::default()
    });
    let plain = mode == M::default();
    if ssl.is_some_and(|on| on == plain) {
        problems.push(problem(
            &var("SSL"),
            format!("contradicts {}={m}", var("SSLMODE")),
            "leave _SSL out, or make it agree with _SSLMODE",
        ));
    }
    mode
}

fn root_cert(
    get: &dyn Fn(&str) -> Option<String>,
    var: &dyn Fn(&str) -> String,
    problems: &mut Vec<ConfigProblem>,
) -> Option<RootCert> {
    let file = match (get("SSLROOTCERT"), get("SSLCA")) {
        (Some(a), Some(b)) if a != b => {
            problems.push(problem(
                &var("SSLCA"),
                format!("names '{b}' while {} names '{a}'", var("SSLROOTCERT")),
                "one CA file (_SSLCA is the original's name of _SSLROOTCERT)",
            ));
            None
        }
        (Some(a), _) => Some((a, "SSLROOTCERT")),
        (None, b) => b.map(|b| (b, "SSLCA")),
    };
    if let Some((path, name)) = &file
        && !PathBuf::from(path).is_file()
    {
        problems.push(problem(
            &var(name),
            format!("'{path}' is not a readable file"),
            "a PEM file of CA certificates",
        ));
    }
    let inline = get("SSLCA_BASE64");
    match (file, inline) {
        (Some(_), Some(_)) => {
            problems.push(problem(
                &var("SSLCA_BASE64"),
                "a CA file is configured as well",
                "either a CA file (_SSLROOTCERT or _SSLCA) or an inline CA (_SSLCA_BASE64)",
            ));
            None
        }
        (Some((path, _)), None) => Some(RootCert::File(PathBuf::from(path))),
        (None, Some(b64)) => match inline_ca(&b64) {
            Ok(pem) => Some(RootCert::Pem(pem)),
            Err(why) => {
                problems.push(problem(
                    &var("SSLCA_BASE64"),
                    why,
                    "base64 of a PEM file of CA certificates, or of one DER certificate",
                ));
                None
            }
        },
        (None, None) => None,
    }
}

/// The PEM text of an inline CA: base64 (standard alphabet, whitespace ignored) of a PEM file,
/// or of one DER certificate (wrapped into PEM).
pub(super) fn inline_ca(b64: &str) -> Result<Vec<u8>, String> {
    let compact: String = b64.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .map_err(|e| format!("not base64: {e}"))?;
    if let Ok(text) = std::str::from_utf8(&bytes)
        && text.contains(PEM_HEADER)
    {
        return Ok(bytes);
    }
    // A DER certificate is an ASN.1 SEQUENCE (tag 0x30) with a long-form length.
    if bytes.len() > 64 && bytes[0] == 0x30 && bytes[1] & 0x80 != 0 {
        let body = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let mut pem = format!("{PEM_HEADER}\n");
        for line in body.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(line));
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
        return Ok(pem.into_bytes());
    }
    Err("decodes to neither a PEM certificate nor a DER certificate".into())
}
