-- uid_encode() and uid_decode(): IDs as 13 digits of Crockford's base32.
SET client_min_messages = warning;

-- Edge values both ways.
SELECT v AS uid, uid_encode(v) AS text, uid_decode(uid_encode(v)) = v AS round_trip
  FROM (VALUES (0::bigint), (1), (31), (32), (1024), (1::bigint << 60), (9223372036854775806),
               (9223372036854775807)) t(v);

-- Either case, and Crockford's aliases: I and L are 1, O is 0.
SELECT uid_decode('7zzzzzzzzzzzz') AS lower_case, uid_decode('000000000000I') AS i,
       uid_decode('000000000000l') AS l, uid_decode('OOOOOOOOOOOoo') AS o;

-- Text order is numeric order: for IDs of every magnitude, and for IDs uid_next() issued.
SELECT setseed(0.22);
CREATE TEMP TABLE ids AS
SELECT ((random() * 4611686018427387903)::bigint >> (random() * 62)::int) AS id FROM generate_series(1, 10000)
UNION ALL SELECT uid_next() FROM generate_series(1, 1000);
SELECT count(*) AS ids,
       bool_and(uid_decode(uid_encode(id)) = id) AS round_trips,
       bool_and(length(uid_encode(id)) = 13) AS fixed_width,
       array_agg(id ORDER BY uid_encode(id) COLLATE "C") = array_agg(id ORDER BY id) AS c_order,
       array_agg(id ORDER BY uid_encode(id)) = array_agg(id ORDER BY id) AS default_order
  FROM ids;

-- Negative bigints are not IDs; text that is not 13 base32 digits is refused.
SELECT regress.try('SELECT uid_encode(-1)', true);
SELECT regress.try('SELECT uid_encode(-9223372036854775808)', true);
SELECT regress.try($$SELECT uid_decode('')$$, true);
SELECT regress.try($$SELECT uid_decode('000000000001')$$, true);
SELECT regress.try($$SELECT uid_decode('00000000000001')$$, true);
SELECT regress.try($$SELECT uid_decode('0000-0000-00001')$$, true);
SELECT regress.try($$SELECT uid_decode('000000000000U')$$, true);
SELECT regress.try($$SELECT uid_decode('0000000000001*')$$, true);
SELECT regress.try($$SELECT uid_decode(' 0000000000001')$$, true);
-- ... or names a value beyond a bigint: the first digit is at most 7.
SELECT regress.try($$SELECT uid_decode('8000000000000')$$, true);
SELECT regress.try($$SELECT uid_decode('ZZZZZZZZZZZZZ')$$, true);

-- STRICT, and IMMUTABLE: indexable.
SELECT uid_encode(NULL) IS NULL AS encode_null, uid_decode(NULL) IS NULL AS decode_null;
CREATE TABLE tickets (id bigint PRIMARY KEY DEFAULT uid_next(), title text);
CREATE UNIQUE INDEX tickets_code ON tickets (uid_encode(id) COLLATE "C");
INSERT INTO tickets (title) SELECT 'ticket ' || i FROM generate_series(1, 100) i;
SELECT count(*) AS found FROM tickets t WHERE uid_encode(t.id) = (SELECT uid_encode(max(id)) FROM tickets);
SELECT id = uid_decode(lower(uid_encode(id))) AS lower_case_link FROM tickets ORDER BY id LIMIT 1;
DROP TABLE tickets;
