//! Filesystem adapters (to be written).
