"""The run tables and everything written to them: the events on a run's own
stream (`run_events`), the `workflow_runs` and `workflow_run_pending` tables,
their projection (inline, or set-based inside `projection.batched`), row
locks, lease renewal, wake-ups and look-back, and the reads the console, the
CLI and the privacy export need (`queries`). All SQL on the run tables lives
here.

Imports `definition` (and `interpreter`, the layer above) and the event
store; never the engine, the dispatch layer, Redis or the job queue. When it
sets a pending row's `wake_at` it signals the wake-up after commit through
`wake_signal`, whose one listener the dispatch layer installs.
"""
