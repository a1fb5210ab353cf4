-- Two additions to the append, made together since both live in bura_append:
--
-- 1. Every command row keeps the seat that sent it and a fingerprint of the command
--    (services compute it), so a key reused for another command or by another seat can be
--    told from a retry.
-- 2. Every event row carries `hash`, chained to the row before it in its stream:
--      hash(v) = sha256(hash(v - 1) || canonical(v)),  hash(0) = 32 zero bytes
--    where canonical(v) is every recorded field of the row, each as a 4-byte big-endian
--    length and its bytes (a NULL is the length ffffffff and no bytes), in this order:
--    stream_id, version, type, schema_version, data, command_id, actor, correlation_id,
--    recorded_at; numbers are decimal text, text is UTF-8, recorded_at is microseconds
--    since 1970-01-01 UTC. domain/chain.py computes the same in Python (SQLite, offline
--    verification); docs/fairness.md gives test vectors.

ALTER TABLE commands ADD COLUMN actor integer, ADD COLUMN fingerprint text;
ALTER TABLE events ADD COLUMN hash bytea;

CREATE FUNCTION bura_field(value bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN value IS NULL THEN '\xffffffff'::bytea
                ELSE int4send(length(value)) || value END
$$;

CREATE FUNCTION bura_link(
    previous bytea, stream_id text, version bigint, type text, schema_version integer,
    data bytea, command_id text, actor integer, correlation_id text, recorded_at timestamptz
) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT sha256(
        previous
        || bura_field(convert_to(stream_id, 'UTF8'))
        || bura_field(convert_to(version::text, 'UTF8'))
        || bura_field(convert_to(type, 'UTF8'))
        || bura_field(convert_to(schema_version::text, 'UTF8'))
        || bura_field(data)
        || bura_field(convert_to(command_id, 'UTF8'))
        || bura_field(convert_to(actor::text, 'UTF8'))
        || bura_field(convert_to(correlation_id, 'UTF8'))
        || bura_field(convert_to(
               (extract(epoch FROM recorded_at) * 1000000)::bigint::text, 'UTF8'))
    )
$$;

-- The chain of the streams written before this migration, computed once.
DO $$
DECLARE
    r record;
    previous bytea;
    stream text := NULL;
BEGIN
    FOR r IN SELECT * FROM events ORDER BY stream_id, version LOOP
        IF stream IS DISTINCT FROM r.stream_id THEN
            stream := r.stream_id;
            previous := '\x0000000000000000000000000000000000000000000000000000000000000000';
        END IF;
        previous := bura_link(previous, r.stream_id, r.version, r.type, r.schema_version,
                              r.data, r.command_id, r.actor, r.correlation_id, r.recorded_at);
        UPDATE events SET hash = previous WHERE stream_id = r.stream_id AND version = r.version;
    END LOOP;
END;
$$;

ALTER TABLE events ALTER COLUMN hash SET NOT NULL;

DROP FUNCTION bura_append(text, bigint, text[], bytea[], integer[], text, integer, text);

-- One round trip per append: version check, insert events (each hashed onto the chain)
-- and command row. When the stream is not at p_expected, the command id tells a repeat
-- (duplicate, with the first append's versions, seat and fingerprint) from a conflict
-- (appended_from NULL, with the stream's head).
-- On the happy path the command id is not looked up: a repeat made at the current head
-- hits the commands primary key instead, and a concurrent writer that took the same
-- version first makes the events insert fail; either way the statement rolls back with
-- unique_violation (23505) and the caller looks the command up again.
-- Never ON CONFLICT DO NOTHING here: it would hide lost appends.
CREATE FUNCTION bura_append(
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
LANGUAGE plpgsql
AS $$
DECLARE
    v_now    timestamptz := now();
    v_hashes bytea[] := '{}';
    v_hash   bytea;
BEGIN
    duplicate := false;
    SELECT e.version, e.hash INTO head, v_hash
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
            SELECT c.first_version, c.last_version, c.actor, c.fingerprint
              INTO appended_from, appended_to, prior_actor, prior_fingerprint
              FROM commands AS c
             WHERE c.stream_id = p_stream_id AND c.command_id = p_command_id;
            duplicate := FOUND;
        END IF;
        RETURN;
    END IF;

    FOR i IN 1 .. cardinality(p_types) LOOP
        v_hash := bura_link(v_hash, p_stream_id, p_expected + i, p_types[i],
                            p_schema_versions[i], p_data[i], p_command_id, p_actor,
                            p_correlation_id, v_now);
        v_hashes := v_hashes || v_hash;
    END LOOP;

    INSERT INTO events (stream_id, version, type, data, schema_version,
                        command_id, actor, correlation_id, recorded_at, hash)
    SELECT p_stream_id, p_expected + n.ord, n.type, n.data, n.schema_version,
           p_command_id, p_actor, p_correlation_id, v_now, n.hash
      FROM unnest(p_types, p_data, p_schema_versions, v_hashes)
           WITH ORDINALITY AS n(type, data, schema_version, hash, ord)
     ORDER BY n.ord;

    appended_from := p_expected + 1;
    appended_to := p_expected + cardinality(p_types);
    head := appended_to;
    last_hash := v_hash;
    IF p_command_id IS NOT NULL THEN
        INSERT INTO commands (stream_id, command_id, first_version, last_version, actor,
                              fingerprint)
        VALUES (p_stream_id, p_command_id, appended_from, appended_to, p_actor, p_fingerprint);
    END IF;
END;
$$;
