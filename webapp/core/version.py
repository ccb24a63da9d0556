"""The release this code is. pyproject.toml's `version` is the one place it is
written; at run time it is read from the installed distribution's metadata, so
`pip install` (which `make` runs again whenever pyproject.toml changes) is what
brings a new number into `flask about`, `/healthz` and the console's footer."""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "webapp"
# A checkout on PYTHONPATH that was never installed has no metadata: a local
# version that sorts below every release, rather than a guess.
UNKNOWN = "0+unknown"


def read(distribution: str = DISTRIBUTION) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return UNKNOWN


VERSION = read()
