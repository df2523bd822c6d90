"""Webhook signing secrets are encrypted at rest (teams.crypto), like judge connection keys."""

from django.db import migrations, models


def encrypt_existing(apps, schema_editor):
    from teams.crypto import secret_encrypt

    Team = apps.get_model("teams", "Team")
    for team in Team.objects.exclude(webhook_secret_encrypted="").only("pk", "webhook_secret_encrypted"):
        team.webhook_secret_encrypted = secret_encrypt(team.webhook_secret_encrypted)
        team.save(update_fields=["webhook_secret_encrypted"])


def decrypt_existing(apps, schema_editor):
    from teams.crypto import secret_decrypt

    Team = apps.get_model("teams", "Team")
    for team in Team.objects.exclude(webhook_secret_encrypted="").only("pk", "webhook_secret_encrypted"):
        team.webhook_secret_encrypted = secret_decrypt(team.webhook_secret_encrypted)
        team.save(update_fields=["webhook_secret_encrypted"])


class Migration(migrations.Migration):
    dependencies = [("teams", "0002_judge_connection")]

    operations = [
        migrations.RenameField("team", "webhook_secret", "webhook_secret_encrypted"),
        migrations.AlterField(
            model_name="team",
            name="webhook_secret_encrypted",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="team",
            name="webhook_secret_rotated_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(encrypt_existing, decrypt_existing),
    ]
