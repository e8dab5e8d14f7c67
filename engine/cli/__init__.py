"""The `escalate` command line: one module per sub-command, imported on demand."""
