"""The ADK sessions of one run: one per agent call (engine/runtime/agent_call.py), in memory,
deleted when the call ends.

ADK's `InMemorySessionService` deep-copies the whole session (every event, the state) at each
`create_session` and `get_session`, and the runner calls `get_session` at every `run_async`
(~90 Python calls a turn, docs/durable.md "What a turn costs"). Here a caller gets a light copy
instead: the session's fields, its event list and its state dict copied, the events themselves
shared. What that gives up: a caller that changes an event it holds changes the stored one. ADK
appends each new event as a new object, escalate changes none, and the runs of tests/runtime and
tests/durable (replays included) are the same on it. As ADK's own
`IN_MEMORY_SESSION_SERVICE_LIGHT_COPY` option, but for this service only. An agent call and the
turns it drives directly (engine/runtime/adk_turn.py) take no copy at all: `open` and `held` give
them the stored session, as ADK's Runner drives its own copy (docs/durable.md, the sixth pass).

A run's sessions are its own (one service per run, engine/runtime/run_state.py), so `app:` and
`user:` state keys are kept with the session that set them, not shared between its calls:
escalate sets no state, and a call's session lives only as long as the call.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Optional

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events import Event
from google.adk.sessions import BaseSessionService, Session, State
from google.adk.sessions.base_session_service import GetSessionConfig, ListSessionsResponse


def _light(session: Session, events: list[Event] | None = None) -> Session:
    copied = session.model_copy()
    copied.events = list(session.events if events is None else events)
    copied.state = dict(session.state)
    return copied


class CallSessions(BaseSessionService):
    """Sessions by (app, user, id), handed out as light copies."""

    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str, str], Session] = {}

    async def create_session(self, *, app_name: str, user_id: str, state: Optional[dict[str, Any]] = None,
                             session_id: Optional[str] = None) -> Session:
        return _light(self._stored(app_name, user_id, state, session_id))

    def open(self, *, app_name: str, user_id: str) -> Session:
        """A new session for one agent call (engine/runtime/agent_call.py), the stored one itself
        as `held` gives it: the call appends to it once and drives its turns on it."""
        return self._stored(app_name, user_id, None, None)

    def _stored(self, app_name: str, user_id: str, state: Optional[dict[str, Any]], session_id: Optional[str]) -> Session:
        session_id = (session_id or "").strip() or str(uuid.uuid4())
        key = (app_name, user_id, session_id)
        if key in self._sessions:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.")
        session = Session(app_name=app_name, user_id=user_id, id=session_id, state=dict(state or {}),
                          last_update_time=time.time())
        self._sessions[key] = session
        return session

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: Optional[GetSessionConfig] = None) -> Optional[Session]:
        session = self._sessions.get((app_name, user_id, session_id.strip() if session_id else session_id))
        if session is None:
            return None
        events = session.events
        if config is not None:
            if config.num_recent_events is not None:
                events = events[-config.num_recent_events:] if config.num_recent_events else []
            if config.after_timestamp is not None:  # after the last one older than it, as ADK's own service
                older = [i for i, e in enumerate(events) if e.timestamp < config.after_timestamp]
                events = events[older[-1] + 1:] if older else events
        return _light(session, events)

    def held(self, *, app_name: str, user_id: str, session_id: str) -> Optional[Session]:
        """The stored session itself, not a copy: for the one caller that drives an invocation on
        it (engine/runtime/adk_turn.py), as ADK's Runner drives its own copy; the events it
        appends go to the stored list once (`append_event`), the copy and its double append
        spared at every turn."""
        return self._sessions.get((app_name, user_id, session_id))

    @staticmethod
    def invocation_over(session: Session) -> None:
        """After an invocation on a `held` session: its `temp:` state lived for that invocation
        only (the Runner's copy, which held it, is dropped after each)."""
        for key in [key for key in session.state if key.startswith(State.TEMP_PREFIX)]:
            del session.state[key]

    async def list_sessions(self, *, app_name: str, user_id: Optional[str] = None) -> ListSessionsResponse:
        found = [_light(s, []) for (app, user, _), s in self._sessions.items()
                 if app == app_name and (user_id is None or user == user_id)]
        found.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=found)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        self._sessions.pop((app_name, user_id, session_id.strip() if session_id else session_id), None)

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        stored = self._sessions.get((session.app_name, session.user_id, session.id))
        if stored is None:
            from google.adk.errors.session_not_found_error import SessionNotFoundError

            raise SessionNotFoundError(f"Session {session.id} not found.")
        event = await super().append_event(session, event)  # the caller's copy: temp state, the delta, the event
        session.last_update_time = event.timestamp
        if stored is not session:
            stored.events.append(event)
            stored.last_update_time = event.timestamp
            if event.actions and event.actions.state_delta:  # temp: keys were trimmed from it above
                stored.state.update(event.actions.state_delta)
        return event
