"""Re-encrypt stored secrets with the first key of EVALSITE_SECRETS_KEY (after a rotation)."""

from django.core.management.base import BaseCommand, CommandError

from teams.services import secrets_reencrypt


class Command(BaseCommand):
    help = (
        "Re-encrypt judge connection keys and webhook signing secrets with the first key of "
        "EVALSITE_SECRETS_KEY. Put the new key first, keep the old one after it, run this, then "
        "drop the old key."
    )

    def handle(self, *args, **options):
        done, unreadable = secrets_reencrypt()
        self.stdout.write(f"re-encrypted {done} secret(s)")
        if unreadable:
            raise CommandError(
                f"{unreadable} secret(s) could not be decrypted with any configured key: "
                "add the key they were written with to EVALSITE_SECRETS_KEY and run again"
            )
