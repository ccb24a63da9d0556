"""Who may read metrics: a client address in `METRICS_ALLOW` (default
loopback), or a request with `Authorization: Bearer <METRICS_TOKEN>`."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence


class Guard:
    def __init__(self, allow: Sequence[str], token: str) -> None:
        self.networks = [ipaddress.ip_network(n) for n in allow]
        self.token = token.encode()

    def admits(self, remote_addr: str | None, authorization: str | None) -> bool:
        bearer = (authorization or "").removeprefix("Bearer ")
        if (
            self.token
            and bearer != authorization
            and hmac.compare_digest(bearer.encode(), self.token)
        ):
            return True
        try:
            addr = ipaddress.ip_address(remote_addr or "")
        except ValueError:
            return False
        if addr.version == 6 and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped
        return any(addr in net for net in self.networks)
