"""Which ADK model answers an agent.

The scripted model answers every agent when a `--script` is given, and any agent whose
prompt/main model is not a real provider model. A `model NAME = provider/id` becomes ADK's
`Gemini` (gemini/google providers) or `LiteLlm` (anything else, optional extra); a missing key
or package is one readable line that also says how to run offline.
"""

from __future__ import annotations

import os
from typing import Any

from engine.runtime.spec import ModelSpec, WorkflowBase

GEMINI_PROVIDERS = {"gemini", "google", "vertex", "vertexai"}
# Key variables LiteLLM reads for the common providers.
PROVIDER_KEYS = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "azure": ("AZURE_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "google": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
}
OFFLINE_HINT = "to run offline, give a scripted model file: --script S.yaml"


class ModelUnavailable(Exception):
    """A real model was configured but cannot be used here (one-line message)."""


def agent_model_name(workflow: WorkflowBase, agent_prompt_models: list[str | None]) -> str | None:
    """The model NAME an agent uses: its prompt's `using model`, else the `main` model."""
    for name in agent_prompt_models:
        if name:
            return name
    return "main" if "main" in workflow.MODELS else None


def model_spec(workflow: WorkflowBase, name: str | None) -> ModelSpec | None:
    """A declared model, or a `using model "provider/id"` literal read as one."""
    if name is None:
        return None
    if name in workflow.MODELS:
        return workflow.MODELS[name]
    if "/" in name:
        provider, _, model_id = name.partition("/")
        return ModelSpec(name=name, provider=provider, model_id=model_id)
    return None


def is_real(spec: ModelSpec | None) -> bool:
    return spec is not None and bool(spec.provider) and bool(spec.model_id)


def real_model(spec: ModelSpec) -> Any:
    """An ADK model for a provider model; raises ModelUnavailable with a one-line reason."""
    provider = (spec.provider or "").lower()
    label = f"model {spec.name!r} ({spec.provider}/{spec.model_id})"
    keys = PROVIDER_KEYS.get(provider)
    if keys and not any(os.environ.get(k) for k in keys):
        raise ModelUnavailable(f"{label} needs {' or '.join(keys)} in the environment; {OFFLINE_HINT}")
    if provider in GEMINI_PROVIDERS:
        from google.adk.models import Gemini

        return Gemini(model=spec.model_id or "")
    try:
        import litellm  # noqa: F401  (optional extra: pip install 'escalate[litellm]')
    except ImportError:
        raise ModelUnavailable(f"{label} needs LiteLLM (pip install 'escalate[litellm]'); {OFFLINE_HINT}") from None
    from google.adk.models.lite_llm import LiteLlm

    kwargs: dict[str, Any] = {}
    if spec.temperature is not None:
        kwargs["temperature"] = spec.temperature
    if spec.max_tokens is not None:
        kwargs["max_tokens"] = spec.max_tokens
    return LiteLlm(model=f"{provider}/{spec.model_id}", **kwargs)
