"""A rubric's judge: its connection, model and parameters (validated on every write)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from runs.scoring.judge import connection_route_problem
from teams.judging import deployment_model_problem
from teams.models import JudgeConnection, Team
from teams.selectors import judge_connection_get
from teams.services import cap_timeout, cap_tokens

from .models import Rubric

API_BASE_MOVED = (
    "a rubric no longer sets api_base: create a judge connection (team settings or "
    "POST /api/connections) with that api_base and choose it as the rubric's judge_connection"
)


class JudgeParams(BaseModel):
    """What a rubric may set about its judge besides the model string and connection."""

    model_config = ConfigDict(extra="forbid")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    timeout: float | None = Field(default=None, gt=0)
    api_base: str | None = Field(default=None, description="Refused: use judge_connection")

    _timeout_cap = field_validator("timeout")(cap_timeout)
    _tokens_cap = field_validator("max_tokens")(cap_tokens)

    @field_validator("api_base")
    @classmethod
    def _moved(cls, value: str | None) -> None:
        if value:
            raise PydanticCustomError("api_base_moved", API_BASE_MOVED)
        return None


def judge_connection_resolve(*, team: Team, ref: Any) -> JudgeConnection | None:
    """The team's connection given as an instance, id or name (None/"" = the deployment's
    judge); a connection of another team, or none by that name, is an error on the field."""
    if ref in (None, ""):
        return None
    if isinstance(ref, JudgeConnection):
        found = ref if ref.team_id == team.pk else None
    else:
        found = judge_connection_get(team=team, ref=ref)
    if found is None:
        raise ValueError("no judge connection with this id or name in this team")
    return found


def judge_choice_errors(
    *, team: Team, rubric: Rubric | None, fields: dict[str, Any], out: dict[str, Any]
) -> dict[str, str]:
    """Check judge_connection and judge_model together (either may change alone), putting the
    resolved connection in ``out``; the errors by field."""
    if "judge_connection" in fields:
        try:
            out["judge_connection"] = judge_connection_resolve(
                team=team, ref=fields["judge_connection"]
            )
        except ValueError as exc:
            return {"judge_connection": str(exc)}
    connection = out.get("judge_connection", rubric.judge_connection if rubric else None)
    model = str(fields.get("judge_model", rubric.judge_model if rubric else "") or "").strip()
    if connection is None:
        problem = deployment_model_problem(model)
    elif model:
        problem = connection_route_problem(model, connection.api_base or None)
    else:
        problem = None
    return {"judge_model": problem} if problem else {}
