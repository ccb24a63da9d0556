"""Run by test_outbox in a separate process: deliver one outbox row, as a
worker would (the test kills this process mid-send)."""

from __future__ import annotations

import os

from webapp import create_app
from webapp.mail.outbox import delivery


def main() -> None:
    app = create_app()
    with app.app_context():
        delivery.deliver(int(os.environ["OUTBOX_ID"]))


if __name__ == "__main__":
    main()
