/* uidgen 1.1.0 to 1.2.0: the server-wide generator's view. */

\echo Use "ALTER EXTENSION uidgen UPDATE TO '1.2.0'" to load this file. \quit

-- With uidgen.scope = server, each database has one generator in shared
-- memory that all its sessions take IDs from; this shows it, or no row
-- while it has none running.
CREATE FUNCTION uidgen.server_generator_status(
	OUT worker bigint,
	OUT keeper_pid integer,
	OUT started_at timestamptz,
	OUT ids_issued bigint,
	OUT chunks bigint,
	OUT ids_dropped bigint,
	OUT ahead_ms bigint,
	OUT reserved_ahead_ms bigint,
	OUT waits bigint,
	OUT private_workers integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'server_generator_status'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW uidgen.server_generator AS
	SELECT * FROM uidgen.server_generator_status();
COMMENT ON VIEW uidgen.server_generator
	IS 'This database''s server-wide generator (uidgen.scope = server): its worker, what it issued, how far ahead of the clock';

GRANT SELECT ON uidgen.server_generator TO PUBLIC;
