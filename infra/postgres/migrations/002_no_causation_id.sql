-- causation_id was never set: the command id already names what caused an append.
DROP FUNCTION bura_append(text, bigint, text[], bytea[], integer[], text, integer, text, text);
ALTER TABLE events DROP COLUMN causation_id;

-- One round trip per append: version check, insert events and command row. When the
-- stream is not at p_expected, the command id tells a repeat (duplicate, with the first
-- append's versions) from a conflict (appended_from NULL, with the stream's head).
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
    OUT appended_from bigint,
    OUT appended_to   bigint,
    OUT duplicate     boolean,
    OUT head          bigint
)
LANGUAGE plpgsql
AS $$
BEGIN
    duplicate := false;
    SELECT coalesce(max(e.version), 0) INTO head
      FROM events AS e
     WHERE e.stream_id = p_stream_id;

    IF head <> p_expected THEN
        IF p_command_id IS NOT NULL THEN
            SELECT c.first_version, c.last_version INTO appended_from, appended_to
              FROM commands AS c
             WHERE c.stream_id = p_stream_id AND c.command_id = p_command_id;
            duplicate := FOUND;
        END IF;
        RETURN;
    END IF;

    INSERT INTO events (stream_id, version, type, data, schema_version,
                        command_id, actor, correlation_id)
    SELECT p_stream_id, p_expected + n.ord, n.type, n.data, n.schema_version,
           p_command_id, p_actor, p_correlation_id
      FROM unnest(p_types, p_data, p_schema_versions)
           WITH ORDINALITY AS n(type, data, schema_version, ord)
     ORDER BY n.ord;

    appended_from := p_expected + 1;
    appended_to := p_expected + cardinality(p_types);
    head := appended_to;
    IF p_command_id IS NOT NULL THEN
        INSERT INTO commands (stream_id, command_id, first_version, last_version)
        VALUES (p_stream_id, p_command_id, appended_from, appended_to);
    END IF;
END;
$$;
