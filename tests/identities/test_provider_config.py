"""Identity providers by environment: several at once, the presets, and a
bad or incomplete setting stops start-up naming the variable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from webapp.core.config import ROOT, Config, ConfigError

ACME = {
    "OIDC_ACME_ISSUER": "https://id.acme.example",
    "OIDC_ACME_CLIENT_ID": "webapp",
    "OIDC_ACME_CLIENT_SECRET": "s3cret-value",
}


def env(tmp_path: Path, **values: str) -> dict[str, str]:
    return {"INSTANCE_PATH": str(tmp_path), **values}


def test_several_providers_and_the_presets(tmp_path: Path) -> None:
    cfg = Config.from_env(
        env(
            tmp_path,
            **ACME,
            OIDC_ACME_LABEL="Acme SSO",
            OIDC_CORP2_ISSUER="http://localhost:8080/realms/corp",
            OIDC_CORP2_CLIENT_ID="c",
            OIDC_CORP2_CLIENT_SECRET="d",
            GOOGLE_CLIENT_ID="g.apps.googleusercontent.com",
            GOOGLE_CLIENT_SECRET="gs",
            GITHUB_CLIENT_ID="Iv1.abc",
            GITHUB_CLIENT_SECRET="hs",
        )
    )
    shown = [(p.name, p.kind, p.label, p.issuer) for p in cfg.identity_providers]
    assert shown == [
        ("google", "oidc", "Google", "https://accounts.google.com"),
        ("github", "github", "GitHub", ""),
        ("acme", "oidc", "Acme SSO", "https://id.acme.example"),
        ("corp2", "oidc", "Corp2", "http://localhost:8080/realms/corp"),
    ]
    github = cfg.identity_providers[1]
    assert (github.web_url, github.api_url) == ("https://github.com", "https://api.github.com")
    assert "s3cret-value" not in repr(cfg) and "hs" not in repr(github)
    assert Config.from_env(env(tmp_path)).identity_providers == ()


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({**ACME, "OIDC_ACME_ISSUER": "http://id.acme.example"}, "OIDC_ACME_ISSUER"),  # not https
        ({**ACME, "OIDC_ACME_ISSUER": "https://id.acme.example/?x=1"}, "OIDC_ACME_ISSUER"),
        ({k: v for k, v in ACME.items() if k != "OIDC_ACME_CLIENT_ID"}, "OIDC_ACME_CLIENT_ID"),
        (
            {k: v for k, v in ACME.items() if k != "OIDC_ACME_CLIENT_SECRET"},
            "OIDC_ACME_CLIENT_SECRET",
        ),
        ({k: v for k, v in ACME.items() if k != "OIDC_ACME_ISSUER"}, "OIDC_ACME_ISSUER"),
        ({**ACME, "OIDC_ACME_LABEL": "x" * 41}, "OIDC_ACME_LABEL"),
        ({**ACME, "OIDC_ACME_CLIENTID": "typo"}, "OIDC_ACME_CLIENTID"),
        ({"OIDC_ISSUER": "https://id.example"}, "OIDC_ISSUER"),
        ({"GITHUB_CLIENT_ID": "only-the-id"}, "GITHUB_CLIENT_SECRET"),
        ({"GOOGLE_CLIENT_SECRET": "only-the-secret"}, "GOOGLE_CLIENT_ID"),
        (
            {"GITHUB_CLIENT_ID": "a", "GITHUB_CLIENT_SECRET": "b", "GITHUB_API_URL": "ftp://x"},
            "GITHUB_API_URL",
        ),
        (
            {
                "GOOGLE_CLIENT_ID": "a",
                "GOOGLE_CLIENT_SECRET": "b",
                "OIDC_GOOGLE_ISSUER": "https://x.example",
            },
            "OIDC_GOOGLE_ISSUER",
        ),
    ],
)
def test_a_bad_setting_names_the_variable(
    tmp_path: Path, values: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        Config.from_env(env(tmp_path, **values))


def test_a_bad_setting_stops_start_up(tmp_path: Path) -> None:
    """`make run` (worker/dev.py) refuses to start and says which variable."""
    bad = {**env(tmp_path), "PATH": "/usr/bin:/bin", "OIDC_ACME_ISSUER": "https://id.acme.example"}
    proc = subprocess.run(
        [sys.executable, "-m", "worker.dev"],
        cwd=ROOT,
        env=bad,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "OIDC_ACME_CLIENT_ID is required" in proc.stderr
