//! TLS for PostgreSQL connections: rustls (ring provider) behind tokio-postgres, one
//! certificate verifier per [`SslMode`].
//!
//! | mode | TLS | certificate chain | host name |
//! |---|---|---|---|
//! | `disable` | never | – | – |
//! | `prefer` | if the server offers it | not checked | not checked |
//! | `require` | always | not checked (checked when a CA file is given, as libpq does) | not checked |
//! | `verify-ca` | always | checked | not checked |
//! | `verify-full` | always | checked | checked |
//!
//! The chain is checked against the CA file (`sslrootcert`) when one is given, else against
//! the built-in Mozilla roots.
use crate::config::{PostgresConfig, SslMode};
use reporter_ports::ports::DataSourceError;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use std::path::Path;
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The connector every connection of a source uses (also for cancel requests), and the
/// mode tokio-postgres negotiates with.
#[derive(Clone)]
pub(crate) struct Tls {
    pub(crate) connector: MakeRustlsConnect,
    pub(crate) mode: tokio_postgres::config::SslMode,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn unavailable(config: &PostgresConfig, why: impl std::fmt::Display) -> DataSourceError {
    DataSourceError::Unavailable(format!("{}: TLS: {why}", config.id))
}

/// Trust anchors: the CA file, or the built-in Mozilla roots.
fn roots(config: &PostgresConfig, ca: Option<&Path>) -> Result<RootCertStore, DataSourceError> {
    let mut store = RootCertStore::empty();
    let Some(path) = ca else {
        store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        return Ok(store);
    };
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| unavailable(config, format!("cannot read {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(unavailable(
            config,
            format!("no certificate in {}", path.display()),
        ));
    }
    for cert in certs {
        store
            .add(cert)
            .map_err(|e| unavailable(config, format!("{}: {e}", path.display())))?;
    }
    Ok(store)
}

/// Builds the connector for `config` (see the module docs).
pub(crate) fn tls(config: &PostgresConfig) -> Result<Tls, DataSourceError> {
    let mode = config.effective_sslmode();
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| unavailable(config, e))?;
    let verifier: Arc<dyn ServerCertVerifier> = match mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => {
            Arc::new(AcceptAnyCertificate { provider })
        }
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let roots = roots(config, config.ssl_root_cert.as_deref())?;
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| unavailable(config, e))?;
            Arc::new(ChainVerifier {
                webpki,
                check_host_name: mode == SslMode::VerifyFull,
            })
        }
    };
    let client = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Tls {
        connector: MakeRustlsConnect::new(client),
        mode: match mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        },
    })
}

/// `require` / `prefer`: encryption without authentication of the server, as in libpq. The
/// handshake signatures are still checked.
#[derive(Debug)]
struct AcceptAnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// `verify-ca` / `verify-full`: the chain must lead to a trusted root; the host name is
/// checked only for `verify-full`.
#[derive(Debug)]
struct ChainVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    check_host_name: bool,
}

impl ServerCertVerifier for ChainVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_host_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reporter_ports::datasource::DataSourceId;

    fn config(mode: SslMode) -> PostgresConfig {
        let mut c = PostgresConfig::new(DataSourceId::parse("pg").expect("id"), "db");
        c.sslmode = mode;
        c
    }

    #[test]
    fn modes_map_to_the_negotiation_tokio_postgres_does() {
        use tokio_postgres::config::SslMode as Pg;
        for (mode, want) in [
            (SslMode::Disable, Pg::Disable),
            (SslMode::Prefer, Pg::Prefer),
            (SslMode::Require, Pg::Require),
            (SslMode::VerifyCa, Pg::Require),
            (SslMode::VerifyFull, Pg::Require),
        ] {
            assert_eq!(tls(&config(mode)).expect("tls").mode, want, "{mode:?}");
        }
    }

    #[test]
    fn an_unreadable_or_empty_ca_file_is_refused() {
        let mut c = config(SslMode::VerifyFull);
        c.ssl_root_cert = Some("/nonexistent/ca.pem".into());
        assert!(matches!(tls(&c), Err(DataSourceError::Unavailable(m)) if m.contains("TLS")));
        let empty = std::env::temp_dir().join(format!("empty-ca-{}.pem", std::process::id()));
        std::fs::write(&empty, "").expect("write");
        c.ssl_root_cert = Some(empty.clone());
        assert!(
            matches!(tls(&c), Err(DataSourceError::Unavailable(m)) if m.contains("no certificate"))
        );
        let _ = std::fs::remove_file(empty);
    }
}
