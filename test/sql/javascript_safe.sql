-- JavaScript-safe IDs: uid_layout()'s max_id and javascript_safe, and a
-- 53-bit layout every ID of whose life stays within 2^53 - 1.
SET client_min_messages = warning;

-- The default 41/13/9 layout uses all 63 bits.
SELECT max_id, max_id = 9223372036854775807 AS all_63_bits, javascript_safe FROM uid_layout();

-- A fresh database, to choose a layout before any ID.
\set regress_db :DBNAME
CREATE DATABASE uidgen_javascript;
\c uidgen_javascript
SET client_min_messages = warning;
SET timezone = 'UTC';
CREATE EXTENSION uidgen;

-- One bit too many is not safe; 31 + 10 + 12 = 53 bits is.
SELECT max_id, javascript_safe FROM uid_configure(32, 10, 12, '2026-01-01+00', 'second');
SELECT time_bits, worker_bits, seq_bits, unit, max_worker_id, ids_per_second, exhausted_at, max_id,
       max_id = 9007199254740991 AS largest_safe_integer, javascript_safe
  FROM uid_configure(31, 10, 12, '2026-01-01+00', 'second');

-- Through its whole life: the last second it can represent ends at max_id.
SELECT uid_max(exhausted_at - interval '1 second') AS last_id,
       uid_max(exhausted_at - interval '1 second') = max_id AS is_max_id,
       uid_max(exhausted_at - interval '1 second') <= 9007199254740991 AS safe
  FROM uid_layout();

-- IDs issued are at most max_id, and survive a round trip through a double (what JavaScript's numbers are).
CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next());
INSERT INTO t SELECT FROM generate_series(1, 2000);
SELECT count(*) AS ids, bool_and(id <= l.max_id) AS within_max_id, bool_and(id::float8::bigint = id) AS exact_as_double
  FROM t, uid_layout() l;
SELECT javascript_safe, configurable FROM uid_layout();

\c :regress_db
DROP DATABASE uidgen_javascript WITH (FORCE);
