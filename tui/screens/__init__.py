"""The console's screens: main, start-run dialog, history, help."""
