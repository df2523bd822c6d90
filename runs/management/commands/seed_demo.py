"""`manage.py seed_demo`: a demo team, a local user, two rubrics and a few dozen runs.

Idempotent: rubrics are found by slug and runs by external_id, so running it twice changes
nothing. Runs are ingested through the real service, so a running worker scores them.
"""

import random
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from rubrics.models import Rubric
from rubrics.services import rubric_create, rubric_set_judge_view
from runs.models import AgentRun, CriterionVerdict, Evaluation, RunTool
from runs.payloads import RunPayload
from runs.services import run_ingest
from runs.services.rollups import rollups_rebuild
from teams.models import Team
from teams.services import membership_set, team_create

SUPPORT_CRITERIA = """\
# Support reply
- Confirms the "order number" back to the customer
- Explains the "refund" timeline
- Apologises for the trouble ("sorry")
- [optional] Offers a "discount" code for next time
- [optional] Signs off as "Acme Support"
"""

TOOL_CRITERIA = """\
- Looked the order up ("tool call lookup_order") before refunding
- Issued the refund ("tool call issue_refund")
- Tells the customer the refund "is on its way"
"""
TOOL_SYSTEM = "You are Acme's refund agent. Look the order up before you refund anything."


def _call(call_id: str, name: str, arguments: str) -> dict:
    function = {"name": name, "arguments": arguments}
    return {"id": call_id, "type": "function", "function": function}


def tool_run(i: int, rng: random.Random) -> dict:
    """A refund agent's run with tool calls (OpenAI Chat Completions shape): some skip the
    lookup, some hit a failing tool and retry, some never refund."""
    n = 2000 + i
    order = f'{{"order_id": "A{n}"}}'
    output: list[dict] = []  # fmt: skip
    if rng.random() < 0.75:
        output += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [_call("c1", "lookup_order", order)],
            },
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": f'{{"order": "A{n}", "status": "paid", "total": 42.5}}',
            },
        ]
    if rng.random() < 0.3:
        output += [
            # Anthropic content blocks, mixed in: a failing call the agent retries below.
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "c2",
                        "name": "issue_refund",
                        "input": {"order_id": f"A{n}"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "c2",
                        "is_error": True,
                        "content": "payment service unavailable (503)",
                    },
                ],
            },
        ]
    refunded = rng.random() < 0.85
    if refunded:
        output += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [_call("c3", "issue_refund", order)],
            },
            {
                "role": "tool",
                "tool_call_id": "c3",
                "content": '{"refund_id": "R-77", "status": "issued"}',
            },
        ]
    answer = (
        "Your refund is on its way: 3 to 5 business days." if refunded else "I have passed this on."
    )
    output.append({"role": "assistant", "content": answer})
    return {
        "external_id": f"demo-tools-{i:03d}",
        "agent": "refund-agent",
        "input": {"messages": [
            {"role": "system", "content": TOOL_SYSTEM},
            {"role": "user", "content": f"Please refund order A{n}, it never arrived."},
        ]},
        "output": output,
        "expected_output": f"Order A{n} is looked up, refunded, and the customer told it is on its way.",
    }  # fmt: skip


CODE_CRITERIA = [
    {"description": 'Names the function "find_duplicates"', "required": True},
    {"description": 'Mentions that "tests" cover the change', "required": True},
    {"description": 'States the time "complexity"', "required": True},
]

SUPPORT_SYSTEM = (
    "You are Acme's support agent. Be brief and kind. Always confirm the order number, "
    "explain refund timelines, and sign off as Acme Support."
)
QUESTIONS = [
    "Where is my refund for order {n}? It has been two weeks.",
    "My parcel for order {n} arrived broken. What now?",
    "Can I return order {n}? The size is wrong.",
    "I was charged twice for order {n}.",
]
PIECES = [
    "I'm sorry about the trouble.",
    "Your order number {n} is confirmed.",
    "The refund reaches your card within 5 business days.",
    "Here is a discount code for next time: THANKS10.",
    "— Acme Support",
]
CODE_ANSWERS = [
    "find_duplicates now uses a set; tests cover empty and repeated input. Time complexity is O(n).",
    "I renamed it to find_duplicates and the complexity drops to O(n).",
    "Added tests for the dedupe helper; it walks the list once.",
    "find_duplicates returns repeated items; tests pass.",
]


DEMO_DAYS = 30  # runs are spread over the last 30 days, so every 30-day chart shows a trend


def days_ago(i: int, count: int) -> float:
    """Where the i-th of ``count`` demo runs lands: evenly from 29.5 days ago to now, oldest
    first, at a fixed fraction of a day per run (the same spread on every seed)."""
    if count <= 1:
        return 0.0
    return (DEMO_DAYS - 0.5) * (count - 1 - i) / (count - 1) + (i % 5) * 0.07


class Command(BaseCommand):
    help = "Create the demo team, user, rubrics and runs (idempotent)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--runs", type=int, default=36, help="support runs to create")
        parser.add_argument("--password", default="demo", help="password of user 'demo'")

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            team = Team.objects.filter(slug="demo").first() or team_create(name="Demo", slug="demo")
            user = self._user(options["password"])
            membership_set(team=team, user=user, role="owner")
            support = self._demo_rubric(
                team, "Support reply", "support-reply", SUPPORT_CRITERIA, "both"
            )
            code = self._demo_rubric(
                team, "Code review answer", "code-review", CODE_CRITERIA, "off"
            )
            tools = self._demo_rubric(
                team, "Refund agent (tool use)", "refund-tools", TOOL_CRITERIA, "off"
            )
            if tools.current_version and tools.current_version.judge_view == "final":
                rubric_set_judge_view(rubric=tools, judge_view="trajectory")
        created = self._support_runs(team, support, options["runs"])
        created += self._code_runs(team, code)
        rng = random.Random(11)
        for i in range(12):
            payload = tool_run(i, rng) | {"rubric": tools.slug}
            created += self._ingest(team, payload, days_ago(i, 12))
        # Ingest counted the runs on today's rollup; their dates moved back after it.
        rollups_rebuild(team=team)
        self.stdout.write(
            self.style.SUCCESS(
                f"demo ready: team 'demo', user 'demo' / password '{options['password']}', "
                f"{created} new run(s) queued for scoring"
            )
        )

    def _user(self, password: str):
        User = get_user_model()
        user = User.objects.filter(username="demo").first()
        if user is None:
            user = User.objects.create_user(username="demo", password=password)
        return user

    def _demo_rubric(
        self, team: Team, name: str, slug: str, criteria: Any, alignment: str
    ) -> Rubric:
        existing = Rubric.objects.filter(team=team, slug=slug).first()
        if existing is not None:
            return existing
        return rubric_create(
            team=team, name=name, slug=slug, criteria=criteria, alignment_mode=alignment,
            description=f"Demo rubric: {name.lower()}.",
        )  # fmt: skip

    def _support_runs(self, team: Team, rubric: Rubric, count: int) -> int:
        rng = random.Random(7)  # the same demo data every time
        created = 0
        for i in range(count):
            n = 1000 + i
            kept = [p for p in PIECES if rng.random() < 0.75] or PIECES[:1]
            payload = {
                "external_id": f"demo-support-{i:03d}",
                "agent": rng.choice(["support-bot", "support-bot-v2"]),
                "rubric": rubric.slug,
                "input": {"messages": [
                    {"role": "system", "content": SUPPORT_SYSTEM},
                    {"role": "user", "content": rng.choice(QUESTIONS).format(n=n)},
                ]},
                "output": " ".join(kept).format(n=n),
                "metadata": {"channel": rng.choice(["email", "chat"]), "locale": "en"},
            }  # fmt: skip
            created += self._ingest(team, payload, days_ago(i, count))
        return created

    def _code_runs(self, team: Team, rubric: Rubric) -> int:
        created = 0
        answers = CODE_ANSWERS * 3
        for i, answer in enumerate(answers):
            payload = {
                "external_id": f"demo-code-{i:03d}",
                "agent": "code-assistant",
                "rubric": rubric.slug,
                "input": {"messages": [
                    {"role": "user", "content": "Review my dedupe helper and make it faster."},
                ]},
                "output": answer,
            }  # fmt: skip
            created += self._ingest(team, payload, days_ago(i, len(answers)))
        return created

    def _ingest(self, team: Team, payload: dict, ago: float) -> int:
        """Ingest one run; a new one is dated ``ago`` days back (with its evaluations and the
        rows that copy its date) before its judging is enqueued on commit. A run seeded
        before keeps its date, so seeding again changes nothing. The rollups, counted on the
        day of ingest, are rebuilt once every run is in (``handle``)."""
        with transaction.atomic():
            run, created = run_ingest(team=team, payload=RunPayload.model_validate(payload))
            if created:
                when = timezone.now() - timedelta(days=ago)
                AgentRun.objects.filter(pk=run.pk).update(created_at=when)
                Evaluation.objects.filter(run=run).update(created_at=when)
                CriterionVerdict.objects.filter(run=run).update(run_created_at=when)
                RunTool.objects.filter(run=run).update(run_created_at=when)
        return int(created)
