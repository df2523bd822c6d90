"""Where a team's judge calls may go without a connection: the deployment's judge.

The rule: with a judge connection chosen, requests go to the connection's api_base (or its
provider's default endpoint when it has none) with the connection's own key or no key. With no
connection they go to the deployment's judge (EVALSITE_JUDGE_API_BASE, or the provider default
of EVALSITE_JUDGE_MODEL) with EVALSITE_JUDGE_API_KEY; a rubric may then name another model only
of the same litellm provider, since a model string of another provider ("anthropic/...",
"ollama/...") would carry the deployment's key to another endpoint.
"""

from __future__ import annotations

from django.conf import settings

from runs.scoring.judge import model_provider

CREATE_A_CONNECTION = "create a judge connection (team settings) and choose it"


def deployment_model_problem(model: str, *, api_base: str | None = None) -> str | None:
    """Why the deployment's judge must not be asked for ``model`` (None: it may). ``api_base``:
    the deployment judge's address the call would use (default EVALSITE_JUDGE_API_BASE)."""
    default = settings.EVALSITE_JUDGE_MODEL
    if not model or model == default:
        return None
    if not default:
        if api_base or settings.EVALSITE_JUDGE_API_BASE:
            return None  # every request goes to the operator's own server, whatever the name
        return (
            "this deployment has no default judge model, so a judge model needs a judge "
            f"connection: {CREATE_A_CONNECTION}"
        )
    provider = model_provider(model)
    if provider is None or provider != model_provider(default):
        return (
            f"without a judge connection the model must be of the deployment judge's provider "
            f"({model_provider(default) or default}); for another provider or endpoint, "
            f"{CREATE_A_CONNECTION}"
        )
    return None
