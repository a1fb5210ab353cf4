-- bura_append_chained: bura_append_linked (migration 010) with less to carry on the path
-- every append takes, when the store's links are taken (measured in bench/store.py,
-- `chain_cost_cpu`: about a third of what the chain added to the database's CPU per event
-- beside the row's 33 bytes themselves):
-- - The links come as one bytea, the events' 32-byte hashes back to back (first event
--   first), instead of a bytea[]: no array to build on either side, no fourth array to
--   unnest; each row takes its 32 bytes by position.
-- - When the links sent are taken, nothing about them comes back: the store knows them and
--   the time it sent. `recorded_at` and `hashes` (the same back-to-back form) are returned
--   only when the function computed the links itself, and are NULL otherwise.
-- The guarantees are bura_append_linked's, word for word: one round trip and one
-- transaction, the version check, the idempotency row, the xid8 global order, and links
-- taken only if they continue this stream's chain exactly where it is (the head's hash
-- equals p_previous, 32 bytes per event, the time not earlier than the head's); otherwise,
-- or without them, computed here with bura_link at now().
-- bura_append (003) and bura_append_linked (010) stay, so replicas of the releases before
-- keep appending while a rollout replaces them, onto the same chain.

CREATE FUNCTION bura_append_chained(
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
            SELECT c.first_version, c.last_version, c.actor, c.fingerprint
              INTO appended_from, appended_to, prior_actor, prior_fingerprint
              FROM commands AS c
             WHERE c.stream_id = p_stream_id AND c.command_id = p_command_id;
            duplicate := FOUND;
        END IF;
        RETURN;
    END IF;

    -- The links sent continue the head (IS NOT TRUE: a NULL anywhere is a no), or are
    -- replaced by the ones computed here, at the database's time, and returned.
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

    INSERT INTO events (stream_id, version, type, data, schema_version,
                        command_id, actor, correlation_id, recorded_at, hash)
    SELECT p_stream_id, p_expected + n.ord, n.type, n.data, n.schema_version,
           p_command_id, p_actor, p_correlation_id, p_recorded_at,
           substring(p_hashes FROM n.ord::integer * 32 - 31 FOR 32)
      FROM unnest(p_types, p_data, p_schema_versions)
           WITH ORDINALITY AS n(type, data, schema_version, ord)
     ORDER BY n.ord;

    appended_from := p_expected + 1;
    appended_to := p_expected + cardinality(p_types);
    head := appended_to;
    IF p_command_id IS NOT NULL THEN
        INSERT INTO commands (stream_id, command_id, first_version, last_version, actor,
                              fingerprint)
        VALUES (p_stream_id, p_command_id, appended_from, appended_to, p_actor, p_fingerprint);
    END IF;
END;
$$;
