"""The flow contract shared by the compiler (engine.lang) and the runtime: the specs a compiled
module instantiates, the FlowContext it calls, the pure helpers and functions it may use, the
guardrails, and the names of the built-in tools. Imports nothing of the runtime."""
