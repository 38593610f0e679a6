-- uid_to_uuid() and uuid_to_uid(): IDs as UUIDv7-shaped UUIDs, and back.
SET client_min_messages = warning;
SET timezone = 'UTC';

-- A known ID: 2026-01-01 00:00:01 UTC, worker 42, sequence 7; version 7, variant 10, tag 5a5.
SELECT (1000::bigint << 22) | (42 << 9) | 7 AS uid,
       uid_to_uuid((1000::bigint << 22) | (42 << 9) | 7) AS uuid,
       uuid_to_uid(uid_to_uuid((1000::bigint << 22) | (42 << 9) | 7)) AS back;

-- Round trip and order on 10^6 random IDs of the layout (seeded), and on IDs issued.
SELECT setseed(0.37);
CREATE TEMP TABLE ids AS
SELECT ((floor(random() * 2199023255552)::bigint << 22) | (floor(random() * 8192)::bigint << 9)
        | floor(random() * 512)::bigint) AS id
  FROM generate_series(1, 1000000)
UNION ALL SELECT uid_next() FROM generate_series(1, 1000);
CREATE TEMP TABLE uuids AS SELECT id, uid_to_uuid(id) AS u FROM ids;
SELECT count(*) AS ids,
       bool_and(uuid_to_uid(u) = id) AS round_trips,
       bool_and(substr(u::text, 15, 1) = '7') AS version_7,
       bool_and(substr(u::text, 20, 1) IN ('8', '9', 'a', 'b')) AS variant_10
  FROM uuids;
SELECT count(*) AS out_of_order
  FROM (SELECT id, lag(id) OVER (ORDER BY u) AS before FROM uuids) t
 WHERE before >= id;

-- The UUID's millisecond field is the ID's time (uid_timestamp()).
SELECT bool_and(('x' || substr(replace(u::text, '-', ''), 1, 12))::bit(48)::bigint
                = (extract(epoch FROM uid_timestamp(id)) * 1000)::bigint) AS time_field_is_uid_timestamp
  FROM uuids;

-- Not ours: another version, another variant, no tag, a time field that is not the ID's.
SELECT regress.try($$SELECT uuid_to_uid('0994fb61-7534-48ed-9d41-b61715e55b3a')$$);
SELECT regress.try($$SELECT uuid_to_uid('019b7cc7-7fe8-7b4a-0000-000fa0005407')$$);
SELECT regress.try($$SELECT uuid_to_uid('019b7cc7-7fe8-7000-8000-000fa0005407')$$);
SELECT regress.try(format('SELECT uuid_to_uid(%L)',
                          overlay(uid_to_uuid((1000::bigint << 22) | 7)::text PLACING 'f' FROM 12 FOR 1)), true);
-- A UUIDv7 of another generator.
SELECT regress.try($$SELECT uuid_to_uid('01936f2a-8b5c-7d3e-9f4a-1b2c3d4e5f60')$$);
-- An ID the layout refuses, and one whose time precedes 1970 or follows the year 10889, has no UUID.
SELECT regress.try('SELECT uid_to_uuid(-1)');

-- IMMUTABLE: indexable, and then the layout cannot change under the index.
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT uid_next());
CREATE INDEX orders_uuid ON orders (uid_to_uuid(id));
INSERT INTO orders SELECT FROM generate_series(1, 100);
SET enable_seqscan = off;
SELECT count(*) = 1 AS found_by_uuid
  FROM orders WHERE uid_to_uuid(id) = (SELECT uid_to_uuid(min(id)) FROM orders);
RESET enable_seqscan;
SELECT p.proname, p.provolatile FROM pg_proc p WHERE p.proname IN ('uid_to_uuid', 'uuid_to_uid') ORDER BY 1;
DROP TABLE orders;

-- Second units give whole seconds, in a fresh database whose layout is free.
\set regress_db :DBNAME
CREATE DATABASE uidgen_uuid_seconds;
\c uidgen_uuid_seconds
SET client_min_messages = warning;
SET timezone = 'UTC';
CREATE EXTENSION uidgen;
-- The layout guard: an index on uid_to_uuid() or uuid_to_uid() holds the layout as it is.
CREATE TABLE guarded (id bigint, u uuid);
CREATE INDEX guarded_uuid ON guarded (uid_to_uuid(id));
\set VERBOSITY terse
SELECT max_id FROM uid_configure(31, 10, 12, '2026-01-01+00', 'second');
\set VERBOSITY default
DROP INDEX guarded_uuid;
CREATE INDEX guarded_uid ON guarded (uuid_to_uid(u));
\set VERBOSITY terse
SELECT max_id FROM uid_configure(31, 10, 12, '2026-01-01+00', 'second');
\set VERBOSITY default
DROP TABLE guarded;
SELECT max_id, javascript_safe FROM uid_configure(31, 10, 12, '2026-01-01+00', 'second');
CREATE TABLE t AS SELECT uid_next() AS id FROM generate_series(1, 1000);
SELECT bool_and(uuid_to_uid(uid_to_uuid(id)) = id) AS round_trips,
       bool_and(('x' || substr(replace(uid_to_uuid(id)::text, '-', ''), 1, 12))::bit(48)::bigint % 1000 = 0)
           AS whole_seconds,
       bool_and(('x' || substr(replace(uid_to_uuid(id)::text, '-', ''), 1, 12))::bit(48)::bigint
                = (extract(epoch FROM uid_timestamp(id)) * 1000)::bigint) AS time_field_is_uid_timestamp
  FROM t;
-- Its last second and its largest ID.
SELECT uuid_to_uid(uid_to_uuid(max_id)) = max_id AS max_id_round_trips,
       uid_to_uuid(max_id) > uid_to_uuid(max_id - 1) AS ordered
  FROM uid_layout();
\c :regress_db
DROP DATABASE uidgen_uuid_seconds;
