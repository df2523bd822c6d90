"""Rubrics that carried a judge ``api_base`` get a judge connection instead.

One connection per (team, api_base, model), named after the host, WITHOUT a key: the
deployment's key must not follow a team's address, so owners add the key to the connection
(team settings). The rubric's ``judge_params`` lose ``api_base``; its judge_model stays.

Evaluations still pending were frozen with that api_base: they are judged through the new
connection when it is the same address, and otherwise fail with a clear error when their turn
comes (``legacy_api_base``, rubrics/judging.py): never with the deployment's key.
"""

from urllib.parse import urlsplit

from django.conf import settings
from django.db import migrations


def _name(host: str, model: str, taken: set[str]) -> str:
    for candidate in (host, f"{host} ({model})"):
        if candidate[:100] not in taken:
            return candidate[:100]
    n = 2
    while f"{host[:90]} {n}" in taken:
        n += 1
    return f"{host[:90]} {n}"


def move_api_bases(apps, schema_editor):
    Rubric = apps.get_model("rubrics", "Rubric")
    JudgeConnection = apps.get_model("teams", "JudgeConnection")
    made = {}
    taken = {}
    rubrics = Rubric.objects.filter(judge_params__has_key="api_base").order_by("created_at")
    for rubric in rubrics:
        params = dict(rubric.judge_params or {})
        api_base = str(params.pop("api_base", "") or "").strip()
        if api_base:
            model = rubric.judge_model or settings.EVALSITE_JUDGE_MODEL or "openai/default"
            key = (rubric.team_id, api_base, model)
            if key not in made:
                names = taken.setdefault(
                    rubric.team_id,
                    set(
                        JudgeConnection.objects.filter(team_id=rubric.team_id).values_list(
                            "name", flat=True
                        )
                    ),
                )
                host = urlsplit(api_base).hostname or "judge"
                name = _name(host, model, names)
                names.add(name)
                made[key] = JudgeConnection.objects.create(
                    team_id=rubric.team_id, name=name, model=model[:200], api_base=api_base[:500]
                )
            rubric.judge_connection = made[key]
        rubric.judge_params = params
        rubric.save(update_fields=["judge_params", "judge_connection"])
    _move_pending(apps)


def _move_pending(apps):
    Evaluation = apps.get_model("runs", "Evaluation")
    deployment = settings.EVALSITE_JUDGE_API_BASE or None
    pending = Evaluation.objects.filter(
        status__in=("queued", "running"), judge_config__has_key="api_base"
    ).select_related("rubric__judge_connection")
    for evaluation in pending.iterator():
        config = dict(evaluation.judge_config)
        frozen = config.get("api_base")
        if not frozen or frozen == deployment or "connection" in config:
            continue
        connection = evaluation.rubric.judge_connection if evaluation.rubric_id else None
        if connection is not None and connection.api_base == frozen:
            config["connection"] = str(connection.pk)
        else:
            config["legacy_api_base"] = frozen
        config.pop("api_base")
        Evaluation.objects.filter(pk=evaluation.pk).update(judge_config=config)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics", "0002_judge_connection"),
        ("teams", "0002_judge_connection"),
        ("runs", "0006_batch_request_hash"),
    ]

    operations = [migrations.RunPython(move_api_bases, migrations.RunPython.noop)]
