-- bura_append_linked: bura_append (migration 003) whose chain links may come with the
-- append, computed by the store adapter, which hashes in a fraction of the time SQL takes:
-- measured, evaluating bura_link for the events made an append cost about a third more
-- database CPU than the same append without a chain; taking the links made by the store,
-- about a tenth more (bench/store.py, `chain_cost_cpu`).
--
-- The chain is the same (migration 003 defines it; domain/chain.py computes it), and so
-- is everything else bura_append guarantees. What differs:
-- - The adapter may send p_previous (the hash it believes the head has), p_recorded_at
--   (the time it hashed into the rows) and p_hashes (one link per event). They are used
--   only if they continue this stream's chain exactly where it is: the head's hash equals
--   p_previous, there is one hash per event, and the time is not earlier than the head's.
--   Otherwise, or without them, the function computes the links itself at now(), as
--   before. A stale or wrong guess therefore never forks or breaks the chain; at worst it
--   costs the computation it meant to save.
-- - It returns the recorded time of the rows it wrote (last_recorded_at), so the adapter
--   knows the head's time for its next guess, and the hash of every row it wrote
--   (hashes, first to last), so that an append's hint can carry every version's head.
-- The links the adapter sends cannot be checked here without the computation they save:
-- the store's contract suite rehashes every row it writes, and `bura verify` checks the
-- chain of any game.
-- bura_append stays as it is, so replicas of the release before keep appending while a
-- rollout replaces them (they read its seven columns).

CREATE FUNCTION bura_append_linked(
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
LANGUAGE plpgsql
AS $$
DECLARE
    v_hash   bytea;
    v_at     timestamptz;
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

    -- The links sent are taken as they are, or (when they do not continue the head)
    -- replaced by the ones computed here, at the database's time.
    IF p_hashes IS NULL
       OR v_hash IS DISTINCT FROM p_previous
       OR cardinality(p_hashes) IS DISTINCT FROM cardinality(p_types)
       OR p_recorded_at IS NULL
       OR p_recorded_at < v_at THEN
        p_recorded_at := now();
        p_hashes := '{}';
        FOR i IN 1 .. cardinality(p_types) LOOP
            v_hash := bura_link(v_hash, p_stream_id, p_expected + i, p_types[i],
                                p_schema_versions[i], p_data[i], p_command_id, p_actor,
                                p_correlation_id, p_recorded_at);
            p_hashes := p_hashes || v_hash;
        END LOOP;
    END IF;

    INSERT INTO events (stream_id, version, type, data, schema_version,
                        command_id, actor, correlation_id, recorded_at, hash)
    SELECT p_stream_id, p_expected + n.ord, n.type, n.data, n.schema_version,
           p_command_id, p_actor, p_correlation_id, p_recorded_at, n.hash
      FROM unnest(p_types, p_data, p_schema_versions, p_hashes)
           WITH ORDINALITY AS n(type, data, schema_version, hash, ord)
     ORDER BY n.ord;

    appended_from := p_expected + 1;
    appended_to := p_expected + cardinality(p_types);
    head := appended_to;
    last_hash := p_hashes[cardinality(p_hashes)];
    last_recorded_at := p_recorded_at;
    hashes := p_hashes;
    IF p_command_id IS NOT NULL THEN
        INSERT INTO commands (stream_id, command_id, first_version, last_version, actor,
                              fingerprint)
        VALUES (p_stream_id, p_command_id, appended_from, appended_to, p_actor, p_fingerprint);
    END IF;
END;
$$;
