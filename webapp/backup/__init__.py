"""Backup and restore (`flask backup ...`; docs/operations.md, "Backup and
restore").

- `archive`: a backup on disk: its folder, manifest and checksums.
- `contents`: what a database holds, summed up (events, streams, runs, waits,
  mails, cursors), to compare a copy with what it was taken from.
- `sqlite_copy` and `pg_dump`: each backend's consistent online copy, its
  check and its swap into place.
- `running`: whether any process of the product is still at work.
- `restore`: putting a backup in place, and the start-up checks after it.
- `cli`: the commands.
"""

from __future__ import annotations

from flask import Flask

from webapp.backup import cli


def init_app(app: Flask) -> None:
    app.cli.add_command(cli.backup_cli)
