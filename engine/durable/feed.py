"""The database's feed: what other processes do reaches a broker's futures.

Decisions and escalations of other processes arrive as news (engine/durable/signals.py); a slow
poll catches what a lost message would miss. News names escalations and nothing more (anyone who
can send it can send anything): the ids heard are read from the database, and the broker is
driven only by what the rows hold, through its public calls: `adopt` (a console lists what is
raised elsewhere), `settle` (a decision or a withdrawal read from a row), `refresh` (a listed
request whose row holds another).

All methods must be called on the thread running the broker's loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Callable

from engine.durable.database import ESCALATION_ID_MAX, NEWS_IDS
from engine.durable.decisions import DecisionStore
from engine.escalation.broker import RAISED, BrokerEvent, EscalationBroker
from engine.kernel.model import Decision, PendingEscalation

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
Rows = tuple[list[PendingEscalation], list[tuple[str, Decision | None]]]  # DecisionStore.read's
NEWS_KINDS = ("raised", "decided", "withdrawn")
# More ids than this heard at once: everything is read again, once.
READ_AT_MOST = 500
NO_ESCALATION = "-"  # the warm-up reads it and drops it: no escalation escalate makes has this id


def _plausible(esc_id: str) -> bool:
    """An id worth a query: not empty, not too long, storable text."""
    if not 0 < len(esc_id) <= ESCALATION_ID_MAX:
        return False
    try:
        esc_id.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no row has it
        return False
    return True


class Feed:
    """Keeps `broker` in step with the database behind `store`. `everything` (a console): every
    escalation pending in the database is listed on the broker too, and removed when decided."""

    def __init__(self, broker: EscalationBroker, store: DecisionStore) -> None:
        self.broker = broker
        self.store = store
        self._everything = False
        self._stop_listening: Callable[[], None] | None = None
        self._unsubscribe: list[Callable[[], None]] = []
        self._news: list[str] = []
        self._news_ready: asyncio.Event | None = None
        self._heard = self._read = 0  # messages heard, messages read (for `caught_up`)
        self._progress = asyncio.Condition()
        self._reader: asyncio.Task[None] | None = None
        # One full read at a time: the poll's first one, due while the first read at a console's
        # open still runs (10,000 rows: seconds on a loaded host), then finds them listed.
        self._syncing = asyncio.Lock()
        self._poller: asyncio.Task[None] | None = None
        self._warm = False  # the read of a decision's news made once (`_warm_read`)

    def start(self, *, everything: bool = False) -> None:
        """Hear the news and poll (call on the broker's loop): decisions reach the escalations
        waiting on the broker at once; with `everything`, escalations raised anywhere are listed."""
        loop = asyncio.get_running_loop()
        if everything and not self._everything:
            self._everything = True
            self._hear("*")
        if self._stop_listening is None:
            def heard(message: str) -> None:  # on the listening thread
                read = self._read_here(message)
                try:
                    loop.call_soon_threadsafe(self._hear, message, read)
                except RuntimeError:  # the loop closed: this process is stopping
                    pass

            self._stop_listening = self.store.listen(heard)
            self._unsubscribe = [self.broker.subscribe(self._on_event),
                                 self.broker.on_changed(lambda esc_id: self._hear(f"decided {esc_id}"))]
        self._keep_polling()

    def stop(self) -> None:
        if self._stop_listening is not None:
            self._stop_listening()
            self._stop_listening = None
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        for task in (self._poller, self._reader):
            if task is not None:
                task.cancel()

    def _on_event(self, event: BrokerEvent) -> None:
        # Something waits: the poll runs while anything does (with `everything`, it always runs:
        # a console adopting 10,000 escalations need not look at it 10,000 times).
        if event.kind == RAISED and not self._everything:
            self._keep_polling()
        if event.kind == RAISED and not self._warm:
            # The read its decision's news will make, made once now while the person thinks: its
            # statement is then compiled (SQLAlchemy does it at a statement's first execution in
            # a process: ~1-2 ms of a `run --wait`'s one wake).
            self._warm = True
            asyncio.get_running_loop().run_in_executor(None, self._warm_read)

    def _warm_read(self) -> None:
        try:
            self.store.read([NO_ESCALATION])  # the same statement for any number of ids; no row read
        except Exception:  # a busy database: the news's read compiles it instead
            log.debug("the news's read not prepared", exc_info=True)

    def _keep_polling(self) -> None:
        if self._poller is None or self._poller.done():
            # In a context of its own: started by a run's escalation, it would keep that run's
            # context (its call frames, DBOS's workflow context) alive for as long as it polls.
            self._poller = asyncio.get_running_loop().create_task(self._poll(), name="escalate decisions poll",
                                                                  context=contextvars.Context())

    async def caught_up(self) -> None:
        """Return once the messages heard so far are read (not those heard meanwhile: a busy
        database never stops talking): after `start(everything=True)`, once the escalations
        pending at the start are listed."""
        target = self._heard
        async with self._progress:
            await self._progress.wait_for(lambda: self._read >= target)

    def _read_here(self, message: str) -> Rows | None:
        """On the listening thread: the rows of the escalations a `decided` or `withdrawn` message
        names that wait here, read at once, so that the loop only applies them (reading them
        from the loop cost a hop to a pool thread and back: ~1.5 ms of a decision's way to its
        run). None when the loop must look itself: another kind of message, an id a console
        does not list yet (it adopts it there), nothing waiting on these ids, a failed read.
        Safe although the broker lives on the loop: its entry is registered (on the loop) before
        the row's decision commits, or after it, when `ask` has found the decision in the row
        already; and what is read is the database's row, as the loop would read it."""
        kind, _, named = message.partition("\n")[0].partition(" ")
        if kind not in ("decided", "withdrawn"):
            return None
        ids = [esc_id for esc_id in named.split(" ")[:NEWS_IDS] if _plausible(esc_id)]
        if self._everything and not all(self.broker.known(esc_id) for esc_id in ids):
            return None
        waited = [esc_id for esc_id in ids if self.broker.waits_on(esc_id)]
        if not waited:
            return None
        try:
            return self.store.read(waited)
        except Exception:  # a busy database: the loop reads them (and the poll after it)
            log.debug("reading news on the listening thread failed", exc_info=True)
            return None

    def _hear(self, message: str, read: Rows | None = None) -> None:
        if read is not None:  # its rows read already, on the listening thread
            pending, settled = read
            self._list(pending)
            self._settle(settled)
            self._heard += 1
            self._read += 1
            return
        self._news.append(message)
        self._heard += 1
        if self._news_ready is None:
            self._news_ready = asyncio.Event()
        self._news_ready.set()
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(self._read_news(), name="escalate news")

    async def _read_news(self) -> None:
        """Messages in order, in batches: one query for everything heard meanwhile."""
        assert self._news_ready is not None
        while True:
            await self._news_ready.wait()
            self._news_ready.clear()
            batch, self._news = self._news, []
            try:
                await self._look(batch)
            except Exception:  # a busy database: the poll catches up
                log.debug("reading news failed", exc_info=True)
            async with self._progress:
                self._read += len(batch)
                self._progress.notify_all()

    async def _look(self, messages: list[str]) -> None:
        """Read the rows of the escalations the news names (only those that concern this
        process): a run goes on only on a decision read there, and a console lists what the
        database holds. What a message says beyond the ids is never used."""
        ids: dict[str, None] = {}
        for message in messages:
            kind, _, named = message.partition("\n")[0].partition(" ")
            if kind == "*":
                await self._sync()
                return
            if kind not in NEWS_KINDS or (kind == "raised" and not self._everything):
                continue  # a process that lists nothing has nothing to read on a raise
            for esc_id in named.split(" ")[:NEWS_IDS]:
                if _plausible(esc_id) and (self.broker.get(esc_id) is not None
                                           or (self._everything and not self.broker.known(esc_id))):
                    ids[esc_id] = None
        if len(ids) > READ_AT_MOST:  # a flood of names: read everything once instead
            await self._sync()
        elif ids:
            pending, settled = await asyncio.to_thread(self.store.read, list(ids))
            self._list(pending)
            self._settle(settled)

    def _list(self, rows: list[PendingEscalation]) -> None:
        """Escalations pending in the database: listed (a console), or listed again as held."""
        for pending in rows:
            if self.broker.get(pending.escalation.id) is None:
                if self._everything:
                    self.broker.adopt(pending)
            else:
                self.broker.refresh(pending)

    async def _sync(self) -> None:
        """Everything again: decisions made elsewhere, and (a console) escalations raised elsewhere."""
        async with self._syncing:
            await self._sync_now()

    async def _sync_now(self) -> None:
        ids = self.broker.waiting_ids()
        if self._everything:
            # The ids pending in the database tell both what is new and what is no longer pending
            # here: with thousands listed, reading their rows by id every second (an IN of 10,000)
            # was most of a console's poll.
            fresh = await asyncio.to_thread(self.store.pending_ids)
            new = [esc_id for esc_id in fresh if not self.broker.known(esc_id)]
            if new:
                # Many new ones (a console opening on thousands): every pending row in one query.
                rows = await asyncio.to_thread(self.store.still_pending, new if len(new) <= READ_AT_MOST else None)
                for pending in rows:
                    if pending.escalation.id in fresh:
                        self.broker.adopt(pending)
            ids = [esc_id for esc_id in ids if esc_id not in fresh]
        if ids:
            self._settle(await asyncio.to_thread(self.store.settled, ids))

    async def _poll(self) -> None:
        """What a lost message would miss (a full socket queue, a dropped connection)."""
        while self.broker.waiting_ids() or self._everything:
            await asyncio.sleep(POLL_SECONDS)
            try:
                await self._sync()
            except Exception:  # a busy database: the next poll tries again
                log.debug("decision poll failed", exc_info=True)

    def _settle(self, settled: list[tuple[str, Decision | None]]) -> None:
        for esc_id, decision in settled:
            self.broker.settle(esc_id, decision)
