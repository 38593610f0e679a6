-- src/registry/sql/member_side.sql: the member's SQL for its registry: status, origins, moves.
-- Part of sql/uidgen--1.2.0--2.0.0.sql, which scripts/assemble-sql.pl (make sql)
-- assembles from sql/uidgen--1.2.0--2.0.0.sql.in: edit this file, not the script.

-- ---- a member's side ----------------------------------------------------------

CREATE FUNCTION uidgen.registry_status_rows(
	OUT life uuid, OUT registry text, OUT agent_status text, OUT error text, OUT block bigint,
	OUT first_worker bigint, OUT last_worker bigint, OUT floor_delta bigint, OUT lease_left_ms bigint,
	OUT workers_granted int, OUT pending_registry text, OUT pending_error text, OUT quarantine_until timestamptz,
	OUT protocol int)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'registry_status_rows'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW uidgen.registry_status AS
	SELECT * FROM uidgen.registry_status_rows();
COMMENT ON VIEW uidgen.registry_status
	IS 'This server''s link to its registry (uidgen.registry): its life, its agent, the blocks it leases';
REVOKE ALL ON uidgen.registry_status FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_status_rows() FROM PUBLIC;

-- The highest version of the registry protocol this server's uidgen speaks;
-- uidgen.registry_status shows the one spoken with the registry (the lower
-- of this and the registry's registry_protocol_version()).
CREATE FUNCTION @extschema@.uid_registry_protocol() RETURNS int
AS 'MODULE_PATHNAME', 'uid_registry_protocol'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

-- Moving this database to the registry its server's agent reaches now,
-- whose identity differs from the one it joined: it adopts that identity
-- and joins anew, its workers starting above everything it issued or may
-- still issue.  Only to a registry that imported the one it leaves
-- (uid_registry_import()), unless old_registry_lost says that one is gone
-- for good (INV-20, ASM-9).  Run in every member database; returns the
-- identity adopted.
CREATE FUNCTION @extschema@.uid_registry_move(old_registry_lost boolean DEFAULT false) RETURNS uuid
AS 'MODULE_PATHNAME', 'uid_registry_move'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.uid_registry_move(boolean)
	IS 'Moves this database to the registry uidgen.registry reaches now, above every ID it issued';
REVOKE EXECUTE ON FUNCTION @extschema@.uid_registry_move(boolean) FROM PUBLIC;

-- Leaving the registry on purpose: a member whose uidgen.registry was unset
-- issues nothing until the setting is back or it leaves, since a worker of
-- its own numbering may be one the registry leased to another member.
-- Leaving deletes the membership row: IDs issued from then on are outside
-- the fleet's guarantee, and a later join starts above them (INV-19).
CREATE FUNCTION @extschema@.uid_registry_leave() RETURNS boolean
AS 'MODULE_PATHNAME', 'uid_registry_leave'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.uid_registry_leave()
	IS 'Leaves this database''s registry on purpose: it issues again without uidgen.registry, outside the fleet';
REVOKE EXECUTE ON FUNCTION @extschema@.uid_registry_leave() FROM PUBLIC;

-- Where an ID of this server's current life came from, from shared memory.
CREATE FUNCTION uidgen.local_origin(uid bigint,
	OUT system_identifier text, OUT database text, OUT host text, OUT port int, OUT claimed_at timestamptz)
AS 'MODULE_PATHNAME', 'uid_local_origin'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE TYPE uidgen.uid_origin AS (
	system_identifier text,
	database          text,
	host              text,
	port              int,
	claimed_at        timestamptz
);

-- The server life and database that held the ID's worker at its time: at
-- the registry from its history of leases, elsewhere for this server's
-- current life; NULL when unknown (for example an ID issued before joining).
CREATE FUNCTION @extschema@.uid_origin(uid bigint) RETURNS uidgen.uid_origin
LANGUAGE plpgsql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	uid_worker bigint := @extschema@.uid_worker_id(uid);
	uid_delta  bigint := uidgen.registry_delta(@extschema@.uid_timestamp(uid));
	result     uidgen.uid_origin;
BEGIN
	SELECT l.system_identifier, g.database, l.host, l.port, h.claimed_at
	  INTO result
	  FROM uidgen.worker_block_lease h
	  JOIN uidgen.server_life l ON l.life = h.life
	  LEFT JOIN uidgen.worker_grant g ON g.lease_id = h.lease_id AND g.worker = uid_worker
	 WHERE uid_worker BETWEEN h.first_worker AND h.last_worker AND h.floor_delta < uid_delta
	 ORDER BY h.floor_delta DESC, h.claimed_at DESC
	 LIMIT 1;
	IF FOUND THEN
		RETURN result;
	END IF;
	SELECT o.* INTO result FROM uidgen.local_origin(uid) o;
	IF result IS NULL OR result.system_identifier IS NULL THEN
		RETURN NULL;
	END IF;
	RETURN result;
END
$$;
COMMENT ON FUNCTION @extschema@.uid_origin(bigint)
	IS 'The server life and database whose worker issued the ID, NULL if unknown';

