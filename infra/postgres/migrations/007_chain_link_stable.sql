-- The chain's link function (migration 003) computes exactly the same hash, but is now
-- declared STABLE, which is what its body is: convert_to() and extract() on a
-- timestamptz are stable functions. Declared IMMUTABLE over a stable body, PostgreSQL
-- refuses to inline it, so bura_append ran it as a separate SQL function call for every
-- event, about three times the cost of the expression itself; inlined, the chain adds
-- little to an append (bench/store.py measures it: `chain_cost`). bura_append itself is
-- unchanged.

CREATE OR REPLACE FUNCTION bura_link(
    previous bytea, stream_id text, version bigint, type text, schema_version integer,
    data bytea, command_id text, actor integer, correlation_id text, recorded_at timestamptz
) RETURNS bytea
LANGUAGE sql STABLE PARALLEL SAFE
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
