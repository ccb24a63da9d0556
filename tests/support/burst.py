"""The real RQ worker for in-process tests: `BurstWorker(queues, connection=r).work(burst=True)`.

It is rq's SimpleWorker with one change at teardown. rq unsubscribes from the
worker's command channel and only then stops the thread that listens on it:
when that thread reads the unsubscribe reply before the stop, it goes back to
waiting for a subscription (60 s) and rq's `join(timeout=1)` waits out the full
second. That cost about a third of a second per burst on average, and the suite
runs hundreds of bursts. Here the thread is told to stop first, so the reply
ends it at once. Jobs, queues and the command channel are rq's, unchanged."""

from __future__ import annotations

from rq import SimpleWorker


class BurstWorker(SimpleWorker):
    def unsubscribe(self) -> None:
        if self.pubsub_thread is not None:
            self.pubsub_thread.stop()
        super().unsubscribe()
