"""The console's widgets: each shows one part of the session and posts messages upward."""
