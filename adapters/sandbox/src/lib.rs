//! The template sandbox: template work (parse at upload, render in the worker) runs in child
//! processes that nothing a template does can take the service down with.
//!
//! - [`ProcessPool`] keeps pre-started children (the `reporter` binary's hidden
//!   `template-sandbox` subcommand, or any executable that calls [`child::run`]), runs one
//!   request per child over a framed protocol on stdin/stdout ([`protocol`]), bounds the
//!   number running at once, enforces a time bound per request on the child's own clock
//!   (the time it was at work, not the time it waited for a CPU; a wall-clock backstop at
//!   [`BACKSTOP_FACTOR`] times the bound; the child is killed on expiry) and replaces every
//!   child it used, crashed or not.
//! - [`child::run`] is the child side: before it reads anything it confines itself
//!   ([`reporter_child_confine::confine`], shared with the PDF child): it closes every inherited descriptor but its pipes, sets rlimits
//!   (address space and data segment, CPU seconds, stack, no file writes, few open files, no
//!   core dumps) and its low priority, becomes unprivileged (`nobody`/`nogroup` under a
//!   root service, no capabilities), arms a parent-death signal (it dies with the service),
//!   sets `no_new_privs`, applies a Landlock ruleset (no filesystem access, no TCP, scoped
//!   signals) and a seccomp filter (no socket, exec, new process or change to a file); then
//!   it says hello with the [`Confinement`] the kernel enforces, runs the engine on a thread
//!   with a bounded stack and writes one answer. Its environment is empty (the parent clears
//!   it). The pool logs the first report, and keeps the last ([`ProcessPool::confinement`]).
//! - [`ProcessTemplateRunner`] is the [`TemplateRunner`](reporter_ports::ports::TemplateRunner)
//!   port on two pools: one for upload parses, one for renders, each with its own bounds.
//!
//! How a child's death is read: over its time bound or killed by `SIGXCPU` →
//! [`RenderError::Timeout`](reporter_ports::ports::RenderError::Timeout); an allocation the
//! memory limit refused → `MemoryLimit`; a stack overflow, a signal, an unexpected exit →
//! `Crashed`.
pub mod child;
mod deadline;
mod limits;
mod pool;
pub mod protocol;
mod runner;
mod session;
mod warm_up;

pub use deadline::BACKSTOP_FACTOR;
pub use limits::ChildLimits;
pub use pool::{PoolConfig, ProcessPool, Session};
pub use reporter_child_confine::{Confinement, Enforcement, NOBODY, NOGROUP};
pub use runner::ProcessTemplateRunner;
pub use warm_up::WarmUp;
