"""Rubrics that carried a judge ``api_base`` get a judge connection instead.

One connection per (team, api_base, model), named after the host, WITHOUT a key: the
deployment's key must not follow a team's address, so owners add the key to the connection
(team settings). The rubric's ``judge_params`` lose ``api_base``; its judge_model stays.
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


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics", "0002_judge_connection"),
        ("teams", "0002_judge_connection"),
    ]

    operations = [migrations.RunPython(move_api_bases, migrations.RunPython.noop)]
