//! Contract suite (to be written).
