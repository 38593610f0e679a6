-- CREATE EXTENSION uidgen SCHEMA app: the functions in app, the tables in
-- uidgen, which the extension creates and owns.
SET client_min_messages = warning;
\set regress_db :DBNAME
CREATE DATABASE uidgen_schema;
\c uidgen_schema
SET client_min_messages = warning;

-- Schema uidgen itself cannot hold the functions: the extension creates it.
CREATE SCHEMA uidgen;
\set VERBOSITY terse
CREATE EXTENSION uidgen SCHEMA uidgen;
\set VERBOSITY default
DROP SCHEMA uidgen;

CREATE SCHEMA app;
CREATE EXTENSION uidgen SCHEMA app;
SELECT extnamespace::regnamespace AS schema, extrelocatable FROM pg_extension WHERE extname = 'uidgen';
SELECT p.pronamespace::regnamespace AS schema, count(*) > 0 AS functions
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'uidgen'
 WHERE p.proname LIKE 'uid%'
 GROUP BY 1 ORDER BY 1;
SELECT count(*) AS uid_functions_elsewhere
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'uidgen'
 WHERE p.proname LIKE 'uid%' AND p.pronamespace <> 'app'::regnamespace;

-- Qualified calls work whatever search_path says, functions that call others included.
SET search_path = public;
CREATE TABLE t (id bigint PRIMARY KEY DEFAULT app.uid_next());
INSERT INTO t SELECT FROM generate_series(1, 10);
SELECT count(*) AS rows,
       bool_and(app.uuid_to_uid(app.uid_to_uuid(id)) = id) AS uuid_round_trip,
       bool_and(app.uid_worker_id(id) = app.uid_current_worker()) AS own_worker,
       bool_and(id <= app.uid_now()) AS below_uid_now,
       bool_and(app.uid_origin(id) IS NULL) AS origin_unknown_without_registry
  FROM t;
SELECT app.uid_mask_key_create('k');
SELECT app.uid_unmask(app.uid_mask(12345, 'k'), 'k') AS mask_round_trip;
SELECT app.uid_next_block(10) < app.uid_next() AS block_then_next;
SELECT time_bits FROM app.uid_layout();
-- Unqualified, they are not found, as for any schema off search_path.
\set VERBOSITY terse
SELECT uid_next();
\set VERBOSITY default

-- It cannot move afterwards: the internals refer to its schema.
\set VERBOSITY terse
ALTER EXTENSION uidgen SET SCHEMA public;
\set VERBOSITY default

\c :regress_db
DROP DATABASE uidgen_schema;
