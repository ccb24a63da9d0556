"""Running runs: the resume rules as pure functions (`resume_rules`), the one
claim writer around them (`claims`), resuming and advancing runs
(`continuation`), the run loop, how a run stops (`stops`) or suspends itself
(`suspensions`), lease renewal while a run executes (`heartbeat`), and which
errors are transient (`transient`).

Imports `store`, `interpreter` and `definition`; never Redis, RQ or the job
queue (an import-linter contract keeps it so): what the store writes signals
the workers by itself.
"""
