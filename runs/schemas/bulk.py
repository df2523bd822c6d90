"""The API's schemas for bulk ingest (POST /api/runs/bulk)."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from ninja import Field, Schema
from pydantic import ConfigDict, WithJsonSchema

from ..models import StatusChoice
from ..payloads import RunPayload
from ..services.bulk import MAX_BULK_RUNS
from .evaluations import EvaluationOut


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A model's JSON schema with its local $defs substituted in place (it has no cycles)."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return walk(defs[ref.removeprefix("#/$defs/")])
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


# Items are validated one by one by the bulk service, so a bad item is reported with its index
# next to the others' errors instead of failing the whole body; the schema still documents them.
BulkItems = Annotated[
    list[dict[str, Any]],
    WithJsonSchema(
        {
            "type": "array",
            "items": _inlined(RunPayload.model_json_schema()),
            "maxItems": MAX_BULK_RUNS,
        }
    ),
]


class BulkIn(Schema):
    model_config = ConfigDict(extra="forbid")
    runs: BulkItems = Field(max_length=MAX_BULK_RUNS)


class BulkItemOut(Schema):
    index: int
    id: UUID
    external_id: str | None
    created: bool = Field(description="False when the external_id already named this run")
    status: StatusChoice
    evaluations: list[EvaluationOut]


class BulkOut(Schema):
    created: int
    existing: int
    items: list[BulkItemOut]


class BulkErrorItem(Schema):
    index: int | None
    field: str | None
    message: str
