"""The one wiring: every entry point (the console, `run`, `resume`, `worker`, and those to come:
hooks, an MCP server, ACP agents) opens the services here and nowhere else.

- `open_database(given, existing=...)` (database.py): the database alone, for a command that
  only reads or decides (`runs`, `answer`): no DBOS, no ADK imported.
- `open_services(db, identity=...)` (wiring.py): the database, DBOS's host on this loop, the
  decision store, the broker hearing other processes, the clock; `Services.engine(rules, ...)`
  makes an Engine for a workspace; `Services.close()` leaves the runs in the database.
- `open_decisions(db, identity=...)` (wiring.py): the database, the decision store and a
  broker hearing decisions made anywhere, without DBOS: for a process that raises escalations
  and waits on them without running workflows (outside agents: engine/outside).
- `Worker` (worker.py): `escalate worker`, on top of them.

This package sits above the runtime (it makes Engines): nothing below imports it. Its modules
import the heavy libraries inside the functions that need them.
"""

from engine.services.database import open_database
from engine.services.wiring import Services, open_decisions, open_services

__all__ = ["Services", "open_database", "open_decisions", "open_services"]
