-- Snapshots (infra/ports/snapshots.py): a disposable cache of folded game states, one row
-- per game and code schema, never read by replay, audit or verify. Dropping every row is
-- always safe: games then load from their events alone.
CREATE TABLE snapshots (
    stream_id  text   NOT NULL,
    schema     text   NOT NULL,
    version    bigint NOT NULL CHECK (version > 0),
    state      bytea  NOT NULL,
    head       bytea  NOT NULL,
    PRIMARY KEY (stream_id, schema)
);
