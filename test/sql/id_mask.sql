-- uid_mask() and uid_unmask(): public IDs under a key kept in uidgen.mask_key.
SET client_min_messages = warning;

SELECT uid_mask_key_create('orders');
SELECT uid_mask_key_create('invoices');
SELECT regress.try($$SELECT uid_mask_key_create('orders')$$);
SELECT name, length(key) AS key_bytes FROM uidgen.mask_key ORDER BY name;

-- Round trip, in range, distinct, on IDs issued and on random IDs of the layout (10^7 in test/unit).
SELECT setseed(0.5);
CREATE TEMP TABLE ids AS
SELECT uid_next() AS id, true AS issued FROM generate_series(1, 2000)
UNION ALL SELECT floor(random() * 9223372036854775807)::bigint, false FROM generate_series(1, 20000)
UNION ALL VALUES (0::bigint, false), (9223372036854775807, false);
CREATE TEMP TABLE masked AS
SELECT id, issued, uid_mask(id, 'orders') AS m, uid_mask(id, 'invoices') AS m2 FROM ids;
SELECT count(*) AS ids,
       bool_and(uid_unmask(m, 'orders') = id) AS round_trips,
       bool_and(m BETWEEN 0 AND (SELECT max_id FROM uid_layout())) AS in_range,
       count(DISTINCT m) = count(DISTINCT id) AS distinct_masks,
       bool_and(uid_unmask(m2, 'invoices') = id) AS second_key_round_trips,
       count(*) FILTER (WHERE m = m2) AS same_under_both_keys
  FROM masked;
-- Consecutive IDs issued do not give increasing masks: about half rise.
SELECT abs(count(*) FILTER (WHERE m > prev) - 1000) < 150 AS half_rise
  FROM (SELECT m, lag(m) OVER (ORDER BY id) AS prev FROM masked WHERE issued) t
 WHERE prev IS NOT NULL;

-- The public text form: uid_encode() of the mask, and back.
SELECT bool_and(uid_unmask(uid_decode(uid_encode(uid_mask(id, 'orders'))), 'orders') = id) AS text_round_trips
  FROM ids;

-- Refused: a key that does not exist, an ID outside the layout.
SELECT regress.try($$SELECT uid_mask(1, 'no_such_key')$$);
SELECT regress.try($$SELECT uid_mask(-1, 'orders')$$, true);
SELECT regress.try($$SELECT uid_unmask(-5, 'orders')$$, true);

-- Privileges: only the owner reads the keys and creates them; a role granted EXECUTE masks without reading them.
CREATE ROLE uidgen_masker;
CREATE ROLE uidgen_stranger;
GRANT EXECUTE ON FUNCTION uid_mask(bigint, text), uid_unmask(bigint, text) TO uidgen_masker;
SET ROLE uidgen_masker;
SELECT uid_unmask(uid_mask(12345, 'orders'), 'orders') AS masker_round_trip;
SELECT regress.try('SELECT key FROM uidgen.mask_key');
SELECT regress.try($$SELECT uid_mask_key_create('mine')$$);
SELECT regress.try('SELECT uidgen.mask_key_random()');
RESET ROLE;
SET ROLE uidgen_stranger;
SELECT regress.try($$SELECT uid_mask(12345, 'orders')$$);
SELECT regress.try($$SELECT uid_unmask(12345, 'orders')$$);
RESET ROLE;
SELECT p.oid::regprocedure AS function, p.proacl IS NOT NULL AND NOT EXISTS (
           SELECT FROM aclexplode(p.proacl) a WHERE a.grantee = 0) AS not_public
  FROM pg_proc p
 WHERE p.proname IN ('uid_mask', 'uid_unmask', 'uid_mask_key_create', 'mask_key_random')
 ORDER BY p.oid::regprocedure::text COLLATE "C";
SELECT c.relacl IS NOT NULL AND NOT EXISTS (SELECT FROM aclexplode(c.relacl) a WHERE a.grantee = 0)
           AS mask_key_not_public
  FROM pg_class c WHERE c.oid = 'uidgen.mask_key'::regclass;
REVOKE ALL ON FUNCTION uid_mask(bigint, text), uid_unmask(bigint, text) FROM uidgen_masker;
DROP ROLE uidgen_masker;
DROP ROLE uidgen_stranger;

-- A JavaScript-safe layout's masks stay below 2^53 (cycle-walking).
\set regress_db :DBNAME
CREATE DATABASE uidgen_mask_javascript;
\c uidgen_mask_javascript
SET client_min_messages = warning;
CREATE EXTENSION uidgen;
SELECT max_id, javascript_safe FROM uid_configure(31, 10, 12, '2026-01-01+00', 'second');
SELECT uid_mask_key_create('public');
SELECT setseed(0.25);
CREATE TABLE t AS
SELECT uid_next() AS id FROM generate_series(1, 1000)
UNION ALL SELECT floor(random() * 9007199254740991)::bigint FROM generate_series(1, 5000)
UNION ALL VALUES (0::bigint), (9007199254740991);
SELECT count(*) AS ids,
       bool_and(uid_mask(id, 'public') <= 9007199254740991) AS javascript_safe,
       bool_and(uid_unmask(uid_mask(id, 'public'), 'public') = id) AS round_trips
  FROM t;
\set VERBOSITY terse
SELECT uid_mask(9007199254740992, 'public');
\set VERBOSITY default
\c :regress_db
DROP DATABASE uidgen_mask_javascript;

-- A key read once a query: one created and rolled back in a savepoint is
-- gone for the next query of the same transaction.
BEGIN;
SAVEPOINT s;
SELECT uid_mask_key_create('brief');
SELECT uid_mask(1, 'brief') >= 0 AS masked;
ROLLBACK TO s;
\set VERBOSITY terse
SELECT uid_mask(1, 'brief');
\set VERBOSITY default
ROLLBACK;
