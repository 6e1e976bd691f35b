//! The mysql adapter's integration tests, one binary: the source against the shared server
//! (`mysql`, with the data-source and SQL contract suites) and TLS against a private server
//! the tests start (`tls`).
mod mysql;
mod tls;
