"""Process entry points: the RQ worker, the rq-scheduler, and the `make run` launcher."""
