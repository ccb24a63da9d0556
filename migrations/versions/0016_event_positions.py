"""Event positions from a sequence on PostgreSQL, so writers never wait for
each other's commits (see webapp/eventstore/positions.py). SQLite keeps the
counter row: it has one writer at a time anyway.

`event_position()` assigns the transaction its id before it draws the
number. A reader that sees a hole below a committed position knows that
whoever drew the missing number had its id before that reader's snapshot,
and so has finished once the xmin of a later snapshot passes the next id
taken after it.

Revision ID: 0016_event_positions
"""

from alembic import op

revision = "0016_event_positions"
down_revision = "0015_run_controls"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    # CACHE 1 (the default) keeps the numbers in draw order across sessions,
    # which the safe-position reasoning relies on.
    op.execute("CREATE SEQUENCE events_position_seq CACHE 1")
    op.execute(
        "SELECT setval('events_position_seq',"
        " greatest((SELECT last_position FROM event_counter WHERE id = 1),"
        " (SELECT max(position) FROM events), 0) + 1, false)"
    )
    op.execute(
        "CREATE FUNCTION event_position() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$"
        " BEGIN PERFORM pg_current_xact_id(); RETURN nextval('events_position_seq'); END $$"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "UPDATE event_counter SET last_position ="
        " greatest(last_position, (SELECT coalesce(max(position), 0) FROM events))"
    )
    op.execute("DROP FUNCTION event_position()")
    op.execute("DROP SEQUENCE events_position_seq")
