//! The postgres adapter's integration tests, one binary: the source against the shared server
//! (`postgres`, with the data-source and SQL contract suites) and TLS against a private server
//! the tests start (`tls`).
mod postgres;
mod tls;
