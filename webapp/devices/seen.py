"""What "Your devices" and the new-device mail show of a request's device:
browser and system read from the user agent with `ua-parser` (only these two
words are kept, never the agent string), and the client address shortened
(IPv4 to its /24, `203.0.113.x`; IPv6 to its /48, `2001:db8:abcd::/48`): enough
to tell "at home" from "abroad", not to find the line. The full address is
never stored."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from flask import request
from ua_parser import parse

WIDTH = 64  # the columns' width (user_sessions.browser, .system)
IPV6_PREFIX = 48


@dataclass(frozen=True)
class Seen:
    browser: str | None  # "Chrome 120"; None when the agent names none
    system: str | None  # "Windows 10", "Linux"
    address: str | None  # shortened; None when there is no valid address


def _named(family: str | None, major: str | None) -> str | None:
    if not family or family == "Other":
        return None
    return (f"{family} {major}" if major else family)[:WIDTH]


def browser_and_system(agent: str) -> tuple[str | None, str | None]:
    if not agent:
        return None, None
    result = parse(agent[:1024])  # a longer agent names nothing more
    ua, os = result.user_agent, result.os
    return (
        _named(ua.family, ua.major) if ua else None,
        _named(os.family, os.major) if os else None,
    )


def short_address(raw: str | None) -> str | None:
    try:
        ip = ipaddress.ip_address((raw or "").strip())
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if isinstance(ip, ipaddress.IPv4Address):
        a, b, c, _ = str(ip).split(".")
        return f"{a}.{b}.{c}.x"
    return str(ipaddress.ip_network(f"{ip}/{IPV6_PREFIX}", strict=False))


def of_request() -> Seen:
    """This request's device (the address as ProxyFix gave it: TRUSTED_PROXIES)."""
    browser, system = browser_and_system(request.headers.get("User-Agent", ""))
    return Seen(browser, system, short_address(request.remote_addr))
