"""The infrastructure every feature stands on: configuration, the clock, the
database and its drivers, Redis, logs, security headers and CSRF, static files,
migrations, the release. It imports nothing of the features (an import-linter
contract keeps it so)."""
