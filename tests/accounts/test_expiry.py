"""An account whose address is never verified is erased by the
daily job after UNVERIFIED_ACCOUNT_DAYS, and the address is free again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.support.accounts import PASSWORD, body, link_in, login, mails, register, user_row
from tests.support.web import csrf_token, post
from webapp.accounts.erase_accounts import erase_accounts
from webapp.core.config import Config, ConfigError


def _daily_job(clock: Any) -> None:
    erase_accounts("default", clock.now())


def test_an_unverified_account_expires_and_frees_its_address(
    app: Any, client: Any, clock: Any, work: Any
) -> None:
    register(client, "ada@example.com")
    squatter = user_row("ada@example.com")
    clock.advance(timedelta(days=7) - timedelta(minutes=1))
    _daily_job(clock)
    assert user_row("ada@example.com") is not None  # not yet
    clock.advance(timedelta(minutes=2))
    _daily_job(clock)
    assert user_row("ada@example.com") is None
    assert login(client, "ada@example.com").status_code == 422
    # The owner can now register the address.
    assert register(client, "ada@example.com", "owner owner owner owner").status_code == 200
    owner = user_row("ada@example.com")
    assert owner is not None and owner.id != squatter.id
    work()
    assert any(
        m["To"] == "ada@example.com" and "/verify-email/" in body(m) for m in mails(app)[-1:]
    )


def test_verified_accounts_never_expire_even_after_an_email_change(
    app: Any, client: Any, clock: Any, work: Any
) -> None:
    register(client, "ada@example.com")
    work()
    link = link_in(mails(app)[-1], "/verify-email/")
    client.post(link, data={"csrf_token": csrf_token(client)})
    login(client, "ada@example.com")
    post(client, "/profile/email", new_email="ada2@example.com", current_password=PASSWORD)
    assert not user_row("ada2@example.com").email_verified
    clock.advance(timedelta(days=30))
    _daily_job(clock)
    assert user_row("ada2@example.com") is not None


def test_the_expiry_follows_the_setting(
    app: Any, client: Any, clock: Any, make_config: Any
) -> None:
    app.config["APP_CONFIG"] = make_config(unverified_account_days=2)
    register(client, "ada@example.com")
    clock.advance(timedelta(days=2, minutes=1))
    _daily_job(clock)
    assert user_row("ada@example.com") is None


def test_the_sign_up_page_says_so(client: Any) -> None:
    html = client.get("/register").get_data(as_text=True)
    assert "Confirm your address within 7 days" in html
    html = client.get("/register", headers={"Accept-Language": "de"}).get_data(as_text=True)
    assert "Bestätigen Sie Ihre Adresse innerhalb von 7 Tagen" in html


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("UNVERIFIED_ACCOUNT_DAYS", "0"),
        ("UNVERIFIED_ACCOUNT_DAYS", "week"),
        ("MAIL_MAX_ATTEMPTS", "0"),
        ("MAIL_MAX_ATTEMPTS", "many"),
    ],
)
def test_bad_settings_are_refused_by_name(tmp_path: Any, name: str, raw: str) -> None:
    env = {"INSTANCE_PATH": str(tmp_path), "SECRET_KEY": "x" * 32, name: raw}
    with pytest.raises(ConfigError, match=name):
        Config.from_env(env)
    good = Config.from_env({**env, name: "5"})
    assert good.unverified_account_days == 5 or good.mail_max_attempts == 5
