//! One task per publisher that awaits every outstanding broker confirm, whoever published the
//! message, and hands each publisher its verdict.
//!
//! Why one task: lapin hands each `basic.return` to whichever confirm it resolves next, in no
//! particular order (the confirms of a `multiple` ack are resolved in hash order, returns wait
//! in a queue, and a return can surface after later acks), so a message's return can ride on
//! another message's confirm, resolved before OR after its own. What holds: the broker sends
//! a message's return before its ack, and lapin hands returns out in the order they came. So
//! an `Ack` is only *tentative*: the task then publishes a *barrier* — an empty, `mandatory`
//! message with an id of its own to the default exchange under a routing key no queue has,
//! which the broker returns — and once the barrier's return has been handed out, every return
//! sent before it has been too; the acks seen before the barrier was published are then
//! final. Returns are attributed by `message_id` (= `ce-id`); a returned message is never
//! reported as delivered. A batch of resolved confirms is taken in lapin's resolution order
//! until none is left (see [`resolved`]), so it holds every confirm lapin resolved before any
//! of its own.
//!
//! Each entry holds its slot of the publisher's window (a semaphore permit) until its confirm
//! resolves, so the window bounds the messages awaiting a confirm, not the calls.
use futures_util::stream::{FuturesUnordered, StreamExt};
use lapin::message::BasicReturnMessage;
use lapin::{Confirmation, PublisherConfirm};
use reporter_ports::ports::PublishError;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, mpsc, oneshot};
use tokio::time::Instant;

/// A published message waiting for its confirm.
pub(crate) struct Outstanding {
    /// The message's `message_id` (its `ce-id`), when it has one.
    pub(crate) message_id: Option<String>,
    /// lapin's confirm future.
    pub(crate) confirm: PublisherConfirm,
    /// Released when the confirm resolves (or is given up).
    pub(crate) permit: OwnedSemaphorePermit,
    /// After this the confirm is given up (the publisher has answered `Timeout` by then).
    pub(crate) give_up_at: Instant,
    /// Where the verdict goes.
    pub(crate) verdict: oneshot::Sender<Result<(), PublishError>>,
}

/// The sending side: cheap to clone.
#[derive(Clone)]
pub(crate) struct Confirms {
    tx: mpsc::UnboundedSender<Outstanding>,
    book: Arc<Mutex<Book>>,
}

impl Confirms {
    /// Starts the task; it ends when every `Confirms` clone is dropped and nothing is
    /// outstanding.
    pub(crate) fn start(barrier: Barrier) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let book = Arc::new(Mutex::new(Book::default()));
        tokio::spawn(run(rx, book.clone(), barrier));
        Self { tx, book }
    }

    /// Announces a message about to be published, BEFORE its `basic.publish`: its return may
    /// reach the task, on another message's confirm, before the message itself is tracked.
    /// Follow with [`Self::track`], or [`Self::withdraw`] when the publish failed.
    pub(crate) fn expect(&self, message_id: &str) {
        lock(&self.book).add(message_id);
    }

    /// Takes back an announcement whose publish failed.
    pub(crate) fn withdraw(&self, message_id: &str) {
        lock(&self.book).remove(message_id);
    }

    /// Hands a published (and announced) message over; its verdict arrives on the entry's
    /// channel. `Err` gives the entry back when the task is gone.
    pub(crate) fn track(&self, entry: Outstanding) -> Result<(), Box<Outstanding>> {
        self.tx.send(entry).map_err(|e| Box::new(e.0))
    }
}

fn lock(book: &Mutex<Book>) -> std::sync::MutexGuard<'_, Book> {
    book.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

type Resolved = (
    Option<Meta>,
    Result<Result<Confirmation, lapin::Error>, tokio::time::error::Elapsed>,
);
type Pending = Pin<Box<dyn Future<Output = Resolved> + Send>>;

struct Meta {
    message_id: Option<String>,
    permit: OwnedSemaphorePermit,
    verdict: oneshot::Sender<Result<(), PublishError>>,
}

/// Message ids with a return that arrived before their own confirm, and how many messages with
/// each id are outstanding (returns for ids nobody waits for are dropped).
#[derive(Default)]
struct Book {
    outstanding: HashMap<String, usize>,
    returned: HashMap<String, Vec<String>>,
}

impl Book {
    fn add(&mut self, id: &str) {
        *self.outstanding.entry(id.to_owned()).or_default() += 1;
    }

    fn remove(&mut self, id: &str) {
        if let Some(n) = self.outstanding.get_mut(id) {
            *n -= 1;
            if *n == 0 {
                self.outstanding.remove(id);
                self.returned.remove(id);
            }
        }
    }

    fn take_return(&mut self, id: &str) -> Option<String> {
        let list = self.returned.get_mut(id)?;
        let why = list.pop();
        if list.is_empty() {
            self.returned.remove(id);
        }
        why
    }
}

fn describe(ret: &BasicReturnMessage) -> String {
    format!(
        "{} {} (exchange {}, routing key {})",
        ret.reply_code, ret.reply_text, ret.delivery.exchange, ret.delivery.routing_key
    )
}

fn returned_id(ret: &BasicReturnMessage) -> Option<String> {
    ret.delivery
        .properties
        .message_id()
        .as_ref()
        .map(|s| s.as_str().to_owned())
}

/// Publishes a barrier with the given message id; `None` when it could not be published.
pub(crate) type Barrier = Arc<
    dyn Fn(String) -> Pin<Box<dyn Future<Output = Option<PublisherConfirm>> + Send>> + Send + Sync,
>;

async fn run(
    mut rx: mpsc::UnboundedReceiver<Outstanding>,
    book: Arc<Mutex<Book>>,
    barrier: Barrier,
) {
    let mut pending: FuturesUnordered<Pending> = FuturesUnordered::new();
    let mut settler = Settler::default();
    let mut open = true;
    loop {
        if !open && pending.is_empty() && settler.tentative.is_empty() {
            break;
        }
        if settler.needs_barrier() {
            let id = settler.open_barrier();
            match barrier(id).await {
                Some(confirm) => pending.push(Box::pin(async move {
                    (None, tokio::time::timeout(BARRIER_TIMEOUT, confirm).await)
                })),
                None => settler.abandon_tentative(&mut lock(&book)),
            }
        }
        tokio::select! {
            entry = rx.recv(), if open => match entry {
                Some(e) => {
                    let meta = Meta { message_id: e.message_id, permit: e.permit, verdict: e.verdict };
                    let give_up = e.give_up_at;
                    let confirm = e.confirm;
                    pending.push(Box::pin(async move {
                        (Some(meta), tokio::time::timeout_at(give_up, confirm).await)
                    }));
                }
                None => open = false,
            },
            batch = std::future::poll_fn(|cx| resolved(&mut pending, cx)), if !pending.is_empty() => {
                settler.settle(batch, &mut lock(&book));
            }
            () = tokio::time::sleep_until(settler.barrier_deadline), if settler.barrier.is_some() => {
                // The barrier's return never came (the channel went away): give up on it.
                settler.abandon_tentative(&mut lock(&book));
            }
        }
    }
}

/// Every confirm resolved by now (at least one), taken in the order lapin resolved them, until
/// none is left to take. Lapin wakes a confirm's waiter when it resolves it, synchronously and
/// in its resolution order, and `FuturesUnordered` polls its futures in the order their wakes
/// came (a future is queued once when pushed, then once per wake), polling only those: the
/// cost of a batch is its own confirms, not every confirm outstanding (polling all of them on
/// every wake cost O(window) per ack frame, most of the publisher's CPU while the outbox
/// drained). So a batch is closed under "resolved before": when it holds a confirm, every
/// confirm lapin resolved before that one was queued before it and is in this batch or an
/// earlier one (a confirm resolved while the batch is taken is queued and taken too), and a
/// confirm of a later batch was resolved after every confirm of an earlier one. The queue
/// yields only after polling every queued future without finding one ready, so no resolved
/// confirm is left behind by a yield.
fn resolved(
    pending: &mut FuturesUnordered<Pending>,
    cx: &mut std::task::Context<'_>,
) -> std::task::Poll<Vec<Resolved>> {
    let mut ready = Vec::new();
    while let std::task::Poll::Ready(Some(r)) = pending.poll_next_unpin(cx) {
        ready.push(r);
    }
    if ready.is_empty() {
        std::task::Poll::Pending
    } else {
        std::task::Poll::Ready(ready)
    }
}

/// How long a barrier's return is awaited before its tentative verdicts are abandoned.
const BARRIER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The `message_id` prefix of barriers.
const BARRIER_ID_PREFIX: &str = "reporter-confirm-barrier-";

/// A message acked with no return yet (its window slot already freed), and whether a barrier
/// published after its ack covers it.
struct Tentative {
    message_id: Option<String>,
    verdict: oneshot::Sender<Result<(), PublishError>>,
    covered: bool,
}

impl Tentative {
    fn finish(self, verdict: Result<(), PublishError>, book: &mut Book) {
        finish(self.message_id, self.verdict, verdict, book);
    }
}

/// The verdicts not yet final, and the barrier in flight.
struct Settler {
    tentative: Vec<Tentative>,
    /// The id of the barrier in flight, and when its return is given up.
    barrier: Option<String>,
    barrier_deadline: Instant,
    /// Barriers published so far (their ids count up; returns go back on the channel that
    /// published them, so they need not be unique beyond this publisher).
    barriers: u64,
}

impl Default for Settler {
    fn default() -> Self {
        Self {
            tentative: Vec::new(),
            barrier: None,
            barrier_deadline: Instant::now(),
            barriers: 0,
        }
    }
}

impl Settler {
    /// A barrier is due when acks wait for one and none is in flight.
    fn needs_barrier(&self) -> bool {
        self.barrier.is_none() && !self.tentative.is_empty()
    }

    /// Marks every tentative ack as covered by a new barrier; its id.
    fn open_barrier(&mut self) -> String {
        for t in &mut self.tentative {
            t.covered = true;
        }
        self.barriers += 1;
        let id = format!("{BARRIER_ID_PREFIX}{}", self.barriers);
        self.barrier = Some(id.clone());
        self.barrier_deadline = Instant::now() + BARRIER_TIMEOUT;
        id
    }

    /// The barrier's return was handed out: every ack it covers is final.
    fn close_barrier(&mut self, book: &mut Book) {
        self.barrier = None;
        let (done, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.tentative)
            .into_iter()
            .partition(|t| t.covered);
        self.tentative = kept;
        for t in done {
            t.finish(Ok(()), book);
        }
    }

    /// Attributes the returns of a batch of resolved confirms, sends every final verdict, and
    /// keeps the acks tentative until a barrier covers them.
    fn settle(&mut self, batch: Vec<Resolved>, book: &mut Book) {
        let mut verdicts: Vec<(Option<Meta>, Result<(), PublishError>)> =
            Vec::with_capacity(batch.len());
        let mut returns: Vec<(usize, BasicReturnMessage)> = Vec::new();
        for (meta, outcome) in batch {
            let (verdict, ret) = classify(outcome);
            if let Some(ret) = ret {
                returns.push((verdicts.len(), ret));
            }
            verdicts.push((meta, verdict));
        }
        let mut barrier_returned = false;
        for (carrier, ret) in returns {
            barrier_returned |= self.attribute(carrier, ret, &mut verdicts, book);
        }
        for (meta, verdict) in verdicts {
            let Some(meta) = meta else { continue };
            let Meta {
                message_id,
                permit,
                verdict: tx,
            } = meta;
            drop(permit);
            match verdict {
                Ok(()) => self.tentative.push(Tentative {
                    message_id,
                    verdict: tx,
                    covered: false,
                }),
                Err(e) => finish(message_id, tx, Err(e), book),
            }
        }
        if barrier_returned {
            self.close_barrier(book);
        }
    }

    /// Gives the return `ret`, found on confirm `carrier`, to its message: in this batch,
    /// among the tentative verdicts, or (not resolved yet) to the book. True when it is the
    /// barrier's.
    fn attribute(
        &mut self,
        carrier: usize,
        ret: BasicReturnMessage,
        verdicts: &mut [(Option<Meta>, Result<(), PublishError>)],
        book: &mut Book,
    ) -> bool {
        let Some(id) = returned_id(&ret) else {
            // No id to match: the confirm it came with is the best guess.
            verdicts[carrier].1 = Err(PublishError::Unroutable(describe(&ret)));
            return false;
        };
        if self.barrier.as_deref() == Some(id.as_str()) {
            return true;
        }
        if id.starts_with(BARRIER_ID_PREFIX) {
            return false;
        }
        let why = describe(&ret);
        tracing::warn!(reason = %why, "event returned by the broker");
        let is = |m: &Option<Meta>| {
            m.as_ref().and_then(|m| m.message_id.as_deref()) == Some(id.as_str())
        };
        if let Some(j) = verdicts.iter().position(|(m, v)| v.is_ok() && is(m)) {
            verdicts[j].1 = Err(PublishError::Unroutable(why));
        } else if let Some(k) = self
            .tentative
            .iter()
            .position(|t| t.message_id.as_deref() == Some(id.as_str()))
        {
            let t = self.tentative.swap_remove(k);
            t.finish(Err(PublishError::Unroutable(why)), book);
        } else if book.outstanding.contains_key(&id) {
            book.returned.entry(id).or_default().push(why);
        }
        false
    }

    /// No barrier can come back (the channel is gone): the tentative verdicts are lost
    /// confirms; the callers retry (a duplicate at worst, with the same `ce-id`).
    fn abandon_tentative(&mut self, book: &mut Book) {
        self.barrier = None;
        for t in std::mem::take(&mut self.tentative) {
            t.finish(
                Err(PublishError::Unavailable(
                    "the channel closed before the confirm could be made final".into(),
                )),
                book,
            );
        }
    }
}

fn classify(
    outcome: Result<Result<Confirmation, lapin::Error>, tokio::time::error::Elapsed>,
) -> (Result<(), PublishError>, Option<BasicReturnMessage>) {
    match outcome {
        Ok(Ok(Confirmation::Ack(ret))) => (Ok(()), ret),
        Ok(Ok(Confirmation::Nack(ret))) => (Err(PublishError::Nacked), ret),
        Ok(Ok(Confirmation::NotRequested)) => (
            Err(PublishError::Unavailable(
                "channel is not in confirm mode".into(),
            )),
            None,
        ),
        Ok(Err(e)) => (Err(PublishError::Unavailable(e.to_string())), None),
        Err(_) => (Err(PublishError::Timeout), None),
    }
}

/// Sends a final verdict (a return waiting in the book for this message wins over an ack).
fn finish(
    message_id: Option<String>,
    tx: oneshot::Sender<Result<(), PublishError>>,
    mut verdict: Result<(), PublishError>,
    book: &mut Book,
) {
    if let Some(id) = &message_id {
        if verdict.is_ok()
            && let Some(why) = book.take_return(id)
        {
            verdict = Err(PublishError::Unroutable(why));
        }
        book.remove(id);
    }
    let _ = tx.send(verdict);
}
