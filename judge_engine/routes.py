"""Where a judge's requests go: the direct transport or litellm, and the rule for teams'
judge connections (which models and addresses a team's connection may call)."""

from __future__ import annotations

from . import direct, llm
from .pricing import CUSTOM_PRICE_KEYS
from .types import JudgeConfig

# Providers whose default endpoint is a server on the judge's own machine or network.
_SELF_HOSTED = frozenset(
    {
        "ollama", "ollama_chat", "lm_studio", "llamafile", "hosted_vllm", "vllm", "xinference",
        "triton", "oobabooga", "lemonade", "docker_model_runner", "openai_like", "custom_openai",
        "custom", "petals",
    }
)  # fmt: skip
# Providers that sign in with the server's own cloud identity (environment, instance role) when
# no key is given: a team's connection would spend the deployment's cloud account.
_AMBIENT_CREDENTIALS = frozenset(
    {
        "bedrock", "sagemaker", "sagemaker_chat", "sagemaker_nova", "vertex_ai", "vertex_ai_beta",
        "watsonx", "watsonx_text", "oci", "snowflake", "databricks", "github_copilot",
    }
)  # fmt: skip
# `extra` keys that are fields of an OpenAI chat request body, sent as they are. Any other key
# (extra_headers, drop_params, api_version, ...) is a litellm option: such a judge goes
# through litellm, which knows what it means. Also what a team's judge connection may set
# besides temperature, max_tokens and timeout.
BODY_PARAMS = frozenset(
    {
        "top_p",
        "seed",
        "stop",
        "n",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "user",
        "reasoning_effort",
        "service_tier",
        "max_completion_tokens",
        *CUSTOM_PRICE_KEYS,
    }
)


def model_provider(model: str) -> str | None:
    """litellm's provider for a model string (``openai/x`` → "openai"), None when unknown."""
    return llm.route(model).provider


def connection_route_problem(model: str, api_base: str | None) -> str | None:
    """Why a team's judge connection must not call ``model`` at ``api_base`` (None: it may).

    An api_base takes an OpenAI-compatible model string (``openai/<name>``): those requests go
    through the direct transport, which never follows a redirect. Without one the provider's
    default endpoint is used, which must be a public service: self-hosted providers default to
    this machine, and cloud providers that sign in with the server's own identity would spend
    the deployment's account."""
    _, provider, default_base = llm.route(model, api_base or None)
    if provider is None:
        return (
            f"litellm cannot tell the provider of {model!r}: use a litellm model string such "
            "as openai/gpt-4o-mini"
        )
    if provider in _AMBIENT_CREDENTIALS:
        return (
            f"{provider} models sign in with the server's own cloud credentials, which a "
            "team's connection cannot use"
        )
    if api_base and provider != "openai":
        return (
            "with an api_base, use an OpenAI-compatible model string (openai/<model name>), "
            f"not a {provider} one"
        )
    if not api_base and (provider in _SELF_HOSTED or default_base):
        return (
            f"{provider} models run on a server of yours: give its api_base (and use "
            "openai/<model name>)"
        )
    return None


def direct_model(config: JudgeConfig) -> str | None:
    """The model name to send straight to an OpenAI-compatible api_base, or None when this
    call goes through litellm (another provider, no api_base, litellm options in ``extra``,
    or transport="litellm"). The same on every event loop: a worker's and a user's agent
    loop send the same request. A team's connection always goes direct where it can:
    litellm follows redirects."""
    if not config.api_base or not direct.available():
        return None
    if config.transport != "auto" and config.connection is None:
        return None
    if not BODY_PARAMS.issuperset(config.extra):
        return None
    name, provider, _ = llm.route(config.model, config.api_base)
    return name if provider == "openai" else None
