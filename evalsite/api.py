"""The one NinjaAPI: every router is mounted here. OpenAPI at /api/openapi.json."""

from ninja import NinjaAPI

api = NinjaAPI(
    title="evalsite API",
    version="1",
    description="Ingest agent runs, author rubrics, score and re-score with an LLM judge.",
    urls_namespace="api",
)
