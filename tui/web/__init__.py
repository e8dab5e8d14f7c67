"""`escalate serve`: the console in a web browser (aiohttp + textual-serve's app sessions),
behind a one-time token. Nothing here imports Textual: each browser session runs the console
in a process of its own."""
