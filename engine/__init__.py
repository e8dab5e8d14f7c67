"""escalate's engine: the .sr language, the ADK runtime and human escalation.

Never imports Textual; heavy libraries (ADK, genai) are imported lazily by the runtime.
"""
