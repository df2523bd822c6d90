"""Finished evaluations as OpenTelemetry ``gen_ai.evaluation.result`` events (the GenAI
semantic conventions), made by the OpenTelemetry SDK's logs pipeline: a LoggerProvider with
its own Resource, a Logger, and the records it emits collected by the SDK's in-memory
exporter, ready for the OTLP exporters of export_send.py.

A rubric evaluation makes one event per criterion verdict and one for the rubric's result; an
alignment evaluation one for its result. Each carries:

* ``gen_ai.evaluation.name``: the criterion's wording (cut to NAME_MAX characters), the
  rubric's name, or ``prompt_alignment``;
* ``gen_ai.evaluation.score.value``: 1.0 / 0.0 for a criterion met or not, the rubric's score,
  the alignment score (0..1);
* ``gen_ai.evaluation.score.label``: ``pass`` / ``fail`` (criteria and the rubric), the
  alignment band;
* ``gen_ai.evaluation.explanation``: the judge's reasoning, or the result's reason;
* ``gen_ai.request.model``: the judge model; ``evalsite.rubric.version``: the rubric version
  judged on, with ``evalsite.rubric.id``/``.name``, ``evalsite.run.id``,
  ``evalsite.evaluation.id`` and, per criterion, ``evalsite.criterion.key``/``.required``.

A run that came in over OTLP keeps its agent span's trace and span ids in its metadata
(runs/otel/convert.py): its events carry them, so they sit beside that span in the team's
tracing. Nothing of the deployment goes along: the Resource is built here, not detected.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry._logs import Logger, LogRecord, SeverityNumber
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as genai
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from ..models import CriterionVerdict, Evaluation, Kind

EVENT = "gen_ai.evaluation.result"
SCOPE = "evalsite.verdicts"
NAME_MAX = 200
ALIGNMENT_NAME = "prompt_alignment"
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_SPAN_ID = re.compile(r"^[0-9a-f]{16}$")

# What the events read of each evaluation (never the run's content or the judge's prompts).
_FIELDS = (
    "id", "team_id", "run_id", "kind", "judge_model", "score", "passed", "reason", "band",
    "user_score", "system_score", "finished_at", "rubric_id", "rubric__name",
    "rubric_version_id", "rubric_version__number", "run__metadata", "run__agent",
)  # fmt: skip


def evaluation_events(*, evaluation_ids: Iterable[Any]) -> dict[Any, list[ReadableLogRecord]]:
    """The events of each of these evaluations, by evaluation id. An id no
    longer stored (its run deleted) has none. Two queries."""
    ids = list(evaluation_ids)
    rows = Evaluation.objects.filter(id__in=ids).select_related("rubric", "rubric_version", "run")
    evaluations = list(rows.only(*_FIELDS))
    verdicts: dict[Any, list[CriterionVerdict]] = {}
    for verdict in CriterionVerdict.objects.filter(evaluation_id__in=ids).order_by(
        "evaluation_id", "position"
    ):
        verdicts.setdefault(verdict.evaluation_id, []).append(verdict)
    pipeline = _pipeline()
    out: dict[Any, list[ReadableLogRecord]] = {}
    with pipeline.lock:  # one collector per process: each evaluation's records, in turn
        for evaluation in evaluations:
            pipeline.collected.clear()
            for record in _records(evaluation, verdicts.get(evaluation.id, [])):
                pipeline.logger.emit(record)
            out[evaluation.id] = list(pipeline.collected.get_finished_logs())
        pipeline.collected.clear()
    return out


@dataclass
class _Pipeline:
    pid: int
    logger: Logger
    collected: InMemoryLogRecordExporter
    lock: threading.Lock = field(default_factory=threading.Lock)


_pipelines: list[_Pipeline] = []
_pipelines_lock = threading.Lock()


def _pipeline() -> _Pipeline:
    """This process's LoggerProvider, Logger and collector, made on first use in the process
    (never inherited over a fork: a provider then re-detects the process's resource, and each
    provider registers a fork hook for good, so one is made per process, not per batch)."""
    with _pipelines_lock:
        if not _pipelines or _pipelines[0].pid != os.getpid():
            collected = InMemoryLogRecordExporter()
            provider = LoggerProvider(resource=_RESOURCE, shutdown_on_exit=False)
            provider.add_log_record_processor(SimpleLogRecordProcessor(collected))
            _pipelines[:] = [_Pipeline(os.getpid(), provider.get_logger(SCOPE), collected)]
        return _pipelines[0]


_RESOURCE = Resource({"service.name": "evalsite", "telemetry.sdk.language": "python"})


def _records(evaluation: Evaluation, verdicts: list[CriterionVerdict]) -> list[LogRecord]:
    common = _common(evaluation)
    context = _linked(evaluation.run.metadata)
    timestamp = int(evaluation.finished_at.timestamp() * 1e9) if evaluation.finished_at else None

    def record(attributes: dict[str, Any]) -> LogRecord:
        return LogRecord(
            timestamp=timestamp,
            context=context,
            severity_number=SeverityNumber.INFO,
            event_name=EVENT,
            attributes={**common, **_present(attributes)},
        )

    if evaluation.kind == Kind.ALIGNMENT:
        return [record(_alignment(evaluation))]
    return [*(record(_criterion(v)) for v in verdicts), record(_rubric(evaluation))]


def _common(evaluation: Evaluation) -> dict[str, Any]:
    version = evaluation.rubric_version
    return _present(
        {
            genai.GEN_AI_REQUEST_MODEL: evaluation.judge_model,
            genai.GEN_AI_AGENT_NAME: evaluation.run.agent,
            "evalsite.evaluation.id": str(evaluation.id),
            "evalsite.evaluation.kind": evaluation.kind,
            "evalsite.run.id": str(evaluation.run_id),
            "evalsite.rubric.id": str(evaluation.rubric_id) if evaluation.rubric_id else None,
            "evalsite.rubric.name": evaluation.rubric.name if evaluation.rubric else None,
            "evalsite.rubric.version": version.number if version else None,
        }
    )


def _criterion(verdict: CriterionVerdict) -> dict[str, Any]:
    return {
        genai.GEN_AI_EVALUATION_NAME: _cut(verdict.description),
        genai.GEN_AI_EVALUATION_SCORE_VALUE: 1.0 if verdict.satisfied else 0.0,
        genai.GEN_AI_EVALUATION_SCORE_LABEL: "pass" if verdict.satisfied else "fail",
        genai.GEN_AI_EVALUATION_EXPLANATION: verdict.reasoning,
        "evalsite.result": "criterion",
        "evalsite.criterion.key": verdict.criterion_key,
        "evalsite.criterion.id": str(verdict.criterion_id) if verdict.criterion_id else None,
        "evalsite.criterion.required": verdict.required,
        "evalsite.criterion.position": verdict.position,
    }


def _rubric(evaluation: Evaluation) -> dict[str, Any]:
    label = None if evaluation.passed is None else ("pass" if evaluation.passed else "fail")
    name = evaluation.rubric.name if evaluation.rubric else "evalsite.rubric"
    return {
        genai.GEN_AI_EVALUATION_NAME: _cut(name),
        genai.GEN_AI_EVALUATION_SCORE_VALUE: evaluation.score,
        genai.GEN_AI_EVALUATION_SCORE_LABEL: label,
        genai.GEN_AI_EVALUATION_EXPLANATION: evaluation.reason,
        "evalsite.result": "rubric",
    }


def _alignment(evaluation: Evaluation) -> dict[str, Any]:
    return {
        genai.GEN_AI_EVALUATION_NAME: ALIGNMENT_NAME,
        genai.GEN_AI_EVALUATION_SCORE_VALUE: evaluation.score,
        genai.GEN_AI_EVALUATION_SCORE_LABEL: evaluation.band,
        genai.GEN_AI_EVALUATION_EXPLANATION: evaluation.reason,
        "evalsite.result": "alignment",
        "evalsite.alignment.user_score": evaluation.user_score,
        "evalsite.alignment.system_score": evaluation.system_score,
    }


def _linked(metadata: Any) -> Context:
    """The original agent span as the events' context, when the run's metadata names it; else
    an empty context (never the worker's own current span)."""
    if not isinstance(metadata, dict):
        return Context()
    trace_id, span_id = metadata.get("trace_id"), metadata.get("span_id")
    if not (isinstance(trace_id, str) and isinstance(span_id, str)):
        return Context()
    if not (_TRACE_ID.match(trace_id) and _SPAN_ID.match(span_id)):
        return Context()
    if int(trace_id, 16) == 0 or int(span_id, 16) == 0:
        return Context()
    span = SpanContext(
        int(trace_id, 16),
        int(span_id, 16),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return set_span_in_context(NonRecordingSpan(span), Context())


def _present(attributes: dict[str, Any]) -> dict[str, Any]:
    """Attributes with a value (OpenTelemetry has no null; an empty text says nothing)."""
    return {k: v for k, v in attributes.items() if v is not None and v != ""}


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= NAME_MAX else text[: NAME_MAX - 1] + "…"
