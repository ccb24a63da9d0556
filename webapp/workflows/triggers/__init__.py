"""What starts and wakes runs: event, webhook and cron triggers (`start`),
the wake-up of runs waiting for an event (`wakeups`), the erasure of a
subject's runs (`subject_erasure`), and `registry.register`, which adds a
workflow to the catalog and mounts its projections or cron job.

Imports every layer above (dispatch, engine, store, interpreter, definition);
only the package's facade, CLI, operator actions and webhook route import it.
"""
