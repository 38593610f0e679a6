/* uidgen 1.0.0 to 1.1.0: the time reservation. */

\echo Use "ALTER EXTENSION uidgen UPDATE TO '1.1.0'" to load this file. \quit

-- A time unit at or above every unit any worker of this database may have
-- issued.  Backends raise it, and flush it to disk, before they issue IDs
-- beyond it; a worker whose holder died without releasing it is reused only
-- above it.  A sequence, because sequences are WAL-logged and not undone by
-- a rollback.
CREATE SEQUENCE uidgen.reserved_until AS bigint MINVALUE -1 START WITH -1 NO CYCLE;
COMMENT ON SEQUENCE uidgen.reserved_until
	IS 'Time units since the epoch that workers of this database may have issued IDs up to';

-- Backends of the 1.0.0 library reserve nothing: start at the latest unit
-- the registry knows of.  (What they issue until they end is covered only by
-- the margin of uidgen.max_borrow, as in 1.0.0.)
SELECT pg_catalog.setval('uidgen.reserved_until',
                         greatest(-1, (SELECT pg_catalog.max(last_time) FROM uidgen.worker_node)),
                         true);

REVOKE ALL ON uidgen.reserved_until FROM PUBLIC;
GRANT SELECT ON uidgen.reserved_until TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('uidgen.reserved_until', '');
