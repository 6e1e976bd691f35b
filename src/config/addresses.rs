//! Addresses: where Reporter listens (`SERVER_ADDRESS`, `HEALTH_ADDRESS`, `HEALTH_PORT`) and
//! where its RabbitMQ server is (`RABBITMQ_URI` and the variables it is composed from), read
//! in the original's forms too, so its deployments (Helm values, `.env` files) start Reporter
//! unchanged:
//! - `SERVER_ADDRESS=:4005` (Go's form: every interface) next to `127.0.0.1:4005`;
//!   `HEALTH_PORT=4006` for the worker's health endpoints when `HEALTH_ADDRESS` is not set;
//! - `RABBITMQ_URI` either a complete `amqp(s)://…` URI, or only the scheme (`amqp`, `amqps`)
//!   with `RABBITMQ_HOST`, `RABBITMQ_PORT_AMQP`, `RABBITMQ_DEFAULT_USER`,
//!   `RABBITMQ_DEFAULT_PASS` (and `RABBITMQ_TLS=true` choosing `amqps` when no scheme is given),
//!   composed the way the original composes them.
use super::{Checker, RawConfig, problem, secret};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use std::net::{Ipv4Addr, SocketAddr};

/// Parses a listen address: `ip:port`, or Go's `:port` (every IPv4 interface).
pub(super) fn listen_address(raw: &str) -> Option<SocketAddr> {
    let raw = raw.trim();
    match raw.strip_prefix(':') {
        Some(port) => port
            .parse::<u16>()
            .ok()
            .map(|p| SocketAddr::from((Ipv4Addr::UNSPECIFIED, p))),
        None => raw.parse().ok(),
    }
}

fn set(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl RawConfig {
    /// `SERVER_ADDRESS`; MUST accept the original's `:4005`.
    pub(super) fn server_listen(&self, c: &mut Checker) -> SocketAddr {
        listen_address(&self.server_address).unwrap_or_else(|| {
            c.problems.push(problem(
                "SERVER_ADDRESS",
                format!("'{}' is not a listen address", self.server_address),
                "ip:port (127.0.0.1:4005, 0.0.0.0:4005) or :port (every interface)",
            ));
            SocketAddr::from(([127, 0, 0, 1], 4005))
        })
    }

    /// `HEALTH_ADDRESS`, else the original's `HEALTH_PORT` on every interface, else
    /// `127.0.0.1:4006`.
    pub(super) fn health_listen(&self, c: &mut Checker) -> SocketAddr {
        if let Some(addr) = set(&self.health_address) {
            return listen_address(addr).unwrap_or_else(|| {
                c.problems.push(problem(
                    "HEALTH_ADDRESS",
                    format!("'{addr}' is not a listen address"),
                    "ip:port (127.0.0.1:4006) or :port (every interface)",
                ));
                SocketAddr::from(([127, 0, 0, 1], 4006))
            });
        }
        match set(&self.health_port) {
            Some(port) => {
                let p = c.int_or::<u16>("HEALTH_PORT", port, 4006);
                SocketAddr::from((Ipv4Addr::UNSPECIFIED, p))
            }
            None => SocketAddr::from(([127, 0, 0, 1], 4006)),
        }
    }

    /// The AMQP URI of the RabbitMQ server, from `RABBITMQ_URI` alone or composed with the
    /// original's variables; `None` when RabbitMQ is not configured. Every mistake is a problem
    /// naming its variable.
    pub(super) fn rabbitmq_url(&self, c: &mut Checker) -> Option<String> {
        let uri = secret(&self.rabbitmq_uri);
        if let Some(full) = uri.filter(|u| u.contains("://")) {
            if !(full.starts_with("amqp://") || full.starts_with("amqps://")) {
                c.problems.push(problem(
                    "RABBITMQ_URI",
                    format!("'{}' is not an AMQP URI", super::redact(full)),
                    "amqp://user:pass@host:port/vhost or amqps://…, or the scheme with RABBITMQ_HOST",
                ));
            }
            return Some(full.to_owned());
        }
        let scheme = match uri.map(str::to_ascii_lowercase).as_deref() {
            Some(s @ ("amqp" | "amqps")) => s.to_owned(),
            Some(other) => {
                c.problems.push(problem(
                    "RABBITMQ_URI",
                    format!(
                        "'{}' is neither an AMQP URI nor a scheme",
                        super::redact(other)
                    ),
                    "amqp://… / amqps://…, or amqp / amqps with RABBITMQ_HOST",
                ));
                return None;
            }
            None if set(&self.rabbitmq_host).is_none() => return None,
            None if c.boolean("RABBITMQ_TLS", self.rabbitmq_tls.trim()) => "amqps".to_owned(),
            None => "amqp".to_owned(),
        };
        let Some(host) = set(&self.rabbitmq_host) else {
            c.problems.push(problem(
                "RABBITMQ_HOST",
                format!("RABBITMQ_URI is the scheme '{scheme}' but RABBITMQ_HOST is not set"),
                "RABBITMQ_HOST names the server when RABBITMQ_URI is only the scheme",
            ));
            return None;
        };
        Some(self.compose_rabbitmq(c, &scheme, host))
    }

    fn compose_rabbitmq(&self, c: &mut Checker, scheme: &str, host: &str) -> String {
        if host.contains(['@', '/', '?', '#']) {
            c.problems.push(problem(
                "RABBITMQ_HOST",
                format!("'{host}' is not a host name"),
                "a host name or IP; credentials go in RABBITMQ_DEFAULT_USER / _PASS",
            ));
        }
        let default_port = if scheme == "amqps" { 5671 } else { 5672 };
        let port = match set(&self.rabbitmq_port_amqp) {
            Some(p) => c.int_or::<u16>("RABBITMQ_PORT_AMQP", p, default_port),
            None => default_port,
        };
        let enc = |s: &str| utf8_percent_encode(s, NON_ALPHANUMERIC).to_string();
        let credentials = match (set(&self.rabbitmq_user), secret(&self.rabbitmq_pass)) {
            (Some(u), Some(p)) => format!("{}:{}@", enc(u), enc(p)),
            (Some(u), None) => format!("{}@", enc(u)),
            (None, _) => String::new(),
        };
        format!("{scheme}://{credentials}{host}:{port}/%2f")
    }
}

#[cfg(test)]
mod tests {
    use super::listen_address;
    use crate::config::RawConfig;

    fn rabbit(edit: impl FnOnce(&mut RawConfig)) -> Result<Option<String>, Vec<String>> {
        let mut raw = RawConfig::defaults();
        edit(&mut raw);
        let mut c = crate::config::Checker {
            problems: Vec::new(),
        };
        let uri = raw.rabbitmq_url(&mut c);
        if c.problems.is_empty() {
            Ok(uri)
        } else {
            Err(c.problems.into_iter().map(|p| p.variable).collect())
        }
    }

    #[test]
    fn go_listen_addresses_mean_every_interface() {
        assert_eq!(listen_address(":4005").unwrap().to_string(), "0.0.0.0:4005");
        assert_eq!(
            listen_address("127.0.0.1:4005").unwrap().to_string(),
            "127.0.0.1:4005"
        );
        assert_eq!(
            listen_address("[::1]:4005").unwrap().to_string(),
            "[::1]:4005"
        );
        for bad in ["", ":", ":99999", "localhost:4005", "4005"] {
            assert!(listen_address(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_original_variables_compose_the_rabbitmq_uri() {
        assert_eq!(rabbit(|_| {}), Ok(None), "unset: no RabbitMQ");
        assert_eq!(
            rabbit(|r| r.rabbitmq_uri = Some("amqp://g:p@mq:5672/%2f".into())),
            Ok(Some("amqp://g:p@mq:5672/%2f".into())),
            "a complete URI is kept"
        );
        assert_eq!(
            rabbit(|r| {
                r.rabbitmq_uri = Some("amqp".into());
                r.rabbitmq_host = Some("rabbitmq".into());
                r.rabbitmq_port_amqp = Some("3005".into());
                r.rabbitmq_user = Some("us@er".into());
                r.rabbitmq_pass = Some("p:ss/w?rd".into());
            }),
            Ok(Some(
                "amqp://us%40er:p%3Ass%2Fw%3Frd@rabbitmq:3005/%2f".into()
            ))
        );
        assert_eq!(
            rabbit(|r| {
                r.rabbitmq_host = Some("mq.internal".into());
                r.rabbitmq_tls = "true".into();
            }),
            Ok(Some("amqps://mq.internal:5671/%2f".into())),
            "no scheme: RABBITMQ_TLS chooses amqps and its port"
        );
    }

    #[test]
    fn every_rabbitmq_mistake_names_its_variable() {
        type Edit = fn(&mut RawConfig);
        let cases: [(&str, Edit); 5] = [
            ("RABBITMQ_HOST", |r| r.rabbitmq_uri = Some("amqp".into())),
            ("RABBITMQ_URI", |r| r.rabbitmq_uri = Some("kafka".into())),
            ("RABBITMQ_URI", |r| {
                r.rabbitmq_uri = Some("http://mq:5672".into())
            }),
            ("RABBITMQ_PORT_AMQP", |r| {
                r.rabbitmq_host = Some("mq".into());
                r.rabbitmq_port_amqp = Some("0".into());
            }),
            ("RABBITMQ_HOST", |r| {
                r.rabbitmq_uri = Some("amqp".into());
                r.rabbitmq_host = Some("u:p@mq".into());
            }),
        ];
        for (var, edit) in cases {
            assert_eq!(rabbit(edit).unwrap_err(), [var], "{var}");
        }
    }
}
