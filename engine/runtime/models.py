"""Which ADK model answers an agent.

The scripted model answers every agent when a `--script` is given, and any agent whose
prompt/main model is not a real provider model. A `model NAME = provider/id` becomes ADK's
`Gemini` (gemini/google providers) or `LiteLlm` (anything else, optional extra); a missing key
or package is one readable line that also says how to run offline.
"""

from __future__ import annotations

import os
from typing import Any

from engine.flow.spec import ModelSpec, WorkflowBase

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


def streamed() -> bool:
    """Whether real models are asked to stream their replies (ESCALATE_STREAM=1)."""
    return os.environ.get("ESCALATE_STREAM", "").strip().lower() in ("1", "true", "yes", "on")


def model_label(spec: ModelSpec) -> str:
    """How errors name a model: `model 'main' (openai/gpt-4o at http://...)`."""
    where = f" at {spec.base_url}" if spec.base_url else ""
    return f"model {spec.name!r} ({spec.provider}/{spec.model_id}{where})"


def real_model(spec: ModelSpec) -> Any:
    """An ADK model for a provider model; raises ModelUnavailable with a one-line reason.

    Retries are left to the agent's `retry` policy (engine/runtime/real_model.py): the
    libraries' own retries are turned off, so that one policy counts every attempt."""
    provider = (spec.provider or "").lower()
    label = model_label(spec)
    keys = PROVIDER_KEYS.get(provider)
    has_key = not keys or any(os.environ.get(k) for k in keys)
    # A `base_url` (a local Ollama, vLLM or proxy) needs no key for LiteLLM's providers.
    if not has_key and (provider in GEMINI_PROVIDERS or not spec.base_url):
        raise ModelUnavailable(f"{label} needs {' or '.join(keys or ())} in the environment; {OFFLINE_HINT}")
    if provider in GEMINI_PROVIDERS:
        from google.adk.models import Gemini
        from google.genai import types

        from engine.runtime.reply_cap import capped_transport

        # A transport of our own also makes google.genai use httpx, not aiohttp: the cap holds.
        http_options = types.HttpOptions(async_client_args={"transport": capped_transport(), "trust_env": False})
        return Gemini(model=spec.model_id or "", base_url=spec.base_url, retry_options=types.HttpRetryOptions(attempts=1),
                      client_kwargs={"http_options": http_options})
    import_litellm(label)
    from google.adk.models.lite_llm import LiteLlm

    kwargs: dict[str, Any] = {"num_retries": 0, "max_retries": 0}
    client = capped_litellm_client(provider)
    if client is not None:
        kwargs["client"] = client
    if spec.temperature is not None:
        kwargs["temperature"] = spec.temperature
    if spec.max_tokens is not None:
        kwargs["max_tokens"] = spec.max_tokens
    if spec.base_url:
        kwargs["api_base"] = spec.base_url
        if not has_key:
            kwargs["api_key"] = "none"  # the OpenAI client insists on one; local servers ignore it
    return LiteLlm(model=f"{provider}/{spec.model_id}", **kwargs)


async def preload_litellm(workflow: WorkflowBase) -> None:
    """Import LiteLLM (5-10 s) on a thread before a run's first real model is built, so that
    the loop it shares (a console, other runs, heartbeats) does not stop meanwhile."""
    import sys

    if "litellm" in sys.modules:
        return
    if any(is_real(m) and (m.provider or "").lower() not in GEMINI_PROVIDERS for m in workflow.MODELS.values()):
        import asyncio

        try:
            await asyncio.to_thread(import_litellm, "LiteLLM")
        except ModelUnavailable:  # not installed: the model that needs it says so when it is built
            pass


def import_litellm(label: str) -> Any:
    """LiteLLM, set up for a terminal tool: its price table read from the package (it would
    fetch it from the internet at import, and wait 8 s offline), and no "Give Feedback" banner
    on stdout, where `escalate run` prints only the result."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm  # optional extra: pip install 'escalate[litellm]'
    except ImportError:
        raise ModelUnavailable(f"{label} needs LiteLLM (pip install 'escalate[litellm]'); {OFFLINE_HINT}") from None
    litellm.suppress_debug_info = True
    if litellm.aclient_session is None:
        from engine.runtime.reply_cap import capped_client

        # LiteLLM's OpenAI client (openai, azure, custom_openai) reads replies through this one.
        litellm.aclient_session = capped_client()
    return litellm


# LiteLLM providers answered through the OpenAI client (litellm.aclient_session); every other
# provider goes through LiteLLM's own HTTP handler, which takes a `client` of its kind instead.
OPENAI_CLIENT_PROVIDERS = {"openai", "custom_openai", "azure", "azure_text", "text-completion-openai"}


def capped_litellm_client(provider: str) -> Any:
    """LiteLLM's HTTP handler over the capped transport, for providers that use it; None for
    those that read through the OpenAI client (capped by `import_litellm`)."""
    if provider in OPENAI_CLIENT_PROVIDERS:
        return None
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    from engine.runtime.reply_cap import capped_transport

    return AsyncHTTPHandler(transport=capped_transport())
