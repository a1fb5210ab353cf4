-- The games index (infra/ports/games.py): one row per game for the operator's list
-- (GET /games) and for the clocks' start-up. Written when a game is created and when it
-- finishes, never per command: a game's version and last change come from the events
-- table in the list query.
CREATE TABLE games (
    stream_id  text        PRIMARY KEY,
    seats      jsonb       NOT NULL,
    rules      jsonb       NOT NULL,
    clocked    boolean     NOT NULL DEFAULT false,
    status     text        NOT NULL DEFAULT 'in_progress'
                           CHECK (status IN ('in_progress', 'finished')),
    winners    jsonb,
    reason     text,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- A rematch names the game it follows; each finished game has at most one rematch.
    rematch_of text        UNIQUE,
    rematch    text
);

-- The list pages through games in creation order.
CREATE INDEX games_by_creation ON games (created_at, stream_id);
-- The timers start from the games in progress with a clock, and the start-up repair
-- looks at every game in progress: both stay small while finished games pile up.
CREATE INDEX games_in_progress ON games (clocked) WHERE status = 'in_progress';

-- Every game written before this migration, from its first event (and its last, if it
-- has finished).
INSERT INTO games (stream_id, seats, rules, clocked, created_at)
SELECT e.stream_id,
       convert_from(e.data, 'UTF8')::jsonb -> 'seats',
       convert_from(e.data, 'UTF8')::jsonb -> 'rules',
       (convert_from(e.data, 'UTF8')::jsonb -> 'rules' ->> 'turn_seconds') IS NOT NULL,
       e.recorded_at
  FROM events AS e
 WHERE e.version = 1 AND e.type = 'game_started';

UPDATE games AS g
   SET status = 'finished',
       winners = convert_from(e.data, 'UTF8')::jsonb -> 'winners',
       reason = convert_from(e.data, 'UTF8')::jsonb ->> 'reason'
  FROM events AS e
 WHERE e.stream_id = g.stream_id AND e.type = 'game_finished';
