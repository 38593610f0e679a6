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

-- Sessions still running the 1.0.0 library reserve nothing: start above the
-- latest unit the worker table knows of, and above what such a session
-- can have issued by now (the clock plus the borrowing bound, plus the window
-- newer sessions reserve), so that this one update covers them for a while.
SELECT pg_catalog.setval('uidgen.reserved_until', greatest(
	-1,
	(SELECT pg_catalog.max(last_time) FROM uidgen.worker_node),
	(SELECT pg_catalog.floor(
	            (extract(epoch FROM pg_catalog.clock_timestamp()
	                                + coalesce(pg_catalog.current_setting('uidgen.max_borrow', true), '10s')::interval
	                                + interval '10 s')
	             - extract(epoch FROM c.epoch)) * 1000
	            / CASE c.unit WHEN 'second' THEN 1000 ELSE 1 END)::bigint
	   FROM uidgen.config c)), true);

REVOKE ALL ON uidgen.reserved_until FROM PUBLIC;
GRANT SELECT ON uidgen.reserved_until TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('uidgen.reserved_until', '');
