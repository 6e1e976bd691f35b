//! The SQL Server adapter's integration tests, one binary (see `sqlserver` for when they run).
mod sqlserver;
