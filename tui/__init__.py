"""The escalate console (Textual). Nothing in engine/ or rules/ imports this package."""

import os

# Textual draws at most MAX_FPS frames a second, on a fixed grid: a change waits for the grid's
# next tick, up to 1/MAX_FPS after the last frame. At Textual's 60 that wait was a third of the
# time between a decision raised and the pane on screen with busy runs; frames are only drawn
# when something changed, so a finer grid costs nothing while the screen is still. Textual reads
# it once, at import: `escalate` imports this package first. A user's own TEXTUAL_FPS wins.
os.environ.setdefault("TEXTUAL_FPS", "120")
