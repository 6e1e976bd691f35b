//! Chaos: brokers, databases and processes fail under load (private servers the tests start,
//! stop and remove; loopback only). One module per family; the families never overlap
//! ([`common::chaos::family`]).

#[path = "../common/mod.rs"]
mod common;

mod broker;
mod processes;
mod scale_out;
