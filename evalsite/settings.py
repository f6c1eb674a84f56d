"""One env-driven settings module.

Defaults give the embedded mode (SQLite in ./data, a serverless Celery broker on the
filesystem). Production sets DATABASE_URL, REDIS_URL, SECRET_KEY, ALLOWED_HOSTS, ...
"""

import os
import secrets
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


BOOL_WORDS = dict.fromkeys(("1", "true", "yes", "on"), True) | dict.fromkeys(
    ("0", "false", "no", "off"), False
)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in BOOL_WORDS:
        return BOOL_WORDS[value]
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0/true/false), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [part.strip() for part in raw.split(",") if part.strip()]


def database_from_url(url: str) -> dict:
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql"}:
        raise ImproperlyConfigured(
            f"DATABASE_URL must be postgres://..., got scheme {parsed.scheme!r}"
        )
    options = dict(parse_qsl(parsed.query))
    # Server-side parameter binding, so psycopg prepares a statement once a connection has
    # run it `prepare_threshold` times: PostgreSQL then plans each of the review loop's
    # queries once per connection instead of on every request (planning was over half of
    # the database's CPU per review; docs/benchmarks-history.md). Both can be set in the URL's
    # query string, e.g. ?server_side_binding=false for a pooler that cannot keep
    # prepared statements.
    binding = options.get("server_side_binding", "true").strip().lower()
    threshold = options.get("prepare_threshold", "5").strip()
    if binding not in BOOL_WORDS or not threshold.isdigit():
        raise ImproperlyConfigured(
            "DATABASE_URL: server_side_binding must be true/false and prepare_threshold a "
            f"number, got {binding!r} and {threshold!r}"
        )
    options["server_side_binding"] = BOOL_WORDS[binding]
    options["prepare_threshold"] = int(threshold)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": parsed.hostname or "",
        "PORT": str(parsed.port or ""),
        # Persistent connections: each gunicorn/celery process keeps its connection open.
        "CONN_MAX_AGE": env_int("DB_CONN_MAX_AGE", 60),
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": options,
        "TEST": {"NAME": env_str("TEST_DATABASE_NAME") or None},
    }


DEBUG = env_bool("DEBUG", False)
DATA_DIR = Path(env_str("EVALSITE_DATA_DIR", str(BASE_DIR / "data")))
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key:
        return key
    # Embedded mode: a key generated once and kept beside the SQLite database.
    path = DATA_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
# No "testserver" here: the test runner adds it (setup_test_environment), a deployment never
# answers to it.
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "csp",
    "axes",
    "evalsite",
    "tasks",
    "reviews.apps.ReviewsConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "evalsite.views.refuse_nul_characters",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "evalsite.urls"
WSGI_APPLICATION = "evalsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "evalsite.roles.nav_context",
                "evalsite.outage.outage_context",
            ],
        },
    }
]

DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": database_from_url(DATABASE_URL)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "evalsite.sqlite3",
            # WAL + a busy timeout let the web process and the Celery worker share the file.
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "evalsite.cache.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Campaign reports (seconds of statistics each): shared by every process, so one computed by
# the worker's warm-up job (or another web process) serves the dashboards at once. Redis when
# there is one; else files in the data directory, which every local process reads.
CACHES["reports"] = (
    CACHES["default"]
    if REDIS_URL
    else {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(DATA_DIR / "cache" / "reports"),
        "OPTIONS": {"MAX_ENTRIES": 200},
    }
)
# Sessions are read from the shared cache (Redis) with the database behind it, so a page view
# does not query the session table. Without a shared cache, the database alone: a cache per
# process would keep a session alive in the other processes after a logout.
SESSION_ENGINE = (
    "django.contrib.sessions.backends.cached_db"
    if REDIS_URL
    else "django.contrib.sessions.backends.db"
)

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "evalsite.roles.RolesModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Login throttling: lock a username+IP pair after repeated failures, stored in the database.
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = 0.25  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked.html"
AXES_VERBOSE = False
# Behind the TLS proxy every request comes from the proxy's address: the address it forwards.
AXES_CLIENT_IP_CALLABLE = "evalsite.views.login_client_ip"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if (STATIC_ROOT / "staticfiles.json").exists()
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Without collectstatic (embedded mode, tests) WhiteNoise serves straight from static/.
WHITENOISE_USE_FINDERS = not (STATIC_ROOT / "staticfiles.json").exists()


def _static_headers(headers, path: str, url: str) -> None:
    # WhiteNoise answers before the CSP and clickjacking middlewares run: a static file (the
    # SVG favicon opened on its own, say) gets the pages' policy and frame refusal too.
    from csp.utils import build_policy

    headers["Content-Security-Policy"] = build_policy()
    headers["X-Frame-Options"] = X_FRAME_OPTIONS


WHITENOISE_ADD_HEADERS_FUNCTION = _static_headers
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# Uploads: the intake checks the size itself and reports it; keep Django's limits above ours.
TESTSET_MAX_BYTES = env_int("TESTSET_MAX_BYTES", 50 * 1024 * 1024)
# Images in test cases (tasks/images/): each at most this many bytes and pixels; a zip upload
# may inflate to at most TESTSET_ZIP_MAX_BYTES in all (past it: refused as a zip bomb).
TASK_IMAGE_MAX_BYTES = env_int("TASK_IMAGE_MAX_BYTES", 5 * 1024 * 1024)
TASK_IMAGE_MAX_PIXELS = env_int("TASK_IMAGE_MAX_PIXELS", 25_000_000)
TESTSET_ZIP_MAX_BYTES = env_int("TESTSET_ZIP_MAX_BYTES", 200 * 1024 * 1024)
# Uploaded files (test-set images) through Django's storage API: local files here in the
# embedded mode; set STORAGES["default"] to any backend in production.
MEDIA_ROOT = Path(env_str("EVALSITE_MEDIA_ROOT", str(DATA_DIR / "media")))
# Review records: the largest file import_reviews, the dashboard form and the API's multipart
# field take (read whole into memory).
REVIEWS_IMPORT_MAX_BYTES = env_int("REVIEWS_IMPORT_MAX_BYTES", 100 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = TESTSET_MAX_BYTES + 1024 * 1024

# Security. Production (DEBUG off) gets secure cookies and HSTS; `check --deploy` is clean.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", SECURE_HSTS_SECONDS > 0)
BEHIND_TLS_PROXY = env_bool("BEHIND_TLS_PROXY", False)
if BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# How many proxies in front of the site append the address they saw to X-Forwarded-For; the
# client's address is the entry that many from the right (entries further left are whatever
# the client sent). 0: the header is ignored, REMOTE_ADDR is the client (the login lock
# counts failures per address: a trusted header anyone can send would get around it).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
if TRUSTED_PROXY_COUNT < 0:
    raise ImproperlyConfigured(f"TRUSTED_PROXY_COUNT must be 0 or more, got {TRUSTED_PROXY_COUNT}")
SILENCED_SYSTEM_CHECKS = env_list("SILENCED_SYSTEM_CHECKS", [])

# Content-Security-Policy: everything from our own origin, no inline script, no eval.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    }
}

# Celery. Embedded mode uses kombu's filesystem transport: real worker processes, no server.
CELERY_BROKER_DIR = DATA_DIR / "broker"
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # Above every time limit and retry countdown, so a lost worker's jobs come back.
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
    }
else:
    (CELERY_BROKER_DIR / "out").mkdir(parents=True, exist_ok=True)
    (CELERY_BROKER_DIR / "processed").mkdir(parents=True, exist_ok=True)
    # The host is ignored by this transport, but without one kombu warns "No hostname was
    # supplied" on every connection it clones (each enqueue, e.g. `generate`).
    CELERY_BROKER_URL = "filesystem://localhost/"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_DIR / "out"),
        "data_folder_out": str(CELERY_BROKER_DIR / "out"),
        "processed_folder": str(CELERY_BROKER_DIR / "processed"),
        "control_folder": str(CELERY_BROKER_DIR / "control"),
        "store_processed": False,
    }
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 300)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 360)

# Generation: the database owns the attempt cap (acks_late redeliveries have no cap of their own).
GENERATION_MAX_ATTEMPTS = env_int("GENERATION_MAX_ATTEMPTS", 6)
# Judges (docs/judges.md): attempts at one judgement, counting answers outside the rubric.
JUDGE_MAX_ATTEMPTS = env_int("JUDGE_MAX_ATTEMPTS", 3)
# The currency contenders' prices are given in, shown with every cost (pages, CSV, report).
EVALSITE_CURRENCY = env_str("EVALSITE_CURRENCY", "USD").strip() or "USD"
if len(EVALSITE_CURRENCY) > 8 or any(c.isspace() for c in EVALSITE_CURRENCY):
    raise ImproperlyConfigured(
        f"EVALSITE_CURRENCY must be a short code such as USD or EUR, got {EVALSITE_CURRENCY!r}"
    )
# Provider calls: connect/read timeouts in seconds (read = the longest silence in a stream).
GENERATION_CONNECT_TIMEOUT = float(env_str("GENERATION_CONNECT_TIMEOUT", "10"))
GENERATION_READ_TIMEOUT = float(env_str("GENERATION_READ_TIMEOUT", "120"))
# A claimed row is held this long, and the worker renews it every third of it while the call
# runs (tasks/generation/lease_keeper.py): a worker killed mid-call frees its slot when it lapses, and the
# lapsed-lease sweep (every GENERATION_LAPSED_SWEEP_SECONDS) queues the row again.
GENERATION_LEASE_SECONDS = env_int("GENERATION_LEASE_SECONDS", 30)
GENERATION_LAPSED_SWEEP_SECONDS = env_int("GENERATION_LAPSED_SWEEP_SECONDS", 10)
# Exponential backoff with jitter (a random delay in [d/2, d], d = base * 2^n, capped).
GENERATION_BACKOFF_BASE = float(env_str("GENERATION_BACKOFF_BASE", "2"))
GENERATION_BACKOFF_MAX = env_int("GENERATION_BACKOFF_MAX", 300)
# The reconciler re-enqueues a queued row whose message has not been picked up: after the first
# while the broker holds other messages (it may be waiting among them: a backlog is not sent
# twice), after the second once the broker's queue is empty (its message was lost, or never
# sent while the broker or the database was down).
GENERATION_REQUEUE_AFTER = env_int("GENERATION_REQUEUE_AFTER", 900)
GENERATION_REQUEUE_IDLE_AFTER = env_int("GENERATION_REQUEUE_IDLE_AFTER", 60)

# Outages (docs/operations.md): how old the probe behind the admins' and leads' outage banner
# may be before a page starts a new one (in the background), and the Retry-After the API and
# the pages answer with while the database is unreachable.
OUTAGE_PROBE_SECONDS = env_int("OUTAGE_PROBE_SECONDS", 10)
DATABASE_RETRY_AFTER_SECONDS = env_int("DATABASE_RETRY_AFTER_SECONDS", 30)

# Monitors (docs/monitors.md): alert webhooks are signed with this secret (X-Evalsite-Signature,
# HMAC-SHA256 of the raw body); a delivery is tried this many times with exponential backoff.
MONITOR_WEBHOOK_SECRET = env_str("MONITOR_WEBHOOK_SECRET")
# 12 tries, 30 s doubling to at most an hour apart (each between half and all of that): a
# receiver down for hours still gets the alert.
MONITOR_WEBHOOK_ATTEMPTS = env_int("MONITOR_WEBHOOK_ATTEMPTS", 12)
MONITOR_WEBHOOK_BACKOFF_BASE = float(env_str("MONITOR_WEBHOOK_BACKOFF_BASE", "30"))
MONITOR_WEBHOOK_BACKOFF_MAX = float(env_str("MONITOR_WEBHOOK_BACKOFF_MAX", "3600"))
MONITOR_WEBHOOK_TIMEOUT = float(env_str("MONITOR_WEBHOOK_TIMEOUT", "10"))
# How often beat checks the schedules (cron has minutes: more often starts nothing earlier).
MONITOR_TICK_SECONDS = float(env_int("MONITOR_TICK_SECONDS", 60))
# Alert email: Django's backend (console unless EMAIL_BACKEND says otherwise).
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "evalsite@localhost")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"denied": {"()": "evalsite.logfilters.DeniedWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "django.request": {"filters": ["denied"]},
    },
}
