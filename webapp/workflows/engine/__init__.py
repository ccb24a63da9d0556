"""Running runs: resuming and advancing them (`resume`: the resume rules, the
one claim writer around them, settle-ahead and the continuation), the run loop, how a run stops (`stops`) or suspends itself
(`suspensions`), lease renewal while a run executes (`heartbeat`), and which
errors are transient (`transient`).

Imports `store`, `interpreter` and `definition`; never Redis, RQ or the job
queue (an import-linter contract keeps it so): what the store writes signals
the workers by itself.
"""
