"""Settings for KUAE Ops, all read from the environment (see README, "Running it").

Embedded default: SQLite under var/ and kombu's filesystem broker, nothing to install.
Production: DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL (Redis), DJANGO_SECRET_KEY.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from kuaeweb.env import (
    env_bool,
    env_int,
    env_list,
    env_networks,
    env_secret,
    env_str,
    local_secret,
)
from kuaeweb.ldap_settings import BACKEND as LDAP_BACKEND
from kuaeweb.ldap_settings import ldap_settings

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("KUAE_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DJANGO_DEBUG", False)
DEMO = env_bool("KUAE_DEMO", False)

SECRET_KEY = env_secret("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    if env_str("DATABASE_URL") and not (DEBUG or DEMO or env_bool("KUAE_TESTING", False)):
        # Production (PostgreSQL): the key is the deployment's, set with the rest of it.
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY (or DJANGO_SECRET_KEY_FILE) must be set when DATABASE_URL is"
        )
    # The embedded default (make run, manage.py beside it), debug and tests: a random key
    # made once per var/ folder and kept there (mode 600), shared by its processes, never
    # one written in the source.
    SECRET_KEY = local_secret(VAR_DIR / "secret_key")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "apps.common",
    "apps.accounts",
    "apps.fleet",
    "apps.telemetry",
    "apps.jobs",
    "apps.incidents",
    "apps.health",
    "apps.reports",
    "apps.scheduler",
    "apps.maintenance",
    "apps.repairs",
    "apps.metrics",
    "apps.simulator",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "apps.common.middleware.BodyLimitMiddleware",
    "apps.common.middleware.NulQueryMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "apps.accounts.sessions.SessionIdleTimeoutMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "apps.accounts.language.UserLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "apps.common.middleware.SecurityHeadersMiddleware",
    "apps.accounts.audit.AuditDenialsMiddleware",
]

ROOT_URLCONF = "kuaeweb.urls"
WSGI_APPLICATION = "kuaeweb.wsgi.application"
AUTH_USER_MODEL = "accounts.User"
# Username and password behind the sign-in throttle, whichever page asks (/login/, /admin/).
AUTHENTICATION_BACKENDS = ["apps.accounts.backends.ThrottledModelBackend"]
# A directory's groups to roles, for LDAP and OpenID Connect sign-in (docs/sign-in.md).
KUAE_ROLE_GROUPS = env_str("KUAE_ROLE_GROUPS")
# LDAP / Active Directory sign-in, after local accounts and behind the same throttle: off
# unless KUAE_LDAP_URL is set; kuaeweb/ldap_settings.py reads the rest (docs/sign-in.md)
# and replaces these defaults of how a person's groups are found.
KUAE_LDAP_GROUPS = "member"
KUAE_LDAP_GROUP_SEARCH_BASE = ""
KUAE_LDAP_GROUP_FILTER = "(objectClass=groupOfNames)"
_LDAP_SETTINGS = ldap_settings()
globals().update(_LDAP_SETTINGS)
if _LDAP_SETTINGS:
    AUTHENTICATION_BACKENDS.append(LDAP_BACKEND)
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": env_int("KUAE_PASSWORD_MIN_LENGTH", 12, minimum=8)},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.common.context.nav",
                "apps.accounts.language.languages",
                "apps.fleet.context.automation",
                "apps.health.context.pipeline",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------------
_DATABASE_URL = env_str("DATABASE_URL")
if _DATABASE_URL:
    try:
        _db = dj_database_url.parse(_DATABASE_URL, conn_max_age=60, conn_health_checks=True)
    except Exception as exc:  # dj-database-url raises several types for bad URLs
        raise ImproperlyConfigured(f"DATABASE_URL is not a usable database URL: {exc}") from exc
    if _db["ENGINE"] not in (
        "django.db.backends.postgresql",
        "django.db.backends.sqlite3",
    ):
        raise ImproperlyConfigured(f"DATABASE_URL engine {_db['ENGINE']} is not supported")
else:
    _db = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(VAR_DIR / "kuae.sqlite3")}
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker, beat and simulator share one file: WAL, immediate transactions and a
    # busy timeout, or writers fail with "database is locked".
    _db["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    _db["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery -------------------------------------------------------------------------
_BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
if not CELERY_BROKER_URL.startswith(("filesystem://", "redis://", "rediss://", "memory://")):
    raise ImproperlyConfigured(
        f"CELERY_BROKER_URL={CELERY_BROKER_URL!r}: use redis://… or leave unset"
    )
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("queue", "processed", "control"):
        (_BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    # filesystem:// is kombu's transport writing each message whole (apps/common/fsbroker.py,
    # installed by kuaeweb/celery.py).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_BROKER_DIR / "queue"),
        "data_folder_out": str(_BROKER_DIR / "queue"),
        "processed_folder": str(_BROKER_DIR / "processed"),
        "control_folder": str(_BROKER_DIR / "control"),  # not ./control in the checkout
        "store_processed": False,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_DEFAULT_QUEUE = env_str("KUAE_QUEUE", "celery")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_TIMEZONE = "UTC"
# Beat records its own tick (docs/operations.md, Watching the watcher).
CELERY_BEAT_SCHEDULER = "apps.common.beat:RecordingScheduler"
# The worker survives a broker restart while it holds a task (docs/operations.md, Broker
# restarts).
CELERY_WORKER_CONSUMER = "apps.common.consumer:Consumer"
# Watching the watcher (docs/operations.md): every worker answers a broadcast ping this
# often, seconds; a part is stale past twice its interval. A worker silent for
# KUAE_WORKER_FORGET_S is taken as removed and no longer shown.
KUAE_HEARTBEAT_S = env_int("KUAE_HEARTBEAT_S", 15, minimum=1)
KUAE_WORKER_FORGET_S = env_int("KUAE_WORKER_FORGET_S", 3600, minimum=60)

# Pull mode (seconds; 0 turns scraping off) and retention (days). The timeout bounds each
# exporter's whole scrape (connect to last byte).
KUAE_SCRAPE_INTERVAL = env_int("KUAE_SCRAPE_INTERVAL", 30)
KUAE_SCRAPE_TIMEOUT = env_int("KUAE_SCRAPE_TIMEOUT", 5, minimum=1)
# Where exporters may be scraped (CIDRs, apps.fleet.destinations): empty → any address but
# loopback, link-local (the cloud metadata service), unspecified, multicast and reserved
# ones; set → only inside these networks. Loopback or link-local only when listed itself
# (127.0.0.0/8), never through a wider entry such as 0.0.0.0/0.
KUAE_SCRAPE_ALLOW = env_networks("KUAE_SCRAPE_ALLOW")
# Scrapes run on a queue of their own, so a slow exporter never holds up the checks: the
# embedded worker consumes both (Procfile: -Q celery,scrape); at scale give it its own workers.
KUAE_SCRAPE_QUEUE = env_str("KUAE_SCRAPE_QUEUE", "scrape")
CELERY_TASK_ROUTES = {
    "apps.telemetry.tasks.scrape_round": {"queue": KUAE_SCRAPE_QUEUE},
    "apps.telemetry.tasks.scrape_chunk": {"queue": KUAE_SCRAPE_QUEUE},
}

# Slurm (docs/slurm.md): each cluster names its connection (admin, `slurm` on the cluster);
# these are the worker-side settings. The JWT for slurmrestd never goes through the API.
KUAE_SLURM_SYNC_S = env_int("KUAE_SLURM_SYNC_S", 30)  # 0 turns the live sync off
KUAE_SLURM_TIMEOUT_S = env_int("KUAE_SLURM_TIMEOUT_S", 20, minimum=1)
KUAE_SLURM_CONF = env_str("KUAE_SLURM_CONF", env_str("SLURM_CONF"))  # for `cli` without a path
KUAE_SLURM_JWT = env_secret("KUAE_SLURM_JWT")
# A cluster's Prometheus (`prometheus_url`, docs/integrations.md, 2d. Prometheus): the bearer token
# when the cluster has none of its own (admin), how long one query may take (connect to last byte)
# for a page and for a check's pull of every GPU (up to 15 s at 102,400 GPUs on a 2-core machine),
# and the largest answer read (bytes) — past either bound the source counts as not answering.
KUAE_PROMETHEUS_TOKEN = env_secret("KUAE_PROMETHEUS_TOKEN")
KUAE_PROMETHEUS_TIMEOUT_S = env_int("KUAE_PROMETHEUS_TIMEOUT_S", 10, minimum=1)
KUAE_PROMETHEUS_PULL_TIMEOUT_S = env_int("KUAE_PROMETHEUS_PULL_TIMEOUT_S", 30, minimum=1)
KUAE_PROMETHEUS_MAX_BYTES = env_int("KUAE_PROMETHEUS_MAX_BYTES", 256 * 1024 * 1024, minimum=1)
KUAE_SLURM_USER = env_str("KUAE_SLURM_USER")  # X-SLURM-USER-NAME, for a JWT with no user
KUAE_ACTUATION_TICK_S = env_int("KUAE_ACTUATION_TICK_S", 10, minimum=1)
# How often maintenance windows are started and ended (docs/maintenance.md), seconds.
KUAE_MAINTENANCE_TICK_S = env_int("KUAE_MAINTENANCE_TICK_S", 30, minimum=1)
# How often new drains open repairs and burn-ins are judged (docs/repairs.md), seconds.
KUAE_REPAIRS_TICK_S = env_int("KUAE_REPAIRS_TICK_S", 30, minimum=1)
# How soon a drain or down has its repair (docs/repairs.md): pages only read, this tick opens.
KUAE_REPAIRS_SYNC_S = env_int("KUAE_REPAIRS_SYNC_S", 5, minimum=1)

KUAE_RETAIN_METRICS_DAYS = env_int("KUAE_RETAIN_METRICS_DAYS", 90, minimum=1)
KUAE_RETAIN_ROLLUP_DAYS = env_int("KUAE_RETAIN_ROLLUP_DAYS", 30, minimum=1)
# Check runs (what ran, when, how long): 6 kinds a minute per cluster is ~8,600 a day. The
# results they wrote stay (a result's link to a pruned run is cleared).
KUAE_RETAIN_RUNS_DAYS = env_int("KUAE_RETAIN_RUNS_DAYS", 30, minimum=1)
# Telemetry events (XIDs, counters that grew, ports' and ranks' events) by their time, and
# unrouted Alertmanager alerts by their latest delivery (docs/operations.md, Backups).
KUAE_RETAIN_EVENTS_DAYS = env_int("KUAE_RETAIN_EVENTS_DAYS", 90, minimum=1)
KUAE_RETAIN_UNROUTED_DAYS = env_int("KUAE_RETAIN_UNROUTED_DAYS", 30, minimum=1)

# --- Web, API -----------------------------------------------------------------------
# Pages in English and Simplified Chinese (docs/pages.md, Language): chosen by the header's
# switch or the user's setting, else the browser's Accept-Language. Catalogues in locale/,
# compiled at install (`make run`, `make test`); API fields, slugs and CSV columns never change.
LANGUAGE_CODE = "en-gb"
LANGUAGES = [("en-gb", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
LANGUAGE_COOKIE_SAMESITE = "Lax"
# The language of what no reader's browser chooses (docs/operations.md, Languages): e-mails,
# webhook text, and the weekly PDF that a script fetches or the Monday e-mail carries.
KUAE_LANGUAGE = env_str("KUAE_LANGUAGE", "en-gb").lower()
if KUAE_LANGUAGE not in dict(LANGUAGES):
    raise ImproperlyConfigured(
        f"KUAE_LANGUAGE={KUAE_LANGUAGE!r}: give one of {', '.join(dict(LANGUAGES))}"
    )
# A font with CJK glyphs for the Chinese PDF (a path); empty: found on the system.
KUAE_PDF_CJK_FONT = env_str("KUAE_PDF_CJK_FONT", "")
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG

# Request bodies: one limit, compressed or not (docs/operations.md, Limits), enforced by
# BodyLimitMiddleware.
KUAE_MAX_BODY_BYTES = env_int("KUAE_MAX_BODY_BYTES", 10 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = KUAE_MAX_BODY_BYTES
DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.accounts.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["apps.accounts.permissions.RolePermission"],
    "DEFAULT_PAGINATION_CLASS": "apps.common.pagination.Pagination",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # The API speaks JSON (the Prometheus intake's text/plain is its own parser): a form or
    # multipart body is a 415, and the schema advertises JSON only.
    "DEFAULT_PARSER_CLASSES": ["apps.common.parsers.JSONParser"],  # nesting bounded
    "EXCEPTION_HANDLER": "apps.common.errors.exception_handler",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "KUAE Ops API",
    "DESCRIPTION": "Clusters, nodes, jobs and their telemetry for large GPU training clusters.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # No deep links: swagger-ui draws each as a link inside the operation's button, which
    # screen readers and keyboards cannot reach apart (nested interactive controls).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Descriptions are read in Swagger UI: no references to internal design documents.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "apps.common.apidocs.without_document_references",
    ],
    "ENUM_NAME_OVERRIDES": {
        "JobStatusEnum": "apps.jobs.choices.JobStatus",
        "RunStatusEnum": "apps.health.choices.RunStatus",
        "ResultStatusEnum": "apps.health.choices.ResultStatus",
        "NodeStateEnum": "apps.fleet.choices.NodeState",
        "IncidentStatusEnum": "apps.incidents.choices.IncidentStatus",
        "CheckKindEnum": "apps.health.checks.KIND_CHOICES",
        "TimelineKindEnum": "apps.incidents.models.TimelineEntry.Kind",
        "RepairStatusEnum": "apps.repairs.choices.RepairStatus",
        "WindowStatusEnum": "apps.maintenance.choices.WindowStatus",
    },
    # The schema and Swagger UI are for signed-in users, not the open network.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}

# --- Notifications: new sev1/sev2 incidents ---------------------------------------------
EMAIL_BACKEND = env_str("DJANGO_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("DJANGO_EMAIL_PORT", 25)
DEFAULT_FROM_EMAIL = env_str("DJANGO_DEFAULT_FROM_EMAIL", "kuae-ops@localhost")
KUAE_NOTIFY_EMAILS = env_list("KUAE_NOTIFY_EMAILS", ["oncall@localhost"])
KUAE_NOTIFY_WEBHOOK = env_str("KUAE_NOTIFY_WEBHOOK")
# Escalation (docs/on-call.md, Escalation): a sev1 not acknowledged within KUAE_ESCALATE_SEV1_MIN
# minutes, a sev2 within KUAE_ESCALATE_SEV2_MIN, goes once to these (e-mail and webhook separately).
KUAE_ESCALATE_SEV1_MIN = env_int("KUAE_ESCALATE_SEV1_MIN", 10, minimum=1)
KUAE_ESCALATE_SEV2_MIN = env_int("KUAE_ESCALATE_SEV2_MIN", 30, minimum=1)
KUAE_ESCALATION_EMAILS = env_list("KUAE_ESCALATION_EMAILS", [])
KUAE_ESCALATION_WEBHOOK = env_str("KUAE_ESCALATION_WEBHOOK")
KUAE_BASE_URL = env_str("KUAE_BASE_URL", "http://127.0.0.1:8000")
# Alerts out (docs/alertmanager.md, Alerts out): every open incident posted as an alert to
# each of these Alertmanagers (comma-separated: an HA pair), re-posted every REPEAT_S.
KUAE_ALERTMANAGER_URL = env_list("KUAE_ALERTMANAGER_URL", [])
KUAE_ALERTMANAGER_REPEAT_S = env_int("KUAE_ALERTMANAGER_REPEAT_S", 60, minimum=1)
# The weekly report goes to these every Monday (KUAE_REPORT_HOUR UTC), for the week just ended.
KUAE_REPORT_EMAILS = env_list("KUAE_REPORT_EMAILS", ["managers@localhost"])
KUAE_REPORT_HOUR = env_int("KUAE_REPORT_HOUR", 7, minimum=0)

# --- Security -----------------------------------------------------------------------
HTTPS = env_bool("DJANGO_HTTPS", not DEBUG)
SECURE_SSL_REDIRECT = HTTPS
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
LANGUAGE_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = 31_536_000 if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SESSION_COOKIE_HTTPONLY = True
# A browser's session ends after this long without a request (SessionIdleTimeoutMiddleware
# keeps one in use alive); API tokens expire KUAE_TOKEN_TTL_DAYS after they were issued.
KUAE_SESSION_IDLE_S = env_int("KUAE_SESSION_IDLE_MINUTES", 60, minimum=1) * 60
SESSION_COOKIE_AGE = max(KUAE_SESSION_IDLE_S, 12 * 3600)  # the backstop: 12 h from last use
KUAE_TOKEN_TTL_DAYS = env_int("KUAE_TOKEN_TTL_DAYS", 90, minimum=1)
# Sign-in throttle (docs/operations.md, Sign-in throttling): this many failures for one
# (account, client address) within the window — 4× for one address, any account — refuse
# further attempts from there with 429 until older failures age out. A browser with a
# known-device cookie for the account is not held back by them, up to its own failures.
KUAE_LOGIN_FAILURES = env_int("KUAE_LOGIN_FAILURES", 5, minimum=1)
KUAE_LOGIN_WINDOW_S = env_int("KUAE_LOGIN_WINDOW_S", 900, minimum=1)
KUAE_LOGIN_DEVICE_FAILURES = env_int("KUAE_LOGIN_DEVICE_FAILURES", 10, minimum=1)
KUAE_LOGIN_DEVICE_DAYS = env_int("KUAE_LOGIN_DEVICE_DAYS", 90, minimum=1)
# Scripts only from this origin, never inline (pages have none; Plotly sets inline styles).
KUAE_CSP = env_str(
    "KUAE_CSP",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
)
# The API docs and /metrics are for signed-in users (metrics: admins or KUAE_METRICS_TOKEN)
# unless made public here.
KUAE_PUBLIC_DOCS = env_bool("KUAE_PUBLIC_DOCS", False)
KUAE_METRICS_TOKEN = env_secret("KUAE_METRICS_TOKEN")
X_FRAME_OPTIONS = "DENY"

# --- OpenID Connect sign-in (docs/sign-in.md, OpenID Connect): off unless KUAE_OIDC_ISSUER --
# The provider's endpoints are discovered from the issuer at the first sign-in, not here, so
# a provider that is down never stops start-up (apps.accounts.oidc).
KUAE_OIDC_ISSUER = env_str("KUAE_OIDC_ISSUER").strip().rstrip("/")
KUAE_OIDC_NAME = env_str("KUAE_OIDC_NAME", "single sign-on")
KUAE_OIDC_CLIENT_ID = env_str("KUAE_OIDC_CLIENT_ID")
KUAE_OIDC_CLIENT_SECRET = env_secret("KUAE_OIDC_CLIENT_SECRET")
KUAE_OIDC_SCOPES = env_str("KUAE_OIDC_SCOPES", "openid email profile")
KUAE_OIDC_GROUPS_CLAIM = env_str("KUAE_OIDC_GROUPS_CLAIM", "groups")
KUAE_OIDC_USERNAME_CLAIM = env_str("KUAE_OIDC_USERNAME_CLAIM", "preferred_username")
KUAE_OIDC_SIGN_ALGO = env_str("KUAE_OIDC_SIGN_ALGO", "RS256")
KUAE_OIDC_TIMEOUT_S = env_int("KUAE_OIDC_TIMEOUT_S", 10, minimum=1)
if KUAE_OIDC_ISSUER:
    from apps.accounts.directory import RoleGroups

    if not (KUAE_OIDC_CLIENT_ID and KUAE_OIDC_CLIENT_SECRET):
        raise ImproperlyConfigured(
            "KUAE_OIDC_ISSUER is set: KUAE_OIDC_CLIENT_ID and KUAE_OIDC_CLIENT_SECRET "
            "(or KUAE_OIDC_CLIENT_SECRET_FILE) are needed too"
        )
    if not RoleGroups.parse(KUAE_ROLE_GROUPS).pairs:
        raise ImproperlyConfigured("KUAE_OIDC_ISSUER is set: KUAE_ROLE_GROUPS maps no group")
    AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, "apps.accounts.oidc.DirectoryOIDCBackend"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("KUAE_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},  # one INFO line per scraped exporter is noise
    },
}
