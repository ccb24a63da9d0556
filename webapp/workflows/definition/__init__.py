"""What a workflow is: its triggers and steps (`model`), the builders that
make and check them (`builders`), the run context a step's functions see,
match expressions, durations, the definition fingerprint, and the catalog of
the definitions this process knows.

Pure: imports nothing but the standard library, croniter and the event
store's records (`webapp.eventstore.records`); no database, Redis or Flask
(an import-linter contract keeps it so). Authors import it through the
facade: `import webapp.workflows as wf`.
"""
