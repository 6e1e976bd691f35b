//! The driver's TLS options for a [`SslMode`] (rustls, ring provider).
use crate::config::{MysqlConfig, SslMode};
use mysql_async::SslOpts;

/// `None` for plain TCP, else the options that enforce the mode (see [`SslMode`]).
pub(crate) fn ssl_opts(config: &MysqlConfig) -> Option<SslOpts> {
    let mode = config.effective_sslmode();
    if mode == SslMode::Disable {
        return None;
    }
    // mysql_async asks rustls for the process-wide crypto provider, which rustls cannot pick
    // by itself once two providers are compiled in (another crate may bring aws-lc-rs).
    // Installing ring is a no-op when a provider is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut opts = SslOpts::default();
    if let Some(ca) = &config.ssl_root_cert {
        // A CA file replaces the built-in roots, as libpq's sslrootcert does.
        opts = opts
            .with_root_certs(vec![ca.clone().into()])
            .with_disable_built_in_roots(true);
    }
    Some(match mode {
        SslMode::Disable => return None,
        SslMode::Require => opts
            .with_danger_accept_invalid_certs(true)
            .with_danger_skip_domain_validation(true),
        SslMode::VerifyCa => opts.with_danger_skip_domain_validation(true),
        SslMode::VerifyFull => opts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reporter_ports::datasource::DataSourceId;
    use std::path::PathBuf;

    #[test]
    fn each_mode_sets_the_matching_checks() {
        let mut c = MysqlConfig::new(DataSourceId::parse("m").expect("id"), "db");
        assert!(ssl_opts(&c).is_none());
        c.sslmode = SslMode::Require;
        let o = ssl_opts(&c).expect("tls");
        assert!(o.accept_invalid_certs() && o.skip_domain_validation());
        c.sslmode = SslMode::VerifyCa;
        let o = ssl_opts(&c).expect("tls");
        assert!(!o.accept_invalid_certs() && o.skip_domain_validation());
        assert!(!o.disable_built_in_roots(), "no CA file: built-in roots");
        c.sslmode = SslMode::VerifyFull;
        c.ssl_root_cert = Some(PathBuf::from("/ca.pem"));
        let o = ssl_opts(&c).expect("tls");
        assert!(!o.accept_invalid_certs() && !o.skip_domain_validation());
        assert!(o.disable_built_in_roots() && o.root_certs().len() == 1);
        c.sslmode = SslMode::Require;
        let o = ssl_opts(&c).expect("tls");
        assert!(!o.accept_invalid_certs(), "require + CA file = verify-ca");
    }
}
