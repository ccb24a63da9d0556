"""The dotted paths of the workflow engine's RQ jobs: the functions in
`worker.workflow_tasks`, named here so that whoever enqueues them (the web
processes too) needs nothing of the worker. Constants only: this module
imports nothing."""

RESUME_RUN = "worker.workflow_tasks.resume_run"
ADVANCE = "worker.workflow_tasks.advance"
ADVANCE_MANY = "worker.workflow_tasks.advance_many"
CONTINUE_RUN = "worker.workflow_tasks.continue_run"
DRAIN = "worker.workflow_tasks.drain"
