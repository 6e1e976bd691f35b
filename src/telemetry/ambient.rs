//! The OpenTelemetry span a request's code runs in when no `tracing` span of the service
//! encloses it: the request's server span, set on the polling thread for each poll of the
//! request's future ([`in_context`]). The request's `tracing` span is no OpenTelemetry span
//! (it only carries the log lines' fields, and costs nothing while no log wants it), so the
//! spans the request opens find their parent here. A use case's span recorded without
//! `tracing` ([`use_case_span`](super::use_case_span)) is the ambient context of its own
//! polls the same way, with the `tracing` span it was opened in ([`Ambient::above`]).
use opentelemetry::trace::SpanContext;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The span the code being polled runs in when no `tracing` span of the service that has an
/// OpenTelemetry span is nearer.
#[derive(Debug, Clone, PartialEq)]
pub struct Ambient {
    /// The span's context.
    pub context: SpanContext,
    /// The `tracing` span that was current when the span was opened (`None`: any, as for the
    /// request's server span). A `tracing` span opened inside reaches it among its ancestors
    /// before any that has an OpenTelemetry span: there this context is the nearer parent.
    pub above: Option<tracing::Id>,
}

thread_local! {
    /// The context of the request (or use case) being polled on this thread, if any.
    static AMBIENT: RefCell<Option<Ambient>> = const { RefCell::new(None) };
}

/// The context of the request whose future this thread is polling, if any.
pub fn current() -> Option<SpanContext> {
    AMBIENT.with(|a| a.borrow().as_ref().map(|a| a.context.clone()))
}

/// What `f` answers of this thread's ambient span (`None`: there is none).
pub fn with_current<R>(f: impl FnOnce(Option<&Ambient>) -> R) -> R {
    AMBIENT.with(|a| f(a.borrow().as_ref()))
}

/// Swaps `slot` with this thread's ambient context: the swap in before a poll, the swap
/// back when dropped (also when the poll panics).
struct Swapped<'a>(&'a mut Option<Ambient>);

impl<'a> Swapped<'a> {
    fn swap(slot: &'a mut Option<Ambient>) -> Self {
        AMBIENT.with(|a| std::mem::swap(&mut *a.borrow_mut(), slot));
        Self(slot)
    }
}

impl Drop for Swapped<'_> {
    fn drop(&mut self) {
        AMBIENT.with(|a| std::mem::swap(&mut *a.borrow_mut(), self.0));
    }
}

pin_project_lite::pin_project! {
    /// `future`, polled with `context` as the ambient context ([`in_context`]).
    pub struct InContext<F> {
        #[pin]
        future: F,
        context: Option<Ambient>,
    }
}

/// Runs `future` with `context` as the ambient context of every poll (`None`: as it is,
/// telemetry off); between polls the thread's own ambient context is back (other tasks run
/// there). The future is wrapped, not moved into a new one (a request's future is large), and
/// with or without a context it is the same type (one await, one copy).
pub fn in_context<F: Future>(context: Option<SpanContext>, future: F) -> InContext<F> {
    let ambient = context.map(|context| Ambient {
        context,
        above: None,
    });
    in_ambient(ambient, future)
}

/// Runs `future` with `ambient` as the ambient span of every poll (see [`in_context`]).
pub fn in_ambient<F: Future>(ambient: Option<Ambient>, future: F) -> InContext<F> {
    InContext {
        future,
        context: ambient,
    }
}

/// Runs `f` with `ambient` as this thread's ambient span; the thread's own ambient span is
/// back after (also when `f` panics). The sync form of [`in_ambient`].
pub fn scoped<R>(ambient: Ambient, f: impl FnOnce() -> R) -> R {
    let mut slot = Some(ambient);
    let _in = Swapped::swap(&mut slot);
    f()
}

impl<F: Future> Future for InContext<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, task: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if this.context.is_none() {
            return this.future.poll(task);
        }
        let _in = Swapped::swap(this.context);
        this.future.poll(task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanId, TraceFlags, TraceId, TraceState};

    fn cx(n: u64) -> SpanContext {
        SpanContext::new(
            TraceId::from(u128::from(n)),
            SpanId::from(n),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        )
    }

    #[tokio::test]
    async fn the_context_is_set_while_the_future_runs_and_not_between_polls() {
        assert_eq!(current(), None);
        let seen = in_context(Some(cx(1)), async {
            let before = current();
            tokio::task::yield_now().await;
            (before, current())
        })
        .await;
        assert_eq!(seen, (Some(cx(1)), Some(cx(1))));
        assert_eq!(current(), None, "restored after the future");
    }

    #[tokio::test]
    async fn nested_contexts_restore_the_outer_one() {
        let seen = in_context(Some(cx(1)), async {
            let inner = in_context(Some(cx(2)), async { current() }).await;
            (inner, current())
        })
        .await;
        assert_eq!(seen, (Some(cx(2)), Some(cx(1))));
    }

    #[tokio::test]
    async fn without_a_context_the_thread_s_own_stays() {
        let seen = in_context(Some(cx(1)), async {
            in_context(None, async { current() }).await
        })
        .await;
        assert_eq!(seen, Some(cx(1)));
    }

    #[test]
    fn a_panicking_poll_leaves_no_context_behind() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.block_on(in_context(Some(cx(3)), async { panic!("boom") }))
        }));
        assert!(caught.is_err());
        assert_eq!(current(), None);
    }
}
