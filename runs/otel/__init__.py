"""OpenTelemetry ingest: OTLP/HTTP trace exports (JSON or protobuf) following the GenAI
semantic conventions become agent runs.

decode.py reads an export into plain spans; models.py stages them (idempotent on trace id +
span id) and keeps each team's default rubric per ``service.name``; messages.py turns GenAI
messages and the older per-message events into Chat Completions messages; convert.py turns an
agent span and its descendants into one run payload; services.py stages an export and answers
it, and sweeps; assemble.py makes runs and merges late spans into them; rejections.py says and
records what made no run; service_rubrics.py keeps the per-service defaults.

The other direction: export.py owes finished evaluations to a team's own OTLP endpoint (an
outbox drained by a task), export_events.py makes their ``gen_ai.evaluation.result`` events
with the OpenTelemetry SDK and export_send.py sends them with its OTLP/HTTP exporters.
"""
