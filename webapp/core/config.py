"""The one configuration object, read from environment variables (and `.env`).

Every setting is validated at start-up; a bad value raises `ConfigError` naming
the variable, so a typo never turns into a confusing failure later.
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from dotenv import load_dotenv
from limits import parse_many

from webapp.core import identity_providers
from webapp.core.identity_providers import ProviderSettings

ROOT = Path(__file__).resolve().parents[2]


class ConfigError(ValueError):
    """A configuration variable has an invalid value."""


def _int(env: Mapping[str, str], name: str, default: int, lo: int = 0, hi: int = 2**31) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{name} must be between {lo} and {hi}, got {value}")
    return value


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    low = raw.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


def _optional_bool(env: Mapping[str, str], name: str) -> bool | None:
    """True or false when the variable is set, None when it is not (or empty)."""
    if not env.get(name):
        return None
    return _bool(env, name, False)


def _choice(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = env.get(name) or default
    if raw not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return raw


def _rate(env: Mapping[str, str], name: str, default: str) -> str:
    """A rate in the `limits` notation: "600 per minute", "10/second"."""
    raw = (env.get(name) or default).strip()
    try:
        items = parse_many(raw)
    except ValueError:
        items = []
    if len(items) != 1 or items[0].amount < 1:
        raise ConfigError(f"{name} must be one rate such as '600 per minute', got {raw!r}")
    return raw


def _secret_key(env: Mapping[str, str], instance: Path) -> str:
    raw = env.get("SECRET_KEY")
    if raw:
        if len(raw) < 16:
            raise ConfigError("SECRET_KEY must be at least 16 characters")
        return raw
    # Generated once per installation and kept beside the SQLite file, never in code.
    path = instance / "secret_key"
    if path.exists():
        return path.read_text().strip()
    instance.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(48)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key)
    return key


def _database_url(env: Mapping[str, str], instance: Path) -> str:
    raw = env.get("DATABASE_URL")
    if not raw:
        return f"sqlite:///{instance / 'app.db'}"
    if not raw.startswith(("sqlite:", "postgresql")):
        raise ConfigError(
            f"DATABASE_URL must be a sqlite:/// or postgresql+psycopg:// URL, got {raw.split(':')[0]!r}"
        )
    if raw.startswith("postgresql://") or raw.startswith("postgres://"):
        raw = "postgresql+psycopg://" + raw.split("://", 1)[1]
    return raw


def _direct_url(env: Mapping[str, str]) -> str | None:
    raw = env.get("DATABASE_DIRECT_URL")
    if not raw:
        return None
    if not raw.startswith(("postgresql", "postgres:")):
        raise ConfigError("DATABASE_DIRECT_URL must be a postgresql+psycopg:// URL")
    if not (env.get("DATABASE_URL") or "").startswith(("postgresql", "postgres:")):
        raise ConfigError("DATABASE_DIRECT_URL needs DATABASE_URL on PostgreSQL too")
    return _database_url({"DATABASE_URL": raw}, Path("."))


def _redis_url(env: Mapping[str, str], instance: Path) -> tuple[str, bool]:
    raw = env.get("REDIS_URL")
    if not raw:
        # Unset means: the embedded redis-server that `make run` starts on this socket.
        return f"unix://{instance / 'redis.sock'}", True
    if not raw.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"REDIS_URL must start with redis://, rediss:// or unix://, got {raw!r}")
    return raw, False


SECRET_FIELDS = ("secret_key", "smtp_password", "metrics_token")
_URL_PASSWORD = re.compile(r"(://[^:/@]*:)[^@/]*@")


_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _module_list(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """Comma-separated dotted module names, e.g. `myapp.flows,billing.flows`."""
    names = tuple(part.strip() for part in (env.get(name) or "").split(",") if part.strip())
    for module in names:
        if not _MODULE_NAME.fullmatch(module):
            raise ConfigError(
                f"{name} must list Python module names separated by commas "
                f"(e.g. myapp.flows,billing.flows), got {module!r}"
            )
    return names


def _networks(env: Mapping[str, str], name: str, default: str) -> tuple[str, ...]:
    """Comma-separated addresses or CIDR networks (`127.0.0.1,10.0.0.0/8`)."""
    raw = env.get(name)
    parts = [p.strip() for p in (default if raw is None else raw).split(",") if p.strip()]
    try:
        return tuple(str(ipaddress.ip_network(p, strict=False)) for p in parts)
    except ValueError as exc:
        raise ConfigError(
            f"{name} must list addresses or networks (e.g. 127.0.0.1,10.0.0.0/8): {exc}"
        ) from None


def _metrics_token(env: Mapping[str, str]) -> str:
    raw = env.get("METRICS_TOKEN") or ""
    if raw and len(raw) < 16:
        raise ConfigError("METRICS_TOKEN must be at least 16 characters")
    return raw


@dataclass(frozen=True)
class Config:
    instance_path: Path
    database_url: str
    redis_url: str
    redis_embedded: bool
    secret_key: str
    host: str = "127.0.0.1"
    port: int = 5000
    log_level: str = "INFO"
    testing: bool = False
    # "transaction": DATABASE_URL goes through a transaction-pooling pooler
    # (PgBouncer's pool_mode=transaction): no server-side prepared statements
    database_pooling: str = "session"
    # A connection that bypasses the pooler (PostgreSQL): the workers' LISTEN
    # for in-process wake-ups, which a transaction-pooling PgBouncer cannot carry
    database_direct_url: str | None = None
    # "redis": the commit that makes a run due wakes a worker through Redis;
    # "notify": on PostgreSQL by NOTIFY to a listener in every worker
    workflow_wake: str = "redis"
    # mail
    mail_backend: str = "file"
    mail_from: str = "no-reply@localhost"
    smtp_host: str = "localhost"
    smtp_port: int = 25
    smtp_security: str = "none"
    smtp_user: str = ""
    smtp_password: str = ""
    smtp_timeout: int = 10
    mail_max_attempts: int = 10  # outbox deliveries per mail before it is `failed`
    # accounts
    password_min_length: int = 15
    account_deletion_grace_days: int = 14
    unverified_account_days: int = 7  # never-verified accounts are erased after this
    reauth_seconds: int = 300  # a proof of identity this recent lets factor changes through
    signin_by_code: bool = True  # "Email me a sign-in code" on /login
    # privacy center: where export ZIPs are kept, and how long a download works
    export_dir: Path | None = None  # None: <instance>/exports
    export_valid_days: int = 7
    # argon2id cost; the defaults (RFC 9106 low-memory) exceed OWASP's minimum
    argon2_time_cost: int = 3
    argon2_memory_cost: int = 65536
    argon2_parallelism: int = 4
    # None: Secure exactly when BASE_URL is https (see `cookies_secure`)
    session_cookie_secure: bool | None = None
    max_content_length: int = 64 * 1024
    ratelimit_storage: str = ""
    # requests per API token (a `limits` string: "600 per minute")
    api_rate_limit: str = "600 per minute"
    # reverse proxies in front of the app whose X-Forwarded-For/-Proto to trust
    trusted_proxies: int = 0
    # localhost, not 127.0.0.1: browsers refuse passkeys on an IP address (its RP ID)
    base_url: str = "http://localhost:5000"
    # SQLite: each connection's page cache, and the file's memory map (0: off)
    sqlite_cache_mb: int = 16
    sqlite_mmap_mb: int = 0
    # workflows / projections
    projection_max_attempts: int = 5
    webhook_max_body: int = 256 * 1024
    # the application's own modules (workflows, handlers), imported by every process
    workflow_modules: tuple[str, ...] = ()
    # a run's progress entries (`ctx.emit`): at most this many, this many bytes of JSON
    workflow_progress_max_entries: int = 1000
    workflow_progress_max_bytes: int = 1024 * 1024
    # live run pages (server-sent events): open streams per web process, and how
    # often one shared reader per process looks for new run events
    workflow_streams_max: int = 500
    workflow_streams_poll_ms: int = 250
    # how often the scheduler checks that Redis still holds every schedule entry
    scheduler_resync_seconds: int = 15
    # /healthz answers from a database check at most this old (0: check every request)
    healthz_cache_ms: int = 1000
    # Prometheus /metrics (webapp/metrics): who may scrape, how long DB/Redis gauges are kept
    metrics_enabled: bool = True
    metrics_allow: tuple[str, ...] = ("127.0.0.1/32", "::1/128")
    metrics_token: str = ""
    metrics_cache_seconds: int = 15
    # worker/scheduler liveness over HTTP (0: off); a loop silent this long is unhealthy
    worker_health_port: int = 0
    scheduler_health_port: int = 0
    health_stale_seconds: int = 30
    secrets: Mapping[str, str] = field(default_factory=dict)
    # Sign in with an identity provider (OIDC_<NAME>_*, GOOGLE_*, GITHUB_*)
    identity_providers: tuple[ProviderSettings, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Config:
        if env is None:
            load_dotenv(ROOT / ".env", override=False)
            env = os.environ
        instance = Path(env.get("INSTANCE_PATH") or ROOT / "instance").resolve()
        redis_url, embedded = _redis_url(env, instance)
        port = _int(env, "PORT", 5000, 1, 65535)
        values: dict[str, Any] = dict(
            instance_path=instance,
            database_url=_database_url(env, instance),
            database_pooling=_choice(
                env, "DATABASE_POOLING", "session", ("session", "transaction")
            ),
            database_direct_url=_direct_url(env),
            workflow_wake=_choice(env, "WORKFLOW_WAKE", "redis", ("redis", "notify")),
            redis_url=redis_url,
            redis_embedded=embedded,
            secret_key=_secret_key(env, instance),
            host=env.get("HOST") or "127.0.0.1",
            port=port,
            log_level=_choice(env, "LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR")),
            mail_backend=_choice(env, "MAIL_BACKEND", "file", ("file", "smtp")),
            mail_from=env.get("MAIL_FROM") or "no-reply@localhost",
            smtp_host=env.get("SMTP_HOST") or "localhost",
            smtp_port=_int(env, "SMTP_PORT", 25, 1, 65535),
            smtp_security=_choice(env, "SMTP_SECURITY", "none", ("none", "starttls", "ssl")),
            smtp_user=env.get("SMTP_USER") or "",
            smtp_password=env.get("SMTP_PASSWORD") or "",
            smtp_timeout=_int(env, "SMTP_TIMEOUT", 10, 1, 300),
            mail_max_attempts=_int(env, "MAIL_MAX_ATTEMPTS", 10, 1, 50),
            password_min_length=_int(env, "PASSWORD_MIN_LENGTH", 15, 8, 128),
            account_deletion_grace_days=_int(env, "ACCOUNT_DELETION_GRACE_DAYS", 14, 0, 3650),
            unverified_account_days=_int(env, "UNVERIFIED_ACCOUNT_DAYS", 7, 1, 365),
            reauth_seconds=_int(env, "REAUTH_SECONDS", 300, 30, 86400),
            signin_by_code=_bool(env, "SIGNIN_BY_CODE", True),
            export_dir=Path(env["EXPORT_DIR"]).resolve() if env.get("EXPORT_DIR") else None,
            export_valid_days=_int(env, "EXPORT_VALID_DAYS", 7, 1, 90),
            argon2_time_cost=_int(env, "ARGON2_TIME_COST", 3, 2, 100),
            argon2_memory_cost=_int(env, "ARGON2_MEMORY_COST", 65536, 19456, 4 * 2**20),
            argon2_parallelism=_int(env, "ARGON2_PARALLELISM", 4, 1, 64),
            session_cookie_secure=_optional_bool(env, "SESSION_COOKIE_SECURE"),
            max_content_length=_int(env, "MAX_CONTENT_LENGTH", 64 * 1024, 1024, 100 * 2**20),
            ratelimit_storage=env.get("RATELIMIT_STORAGE_URI") or "",
            api_rate_limit=_rate(env, "API_RATE_LIMIT", "600 per minute"),
            trusted_proxies=_int(env, "TRUSTED_PROXIES", 0, 0, 10),
            base_url=(env.get("BASE_URL") or f"http://localhost:{port}").rstrip("/"),
            sqlite_cache_mb=_int(env, "SQLITE_CACHE_MB", 16, 1, 4096),
            # SQLite caps the map at 2 GiB less 64 KiB (its SQLITE_MAX_MMAP_SIZE).
            sqlite_mmap_mb=_int(env, "SQLITE_MMAP_MB", 0, 0, 2047),
            projection_max_attempts=_int(env, "PROJECTION_MAX_ATTEMPTS", 5, 1, 100),
            webhook_max_body=_int(env, "WEBHOOK_MAX_BODY", 256 * 1024, 1024, 10 * 2**20),
            workflow_modules=_module_list(env, "WORKFLOW_MODULES"),
            workflow_progress_max_entries=_int(
                env, "WORKFLOW_PROGRESS_MAX_ENTRIES", 1000, 1, 1_000_000
            ),
            workflow_progress_max_bytes=_int(
                env, "WORKFLOW_PROGRESS_MAX_BYTES", 2**20, 1024, 2**30
            ),
            workflow_streams_max=_int(env, "WORKFLOW_STREAMS_MAX", 500, 1, 100_000),
            workflow_streams_poll_ms=_int(env, "WORKFLOW_STREAMS_POLL_MS", 250, 20, 60_000),
            scheduler_resync_seconds=_int(env, "SCHEDULER_RESYNC_SECONDS", 15, 1, 3600),
            healthz_cache_ms=_int(env, "HEALTHZ_CACHE_MS", 1000, 0, 60000),
            metrics_enabled=_bool(env, "METRICS_ENABLED", True),
            metrics_allow=_networks(env, "METRICS_ALLOW", "127.0.0.1,::1"),
            metrics_token=_metrics_token(env),
            metrics_cache_seconds=_int(env, "METRICS_CACHE_SECONDS", 15, 0, 3600),
            worker_health_port=_int(env, "WORKER_HEALTH_PORT", 0, 0, 65535),
            scheduler_health_port=_int(env, "SCHEDULER_HEALTH_PORT", 0, 0, 65535),
            health_stale_seconds=_int(env, "HEALTH_STALE_SECONDS", 30, 1, 3600),
            # Named secrets for webhooks (SECRET_<NAME>=value), looked up by name only.
            secrets={
                k[len("SECRET_") :].lower(): v
                for k, v in env.items()
                if k.startswith("SECRET_") and k != "SECRET_KEY" and v
            },
        )
        try:
            values["identity_providers"] = identity_providers.from_env(env)
        except identity_providers.ProviderConfigError as exc:
            raise ConfigError(str(exc)) from None
        values.update(overrides)
        return cls(**values)

    @property
    def cookies_secure(self) -> bool:
        """Whether every cookie the product sets carries `Secure`: as
        `SESSION_COOKIE_SECURE` says when set, else when `BASE_URL` is https."""
        if self.session_cookie_secure is None:
            return self.base_url.lower().startswith("https://")
        return self.session_cookie_secure

    @property
    def insecure_cookies_over_https(self) -> bool:
        """`SESSION_COOKIE_SECURE=false` set explicitly under an https `BASE_URL`."""
        return self.base_url.lower().startswith("https://") and not self.cookies_secure

    @property
    def listen_url(self) -> str | None:
        """Where the workers LISTEN for in-process wake-ups: with
        `WORKFLOW_WAKE=notify` on PostgreSQL, `DATABASE_DIRECT_URL`, else
        `DATABASE_URL` unless that goes through a transaction-pooling pooler
        (None: wake-ups go through Redis)."""
        if self.workflow_wake != "notify" or not self.database_url.startswith("postgresql"):
            return None
        if self.database_direct_url:
            return self.database_direct_url
        return self.database_url if self.database_pooling == "session" else None

    @property
    def exports_path(self) -> Path:
        """Where export ZIPs are written (`EXPORT_DIR`, default `instance/exports`)."""
        return self.export_dir or self.instance_path / "exports"

    def __repr__(self) -> str:
        """Every setting, but never a secret: keys and passwords show as `***`,
        named secrets by name only, passwords inside URLs masked."""
        shown = []
        for f in fields(self):
            value: Any = getattr(self, f.name)
            if f.name in SECRET_FIELDS:
                value = "***" if value else ""
            elif f.name == "secrets":
                value = {name: "***" for name in value}
            elif isinstance(value, str) and "://" in value:
                value = _URL_PASSWORD.sub(r"\1***@", value)
            shown.append(f"{f.name}={value!r}")
        return f"Config({', '.join(shown)})"
