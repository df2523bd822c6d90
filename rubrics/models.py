import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from teams.models import Team


class Strategy(models.TextChoices):
    BATCHED = "batched", "Batched (one judge call per run)"
    INDEPENDENT = "independent", "Independent (one judge call per criterion)"


class AlignmentMode(models.TextChoices):
    OFF = "off", "Off"
    USER = "user", "User prompt"
    SYSTEM = "system", "System prompt"
    BOTH = "both", "Both"


class JudgeView(models.TextChoices):
    """What of a run the judge sees (SCORING.md "Judge views")."""

    FINAL = "final", "Final answer (task, system prompt, last answer)"
    CONVERSATION = "conversation", "Conversation (every user and assistant turn)"
    TRAJECTORY = "trajectory", "Trajectory (every turn and tool call with its result)"


# The rendered run's token budget when a version does not set one: sized for small judges.
DEFAULT_RUN_TOKEN_BUDGET = 24_000


class Rubric(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="rubrics")
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100)
    description = models.TextField(blank=True)
    # Where judge calls go: a connection of the same team, or null for the deployment's judge.
    # RESTRICT: a connection is deleted only once no rubric chooses it (teams.services), but
    # deleting the team deletes both.
    judge_connection = models.ForeignKey(
        "teams.JudgeConnection",
        null=True,
        blank=True,
        on_delete=models.RESTRICT,
        related_name="rubrics",
    )
    # Blank means the connection's model, else the deployment default (EVALSITE_JUDGE_MODEL).
    judge_model = models.CharField(max_length=200, blank=True)
    # temperature, max_tokens, timeout: validated by rubrics.services.
    judge_params = models.JSONField(default=dict, blank=True)
    scale = models.FloatField(default=1.0)
    strategy = models.CharField(max_length=12, choices=Strategy.choices, default=Strategy.BATCHED)
    alignment_mode = models.CharField(
        max_length=8, choices=AlignmentMode.choices, default=AlignmentMode.OFF
    )
    # {"user": {intent, requirements, completeness, appropriateness}, "system": {...},
    #  "user_share": 0.7}; null = the defaults of SCORING.md.
    alignment_weights = models.JSONField(null=True, blank=True)
    current_version = models.ForeignKey(
        "RubricVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    archived_at = models.DateTimeField(null=True, blank=True)
    # True: the rubric's examples without a version are the example set of its draft (what
    # the next version takes); False: the draft's examples are the current version's.
    examples_draft = models.BooleanField(default=False)
    # The publishing gate ({"min_agreement", "min_kappa", "max_drop"}, each a 0..1 float or
    # null); null: no gate, a saved draft is published at once. Set by reviews.services.gate.
    gate = models.JSONField(null=True, blank=True)
    # Sampling at ingest (judge_engine.sampling): the share of runs judged, 0-100 %, and
    # filters a run must match to be judged at all ({"agents", "metadata_equals",
    # "metadata_contains", "context_has"}, validated by rubrics.services).
    sample_rate = models.FloatField(default=100.0)
    sample_filters = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "slug"], name="rubric_unique_team_slug"),
            models.CheckConstraint(condition=Q(scale__gte=0), name="rubric_scale_non_negative"),
            models.CheckConstraint(
                condition=Q(sample_rate__gte=0) & Q(sample_rate__lte=100),
                name="rubric_sample_rate_percent",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class RubricVersion(models.Model):
    """An immutable snapshot of a rubric's criteria and of what the judge sees of a run;
    every verdict points at one."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    judge_view = models.CharField(max_length=12, choices=JudgeView.choices, default=JudgeView.FINAL)
    # At most this many tokens of the rendered run (counted for the judge model); over it the
    # rendering elides middle steps with a marker (judge_engine.render).
    run_token_budget = models.PositiveIntegerField(default=DEFAULT_RUN_TOKEN_BUDGET)
    note = models.CharField(max_length=300, blank=True)
    # Markdown the judge prompt shows in its own block after the fixed rules (judge_engine).
    instructions = models.TextField(blank=True)
    # False for a draft (rubrics.drafts): judged only in comparisons, never a rubric's current
    # version until published.
    published = models.BooleanField(default=True)
    # How a draft got past the publishing gate, shown in the version history: "passed", or
    # "published over the gate by <who>: <reason>".
    gate_note = models.CharField(max_length=600, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["rubric", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["rubric", "number"], name="version_unique_number"),
            models.CheckConstraint(condition=Q(number__gte=1), name="version_number_positive"),
            models.CheckConstraint(
                condition=Q(run_token_budget__gte=1000), name="version_run_token_budget_min"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rubric} v{self.number}"


class Criterion(models.Model):
    """One criterion of one version. ``key`` is stable across versions of the same rubric:
    rewording a criterion keeps its key, so diffs and per-criterion statistics follow it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    version = models.ForeignKey(RubricVersion, on_delete=models.CASCADE, related_name="criteria")
    key = models.CharField(max_length=32)
    position = models.PositiveIntegerField()
    description = models.TextField()
    required = models.BooleanField(default=True)

    class Meta:
        ordering = ["version", "position"]
        constraints = [
            models.UniqueConstraint(fields=["version", "key"], name="criterion_unique_key"),
            models.UniqueConstraint(
                fields=["version", "position"], name="criterion_unique_position"
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.key}] {self.description[:60]}"


class CriterionExample(models.Model):
    """A graded example of one criterion ("teach the judge"): an excerpt of a run, the correct
    verdict and the reason. Each version holds its own copies (versions never change); rows
    without a version are the rubric's draft when ``Rubric.examples_draft`` is set."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="examples")
    version = models.ForeignKey(
        RubricVersion, null=True, blank=True, on_delete=models.CASCADE, related_name="examples"
    )
    criterion_key = models.CharField(max_length=32)
    position = models.PositiveIntegerField()
    excerpt = models.TextField()
    satisfied = models.BooleanField()
    reason = models.TextField()
    # The run it was taken from; deleting the run keeps the example and its stored excerpt.
    run = models.ForeignKey(
        "runs.AgentRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position"]
        indexes = [
            # A version's examples in order (judge prompts, editor, agreement exclusions).
            models.Index(fields=["version", "position"], name="example_version_order"),
            # The rubric's draft examples (version null).
            models.Index(fields=["rubric", "version"], name="example_rubric_draft"),
        ]

    def __str__(self) -> str:
        return f"[{self.criterion_key}] {self.excerpt[:40]}"


class WorkingCopy(models.Model):
    """A user's unsaved edits in a rubric's editor ("unsaved edits"): the editor form's state,
    autosaved as they type so a reload or a closed tab loses nothing. One per (rubric, user),
    never shared and never judged; saving a version or discarding the edits deletes it. Not a
    draft version (``RubricVersion.published=False``, rubrics.drafts): nothing here is a
    version until the editor saves one.

    The New rubric page's form is kept the same way before the rubric exists: a copy without
    a rubric, one per (team, user) (rubrics.new_rubric_copy); creating the rubric deletes it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    rubric = models.ForeignKey(
        Rubric, null=True, blank=True, on_delete=models.CASCADE, related_name="working_copies"
    )
    # Set only for the New rubric form's copy (no rubric yet): the team it is created in.
    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # The version the editor form was loaded from; the restore notice says when a newer one
    # has become current since.
    base_version = models.ForeignKey(
        RubricVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # {"criteria": [{"key", "description", "required"}], "note", "import_text", "judge_view",
    #  "run_token_budget", "instructions"}: validated by rubrics.working_copy when written;
    # without a rubric {"name", "description", "criteria_text", "judge_view",
    # "run_token_budget"}, validated by rubrics.new_rubric_copy.
    state = models.JSONField()
    # A new value at every save: the editor page sends back the one it was rendered with, and
    # an autosave from a page older than the copy (another tab, a page restored by the back
    # button) is refused instead of overwriting newer edits (rubrics.working_copy).
    revision = models.UUIDField(default=uuid.uuid4)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # Also the index of the one lookup: this user's copy of this rubric.
            models.UniqueConstraint(fields=["rubric", "user"], name="working_copy_one_per_user"),
            models.UniqueConstraint(
                fields=["team", "user"],
                condition=Q(rubric__isnull=True),
                name="working_copy_one_new_rubric_per_user",
            ),
            models.CheckConstraint(
                condition=Q(rubric__isnull=False) | Q(team__isnull=False),
                name="working_copy_rubric_or_team",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rubric} working copy of {self.user_id}"
