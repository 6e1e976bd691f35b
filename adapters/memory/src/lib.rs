//! In-memory adapters (to be written).
