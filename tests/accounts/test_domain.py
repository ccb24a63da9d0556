"""Rules of the account domain: password policy and hashing, addresses, sealing."""

from __future__ import annotations

from typing import Any

import pytest
from argon2 import extract_parameters

from tests.support.accounts import PASSWORD, login, register, user_row
from webapp.accounts import addresses, crypto, passwords


def test_policy_minimum_length_is_configurable_and_no_composition_rules() -> None:
    assert passwords.policy_error("jumpy fjord wax", "", 15) is None  # no digits/symbols needed
    assert passwords.policy_error("abcdefghijklmn", "", 15) == (
        "password.errors.tooShort",
        {"min": 15},
    )
    assert passwords.policy_error("quiet glyph ", "", 12) is None


def test_policy_allows_at_least_128_characters_without_truncation() -> None:
    long = "mauve kettle drift over plum jigsaw vortex " * 3
    assert len(long) >= 128
    assert passwords.policy_error(long, "", 15) is None
    assert passwords.policy_error("z" * 2000, "", 15) == (
        "password.errors.tooLong",
        {"max": passwords.MAX_LENGTH},
    )
    ph = passwords.hasher(1, 1024, 1)
    h = ph.hash("a" * 200 + "1")
    assert passwords.verify_password(ph, h, "a" * 200 + "1")
    assert not passwords.verify_password(ph, h, "a" * 200 + "2")  # the tail counts


def test_policy_rejects_common_passwords_and_the_email() -> None:
    assert len(passwords.common_passwords()) >= 10_000
    assert passwords.policy_error("1QAZ2WSX3EDC4RFV", "", 15) == ("password.errors.common", {})
    assert passwords.policy_error("Ada.Lovelace@Example.com", "ada.lovelace@example.com", 15) == (
        "password.errors.sameAsEmail",
        {},
    )


def test_production_argon2_parameters_meet_owasp(app: Any) -> None:
    from webapp.core.config import Config

    defaults = Config.__dataclass_fields__
    ph = passwords.hasher(
        defaults["argon2_time_cost"].default,
        defaults["argon2_memory_cost"].default,
        defaults["argon2_parallelism"].default,
    )
    params = extract_parameters(ph.hash(PASSWORD))
    assert params.type.name == "ID"
    # OWASP: argon2id with m >= 19 MiB and t >= 2 (or stronger trade-offs).
    assert params.memory_cost >= 19456 and params.time_cost >= 2


def test_config_refuses_argon2_parameters_below_owasp() -> None:
    from webapp.core.config import Config, ConfigError

    with pytest.raises(ConfigError):
        Config.from_env(
            {"ARGON2_MEMORY_COST": "1024", "SECRET_KEY": "x" * 32, "INSTANCE_PATH": "/tmp/x-inst"}
        )


def test_sign_in_rehashes_when_parameters_change(app: Any, client: Any, make_config: Any) -> None:
    register(client, "ada@example.com")
    before = user_row("ada@example.com").password_hash
    assert extract_parameters(before).memory_cost == 1024
    app.config["APP_CONFIG"] = make_config(argon2_memory_cost=2048)
    assert login(client, "ada@example.com").status_code == 302
    after = user_row("ada@example.com").password_hash
    assert extract_parameters(after).memory_cost == 2048
    from webapp.core import db
    from webapp.eventstore import StreamId, read_stream

    with db.reading() as conn:
        types = [
            e.type
            for e in read_stream(conn, StreamId("default", "user", user_row("ada@example.com").id))
        ]
    assert types == ["user.registered", "user.password-rehashed"]
    assert login(app.test_client(), "ada@example.com").status_code == 302


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Ada@Example.COM ", "ada@example.com"),
        ("ADA.Lovelace+tag@EXAMPLE.org", "ada.lovelace+tag@example.org"),
        ("no-at-sign", None),
        ("a@b", None),
        ("", None),
        ("x" * 250 + "@example.com", None),
    ],
)
def test_addresses_are_validated_and_lower_cased(raw: str, expected: str | None) -> None:
    assert addresses.normalize(raw) == expected


def test_sealed_values_belong_to_one_user() -> None:
    key = b"k" * 32
    token = crypto.seal(key, "user-1", "ada@example.com")
    assert "ada" not in token
    assert crypto.unseal(key, "user-1", token) == "ada@example.com"
    with pytest.raises(ValueError):
        crypto.unseal(key, "user-2", token)


def test_events_hold_no_readable_personal_data(app: Any, client: Any) -> None:
    from webapp.core import db
    from webapp.eventstore import read_all

    register(client, "ada@example.com")
    with db.reading() as conn:
        stored = repr([(e.payload, e.metadata) for e in read_all(conn)])
    assert "ada@example.com" not in stored and "argon2" not in stored
