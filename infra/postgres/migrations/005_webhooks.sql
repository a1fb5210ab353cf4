-- Webhooks, driven from the global order of the events (read_all):
--
-- leases            who does a job that exactly one replica may do at a time (the webhook
--                   dispatcher): a holder and an expiry the holder keeps renewing; another
--                   replica takes the row over only once it has expired. Times are the
--                   database's own, so the replicas' clocks never have to agree.
-- feed_checkpoints  how far a follower of the global order has got, (tx_id, position) of
--                   the last event it has dealt with.
-- webhook_endpoints where the operator wants to hear of what, with the secret to sign with.
-- webhook_deliveries one row per (endpoint, event): the body as first built (every attempt
--                   sends the same bytes under the same id), its state and last attempt.
-- webhook_attempts  every attempt of a delivery, for the delivery log.

CREATE TABLE leases (
    name        text        PRIMARY KEY,
    holder      text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE feed_checkpoints (
    name       text        PRIMARY KEY,
    tx_id      bigint      NOT NULL,
    position   bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_endpoints (
    id          text        PRIMARY KEY,
    url         text        NOT NULL,
    secret      text        NOT NULL,
    events      text[]      NOT NULL,
    source      text        NOT NULL CHECK (source IN ('api', 'config')),
    description text,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
    seq             bigserial   PRIMARY KEY,
    id              text        NOT NULL UNIQUE,
    endpoint_id     text        NOT NULL,
    url             text        NOT NULL,
    type            text        NOT NULL,
    game_id         text        NOT NULL,
    version         bigint      NOT NULL,
    -- the event's place in the global order: deliveries of a game go out in this order
    tx_id           bigint      NOT NULL,
    position        bigint      NOT NULL,
    recorded_at     timestamptz NOT NULL,
    body            bytea       NOT NULL,
    state           text        NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'delivered', 'failed', 'cancelled')),
    attempts        integer     NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_attempt_at timestamptz,
    last_status     integer,
    last_error      text,
    delivered_at    timestamptz
);

-- The dispatcher's question, "the oldest pending delivery of each endpoint and game",
-- and the backlog read only pending rows.
CREATE INDEX webhook_deliveries_pending
    ON webhook_deliveries (endpoint_id, game_id, tx_id, position) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_game ON webhook_deliveries (game_id, seq);

CREATE TABLE webhook_attempts (
    delivery_id text             NOT NULL,
    number      integer          NOT NULL,
    at          timestamptz      NOT NULL,
    status      integer,
    error       text,
    seconds     double precision NOT NULL,
    PRIMARY KEY (delivery_id, number)
);
