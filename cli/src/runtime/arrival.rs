//! Calls of one session applied in the order they arrived
//! (docs/runtime.md, "Order within a session").
//!
//! rmcp runs every request as a task of its own, so two requests a client
//! sends back to back (a `skills_load`, then a call of the tool it loads,
//! without waiting for the first reply) may be handled in either order. A
//! client that pipelines means the order it wrote: [`Ordered`] wraps a
//! connection's transport and gives every request that reads or changes
//! the session a [`Turn`] as it is read, in arrival order. A handler waits
//! for the turns before its own to be done with the session, does its own
//! part, and is done: a script's run, or a wait for the user, happens
//! after, so calls still run side by side. Requests that do not touch the
//! session (resources, skills/list) take no turn and never wait.
//!
//! The order is the client's own numbering, the JSON-RPC ids every SDK
//! counts up, not the order requests are read: over streamable HTTP every
//! request is a POST of its own, and two POSTs sent at once may reach the
//! server either way round; and some clients write concurrent requests to
//! a stdio pipe from tasks of their own (rmcp does), so even the bytes may
//! come in another order than the ids were given. A request first waits
//! for the ids below it to arrive, at most [`GAP_WAIT_LIMIT`]; a connection
//! whose client leaves gaps (ids that are not consecutive, or not numbers)
//! is ordered by arrival from its first gap on, so it pays that wait once.
//!
//! A turn is done when its handler says so or when the request's context
//! is dropped, whichever is first, and a wait is bounded by
//! [`TURN_WAIT_LIMIT`]: a request that never reaches its handler cannot
//! hold the session.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::Stream;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::model::{ClientRequest, GetExtensions as _, JsonRpcMessage, RequestId};
use rmcp::service::{RequestContext, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use tokio::sync::Notify;

/// The longest a request waits for the ones before it to be done with the
/// session. Their part is short (a load reads one `SKILL.md`), so reaching
/// it means one of them was lost, not slow.
pub const TURN_WAIT_LIMIT: Duration = Duration::from_secs(2);

/// The longest a request of an HTTP session waits for a request with a
/// lower id, sent with it, to arrive: loopback and local networks deliver
/// two POSTs sent together well within it.
pub const GAP_WAIT_LIMIT: Duration = Duration::from_millis(100);

/// The most ids above a gap a connection remembers: a client whose ids
/// skip (all even, say) in requests that never wait would otherwise grow
/// the set without end. Past it, the connection is ordered by arrival.
const MAX_IDS_ABOVE_GAP: usize = 1024;

/// The turns of one connection that are not done yet.
#[derive(Debug, Default)]
struct Sequence {
    state: Mutex<State>,
    done: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// Order by the clients' numeric ids (HTTP), while they have no gap.
    by_id: bool,
    /// The next place in arrival order.
    next: i64,
    /// The turns not done yet, by place.
    pending: BTreeSet<i64>,
    /// With `by_id`: every id from the first seen up to this one
    /// (excluded) has arrived...
    floor: Option<i64>,
    /// ...and these above it have too.
    above: BTreeSet<i64>,
}

impl State {
    /// The request `id` has arrived; returns its place.
    fn arrive(&mut self, id: &RequestId) -> i64 {
        if self.by_id {
            if let RequestId::Number(id) = id {
                let id = *id;
                // Ids are the client's: any i64, i64::MAX included.
                match self.floor {
                    None => self.floor = Some(id.saturating_add(1)),
                    Some(floor) if id == floor => {
                        let mut floor = floor.saturating_add(1);
                        while self.above.remove(&floor) {
                            floor = floor.saturating_add(1);
                        }
                        self.floor = Some(floor);
                    }
                    Some(floor) if id > floor => {
                        self.above.insert(id);
                    }
                    Some(_) => {}
                }
                self.next = self.next.max(id.saturating_add(1));
                if self.above.len() > MAX_IDS_ABOVE_GAP {
                    self.by_id = false;
                    self.above.clear();
                }
                return id;
            }
            self.by_id = false;
        }
        let place = self.next;
        self.next = self.next.saturating_add(1);
        place
    }

    /// Returns true if and only if every request numbered below `place`
    /// has arrived (always, when not ordering by id).
    fn none_missing_below(&self, place: i64) -> bool {
        !self.by_id || self.floor.is_none_or(|floor| floor >= place)
    }
}

impl Sequence {
    fn ordered_by_id() -> Self {
        Self {
            state: Mutex::new(State {
                by_id: true,
                ..State::default()
            }),
            done: Notify::new(),
        }
    }

    /// Records the arrival of request `id`, and returns its turn when it
    /// `takes_turn`.
    fn arrive(self: &Arc<Self>, id: &RequestId, takes_turn: bool) -> Option<Turn> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let place = state.arrive(id);
        let turn = takes_turn.then(|| {
            state.pending.insert(place);
            Turn(Arc::new(TurnInner {
                number: place,
                sequence: self.clone(),
            }))
        });
        drop(state);
        // A request waiting for this id to arrive may go on.
        self.done.notify_waiters();
        turn
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn none_missing_below(&self, number: i64) -> bool {
        self.lock().none_missing_below(number)
    }

    /// Stops waiting for ids that do not come: from here on, arrival order.
    fn give_up_ids(&self) {
        self.lock().by_id = false;
    }

    fn is_first(&self, number: i64) -> bool {
        self.lock()
            .pending
            .first()
            .is_none_or(|first| *first >= number)
    }

    fn finish(&self, number: i64) {
        let removed = self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pending
            .remove(&number);
        if removed {
            self.done.notify_waiters();
        }
    }
}

/// One request's place in its connection's order. Clones share it.
#[derive(Clone, Debug)]
pub struct Turn(Arc<TurnInner>);

#[derive(Debug)]
struct TurnInner {
    number: i64,
    sequence: Arc<Sequence>,
}

impl Drop for TurnInner {
    fn drop(&mut self) {
        self.sequence.finish(self.number);
    }
}

impl Turn {
    /// The turn `context`'s request took on arrival, if its transport
    /// orders requests.
    pub fn of(context: &RequestContext<RoleServer>) -> Option<Self> {
        context.extensions.get::<Turn>().cloned()
    }

    /// Waits until every request that arrived before this one is done with
    /// the session, or [`TURN_WAIT_LIMIT`] has passed.
    pub async fn wait(&self) {
        self.wait_at_most(TURN_WAIT_LIMIT).await;
    }

    async fn wait_at_most(&self, limit: Duration) {
        let sequence = &self.0.sequence;
        let number = self.0.number;
        let arrived = wait_until(sequence, GAP_WAIT_LIMIT.min(limit), || {
            sequence.none_missing_below(number)
        })
        .await;
        if !arrived {
            sequence.give_up_ids();
        }
        wait_until(sequence, limit, || sequence.is_first(number)).await;
    }

    /// This request is done with the session: the ones after it may go.
    pub fn done(&self) {
        self.0.sequence.finish(self.0.number);
    }
}

/// Waits until `ready` holds, checked whenever the sequence changes, or
/// `limit` has passed; returns whether it holds.
async fn wait_until(sequence: &Sequence, limit: Duration, ready: impl Fn() -> bool) -> bool {
    tokio::time::timeout(limit, async {
        loop {
            let notified = sequence.done.notified();
            tokio::pin!(notified);
            // Registered before the check, so a change in between still
            // wakes this one.
            notified.as_mut().enable();
            if ready() {
                return;
            }
            notified.await;
        }
    })
    .await
    .is_ok()
}

/// Returns true if and only if `request` reads or changes a session.
fn takes_turn(request: &ClientRequest) -> bool {
    matches!(
        request,
        ClientRequest::CallToolRequest(_)
            | ClientRequest::ListToolsRequest(_)
            | ClientRequest::GetPromptRequest(_)
    )
}

/// A server transport that gives each session request its [`Turn`], in
/// the order of the requests' ids.
#[derive(Debug)]
pub struct Ordered<T> {
    inner: T,
    sequence: Arc<Sequence>,
}

impl<T> Ordered<T> {
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            sequence: Arc::new(Sequence::ordered_by_id()),
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Ordered<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answer = matches!(item, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_));
        let sent = self.inner.send(item);
        async move {
            let sent = sent.await;
            if answer {
                super::jail::answered();
            }
            sent
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut message = self.inner.receive().await?;
        if let JsonRpcMessage::Request(request) = &mut message
            && let Some(turn) = self
                .sequence
                .arrive(&request.id, takes_turn(&request.request))
        {
            request.request.extensions_mut().insert(turn);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// A streamable HTTP session manager whose sessions' transports are
/// [`Ordered`]: requests of one `Mcp-Session-Id` are applied in the order
/// of their ids. (At 2026-07-28 there are no such sessions: a handle's
/// calls are ordered by the client, which waits for the load's reply to
/// learn the handle.)
#[derive(Debug, Default)]
pub struct OrderedSessions<M>(pub M);

impl<M: SessionManager> SessionManager for OrderedSessions<M> {
    type Error = M::Error;
    type Transport = Ordered<M::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.0.create_session().await?;
        Ok((id, Ordered::new(transport)))
    }

    fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<ServerJsonRpcMessage, Self::Error>> + Send {
        self.0.initialize_session(id, message)
    }

    fn has_session(
        &self,
        id: &SessionId,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send {
        self.0.has_session(id)
    }

    fn close_session(
        &self,
        id: &SessionId,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.close_session(id)
    }

    fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.0.create_stream(id, message)
    }

    fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.accept_message(id, message)
    }

    fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.0.create_standalone_stream(id)
    }

    fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.0.resume(id, last_event_id)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(match self.0.restore_session(id).await? {
            RestoreOutcome::Restored(transport) => {
                RestoreOutcome::Restored(Ordered::new(transport))
            }
            RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
            _ => RestoreOutcome::NotSupported,
        })
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.0.event_store()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn arrive(sequence: &Arc<Sequence>, id: i64) -> Turn {
        sequence
            .arrive(&RequestId::Number(id), true)
            .expect("a turn")
    }

    #[tokio::test]
    async fn a_turn_waits_for_the_ones_before_it_and_not_after() {
        let sequence = Arc::new(Sequence::default());
        let first = arrive(&sequence, 7);
        let second = arrive(&sequence, 3);
        let third = arrive(&sequence, 5);
        // By arrival: the first never waits; the third, not for a later one.
        tokio::time::timeout(Duration::from_millis(100), first.wait())
            .await
            .expect("the first turn goes at once");
        let waiting = tokio::spawn({
            let third = third.clone();
            async move {
                third.wait().await;
                Instant::now()
            }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "the third waits for the first two");
        first.done();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "and for the second");
        let released = Instant::now();
        // A turn whose request is gone is done too.
        drop(second);
        let woke = waiting.await.unwrap();
        assert!(woke >= released);
    }

    #[tokio::test]
    async fn a_lost_turn_holds_the_next_only_for_the_limit() {
        let sequence = Arc::new(Sequence::default());
        let _lost = arrive(&sequence, 1);
        let next = arrive(&sequence, 2);
        let limit = Duration::from_millis(150);
        let started = Instant::now();
        next.wait_at_most(limit).await;
        let waited = started.elapsed();
        assert!(waited >= limit && waited < limit * 10, "{waited:?}");
    }

    #[tokio::test]
    async fn over_http_the_ids_say_the_order_whatever_arrives_first() {
        let sequence = Arc::new(Sequence::ordered_by_id());
        // initialize (0) and a list (1) have come and gone.
        assert!(sequence.arrive(&RequestId::Number(0), false).is_none());
        drop(arrive(&sequence, 1));
        // The call (3) arrives before the load (2) it was sent after.
        let call = arrive(&sequence, 3);
        let waiting = tokio::spawn(async move {
            call.wait().await;
            Instant::now()
        });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!waiting.is_finished(), "the call waits for id 2 to arrive");
        let load = arrive(&sequence, 2);
        load.wait().await;
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!waiting.is_finished(), "and for the load to be done");
        let loaded = Instant::now();
        load.done();
        assert!(waiting.await.unwrap() >= loaded);
    }

    #[test]
    fn ids_at_the_ends_of_the_range_and_endless_gaps_cost_nothing() {
        let sequence = Arc::new(Sequence::ordered_by_id());
        for id in [i64::MAX, i64::MIN, i64::MAX, 0] {
            drop(arrive(&sequence, id));
        }
        let other = Arc::new(Sequence::ordered_by_id());
        for id in (0..10_000).map(|n| n * 2) {
            assert!(other.arrive(&RequestId::Number(id), false).is_none());
        }
        let state = other.lock();
        assert!(!state.by_id, "given up on ids that skip");
        assert!(state.above.len() <= MAX_IDS_ABOVE_GAP);
    }

    #[tokio::test]
    async fn a_client_whose_ids_leave_gaps_waits_once_then_goes_by_arrival() {
        let sequence = Arc::new(Sequence::ordered_by_id());
        drop(arrive(&sequence, 10));
        // Ids counted in twos: 12 waits for an 11 that never comes...
        let started = Instant::now();
        arrive(&sequence, 12).wait().await;
        let first = started.elapsed();
        assert!(first >= GAP_WAIT_LIMIT, "{first:?}");
        // ...once: the session is ordered by arrival from then on.
        let started = Instant::now();
        arrive(&sequence, 14).wait().await;
        assert!(
            started.elapsed() < GAP_WAIT_LIMIT,
            "{:?}",
            started.elapsed()
        );
        // Ids that are not numbers leave the session in arrival order too.
        let other = Arc::new(Sequence::ordered_by_id());
        drop(arrive(&other, 1));
        assert!(
            other
                .arrive(&RequestId::String("a".into()), false)
                .is_none()
        );
        let started = Instant::now();
        arrive(&other, 9).wait().await;
        assert!(started.elapsed() < GAP_WAIT_LIMIT);
    }
}
