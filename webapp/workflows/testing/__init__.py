"""Testing workflows without a worker, Redis or waiting (docs/workflows.md,
"Testing your workflows"):

    from webapp.workflows.testing import WorkflowTest

    def test_reminder_after_a_day():
        with WorkflowTest(verification_reminder) as t:
            ...                      # create the situation (publish, commands)
            t.advance("PT24H")       # a day passes, in milliseconds
            assert [m.subject for m in t.mails] == [...]

The real engine runs in-process on a fresh SQLite database with a frozen
clock; mails and webhook requests are captured, not sent. With pytest the
`workflow_test` fixture (`webapp.workflows.pytest_plugin`) starts one and
closes it after the test.
"""

from webapp.workflows.testing.capture import Mail, WebhookCall
from webapp.workflows.testing.harness import WorkflowTest
from webapp.workflows.testing.views import Run

__all__ = ["Mail", "Run", "WebhookCall", "WorkflowTest"]
