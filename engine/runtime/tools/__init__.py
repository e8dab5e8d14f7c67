"""Built-in tools (`builtin streetrace.fs|fs_readonly|cli|web`), confined to the run's workspace."""
