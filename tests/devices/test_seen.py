"""What the device list and the alert show of a device (webapp/devices/seen.py):
browser and system from the user agent, the address shortened: IPv4 to its /24
(`203.0.113.x`), IPv6 to its /48; anything that is no address shows nothing."""

from __future__ import annotations

import pytest

from webapp.devices.seen import browser_and_system, short_address


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("203.0.113.7", "203.0.113.x"),
        ("10.0.0.255", "10.0.0.x"),
        ("2001:db8:abcd:12:34::1", "2001:db8:abcd::/48"),
        ("2001:0DB8:ABCD:0012::1", "2001:db8:abcd::/48"),
        ("::1", "::/48"),
        ("::ffff:198.51.100.23", "198.51.100.x"),  # IPv4-mapped: shown as IPv4
        ("fe80::1%eth0", "fe80::/48"),
        ("", None),
        (None, None),
        ("not-an-address", None),
        ("203.0.113.7, 10.0.0.1", None),
        ("999.1.1.1", None),
        ("<script>", None),
    ],
)
def test_addresses_are_shortened(raw: str | None, shown: str | None) -> None:
    assert short_address(raw) == shown


@pytest.mark.parametrize(
    ("agent", "browser", "system"),
    [
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 "
            "(KHTML, like Gecko) Version/17.1 Safari/605.1.15",
            "Safari 17",
            "Mac OS X 10",
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 "
            "(KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
            "Mobile Safari 17",
            "iOS 17",
        ),
        ("", None, None),
        ("curl/8.0", "curl 8", None),
        ("\x00\x01 nonsense " * 300, None, None),
    ],
)
def test_browser_and_system_from_the_user_agent(
    agent: str, browser: str | None, system: str | None
) -> None:
    assert browser_and_system(agent) == (browser, system)


def test_names_fit_their_columns() -> None:
    long = "Mozilla/5.0 (" + "X" * 500 + ") " + "Y" * 500 + "/1.0"
    browser, system = browser_and_system(long)
    assert all(v is None or len(v) <= 64 for v in (browser, system))
