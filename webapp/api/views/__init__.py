"""The API's operations, one module per resource: events, runs, workflows,
and meta (the OpenAPI document and the token's own description)."""
