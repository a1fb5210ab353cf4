-- The record of a command moves onto the first event it wrote, and the store's append with
-- links becomes one INSERT.
--
-- Measured (bench/append.py, pgbench, 32 clients, 2 cores): the append with the links
-- made by the store (bura_append_chained) ran at 0.64 times a plain single-row INSERT.
-- Of what it added, about a third was the second row of every keyed command (a heap row
-- and an index entry in `commands`), and most of the rest the function around the insert:
-- reading the head by `ORDER BY version DESC LIMIT 1` and returning eight columns. The
-- same append as one statement of CTEs ran within 5 % of the function.
--
-- What changes:
-- 1. The first event of a keyed command carries the command's record: `command_last`, the
--    version of the command's last event, and `fingerprint`. A partial unique index on
--    (stream_id, command_id) over those rows is the idempotency record: a repeated id
--    breaks it and the append rolls back (23505), as `commands`' primary key did. Other
--    rows leave both columns NULL. The chain does not hash them (003 lists what it
--    hashes), so every link stays as it was.
-- 2. `commands` becomes a view over those rows with the columns it had, so replicas of the
--    releases before, which look a command up there, still find every one.
-- 3. bura_append_chained keeps its signature and its answers and writes the record onto
--    the event row; bura_append (003) and bura_append_linked (010), which replicas of the
--    releases before call during a rollout, become wrappers of it, with their own answers.
-- 4. When the store knows the head (its own last append or full read), it no longer calls
--    a function: it sends one INSERT ... SELECT that writes the rows only if the row at
--    the expected version exists with the hash and no later time than the ones sent
--    (infra/postgres/store.py: `_TAKE_ONE`, `_TAKE_MANY`, and `_TAKE_FIRST` for a new
--    stream). A head past the expected version makes the new row break the primary key;
--    a repeated command id breaks the unique index; a head short of it, or another hash,
--    writes nothing, and the store calls
--    bura_append_chained, which tells a conflict from a repeat or links the rows itself.
--    The guarantees are the function's: one round trip, the version check, the
--    idempotency record, the xid8 global order (tx_id's default) and a chain that only
--    ever continues its head.
-- Building the index reads every keyed command's row once; writes wait for it.

ALTER TABLE events ADD COLUMN command_last bigint, ADD COLUMN fingerprint text;

UPDATE events AS e
   SET command_last = c.last_version, fingerprint = c.fingerprint
  FROM commands AS c
 WHERE e.stream_id = c.stream_id AND e.version = c.first_version
   AND e.command_id = c.command_id;

DO $$
DECLARE
    lost bigint;
BEGIN
    SELECT count(*) INTO lost
      FROM commands AS c
     WHERE NOT EXISTS (SELECT FROM events AS e
                        WHERE e.stream_id = c.stream_id AND e.version = c.first_version
                          AND e.command_id = c.command_id);
    IF lost > 0 THEN
        RAISE EXCEPTION '% command records match no event; nothing was migrated', lost;
    END IF;
END;
$$;

CREATE UNIQUE INDEX events_commands ON events (stream_id, command_id)
 WHERE command_last IS NOT NULL;

DROP TABLE commands;

-- Read-only: the functions below write the record onto the event row.
CREATE VIEW commands AS
SELECT e.stream_id, e.command_id, e.version AS first_version, e.command_last AS last_version,
       e.recorded_at, e.actor, e.fingerprint
  FROM events AS e
 WHERE e.command_last IS NOT NULL;

CREATE OR REPLACE FUNCTION bura_append_chained(
    p_stream_id       text,
    p_expected        bigint,
    p_types           text[],
    p_data            bytea[],
    p_schema_versions integer[],
    p_command_id      text,
    p_actor           integer,
    p_correlation_id  text,
    p_fingerprint     text,
    p_previous        bytea DEFAULT NULL,
    p_recorded_at     timestamptz DEFAULT NULL,
    p_hashes          bytea DEFAULT NULL,
    OUT appended_from bigint,
    OUT appended_to   bigint,
    OUT duplicate     boolean,
    OUT head          bigint,
    OUT prior_actor   integer,
    OUT prior_fingerprint text,
    OUT recorded_at   timestamptz,
    OUT hashes        bytea
)
LANGUAGE plpgsql
AS $$
DECLARE
    v_hash bytea;
    v_at   timestamptz;
BEGIN
    duplicate := false;
    SELECT e.version, e.hash, e.recorded_at INTO head, v_hash, v_at
      FROM events AS e
     WHERE e.stream_id = p_stream_id
     ORDER BY e.version DESC
     LIMIT 1;
    IF NOT FOUND THEN
        head := 0;
        v_hash := '\x0000000000000000000000000000000000000000000000000000000000000000';
    END IF;

    IF head <> p_expected THEN
        IF p_command_id IS NOT NULL THEN
            SELECT e.version, e.command_last, e.actor, e.fingerprint
              INTO appended_from, appended_to, prior_actor, prior_fingerprint
              FROM events AS e
             WHERE e.stream_id = p_stream_id AND e.command_id = p_command_id
               AND e.command_last IS NOT NULL;
            duplicate := FOUND;
        END IF;
        RETURN;
    END IF;

    IF (v_hash = p_previous
        AND length(p_hashes) = 32 * cardinality(p_types)
        AND p_recorded_at >= coalesce(v_at, '-infinity')) IS NOT TRUE THEN
        p_recorded_at := now();
        p_hashes := '';
        FOR i IN 1 .. cardinality(p_types) LOOP
            v_hash := bura_link(v_hash, p_stream_id, p_expected + i, p_types[i],
                                p_schema_versions[i], p_data[i], p_command_id, p_actor,
                                p_correlation_id, p_recorded_at);
            p_hashes := p_hashes || v_hash;
        END LOOP;
        recorded_at := p_recorded_at;
        hashes := p_hashes;
    END IF;

    appended_from := p_expected + 1;
    appended_to := p_expected + cardinality(p_types);
    head := appended_to;
    INSERT INTO events (stream_id, version, type, data, schema_version, command_id, actor,
                        correlation_id, recorded_at, hash, command_last, fingerprint)
    SELECT p_stream_id, p_expected + n.ord, n.type, n.data, n.schema_version,
           p_command_id, p_actor, p_correlation_id, p_recorded_at,
           substring(p_hashes FROM n.ord::integer * 32 - 31 FOR 32),
           CASE WHEN n.ord = 1 AND p_command_id IS NOT NULL THEN appended_to END,
           CASE WHEN n.ord = 1 AND p_command_id IS NOT NULL THEN p_fingerprint END
      FROM unnest(p_types, p_data, p_schema_versions)
           WITH ORDINALITY AS n(type, data, schema_version, ord)
     ORDER BY n.ord;
END;
$$;

-- The release of migration 003: the links made here, and the last one answered.
CREATE OR REPLACE FUNCTION bura_append(
    p_stream_id       text,
    p_expected        bigint,
    p_types           text[],
    p_data            bytea[],
    p_schema_versions integer[],
    p_command_id      text,
    p_actor           integer,
    p_correlation_id  text,
    p_fingerprint     text,
    OUT appended_from bigint,
    OUT appended_to   bigint,
    OUT duplicate     boolean,
    OUT head          bigint,
    OUT last_hash     bytea,
    OUT prior_actor   integer,
    OUT prior_fingerprint text
)
LANGUAGE sql
AS $$
    SELECT a.appended_from, a.appended_to, a.duplicate, a.head,
           substring(a.hashes FROM length(a.hashes) - 31), a.prior_actor,
           a.prior_fingerprint
      FROM bura_append_chained(p_stream_id, p_expected, p_types, p_data, p_schema_versions,
                               p_command_id, p_actor, p_correlation_id, p_fingerprint) AS a
$$;

-- The release of migration 010: links as an array, and every written row's link and time
-- answered, whether taken or made here.
CREATE OR REPLACE FUNCTION bura_append_linked(
    p_stream_id       text,
    p_expected        bigint,
    p_types           text[],
    p_data            bytea[],
    p_schema_versions integer[],
    p_command_id      text,
    p_actor           integer,
    p_correlation_id  text,
    p_fingerprint     text,
    p_previous        bytea DEFAULT NULL,
    p_recorded_at     timestamptz DEFAULT NULL,
    p_hashes          bytea[] DEFAULT NULL,
    OUT appended_from bigint,
    OUT appended_to   bigint,
    OUT duplicate     boolean,
    OUT head          bigint,
    OUT last_hash     bytea,
    OUT prior_actor   integer,
    OUT prior_fingerprint text,
    OUT last_recorded_at timestamptz,
    OUT hashes        bytea[]
)
LANGUAGE sql
AS $$
    WITH sent AS (
        SELECT (SELECT string_agg(h.link, ''::bytea ORDER BY h.ord)
                  FROM unnest(p_hashes) WITH ORDINALITY AS h(link, ord)) AS links
    ),
    a AS (
        SELECT c.*, (c.appended_from IS NOT NULL AND NOT c.duplicate) AS written
          FROM sent AS s,
               bura_append_chained(p_stream_id, p_expected, p_types, p_data,
                                   p_schema_versions, p_command_id, p_actor,
                                   p_correlation_id, p_fingerprint, p_previous,
                                   p_recorded_at, s.links) AS c
    ),
    w AS (
        SELECT a.*, CASE WHEN a.written THEN coalesce(a.hashes, s.links) END AS links,
               CASE WHEN a.written THEN coalesce(a.recorded_at, p_recorded_at) END AS at
          FROM a, sent AS s
    )
    SELECT w.appended_from, w.appended_to, w.duplicate, w.head,
           substring(w.links FROM length(w.links) - 31), w.prior_actor, w.prior_fingerprint,
           w.at,
           CASE WHEN w.written THEN
               ARRAY(SELECT substring(w.links FROM i * 32 - 31 FOR 32)
                       FROM generate_series(1, length(w.links) / 32) AS i ORDER BY i)
           END
      FROM w
$$;
