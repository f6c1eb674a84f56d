import hashlib
import secrets

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A bearer token for /api/v1/. Only its SHA-256 is stored; the token is shown once."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    digest = models.CharField(max_length=64, unique=True)
    label = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"token for {self.user}"

    @staticmethod
    def hash(raw: str) -> str:
        return hashlib.sha256(raw.encode()).hexdigest()

    @classmethod
    def issue(cls, user, label: str = "") -> str:
        raw = "es_" + secrets.token_urlsafe(32)
        cls.objects.create(user=user, digest=cls.hash(raw), label=label)
        return raw


class PasswordCheckFailures(models.Model):
    """Wrong current passwords typed on the password change page, one row per user: the
    page's lock (services.user_password_check). In the database rather than the cache: the
    embedded mode runs several web processes, each with its own cache."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    failures = models.PositiveIntegerField(default=0)
    last_failure_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.failures} wrong current passwords by {self.user_id}"
