import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class Team(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=60, unique=True)
    # Re-score batches estimated above this cost ask for confirmation in the UI.
    confirm_cost_above = models.DecimalField(max_digits=10, decimal_places=2, default=5)
    # When a re-score's cost is unknown (no price for its judge), batches estimated above this
    # many tokens ask for confirmation instead.
    confirm_tokens_above = models.PositiveBigIntegerField(default=200_000)
    # Judge prices that override litellm's table, USD per million tokens, by litellm model
    # string: {"openai/my-judge": {"input": 0.15, "output": 0.6}} (judge_engine.pricing).
    judge_prices = models.JSONField(default=dict, blank=True)
    # Signs batch webhooks (HMAC-SHA256). Encrypted at rest (teams.crypto); an owner sees it
    # once, when it is made (teams.services.team_webhook_secret_rotate).
    webhook_secret_encrypted = models.TextField(blank=True)
    webhook_secret_rotated_at = models.DateTimeField(null=True, blank=True)
    # Runs older than this many days are deleted with their evaluations, verdicts and labels
    # (reviews.services.retention, a beat task); NULL: kept forever.
    retention_days = models.PositiveIntegerField(null=True, blank=True)
    # Retention also deletes protected runs (golden set, human labels, judge examples).
    retention_delete_protected = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    EDITOR = "editor", "Editor"
    VIEWER = "viewer", "Viewer"


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.EDITOR)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"

    @property
    def can_edit(self) -> bool:
        return self.role in (Role.OWNER, Role.EDITOR)


class ApiKey(models.Model):
    """A team-scoped API key. Only a SHA-256 of the secret is stored; the prefix is shown."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16)
    hashed_key = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class JudgeConnection(models.Model):
    """A judge endpoint and credential a team owns: the only way a team's judge calls leave
    for an address of its choosing (the deployment's key only ever goes to the deployment's
    judge). The key is stored encrypted (teams.crypto) and never shown again: ``key_hint`` is
    its last four characters."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="judge_connections")
    name = models.CharField(max_length=100)
    # A litellm model string, e.g. openai/gpt-4o-mini.
    model = models.CharField(max_length=200)
    # Blank: the provider's default endpoint.
    api_base = models.CharField(max_length=500, blank=True)
    key_ciphertext = models.TextField(blank=True)
    key_hint = models.CharField(max_length=8, blank=True)
    # temperature, max_tokens, timeout and OpenAI request body fields: teams.services validates.
    params = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="judge_connection_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<JudgeConnection {self.id} {self.name!r}>"

    @property
    def has_key(self) -> bool:
        return bool(self.key_ciphertext)


class TeamInvite(models.Model):
    """An owner's invitation of an email address that has no account yet. Only a SHA-256 of
    the link's token is stored: the owner sees the link once, when it is made (and it is
    mailed when the deployment has email settings)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invites")
    # Stored lower-cased: an account made from the invite gets this address.
    email = models.EmailField(max_length=254)
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.EDITOR)
    # The unique index serves the invite page's lookup by token.
    hashed_token = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One open invite per address and team (inviting again replaces it); the index
            # also serves team settings' list of a team's open invites.
            models.UniqueConstraint(
                fields=["team", "email"],
                condition=models.Q(accepted_at__isnull=True, revoked_at__isnull=True),
                name="team_invite_one_open_per_email",
            ),
            models.CheckConstraint(
                condition=models.Q(role__in=Role.values), name="team_invite_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.email} to {self.team} ({self.role})"

    @property
    def is_open(self) -> bool:
        """Neither accepted nor revoked (it may still have expired)."""
        return self.accepted_at is None and self.revoked_at is None

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()


class OtlpProtocol(models.TextChoices):
    PROTOBUF = "http/protobuf", "OTLP/HTTP protobuf"
    JSON = "http/json", "OTLP/HTTP JSON"


class OtelExport(models.Model):
    """Where a team's verdicts go as OpenTelemetry ``gen_ai.evaluation.result`` events
    (runs/otel/export.py): an OTLP/HTTP logs endpoint, checked by the outbound guard when saved
    and on every send. The headers (often an API key) are stored encrypted (teams.crypto) and
    never shown again: answers name them only. The rest is the export's state as the team sees
    it, written by the exporter."""

    team = models.OneToOneField(
        Team, on_delete=models.CASCADE, primary_key=True, related_name="otel_export"
    )
    endpoint = models.CharField(max_length=500)
    protocol = models.CharField(
        max_length=16, choices=OtlpProtocol.choices, default=OtlpProtocol.PROTOBUF
    )
    headers_ciphertext = models.TextField(blank=True)
    header_names = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    # What the exporter did: counts of events, not of evaluations.
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    sent_events = models.PositiveBigIntegerField(default=0)
    # Events given up on: the receiver refused them for good, or they ran out of attempts.
    failed_events = models.PositiveBigIntegerField(default=0)
    # Evaluations dropped unsent, oldest first, because more than
    # EVALSITE_OTEL_EXPORT_MAX_PENDING were waiting.
    dropped_evaluations = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(protocol__in=OtlpProtocol.values),
                name="otel_export_protocol_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.team} → {self.endpoint}"

    def __repr__(self) -> str:  # never the headers
        return f"<OtelExport {self.team_id} {self.protocol}>"
