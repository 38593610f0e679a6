/*
 * uidgen 1.2.0 to 2.0.0: one ID space across databases and servers.
 *
 * Assembled by scripts/assemble-sql.pl (make sql) from
 * sql/uidgen--1.2.0--2.0.0.sql.in and the registry's SQL in
 * src/registry/sql/: edit those, not this script.
 */

\echo Use "ALTER EXTENSION uidgen UPDATE TO '2.0.0'" to load this file. \quit

-- ---- the reach: what a later install starts above ------------------------

-- DROP EXTENSION takes uidgen.reserved_until with it, and a new install
-- numbers its workers from 1 again: it must know how far the dropped one
-- reached.  The reach is an ID at or above every ID an install may have
-- issued (the largest ID of the unit its time reservation covers), an ID
-- rather than a time unit, so that it holds across layouts.  An event
-- trigger keeps it in uidgen_reach.max_id, a schema and a sequence outside
-- the extension, as a command that drops the extension begins (DROP
-- EXTENSION, DROP SCHEMA ... CASCADE of its schema, DROP OWNED of its
-- owner); it holds the lock that serialises raises until the drop commits,
-- and a statement running across the drop stops at the reservation it held.
-- Nothing of it exists while the extension is installed, so a dump never
-- creates what a restore's CREATE EXTENSION created.  ENABLE ALWAYS: also
-- under session_replication_role = replica.  (INV-13, ASM-6.)
CREATE FUNCTION uidgen.keep_reach() RETURNS event_trigger
AS 'MODULE_PATHNAME', 'uid_keep_reach'
LANGUAGE C;
REVOKE EXECUTE ON FUNCTION uidgen.keep_reach() FROM PUBLIC;
CREATE EVENT TRIGGER uidgen_keep_reach ON ddl_command_start WHEN TAG IN ('DROP EXTENSION', 'DROP SCHEMA', 'DROP OWNED')
	EXECUTE FUNCTION uidgen.keep_reach();
ALTER EVENT TRIGGER uidgen_keep_reach ENABLE ALWAYS;

-- The reach of earlier installs, read once: every worker of this one starts
-- above it.  Zero for a first install, which pays nothing.  Read only from
-- a sequence a superuser made (keep_reach() makes it as the extension's
-- owner): what another role could create first is refused, never run.
CREATE SEQUENCE uidgen.install_floor AS bigint MINVALUE 0 START WITH 0 NO CYCLE;
COMMENT ON SEQUENCE uidgen.install_floor
	IS 'The reach of earlier installs of uidgen in this database: every worker starts above this ID';
DO $$
DECLARE
	reach regclass := pg_catalog.to_regclass('uidgen_reach.max_id');
BEGIN
	IF EXISTS (SELECT FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r ON r.oid = n.nspowner
	            WHERE n.nspname = 'uidgen_reach' AND NOT r.rolsuper)
	   OR EXISTS (SELECT FROM pg_catalog.pg_class c JOIN pg_catalog.pg_roles r ON r.oid = c.relowner
	               WHERE c.oid = reach AND (c.relkind <> 'S' OR NOT r.rolsuper)) THEN
		RAISE EXCEPTION 'schema "uidgen_reach" or its sequence "max_id" was not made by a superuser'
			USING ERRCODE = 'insufficient_privilege',
			      DETAIL = 'uidgen keeps how far a dropped install issued IDs there, and trusts only what a superuser made.',
			      HINT = 'A superuser must drop schema uidgen_reach, or give it and a sequence max_id in it to a superuser.';
	END IF;
	IF reach IS NOT NULL THEN
		PERFORM pg_catalog.setval('uidgen.install_floor', pg_catalog.pg_sequence_last_value(reach), true)
		 WHERE pg_catalog.pg_sequence_last_value(reach) IS NOT NULL;
	END IF;
END
$$;
REVOKE ALL ON uidgen.install_floor FROM PUBLIC;
GRANT SELECT ON uidgen.install_floor TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('uidgen.install_floor', '');

-- The reach carried to a database that continues this one's IDs, as in a
-- major-version upgrade by logical replication, whose subscriber numbers
-- its workers from 1 (its uidgen tables stay empty, INV-21): on the
-- publisher after writes stop, uid_reach(); on the subscriber before its
-- first ID, uid_adopt_reach(reach), which raises uidgen.install_floor as a
-- reinstall does.  Owner only: uid_reach() holds the lock that serialises
-- raises of the time reservation until its transaction ends.
CREATE FUNCTION @extschema@.uid_reach() RETURNS bigint
AS 'MODULE_PATHNAME', 'uid_reach'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.uid_reach()
	IS 'An ID at or above every ID this database may have issued: what uid_adopt_reach() takes elsewhere';
REVOKE EXECUTE ON FUNCTION @extschema@.uid_reach() FROM PUBLIC;
CREATE FUNCTION @extschema@.uid_adopt_reach(reach bigint) RETURNS bigint
AS 'MODULE_PATHNAME', 'uid_adopt_reach'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.uid_adopt_reach(bigint)
	IS 'Starts every worker of this database above reach, another database''s uid_reach(); returns the install floor';
REVOKE EXECUTE ON FUNCTION @extschema@.uid_adopt_reach(bigint) FROM PUBLIC;

-- Every database with the extension can be a fleet's registry: the database
-- that uidgen.registry names on the members.  It leases blocks of worker ids
-- to server lives (one start of one postmaster) and keeps their history.
-- These tables stay empty everywhere else.  (INV-16.)

-- The fleet's rules beside the layout (uidgen.config of the registry).
CREATE TABLE uidgen.registry_config (
	singleton      boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	lease_ttl      interval NOT NULL DEFAULT '10 min' CHECK (lease_ttl >= '1 s' AND lease_ttl <= '1 day'),
	block_size     int NOT NULL DEFAULT 8 CHECK (block_size BETWEEN 1 AND 4096),
	max_borrow     interval NOT NULL DEFAULT '10 s' CHECK (max_borrow >= '0' AND max_borrow <= '1 hour'),
	max_clock_skew interval NOT NULL DEFAULT '1 s' CHECK (max_clock_skew >= '0' AND max_clock_skew <= '1 min'),
	max_system_blocks int NOT NULL DEFAULT 16 CHECK (max_system_blocks >= 1)
);
COMMENT ON TABLE uidgen.registry_config
	IS 'A registry''s rules for its members: lease TTL, block size, max_borrow, clock bound, blocks per system; see uid_registry_configure()';
COMMENT ON COLUMN uidgen.registry_config.max_system_blocks
	IS 'How many blocks the lives of one system identifier may hold before they are reusable (a crash loop)';
INSERT INTO uidgen.registry_config DEFAULT VALUES;

-- Which server, database and start the registry's state was last seen on.
-- Any change (a restart, a restore, a failover, a copy) may mean that state
-- was lost: the registry then hands out nothing until quarantine_until.
-- Another system identifier or database OID is a copy, which draws a new
-- identity (registry_check_state()).
CREATE TABLE uidgen.registry_state (
	singleton         boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	system_identifier text,
	database_oid      oid,
	timeline          int,
	server_started_at timestamptz,
	quarantine_until  timestamptz,
	sealed_at         timestamptz,
	sealed_ceiling    bigint,
	sealed_for        uuid
);
COMMENT ON COLUMN uidgen.registry_state.sealed_at
	IS 'When uid_registry_export() sealed this registry: it leases no block and raises no ceiling since';
COMMENT ON COLUMN uidgen.registry_state.sealed_ceiling
	IS 'The highest ceiling this registry ever granted, when it was sealed: none of its holders issues above it';
COMMENT ON COLUMN uidgen.registry_state.sealed_for
	IS 'The identity of the one registry its export is for: no other may import it';

-- The registry's counter, which every reply of registry_rules() carries:
-- a sequence, WAL-logged, that only rises (after a crash it may jump
-- ahead, never back) unless the registry as a whole is set back to an
-- earlier state of itself, which PostgreSQL cannot tell from the original
-- (a file-level copy of the stopped server, a revert to a memory snapshot).
-- Members keep the highest they saw and send it back; one above it tells
-- the registry that it went back.  Not dumped: a dump restored is another
-- registry (registry_check_state()).
CREATE SEQUENCE uidgen.registry_counter;
REVOKE ALL ON SEQUENCE uidgen.registry_counter FROM PUBLIC;

-- A random secret of this registry, which only its owner reads: the keys of
-- the advisory locks its functions take are derived from it, so that no
-- other role can take them (any role may take an advisory lock it can name).
-- Not dumped: a registry restored from a dump is another registry.
CREATE TABLE uidgen.registry_secret (
	singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	secret    text NOT NULL DEFAULT pg_catalog.gen_random_uuid()::text
);
INSERT INTO uidgen.registry_secret DEFAULT VALUES;
REVOKE ALL ON uidgen.registry_secret FROM PUBLIC;
INSERT INTO uidgen.registry_state DEFAULT VALUES;

-- One start of one postmaster: life is a random token drawn at startup and
-- held only in memory, so that every copy and every restart is a new life.
CREATE TABLE uidgen.server_life (
	life              uuid PRIMARY KEY,
	system_identifier text NOT NULL,
	timeline          int NOT NULL,
	host              text NOT NULL,
	port              int NOT NULL,
	databases         text[] NOT NULL DEFAULT '{}',
	joined_at         timestamptz NOT NULL DEFAULT pg_catalog.now(),
	last_seen         timestamptz NOT NULL DEFAULT pg_catalog.now(),
	member_role       name NOT NULL
);
COMMENT ON TABLE uidgen.server_life IS 'Server lives (postmaster starts) that leased worker blocks; for people';
COMMENT ON COLUMN uidgen.server_life.member_role
	IS 'The member role of the life''s agent (registry_member_role()): only it claims and renews under the life';

-- Which member role a system identifier belongs to, bound at the first call
-- under it: one member role cannot claim or renew under another's system
-- identifier, and so cannot push that member to max_system_blocks.
CREATE TABLE uidgen.member_system (
	system_identifier text PRIMARY KEY,
	member_role       name NOT NULL,
	bound_at          timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE uidgen.member_system
	IS 'The member role each system identifier is bound to; uid_registry_rebind() moves it';

-- Block b holds worker ids (b - 1) * block_size + 1 to b * block_size.
CREATE TABLE uidgen.worker_block (
	block            bigint PRIMARY KEY CHECK (block >= 1),
	first_worker     bigint NOT NULL,
	last_worker      bigint NOT NULL,
	life             uuid NOT NULL REFERENCES uidgen.server_life,
	status           text NOT NULL CHECK (status IN ('leased', 'released')),
	claimed_at       timestamptz NOT NULL,
	lease_expires_at timestamptz NOT NULL,
	released_at      timestamptz,
	reusable_after   timestamptz NOT NULL,
	lease_id         uuid NOT NULL,
	ceiling_delta    bigint NOT NULL
);
COMMENT ON TABLE uidgen.worker_block IS 'Worker id blocks and the server life leasing each';
COMMENT ON COLUMN uidgen.worker_block.reusable_after
	IS 'The lease''s end plus max_borrow and the clock bound: no ID of its holder is later';
COMMENT ON COLUMN uidgen.worker_block.lease_id
	IS 'The block''s current lease, which renewals must name: a lease that lapsed is never renewed';
COMMENT ON COLUMN uidgen.worker_block.ceiling_delta
	IS 'The highest time unit any holder of the block was ever allowed (only rises): the next starts above it';

-- Every lease ever made (of one block to one server life, named by a random
-- lease ID, never a sequence, which a restore would roll back), for
-- uid_origin(): a block's leases never share a time unit, since each starts
-- above the last (floor_delta).
CREATE TABLE uidgen.worker_block_lease (
	block        bigint NOT NULL,
	life         uuid NOT NULL,
	first_worker bigint NOT NULL,
	last_worker  bigint NOT NULL,
	floor_delta  bigint NOT NULL,
	claimed_at   timestamptz NOT NULL,
	lease_id     uuid NOT NULL UNIQUE,
	PRIMARY KEY (block, floor_delta, life)
);

-- Which database each worker of a lease went to (a grant).
CREATE TABLE uidgen.worker_grant (
	life       uuid NOT NULL,
	worker     bigint NOT NULL,
	database   name NOT NULL,
	granted_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	lease_id   uuid NOT NULL,
	PRIMARY KEY (lease_id, worker)
);

-- A member database's joining: workers it claims from then on start above
-- join_floor, which is above every ID it issued before it had a registry.
CREATE TABLE uidgen.membership (
	singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	registry   text NOT NULL,
	joined_at  timestamptz NOT NULL,
	join_floor bigint NOT NULL,
	registry_id uuid NOT NULL
);
COMMENT ON TABLE uidgen.membership IS 'When this database joined its registry (uidgen.registry), and the floor of its workers since';
COMMENT ON COLUMN uidgen.membership.registry_id
	IS 'The identity of the registry this database joined: it refuses any other (uid_registry_move() moves it)';

-- Which registry this is: a random UUID drawn by CREATE EXTENSION, never a
-- sequence, so that a registry created again (its extension or database
-- dropped and created, rebuilt, another database behind the same name) is
-- another registry to its members, who refuse it.  A copy that keeps the
-- system identifier and the database OID keeps it (a restore, a promoted
-- standby: the same registry, perhaps stale, which registry_check_state()
-- quarantines, as it does one whose counter a member saw higher); one that
-- changes either draws a new one (a template copy, pg_upgrade, a dump
-- restored, which carries no identity anyway: not an extension configuration
-- table), and members move to it only by uid_registry_move().  A new
-- registry leases nothing until what any earlier holder may still issue is
-- behind it (registry_holder_bound()), or until uid_registry_start_fleet()
-- says that no earlier fleet exists.
CREATE TABLE uidgen.registry_identity (
	singleton        boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	registry_id      uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid(),
	created_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
	fleet_started_at timestamptz
);
COMMENT ON TABLE uidgen.registry_identity
	IS 'This registry''s identity, which members pin, and when it was created; not dumped';
INSERT INTO uidgen.registry_identity DEFAULT VALUES;
REVOKE ALL ON uidgen.registry_identity FROM PUBLIC;
GRANT SELECT ON uidgen.registry_identity TO PUBLIC;

-- The registries whose fleets this one took over (uid_registry_import()):
-- each was sealed by its export, so none of its holders issues above the
-- ceilings it recorded, which this registry keeps as the ceilings of the
-- same blocks (worker_block rows of a life named by the predecessor's
-- identity).  Members move here from a registry listed only (INV-20).
CREATE TABLE uidgen.registry_predecessor (
	registry_id    uuid PRIMARY KEY,
	sealed_at      timestamptz NOT NULL,
	sealed_ceiling bigint NOT NULL,
	imported_at    timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE uidgen.registry_predecessor
	IS 'Registries whose export this one imported: their members may move here (uid_registry_import())';

REVOKE ALL ON uidgen.registry_config, uidgen.registry_state, uidgen.server_life, uidgen.member_system,
	uidgen.worker_block, uidgen.worker_block_lease, uidgen.worker_grant, uidgen.membership,
	uidgen.registry_predecessor FROM PUBLIC;
GRANT SELECT ON uidgen.registry_config, uidgen.registry_state, uidgen.server_life, uidgen.member_system,
	uidgen.worker_block, uidgen.worker_block_lease, uidgen.worker_grant, uidgen.membership,
	uidgen.registry_predecessor TO PUBLIC;

SELECT pg_catalog.pg_extension_config_dump('uidgen.registry_config', '');
SELECT pg_catalog.pg_extension_config_dump('uidgen.registry_state', '');
SELECT pg_catalog.pg_extension_config_dump('uidgen.server_life', '');
SELECT pg_catalog.pg_extension_config_dump('uidgen.member_system', '');
SELECT pg_catalog.pg_extension_config_dump('uidgen.worker_block', '');
SELECT pg_catalog.pg_extension_config_dump('uidgen.worker_block_lease', '');
SELECT pg_catalog.pg_extension_config_dump('uidgen.worker_grant', '');
SELECT pg_catalog.pg_extension_config_dump('uidgen.membership', '');
SELECT pg_catalog.pg_extension_config_dump('uidgen.registry_predecessor', '');

-- pg_dump restores the rows that CREATE EXTENSION inserted already.
CREATE FUNCTION uidgen.singleton_restore() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF TG_TABLE_NAME = 'registry_config' THEN
		UPDATE uidgen.registry_config
		   SET lease_ttl = NEW.lease_ttl, block_size = NEW.block_size, max_borrow = NEW.max_borrow,
		       max_clock_skew = NEW.max_clock_skew, max_system_blocks = NEW.max_system_blocks
		 WHERE singleton;
	ELSE
		UPDATE uidgen.registry_state
		   SET system_identifier = NEW.system_identifier, database_oid = NEW.database_oid,
		       timeline = NEW.timeline, server_started_at = NEW.server_started_at,
		       quarantine_until = NEW.quarantine_until, sealed_at = NEW.sealed_at,
		       sealed_ceiling = NEW.sealed_ceiling, sealed_for = NEW.sealed_for
		 WHERE singleton;
	END IF;
	IF FOUND THEN
		RETURN NULL;
	END IF;
	RETURN NEW;
END
$$;
CREATE TRIGGER singleton_restore BEFORE INSERT ON uidgen.registry_config
	FOR EACH ROW EXECUTE FUNCTION uidgen.singleton_restore();
CREATE TRIGGER singleton_restore BEFORE INSERT ON uidgen.registry_state
	FOR EACH ROW EXECUTE FUNCTION uidgen.singleton_restore();
REVOKE EXECUTE ON FUNCTION uidgen.singleton_restore() FROM PUBLIC;

-- ---- uidgen's tables do not take logical replication's rows ---------------

-- A FOR ALL TABLES publication includes extension tables: a peer's workers
-- and floors must never land over this database's own.  Rows applied by
-- logical replication (session_replication_role = replica) are skipped; a
-- replicated TRUNCATE is refused.  ENABLE ALWAYS: replica mode fires only
-- such triggers.
CREATE FUNCTION uidgen.skip_replicated_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF pg_catalog.current_setting('session_replication_role') <> 'replica' THEN
		IF TG_OP = 'DELETE' THEN
			RETURN OLD;
		END IF;
		RETURN NEW;
	END IF;
	IF TG_LEVEL = 'STATEMENT' THEN
		RAISE EXCEPTION 'uidgen''s table %.% does not take replicated changes', TG_TABLE_SCHEMA, TG_TABLE_NAME
			USING ERRCODE = 'feature_not_supported',
			      HINT = 'Leave schema uidgen out of the publication.';
	END IF;
	RETURN NULL;
END
$$;
REVOKE EXECUTE ON FUNCTION uidgen.skip_replicated_write() FROM PUBLIC;

DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['config', 'worker_node', 'registry_config', 'registry_state', 'server_life',
	                         'member_system', 'worker_block', 'worker_block_lease', 'worker_grant', 'membership',
	                         'registry_predecessor', 'registry_secret']
	LOOP
		EXECUTE format('CREATE TRIGGER skip_replicated_write BEFORE INSERT OR UPDATE OR DELETE ON uidgen.%I '
		               'FOR EACH ROW EXECUTE FUNCTION uidgen.skip_replicated_write()', t);
		EXECUTE format('ALTER TABLE uidgen.%I ENABLE ALWAYS TRIGGER skip_replicated_write', t);
		EXECUTE format('CREATE TRIGGER skip_replicated_truncate BEFORE TRUNCATE ON uidgen.%I '
		               'FOR EACH STATEMENT EXECUTE FUNCTION uidgen.skip_replicated_write()', t);
		EXECUTE format('ALTER TABLE uidgen.%I ENABLE ALWAYS TRIGGER skip_replicated_truncate', t);
	END LOOP;
END
$$;

-- A subscriber keeps its own identity: a copy made by logical replication
-- is another registry.
CREATE TRIGGER skip_replicated_write BEFORE INSERT OR UPDATE OR DELETE ON uidgen.registry_identity
	FOR EACH ROW EXECUTE FUNCTION uidgen.skip_replicated_write();
ALTER TABLE uidgen.registry_identity ENABLE ALWAYS TRIGGER skip_replicated_write;
CREATE TRIGGER skip_replicated_truncate BEFORE TRUNCATE ON uidgen.registry_identity
	FOR EACH STATEMENT EXECUTE FUNCTION uidgen.skip_replicated_write();
ALTER TABLE uidgen.registry_identity ENABLE ALWAYS TRIGGER skip_replicated_truncate;

-- src/registry/sql/registry_calls.sql: what members call over libpq (the registry's side of the protocol).
-- Part of sql/uidgen--1.2.0--2.0.0.sql, which scripts/assemble-sql.pl (make sql)
-- assembles from sql/uidgen--1.2.0--2.0.0.sql.in: edit this file, not the script.

-- ---- the registry's side: what members call over libpq --------------------

-- A member's calls run as statements of their own (the agent sends each
-- alone): a call inside a transaction block is refused, since whatever rows
-- it locked would stay locked while the block is open, and other members
-- would wait for them.  No call takes a lock that another member's calls
-- wait for: rows of its own life and system identifier, a block it is
-- leasing (skipped by others), and the state row only when it records a
-- change, which others skip (registry_check_state()).
CREATE FUNCTION uidgen.registry_refuse_transaction_block(call text) RETURNS void
AS 'MODULE_PATHNAME', 'registry_refuse_transaction_block'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- The member role a call comes from: the role its session set (SET ROLE,
-- or options='-c role=...' in uidgen.registry, so that rotating login roles
-- of one group keep the group's bindings), else its login role; never
-- current_user, the definer's inside registry_claim() and registry_renew().
CREATE FUNCTION uidgen.registry_member_role() RETURNS name
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT CASE WHEN current_setting('role') = 'none' THEN session_user ELSE current_setting('role')::name END
$$;

-- The key of one of the advisory locks the registry's functions take:
-- 'seal', which every claim and renewal holds shared and an export or an
-- import alone (the ceilings an export seals, or an import starts above,
-- change under neither; shared holders never wait for each other);
-- 'block <n>', held while a call writes block n's row (a claim or a
-- re-assertion that finds it taken skips the block rather than wait); and
-- 'claims of <system identifier>', which serializes one member's claims.
-- Derived from the registry's secret: any role may take an advisory lock
-- whose key it can compute, and would stall the members' calls.
CREATE FUNCTION uidgen.registry_lock_key(what text) RETURNS bigint
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT hashtextextended(s.secret || ' ' || what, 0) FROM uidgen.registry_secret s
$$;

-- Takes the seal key alone for an export or an import, trying it every
-- 10 ms rather than queueing for it: a member's call that holds it shared
-- (a long statement around one) makes only the owner's act wait, never the
-- calls of other members, which would queue behind it.
CREATE FUNCTION uidgen.registry_take_seal() RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	WHILE NOT pg_try_advisory_xact_lock(uidgen.registry_lock_key('seal')) LOOP
		PERFORM pg_sleep(0.01);
	END LOOP;
END
$$;

-- ---- the protocol ------------------------------------------------------------
-- The version of the protocol this registry speaks: what its member calls
-- (registry_identity(), registry_rules(), registry_claim(),
-- registry_renew()) take and reply.  The member's version is in
-- src/registry/protocol.hpp.  The rule: every call carries the member's
-- version (protocol), every reply the registry's (registry_protocol);
-- one version apart, both speak the lower, so that a fleet upgrades one
-- server at a time, the registry or the members first; further apart, the
-- call is refused naming both.  A version only adds: an argument with a
-- default, a reply column; members call by argument name and read replies
-- by column name, so that neither addition reaches a member of the
-- version before.
CREATE FUNCTION uidgen.registry_protocol_version() RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT 1
$$;

-- Refuses a member more than one version from this registry, naming both
-- versions; returns the registry's.
CREATE FUNCTION uidgen.registry_check_protocol(protocol int) RETURNS int
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	spoken int := uidgen.registry_protocol_version();
BEGIN
	IF protocol IS NULL OR protocol < 1 OR abs(protocol - spoken) > 1 THEN
		RAISE EXCEPTION 'uidgen member protocol % cannot work with registry protocol %',
		                coalesce(protocol::text, 'NULL'), spoken
			USING ERRCODE = 'protocol_violation',
			      DETAIL = 'A member and a registry work together only one protocol version apart or less.',
			      HINT = 'Upgrade uidgen on the older side.';
	END IF;
	RETURN spoken;
END
$$;

-- The registry's proof that it replied counter: a digest of the counter,
-- the registry's identity and its secret, which only its owner reads, so
-- that no member role can make one for a counter the registry never
-- replied, nor bring one from a copy that drew another identity (whose
-- secret is drawn again too).  A file-level copy, which keeps both, takes
-- the original's proofs: it is the registry set back that the counter
-- witnesses.  The secret on both sides: no digest of a shorter message
-- extends to it.
CREATE FUNCTION uidgen.registry_counter_proof(counter bigint) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT encode(sha256(convert_to(s.secret || ' ' || i.registry_id::text || ' counter ' || counter::text || ' '
	                                || s.secret, 'UTF8')), 'hex')
	  FROM uidgen.registry_secret s, uidgen.registry_identity i
$$;

-- The layout and rules members adopt, and the registry's counter (the
-- witness of a registry set back: uidgen.registry_counter) with its proof;
-- refused on a standby.  counter_seen is the highest counter the member
-- saw at this registry's identity (NULL for none), with the proof this
-- registry replied with it.  One above the counter means that the registry
-- went back to an earlier state of itself, one PostgreSQL cannot tell from
-- the original (a file-level copy of the stopped server, a revert to a
-- memory snapshot), whose secret is the original's: it quarantines, as for
-- a restore (R9), and moves its counter above.  A counter without its
-- proof is no witness and is ignored, so that no member role quarantines
-- the registry at will.  The reply's counter is the value it had, so the
-- member sees it go back too.
CREATE FUNCTION uidgen.registry_rules(protocol int, counter_seen bigint DEFAULT NULL, counter_seen_proof text DEFAULT NULL,
	OUT registry_protocol int,
	OUT time_bits int, OUT worker_bits int, OUT seq_bits int, OUT epoch_ms bigint, OUT unit_ms int,
	OUT max_borrow_ms bigint, OUT lease_ttl_ms bigint, OUT block_size int, OUT max_clock_skew_ms bigint,
	OUT clock_ms bigint, OUT counter bigint, OUT counter_proof text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF pg_is_in_recovery() THEN
		RAISE EXCEPTION 'the uidgen registry database "%" is on a standby', current_database()
			USING ERRCODE = 'read_only_sql_transaction';
	END IF;
	-- As every member call: a rolled-back quarantine must not leave its
	-- counter moved (setval() is not undone), nor an open one the state
	-- row locked.
	PERFORM uidgen.registry_refuse_transaction_block('registry_rules');
	registry_protocol := uidgen.registry_check_protocol(protocol);
	-- First, so that a copy draws its identity and secret before any proof.
	PERFORM uidgen.registry_check_state();
	IF counter_seen < 0 THEN
		RAISE EXCEPTION 'uidgen registry counter % is out of range', counter_seen
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF counter_seen IS NOT NULL AND counter_seen_proof IS DISTINCT FROM uidgen.registry_counter_proof(counter_seen) THEN
		RAISE LOG 'uidgen registry counter % sent by a member without this registry''s proof is ignored',
		          counter_seen;
		counter_seen := NULL;
	END IF;
	counter := nextval('uidgen.registry_counter');
	IF counter <= counter_seen THEN
		-- Recorded before the counter moves (setval() is not undone by a
		-- rollback): a call that cannot record it changes nothing, and the
		-- member sends its counter again.  The state row is locked only by
		-- a call that records a change, which others never wait for.
		UPDATE uidgen.registry_state r
		   SET quarantine_until = greatest(r.quarantine_until, now() + uidgen.registry_holder_bound())
		 WHERE r.singleton IN (SELECT l.singleton FROM uidgen.registry_state l FOR UPDATE SKIP LOCKED);
		IF NOT FOUND THEN
			RAISE EXCEPTION 'uidgen registry counter % is behind the % a member saw, and another call is recording '
			                'a change of the registry''s state', counter, counter_seen
				USING ERRCODE = 'lock_not_available',
				      HINT = 'The member''s agent calls again.';
		END IF;
		RAISE LOG 'uidgen registry counter % is behind the % a member saw: this registry went back to an earlier '
		          'state of itself, and holds new leases back for registry_holder_bound()', counter, counter_seen;
		PERFORM setval('uidgen.registry_counter', counter_seen);
	END IF;
	counter_proof := uidgen.registry_counter_proof(counter);
	SELECT c.time_bits, c.worker_bits, c.seq_bits, (extract(epoch FROM c.epoch) * 1000)::bigint,
	       CASE c.unit WHEN 'second' THEN 1000 ELSE 1 END,
	       (extract(epoch FROM r.max_borrow) * 1000)::bigint, (extract(epoch FROM r.lease_ttl) * 1000)::bigint,
	       r.block_size, (extract(epoch FROM r.max_clock_skew) * 1000)::bigint,
	       (extract(epoch FROM clock_timestamp()) * 1000)::bigint
	  INTO time_bits, worker_bits, seq_bits, epoch_ms, unit_ms, max_borrow_ms, lease_ttl_ms, block_size,
	       max_clock_skew_ms, clock_ms
	  FROM uidgen.config c, uidgen.registry_config r;
END
$$;

-- How long after a registry forgot its leases (it was created again, or
-- restored) their holders may still issue: a lease TTL, then max_borrow
-- past it, and the clock bound between two members.  The one place that
-- says so for quarantines.
CREATE FUNCTION uidgen.registry_holder_bound() RETURNS interval
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT r.lease_ttl + r.max_borrow + r.max_clock_skew FROM uidgen.registry_config r
$$;

-- The shortest lease that keeps a member's workers granted under these
-- rules.  A member grants a worker only from a lease with a second left
-- (lease_table.cpp, least_lease_left_ms), looks at its leases every second
-- (agent_state.hpp, tick_ms) and renews a lease once a sixth of it has passed
-- (renewal_due()); the registry renews a lease only while its ceiling, the
-- lease's end plus max_borrow rounded up to a unit, is more than
-- max_clock_skew ahead (registry_renew()).  So a lease needs a second for a
-- grant and a second for the tick, and five sixths of it must outlast the
-- tick and the clock bound beyond max_borrow by a unit; rounded up to a
-- millisecond.
CREATE FUNCTION uidgen.registry_shortest_lease(max_borrow interval, max_clock_skew interval) RETURNS interval
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT greatest(interval '2 s',
	                ceil(extract(epoch FROM (interval '1 s' + max_clock_skew - max_borrow
	                                         + CASE c.unit WHEN 'second' THEN interval '1 s' ELSE interval '1 ms' END)
	                                 * 6 / 5) * 1000) * interval '1 ms')
	  FROM uidgen.config c
$$;

-- How long a server life's leases last: as long as the life has lived (on
-- the registry's clock, since it first reached the registry), at least a
-- tenth of the lease TTL, 30 seconds and the shortest lease that keeps a
-- worker granted (registry_shortest_lease()), at most the TTL.  The blocks of a
-- server in a crash loop are reusable soon after each of its short lives
-- ends; renewals lengthen a life's leases as it ages (src/registry/README.md).
-- Never longer than the TTL, so registry_holder_bound() still bounds them.
CREATE FUNCTION uidgen.registry_lease_length(life uuid) RETURNS interval
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT least(r.lease_ttl, greatest(now() - l.joined_at, r.lease_ttl / 10, interval '30 s',
	                                   uidgen.registry_shortest_lease(r.max_borrow, r.max_clock_skew)))
	  FROM uidgen.registry_config r, uidgen.server_life l
	 WHERE l.life = registry_lease_length.life
$$;

-- Which registry this is, for members to pin (registry_identity above),
-- whether it is sealed, and the registries it took over: a member moves
-- here from one of those only (INV-20).  The state is checked first, so
-- that a copy shows the identity it draws (registry_check_state()).  A
-- member's first call of each round: it carries the member's protocol
-- version, and the reply the registry's (registry_protocol), of which the
-- member speaks the lower from then on; people call it without.
CREATE FUNCTION uidgen.registry_identity(protocol int DEFAULT NULL, OUT registry_id uuid, OUT created_at timestamptz,
                                         OUT fleet_started_at timestamptz, OUT sealed_at timestamptz,
                                         OUT predecessors uuid[], OUT registry_protocol int)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF protocol IS NOT NULL THEN	-- a member's call; people call it without
		PERFORM uidgen.registry_refuse_transaction_block('registry_identity');
		PERFORM uidgen.registry_check_protocol(protocol);
	END IF;
	registry_protocol := uidgen.registry_protocol_version();
	PERFORM uidgen.registry_check_state();
	SELECT i.registry_id, i.created_at, i.fleet_started_at, s.sealed_at,
	       ARRAY(SELECT p.registry_id FROM uidgen.registry_predecessor p ORDER BY p.imported_at, p.registry_id)
	  INTO registry_id, created_at, fleet_started_at, sealed_at, predecessors
	  FROM uidgen.registry_identity i, uidgen.registry_state s;
END
$$;

-- Notices a registry that may have lost state (it was restarted, restored,
-- failed over or copied since it last handed something out) and then holds
-- new claims back for a lease TTL plus max_borrow, while members re-assert
-- what they hold.  A copy PostgreSQL can tell from the original (another
-- system identifier or database OID: a template copy, a dump restored,
-- pg_upgrade) is another registry: it draws a new identity, as if created
-- now, with no fleet started and nothing imported, so that no member moves
-- to it without a move (INV-20).  Returns whether claims are held back,
-- and until when.
CREATE FUNCTION uidgen.registry_check_state(OUT quarantined boolean, OUT quarantine_until timestamptz,
                                            OUT sealed boolean)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	st     uidgen.registry_state;
	now_st uidgen.registry_state;
	locked boolean;
	sys    text := (SELECT c.system_identifier::text FROM pg_control_system() c);
	db     oid := (SELECT d.oid FROM pg_database d WHERE d.datname = current_database());
	born   timestamptz := pg_postmaster_start_time();
	tli    int;
	ident  uidgen.registry_identity;
BEGIN
	IF pg_is_in_recovery() THEN
		RAISE EXCEPTION 'the uidgen registry database "%" is on a standby', current_database()
			USING ERRCODE = 'read_only_sql_transaction';
	END IF;
	-- The WAL file name begins with the timeline WAL is written on now.
	tli := ('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::int;
	-- Read without a lock: a member's open call must not make the others
	-- wait (registry_refuse_transaction_block()).
	SELECT * INTO STRICT st FROM uidgen.registry_state;
	IF st.system_identifier IS DISTINCT FROM sys OR st.database_oid IS DISTINCT FROM db
	   OR st.timeline IS DISTINCT FROM tli OR st.server_started_at IS DISTINCT FROM born THEN
		-- One call records the change; another that finds the row locked
		-- goes on with the quarantine it computes, which is the same, unless
		-- the change is a copy's: the new identity is not drawn yet.
		SELECT * INTO now_st FROM uidgen.registry_state FOR UPDATE SKIP LOCKED;
		locked := FOUND;
		IF NOT locked THEN
			IF st.system_identifier IS DISTINCT FROM sys OR st.database_oid IS DISTINCT FROM db THEN
				RAISE EXCEPTION 'another call is recording the new state of the uidgen registry database "%"',
				                current_database()
					USING ERRCODE = 'lock_not_available',
					      HINT = 'Call again.';
			END IF;
			now_st := st;
		END IF;
		-- Read again under the row's lock: another call may have recorded it.
		IF now_st.system_identifier IS DISTINCT FROM sys OR now_st.database_oid IS DISTINCT FROM db
		   OR now_st.timeline IS DISTINCT FROM tli OR now_st.server_started_at IS DISTINCT FROM born THEN
			-- Any change quarantines (R9).  Only a registry whose state was
			-- never recorded has nothing to lose: CREATE EXTENSION records it,
			-- so that a registry restored or failed over to a point before its
			-- first lease, which leases granted since may have lost, is not
			-- taken for a new one.
			-- A restart alone (same system, database and timeline) counts
			-- from the server's start: every lease it may have lost was
			-- granted before, and so the quarantine ends where it ends
			-- whenever the change is noticed and however long the call that
			-- records it stays open.  Anything else counts from now: a
			-- promoted standby started long before it took over.
			IF now_st.system_identifier IS NOT NULL OR EXISTS (SELECT FROM uidgen.worker_block) THEN
				now_st.quarantine_until := greatest(now_st.quarantine_until,
					CASE WHEN now_st.system_identifier = sys AND now_st.database_oid = db AND now_st.timeline = tli
					     THEN born ELSE now() END + uidgen.registry_holder_bound());
			END IF;
			-- Not a restart or a failover, which keep both: a copy, which
			-- knows the original's leases up to the copy only.
			IF now_st.system_identifier IS NOT NULL
			   AND (now_st.system_identifier <> sys OR now_st.database_oid IS DISTINCT FROM db) THEN
				UPDATE uidgen.registry_identity
				   SET registry_id = gen_random_uuid(), created_at = now(), fleet_started_at = NULL;
				DELETE FROM uidgen.registry_predecessor;
				-- Another registry, another secret: no proof of the copy's
				-- counter is the original's, nor the reverse.
				UPDATE uidgen.registry_secret SET secret = gen_random_uuid()::text;
			END IF;
			IF locked THEN
				UPDATE uidgen.registry_state r
				   SET system_identifier = sys, database_oid = db, timeline = tli, server_started_at = born,
				       quarantine_until = now_st.quarantine_until
				 WHERE r.singleton;
			END IF;
		END IF;
		st.quarantine_until := greatest(st.quarantine_until, now_st.quarantine_until);
	END IF;
	quarantine_until := st.quarantine_until;
	sealed := st.sealed_at IS NOT NULL;
	-- A new registry and one created again look alike (no block leased):
	-- members of a lost one may still issue for the bound, unless the
	-- registry's owner said that no earlier fleet exists, or imported the
	-- sealed one it takes over.
	SELECT * INTO STRICT ident FROM uidgen.registry_identity;
	IF ident.fleet_started_at IS NULL AND now() < ident.created_at + uidgen.registry_holder_bound()
	   AND NOT EXISTS (SELECT FROM uidgen.registry_predecessor) THEN
		quarantine_until := greatest(quarantine_until, ident.created_at + uidgen.registry_holder_bound());
	END IF;
	quarantined := coalesce(now() < quarantine_until, false);
END
$$;

-- The unit (of the registry's layout) that contains ts, rounded up.
CREATE FUNCTION uidgen.registry_delta(ts timestamptz) RETURNS bigint
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT ceil((extract(epoch FROM ts) - extract(epoch FROM c.epoch)) * 1000
	            / CASE c.unit WHEN 'second' THEN 1000 ELSE 1 END)::bigint
	  FROM uidgen.config c
$$;

CREATE FUNCTION uidgen.registry_touch_life(life uuid, system_identifier text, timeline int, host text, port int,
                                           databases text[])
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	caller name := uidgen.registry_member_role();
	bound  name;
BEGIN
	-- A system identifier is whatever the caller sends: bound to the member
	-- role that first used it, so that no other role claims under it.
	INSERT INTO uidgen.member_system AS m (system_identifier, member_role)
	VALUES (registry_touch_life.system_identifier, caller)
	ON CONFLICT ON CONSTRAINT member_system_pkey DO NOTHING;
	SELECT m.member_role INTO bound FROM uidgen.member_system m
	 WHERE m.system_identifier = registry_touch_life.system_identifier;
	IF bound <> caller THEN
		RAISE EXCEPTION 'uidgen system identifier % belongs to member role %', system_identifier, bound
			USING ERRCODE = 'insufficient_privilege',
			      DETAIL = format('This call''s member role is %I.', caller),
			      HINT = 'Connect as that role, or as a role that sets it (options=''-c role=...''), or move the '
			             'system identifier to another role with uid_registry_rebind() at the registry.';
	END IF;
	-- Life tokens are readable by every member role (server_life is for
	-- people), so a life is bound to the role that first used it: another
	-- role could otherwise keep its blocks alive or lease under it.  Looked
	-- at before the upsert, which would lock the other role's row.
	SELECT l.member_role INTO bound FROM uidgen.server_life l WHERE l.life = registry_touch_life.life;
	IF FOUND AND bound <> caller THEN
		RAISE EXCEPTION 'uidgen server life % belongs to another member role', life
			USING ERRCODE = 'insufficient_privilege',
			      DETAIL = format('Only role %I claims and renews under it; this call''s member role is %I.',
			                      bound, caller);
	END IF;
	INSERT INTO uidgen.server_life AS l (life, system_identifier, timeline, host, port, databases, member_role)
	VALUES (life, system_identifier, timeline, host, port, databases, caller)
	ON CONFLICT ON CONSTRAINT server_life_pkey DO UPDATE
	   SET timeline = excluded.timeline, last_seen = now(),
	       databases = ARRAY(SELECT DISTINCT d FROM unnest(l.databases || excluded.databases) d ORDER BY 1)
	 WHERE l.member_role = excluded.member_role;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'uidgen server life % belongs to another member role', life
			USING ERRCODE = 'insufficient_privilege';
	END IF;
END
$$;

-- Leases one block of worker ids to a server life: the oldest block whose
-- last holder can issue nothing more, else a block never used.  Its workers
-- start above floor_delta.  Committed before the member issues under it.
-- While the registry holds claims back, returns only held_back_until.
CREATE FUNCTION uidgen.registry_claim(protocol int, life uuid, system_identifier text, timeline int, host text, port int,
                                      databases text[],
                                      OUT block bigint, OUT first_worker bigint, OUT last_worker bigint,
                                      OUT floor_delta bigint, OUT lease_ms bigint,
                                      OUT held_back_until timestamptz, OUT lease_id uuid,
                                      OUT ceiling_delta bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	cfg   uidgen.registry_config;
	state record := uidgen.registry_check_state();
	top   bigint := (SELECT (1::bigint << c.worker_bits) - 1 FROM uidgen.config c);
	spent uidgen.worker_block;
	caller_system text := system_identifier;	-- the body names no function: 035 renames it
	drawn uuid;		-- lease_id, under a name that no column has
	fresh bigint;	-- block, likewise
	ceiling bigint;	-- ceiling_delta, likewise
	lease_length interval;
BEGIN
	PERFORM uidgen.registry_refuse_transaction_block('registry_claim');
	PERFORM uidgen.registry_check_protocol(protocol);
	-- Read again once no export or import runs (registry_lock_key('seal')): a
	-- claim that began before an export committed sees the seal.
	PERFORM pg_advisory_xact_lock_shared(uidgen.registry_lock_key('seal'));
	state := uidgen.registry_check_state();
	-- Not an error: what registry_check_state() noticed must commit.
	IF state.quarantined THEN
		held_back_until := state.quarantine_until;
		RETURN;
	END IF;
	-- Exported: the registry that imported it leases above its ceilings,
	-- which hold only while it leases nothing more (INV-20).
	IF state.sealed THEN
		RAISE EXCEPTION 'uidgen registry % is sealed: it leases no more worker blocks',
		                (SELECT i.registry_id FROM uidgen.registry_identity i)
			USING ERRCODE = 'object_not_in_prerequisite_state',
			      DETAIL = 'uid_registry_export(importer) sealed it to move its fleet to the registry that imports it.',
			      HINT = 'Point uidgen.registry at the registry that imported it and run SELECT uid_registry_move() '
			             'in every member database.';
	END IF;
	SELECT * INTO STRICT cfg FROM uidgen.registry_config;
	PERFORM uidgen.registry_touch_life(life, system_identifier, timeline, host, port, databases);
	-- The claims of one system identifier (bound to this member role) one at
	-- a time, so that its count of blocks below holds; other members' claims
	-- never wait for them.
	PERFORM pg_advisory_xact_lock(uidgen.registry_lock_key('claims of ' || caller_system));

	-- Every restart is a new life whose blocks stay out of the pool until
	-- they are reusable: a server in a crash loop would take them all.
	-- Released blocks (given back, or uid_registry_release()) count no more:
	-- their holders issue nothing more, and the floor of their next lease is
	-- above their ceiling whenever it comes.
	IF (SELECT count(*) FROM uidgen.worker_block b JOIN uidgen.server_life l ON l.life = b.life
	     WHERE l.system_identifier = caller_system AND b.reusable_after > now() AND b.status = 'leased')
	   >= cfg.max_system_blocks THEN
		RAISE EXCEPTION 'the uidgen servers of system identifier % hold % worker blocks, their limit',
		                system_identifier, cfg.max_system_blocks
			USING ERRCODE = 'program_limit_exceeded',
			      DETAIL = 'Blocks of server lives that ended (restarts, crashes) count until their lease ends plus max_borrow.',
			      HINT = 'Find why the server restarts so often, release the blocks of its lives that are gone with '
			             'uid_registry_release(), or raise max_system_blocks with uid_registry_configure().';
	END IF;

	-- A block another claim is taking is skipped, never waited for.
	SELECT * INTO spent FROM uidgen.worker_block b
	 WHERE b.reusable_after < now() ORDER BY b.reusable_after, b.block LIMIT 1 FOR UPDATE SKIP LOCKED;
	IF FOUND THEN
		block := spent.block;
		first_worker := spent.first_worker;
		last_worker := spent.last_worker;
		-- Above every unit any holder of the block may have issued (R2): the
		-- ceilings recorded (so a member's clock plays no part), and the
		-- registry's clock, which once the quarantine is over is above every
		-- ceiling of state the registry may have lost (INV-16,
		-- ASM-3): a restore forgets the leases made after its backup, and the
		-- block may have gone to another holder since the lease it records.
		floor_delta := greatest(spent.ceiling_delta, uidgen.registry_delta(now()));
	ELSE
		fresh := coalesce((SELECT max(b.block) FROM uidgen.worker_block b), 0) + 1;
		-- Likewise a number that another claim is writing now, or that one
		-- committed since the maximum was read (each statement here sees
		-- what committed before it), rather than fail on its row.
		WHILE NOT pg_try_advisory_xact_lock(uidgen.registry_lock_key('block ' || fresh))
		      OR EXISTS (SELECT FROM uidgen.worker_block b WHERE b.block = fresh) LOOP
			fresh := fresh + 1;
		END LOOP;
		block := fresh;
		first_worker := (block - 1) * cfg.block_size + 1;
		last_worker := least(block * cfg.block_size, top);
		-- A block this registry never leased may still have been leased by
		-- the state it lost (a restore): its lost holders issued nothing
		-- above their ceilings, all below the registry's clock once the
		-- quarantine (or a new registry's wait) is over (INV-16,
		-- ASM-3).  So its first holder starts at the registry's clock,
		-- not at -1, and no member's clock enters.
		floor_delta := uidgen.registry_delta(now());
		IF first_worker > top THEN
			RAISE EXCEPTION 'no uidgen worker block is left'
				USING ERRCODE = 'program_limit_exceeded',
				      DETAIL = format('All %s worker ids are leased, or were too recently.', top),
				      HINT = 'Release the blocks of servers that are gone with uid_registry_release().';
		END IF;
	END IF;

	-- A new grant every time, even for the life that held the block last:
	-- what it leased before has lapsed for good.  Random, never a sequence,
	-- which a restore of the registry would roll back.
	lease_id := gen_random_uuid();
	drawn := lease_id;
	-- The highest unit the holder may issue under this lease, on the
	-- registry's clock: the member caps its IDs there whatever its clock.
	-- Recorded in this transaction, before the member uses the reply (R1).
	lease_length := uidgen.registry_lease_length(life);
	ceiling_delta := uidgen.registry_delta(now() + lease_length + cfg.max_borrow);
	ceiling := ceiling_delta;
	INSERT INTO uidgen.worker_block AS b
	       (block, first_worker, last_worker, life, status, claimed_at, lease_expires_at, reusable_after, lease_id,
	        ceiling_delta)
	VALUES (block, first_worker, last_worker, life, 'leased', now(), now() + lease_length,
	        now() + lease_length + cfg.max_borrow + cfg.max_clock_skew, drawn, ceiling)
	ON CONFLICT ON CONSTRAINT worker_block_pkey DO UPDATE
	   SET life = excluded.life, status = 'leased', claimed_at = excluded.claimed_at,
	       lease_expires_at = excluded.lease_expires_at, released_at = NULL,
	       reusable_after = excluded.reusable_after, lease_id = excluded.lease_id,
	       ceiling_delta = greatest(b.ceiling_delta, excluded.ceiling_delta)
	 -- Only a block whose last holder can issue nothing more (R3).  The
	 -- row lock above keeps other claims off it; this is the last line of
	 -- defence.
	 WHERE b.reusable_after < now();
	IF NOT FOUND THEN
		RAISE EXCEPTION 'uidgen worker block % is leased already', block
			USING ERRCODE = 'internal_error';
	END IF;
	INSERT INTO uidgen.worker_block_lease AS h
	       (block, life, first_worker, last_worker, floor_delta, claimed_at, lease_id)
	VALUES (block, life, first_worker, last_worker, floor_delta, now(), drawn);
	lease_ms := (extract(epoch FROM lease_length) * 1000)::bigint;
END
$$;

-- Renews the leases a server life holds (blocks[i] under lease_ids[i],
-- whose ceiling the member has as ceilings[i]); returns those it still
-- holds.  A lease is renewed only by its ID, and only while its ceiling is
-- ahead of the registry's clock: one that lapsed is not, whether or not
-- its block went to anyone since, this same life included.  While the registry holds claims back, a lease its
-- lost state does not show is re-asserted (floors as the member knows
-- them).  Records which database each new worker went to, and under which
-- lease (grant_leases[i]).  Each row carries the quarantine's end (NULL
-- for none), for the member's registry_status.  Marks the leases the member
-- gave back (released_leases: blocks whose workers all went to databases
-- dropped since) released, as uid_registry_release() does: renewed no
-- more, their ceilings kept (R10), and no longer counted against
-- max_system_blocks.
CREATE FUNCTION uidgen.registry_renew(protocol int, life uuid, system_identifier text, timeline int, host text, port int,
                                      databases text[], blocks bigint[], floors bigint[],
                                      grant_workers bigint[], grant_databases text[],
                                      lease_ids uuid[], grant_leases uuid[], ceilings bigint[],
                                      released_leases uuid[] DEFAULT NULL)
RETURNS TABLE (block bigint, lease_ms bigint, lease_id uuid, ceiling_delta bigint, quarantine_until timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	cfg   uidgen.registry_config;
	state record := uidgen.registry_check_state();
	top   bigint := (SELECT (1::bigint << c.worker_bits) - 1 FROM uidgen.config c);
	i     int;
	b     bigint;
	g     uuid;
	c     bigint;
	top_c bigint;
	held  uidgen.worker_block;
	lease_length interval;
BEGIN
	PERFORM uidgen.registry_refuse_transaction_block('registry_renew');
	PERFORM uidgen.registry_check_protocol(protocol);
	-- As in registry_claim(): no ceiling rises past an export.
	PERFORM pg_advisory_xact_lock_shared(uidgen.registry_lock_key('seal'));
	state := uidgen.registry_check_state();
	SELECT * INTO STRICT cfg FROM uidgen.registry_config;
	PERFORM uidgen.registry_touch_life(life, system_identifier, timeline, host, port, databases);
	UPDATE uidgen.worker_block w SET status = 'released', released_at = now()
	 WHERE w.life = registry_renew.life AND w.lease_id = ANY (released_leases) AND w.status = 'leased';
	lease_length := uidgen.registry_lease_length(life);
	lease_ms := (extract(epoch FROM lease_length) * 1000)::bigint;
	quarantine_until := CASE WHEN state.quarantined THEN state.quarantine_until END;
	FOR i IN 1 .. coalesce(array_length(blocks, 1), 0) LOOP
		b := blocks[i];
		g := lease_ids[i];
		CONTINUE WHEN g IS NULL;
		-- A lease whose ceiling (as its holder has it) the registry's clock
		-- has passed, by more than the clock bound, lapsed: its block may
		-- have gone to another lease since, which a restore may have
		-- forgotten, so the lease row's ID alone cannot tell (INV-17,
		-- ASM-1; R6).  A live lease's ceiling is most of a lease ahead.
		CONTINUE WHEN ceilings[i] IS NULL OR ceilings[i] <= uidgen.registry_delta(now() + cfg.max_clock_skew);
		-- Renewing raises the ceiling (recorded ceilings only rise), but
		-- never once sealed: the export gave the ceilings to the registry
		-- that took the fleet over, whose holders issue above them.  The
		-- holder then meets its ceiling and its lease ends, as any lease
		-- not renewed (INV-20).
		c := CASE WHEN state.sealed THEN NULL
		          ELSE uidgen.registry_delta(now() + lease_length + cfg.max_borrow) END;
		UPDATE uidgen.worker_block w
		   SET lease_expires_at = now() + lease_length,
		       reusable_after = greatest(w.reusable_after, now() + lease_length + cfg.max_borrow + cfg.max_clock_skew),
		       ceiling_delta = greatest(w.ceiling_delta, c)
		 WHERE w.block = b AND w.life = registry_renew.life AND w.lease_id = g AND w.status = 'leased'
		RETURNING w.ceiling_delta INTO top_c;
		-- A sealed registry re-asserts nothing: a lease it lost is one it
		-- did not export.
		IF NOT FOUND AND state.quarantined AND NOT state.sealed THEN
			-- The lost lease may have been granted for a whole TTL (its
			-- life's age is lost state too): recorded so, its ceiling and end
			-- are at least those the member holds, within the clock bound.
			c := uidgen.registry_delta(now() + cfg.lease_ttl + cfg.max_borrow);
			-- Only a block of the layout (a number beyond it would make every
			-- later claim fail), under a lease ID the registry knows for no
			-- other life, and never another life's row before it is reusable
			-- (R8): a member role could otherwise take a block a member holds.
			-- A row a restore brought back may name the block's earlier
			-- holder, whose lease ended before this one began: reusable.
			CONTINUE WHEN b < 1 OR (b - 1) * cfg.block_size + 1 > top;
			CONTINUE WHEN EXISTS (SELECT FROM uidgen.worker_block_lease h
			                       WHERE h.lease_id = g AND h.life <> registry_renew.life);
			SELECT * INTO held FROM uidgen.worker_block w WHERE w.block = b;
			CONTINUE WHEN FOUND AND held.life <> registry_renew.life AND held.reusable_after >= now();
			-- Never waits for another call: a block whose row, or whose new
			-- number, another call is writing is skipped.
			IF FOUND THEN
				PERFORM FROM uidgen.worker_block w WHERE w.block = b FOR UPDATE SKIP LOCKED;
				CONTINUE WHEN NOT FOUND;
			ELSE
				CONTINUE WHEN NOT pg_try_advisory_xact_lock(uidgen.registry_lock_key('block ' || b));
			END IF;
			INSERT INTO uidgen.worker_block AS w
			       (block, first_worker, last_worker, life, status, claimed_at, lease_expires_at, reusable_after,
			        lease_id, ceiling_delta)
			VALUES (b, (b - 1) * cfg.block_size + 1, least(b * cfg.block_size, top), registry_renew.life, 'leased',
			        now(), now() + lease_length, now() + cfg.lease_ttl + cfg.max_borrow + cfg.max_clock_skew, g, c)
			ON CONFLICT ON CONSTRAINT worker_block_pkey DO UPDATE
			   SET life = excluded.life, status = 'leased', claimed_at = excluded.claimed_at,
			       lease_expires_at = excluded.lease_expires_at, released_at = NULL,
			       reusable_after = greatest(w.reusable_after, excluded.reusable_after),
			       lease_id = excluded.lease_id, ceiling_delta = greatest(w.ceiling_delta, excluded.ceiling_delta)
			 -- Only a lease the registry lost: one granted after the state it
			 -- kept starts above every ceiling that state records.  A lease
			 -- that lapsed and whose block went to another lease since (a
			 -- member that missed its lapse, frozen or suspended) starts
			 -- below the newer lease's ceiling, and is not revived (R7, R8).
			 WHERE w.ceiling_delta <= floors[i] AND (w.life = excluded.life OR w.reusable_after < now())
			RETURNING w.ceiling_delta INTO top_c;
			CONTINUE WHEN NOT FOUND;
			INSERT INTO uidgen.worker_block_lease
			       (block, life, first_worker, last_worker, floor_delta, claimed_at, lease_id)
			VALUES (b, registry_renew.life, (b - 1) * cfg.block_size + 1, least(b * cfg.block_size, top),
			        floors[i], now(), g)
			ON CONFLICT DO NOTHING;
		ELSIF NOT FOUND THEN
			CONTINUE;
		END IF;
		block := b;
		lease_id := g;
		ceiling_delta := top_c;
		RETURN NEXT;
	END LOOP;
	INSERT INTO uidgen.worker_grant AS wg (life, worker, database, lease_id)
	SELECT registry_renew.life, w, d, u.g FROM unnest(grant_workers, grant_databases, grant_leases) AS u(w, d, g)
	 WHERE u.g IS NOT NULL
	   -- Only grants of this life's leases: another's rows are not its to write.
	   AND EXISTS (SELECT FROM uidgen.worker_block_lease h WHERE h.lease_id = u.g AND h.life = registry_renew.life)
	ON CONFLICT DO NOTHING;
END
$$;

-- Members call only these; grant them to the role members connect as.
-- Where this registry's state is now (registry_state), as it is created.
SELECT uidgen.registry_check_state();

REVOKE EXECUTE ON FUNCTION uidgen.registry_rules(int, bigint, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_check_protocol(int) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_counter_proof(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_check_state() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_identity(int) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_holder_bound() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_lease_length(uuid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_shortest_lease(interval, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_touch_life(uuid, text, int, text, int, text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_refuse_transaction_block(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_member_role() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_lock_key(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_take_seal() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_claim(int, uuid, text, int, text, int, text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION uidgen.registry_renew(int, uuid, text, int, text, int, text[], bigint[], bigint[],
                                                 bigint[], text[], uuid[], uuid[], bigint[], uuid[]) FROM PUBLIC;

-- src/registry/sql/registry_owner.sql: what the registry's owner runs: rules, release, fleets, moves.
-- Part of sql/uidgen--1.2.0--2.0.0.sql, which scripts/assemble-sql.pl (make sql)
-- assembles from sql/uidgen--1.2.0--2.0.0.sql.in: edit this file, not the script.

-- ---- the registry's owner ---------------------------------------------------

CREATE FUNCTION @extschema@.uid_registry_configure(lease_ttl interval DEFAULT NULL, block_size int DEFAULT NULL,
                                                   max_borrow interval DEFAULT NULL,
                                                   max_clock_skew interval DEFAULT NULL,
                                                   max_system_blocks int DEFAULT NULL)
RETURNS uidgen.registry_config
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	cfg uidgen.registry_config;
	ttl interval;
	shortest interval;
BEGIN
	SELECT * INTO STRICT cfg FROM uidgen.registry_config FOR UPDATE;
	-- Block b's workers follow from the block size: fixed by the first lease.
	IF block_size IS DISTINCT FROM cfg.block_size AND block_size IS NOT NULL
	   AND EXISTS (SELECT FROM uidgen.worker_block) THEN
		RAISE EXCEPTION 'cannot change the block size of a registry that has leased or imported blocks'
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	-- The rules against each other, as they will stand: a TTL that cannot
	-- keep a worker granted stops every member.
	ttl := coalesce(uid_registry_configure.lease_ttl, cfg.lease_ttl);
	shortest := uidgen.registry_shortest_lease(coalesce(uid_registry_configure.max_borrow, cfg.max_borrow),
	                                           coalesce(uid_registry_configure.max_clock_skew, cfg.max_clock_skew));
	IF ttl < shortest THEN
		RAISE EXCEPTION 'lease_ttl % is too short to keep a uidgen worker granted', ttl
			USING ERRCODE = 'invalid_parameter_value',
			      DETAIL = format('Members grant a worker only from a lease with a second left and renew a lease '
			                      'within a second once a sixth of it has passed; the registry renews a lease only '
			                      'while its end plus max_borrow (%s) is more than max_clock_skew (%s) ahead.',
			                      coalesce(uid_registry_configure.max_borrow, cfg.max_borrow),
			                      coalesce(uid_registry_configure.max_clock_skew, cfg.max_clock_skew)),
			      HINT = format('The smallest lease_ttl that works with these rules is %s.', shortest);
	END IF;
	UPDATE uidgen.registry_config c
	   SET lease_ttl = coalesce(uid_registry_configure.lease_ttl, c.lease_ttl),
	       block_size = coalesce(uid_registry_configure.block_size, c.block_size),
	       max_borrow = coalesce(uid_registry_configure.max_borrow, c.max_borrow),
	       max_clock_skew = coalesce(uid_registry_configure.max_clock_skew, c.max_clock_skew),
	       max_system_blocks = coalesce(uid_registry_configure.max_system_blocks, c.max_system_blocks)
	RETURNING * INTO cfg;
	RETURN cfg;
END
$$;
COMMENT ON FUNCTION @extschema@.uid_registry_configure(interval, int, interval, interval, int)
	IS 'Sets this registry''s lease TTL, block size, max_borrow, clock bound and blocks per system identifier';

-- A server that is gone keeps its blocks until their leases end; releasing
-- them stops renewals and keeps their ceilings (R10), so they return to the pool their lease (up to a TTL)
-- plus max_borrow and the clock bound after the last renewal, whether or
-- not the server was gone.
CREATE FUNCTION @extschema@.uid_registry_release(life uuid) RETURNS int
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
	WITH released AS (
		UPDATE uidgen.worker_block b SET status = 'released', released_at = now()
		 WHERE b.life = uid_registry_release.life AND b.status = 'leased'
		RETURNING 1)
	SELECT count(*)::int FROM released
$$;
COMMENT ON FUNCTION @extschema@.uid_registry_release(uuid)
	IS 'Releases the worker blocks of a server life that is gone';

-- Setting up a registry for a new fleet: says that no earlier fleet used
-- this registry's name, so that it leases at once rather than after
-- registry_holder_bound().  Never for a registry created again while
-- members of the old one may still issue.  While it has leased nothing, it
-- also lifts the quarantine of a restart since CREATE EXTENSION (the
-- server restarted to preload uidgen), which the registry cannot tell from
-- a restore: the same owner's word that there is no earlier fleet.
CREATE FUNCTION @extschema@.uid_registry_start_fleet() RETURNS uuid
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	id uuid;
BEGIN
	-- First, so that a copy draws its own identity before it is started.
	PERFORM uidgen.registry_check_state();
	IF NOT EXISTS (SELECT FROM uidgen.worker_block_lease) THEN
		UPDATE uidgen.registry_state SET quarantine_until = NULL;
	END IF;
	UPDATE uidgen.registry_identity SET fleet_started_at = coalesce(fleet_started_at, now())
	RETURNING registry_id INTO id;
	RETURN id;
END
$$;
COMMENT ON FUNCTION @extschema@.uid_registry_start_fleet()
	IS 'Lets a new registry lease at once: no earlier fleet used its name; returns its identity';

-- Until when this registry leases no new block (NULL: it leases now), for
-- its operators: noticing a restart, restore or failover the first call
-- after it, as a member's would.  Members see the same end in
-- registry_status.quarantine_until.
CREATE FUNCTION @extschema@.uid_registry_quarantine_until() RETURNS timestamptz
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
	SELECT CASE WHEN s.quarantined THEN s.quarantine_until END FROM uidgen.registry_check_state() s
$$;
COMMENT ON FUNCTION @extschema@.uid_registry_quarantine_until()
	IS 'At a registry: until when it leases no new block after a restart, restore or failover; NULL when it leases';

-- Moving a fleet to another registry (INV-20): the old registry's export
-- seals it -- it leases no block and raises no ceiling from then on, so
-- every unit its holders may still issue is at or below the ceilings the
-- export carries -- and the new registry's import records those ceilings
-- as its own for the same blocks, so that it leases each block above them
-- (registry_claim()) and never-leased blocks at its clock, at once.  A
-- export is for one registry, named by its identity: two registries that
-- imported one export would each lease its blocks above the same ceilings,
-- to different members.  A second export for the same registry returns the
-- same document; one for another is refused.  Refused while the registry
-- may have lost leases (a quarantine, or a new registry's wait), whose
-- ceilings it cannot export.
CREATE FUNCTION @extschema@.uid_registry_export(importer uuid) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	state record := uidgen.registry_check_state();	-- a copy draws its identity first
	st    uidgen.registry_state;
	me    uuid := (SELECT i.registry_id FROM uidgen.registry_identity i);
BEGIN
	IF importer IS NULL OR importer = me THEN
		RAISE EXCEPTION 'an export of uidgen registry % must name the registry that imports it', me
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Pass the registry_id of uidgen.registry_identity in the new registry''s database.';
	END IF;
	-- No claim or renewal runs meanwhile, and none raises a ceiling after.
	PERFORM uidgen.registry_take_seal();
	state := uidgen.registry_check_state();
	SELECT * INTO STRICT st FROM uidgen.registry_state;
	IF st.sealed_at IS NOT NULL AND st.sealed_for IS DISTINCT FROM importer THEN
		RAISE EXCEPTION 'uidgen registry % was exported to registry % already', me, st.sealed_for
			USING ERRCODE = 'object_not_in_prerequisite_state',
			      DETAIL = 'One export goes to one registry: two that imported it would lease the same blocks.',
			      HINT = 'Import that export into the registry it names.';
	END IF;
	IF st.sealed_at IS NULL THEN
		IF state.quarantined THEN
			RAISE EXCEPTION 'cannot export uidgen registry % while it holds new leases back',
			                (SELECT i.registry_id FROM uidgen.registry_identity i)
				USING ERRCODE = 'object_not_in_prerequisite_state',
				      DETAIL = format('It may have lost leases (a restart, a restore, or a new registry''s wait), '
				                      'whose ceilings it does not know until %s.', state.quarantine_until),
				      HINT = 'Export it once that time has passed.';
		END IF;
		UPDATE uidgen.registry_state
		   SET sealed_at = now(), sealed_for = importer,
		       sealed_ceiling = coalesce((SELECT max(b.ceiling_delta) FROM uidgen.worker_block b), -1)
		RETURNING * INTO st;
	END IF;
	RETURN (
		SELECT jsonb_build_object(
			'format', 'uidgen registry export',
			'version', 1,
			'registry_id', i.registry_id,
			'importer', st.sealed_for,
			'sealed_at', st.sealed_at,
			'sealed_ceiling', st.sealed_ceiling,
			'layout', jsonb_build_object('time_bits', c.time_bits, 'worker_bits', c.worker_bits,
			                             'seq_bits', c.seq_bits, 'epoch', c.epoch, 'unit', c.unit),
			'rules', jsonb_build_object('lease_ttl', r.lease_ttl, 'block_size', r.block_size,
			                            'max_borrow', r.max_borrow, 'max_clock_skew', r.max_clock_skew),
			'blocks', coalesce((SELECT jsonb_agg(jsonb_build_object('block', b.block, 'ceiling_delta', b.ceiling_delta)
			                                     ORDER BY b.block)
			                      FROM uidgen.worker_block b), '[]'))
		  FROM uidgen.registry_identity i, uidgen.config c, uidgen.registry_config r);
END
$$;
COMMENT ON FUNCTION @extschema@.uid_registry_export(uuid)
	IS 'Seals this registry (it leases no more) and returns what a registry that takes its fleet over imports';

-- Takes over the fleet of the registry whose export document is: records
-- its ceilings per block (as released blocks of a life named by its
-- identity, reusable once their ceiling has passed) and its identity, from
-- which members may then move here.  Only before this registry's first
-- lease (its own holders would issue below the imported ceilings), under
-- the same layout and block size; again for the same export, a no-op;
-- several exports (merging fleets) keep the greatest ceiling of each block.
-- Lets the registry lease at once, as uid_registry_start_fleet() does.
CREATE FUNCTION @extschema@.uid_registry_import(document jsonb) RETURNS uuid
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	state record := uidgen.registry_check_state();	-- a copy draws its identity first
	me    uuid := (SELECT i.registry_id FROM uidgen.registry_identity i);
	c     uidgen.config;
	cfg   uidgen.registry_config;
	pred  uuid;
	lay   jsonb;
	unit_span interval;
BEGIN
	-- No claim runs meanwhile: each sees the imported ceilings or none.
	PERFORM uidgen.registry_take_seal();
	state := uidgen.registry_check_state();
	IF document IS NULL OR jsonb_typeof(document) IS DISTINCT FROM 'object'
	   OR document->>'format' IS DISTINCT FROM 'uidgen registry export' OR document->>'version' IS DISTINCT FROM '1'
	   OR jsonb_typeof(document->'registry_id') IS DISTINCT FROM 'string'
	   OR jsonb_typeof(document->'sealed_ceiling') IS DISTINCT FROM 'number'
	   OR jsonb_typeof(document->'layout') IS DISTINCT FROM 'object'
	   OR jsonb_typeof(document->'rules') IS DISTINCT FROM 'object'
	   OR jsonb_typeof(document->'blocks') IS DISTINCT FROM 'array' THEN
		RAISE EXCEPTION 'the document is not an export of a uidgen registry'
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Pass what uid_registry_export(importer) returned at the registry whose fleet moves here.';
	END IF;
	pred := (document->>'registry_id')::uuid;
	IF pred = me THEN
		RAISE EXCEPTION 'uidgen registry % cannot import its own export', me
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Import the export into the registry that takes the fleet over.';
	END IF;
	SELECT * INTO STRICT c FROM uidgen.config;
	SELECT * INTO STRICT cfg FROM uidgen.registry_config;
	lay := jsonb_build_object('time_bits', c.time_bits, 'worker_bits', c.worker_bits, 'seq_bits', c.seq_bits,
	                          'epoch', c.epoch, 'unit', c.unit);
	IF (document->'layout') IS DISTINCT FROM lay THEN
		RAISE EXCEPTION 'uidgen registry % has another layout than this registry', pred
			USING ERRCODE = 'object_not_in_prerequisite_state',
			      DETAIL = format('Its layout is %s; this registry''s is %s.', document->'layout', lay),
			      HINT = 'Give this registry the same layout with uid_configure() before its first lease: '
			             'its members issue under it.';
	END IF;
	IF (document->'rules'->>'block_size')::int IS DISTINCT FROM cfg.block_size THEN
		RAISE EXCEPTION 'uidgen registry % has blocks of % workers, this registry of %', pred,
		                document->'rules'->>'block_size', cfg.block_size
			USING ERRCODE = 'object_not_in_prerequisite_state',
			      DETAIL = 'The ceilings it exported are per block.',
			      HINT = format('Set this registry''s block size with SELECT uid_registry_configure(block_size => %s) '
			                    'before its first lease.', document->'rules'->>'block_size');
	END IF;
	IF EXISTS (SELECT FROM uidgen.registry_predecessor p
	            WHERE p.registry_id = pred AND p.sealed_ceiling = (document->>'sealed_ceiling')::bigint) THEN
		RETURN pred;
	END IF;
	IF EXISTS (SELECT FROM uidgen.worker_block_lease) THEN
		RAISE EXCEPTION 'uidgen registry % has leased worker blocks already', me
			USING ERRCODE = 'object_not_in_prerequisite_state',
			      DETAIL = 'Its holders may issue units at or below the ceilings the export carries.',
			      HINT = 'Import an export into a new registry, before its first lease.';
	END IF;
	IF document->>'importer' IS DISTINCT FROM me::text THEN
		RAISE EXCEPTION 'the export of uidgen registry % is for registry %, not this one (%)', pred,
		                coalesce(document->>'importer', 'none'), me
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = format('Export it at that registry for this one: SELECT uid_registry_export(%L).', me);
	END IF;
	unit_span := CASE c.unit WHEN 'second' THEN interval '1 s' ELSE interval '1 ms' END;
	INSERT INTO uidgen.registry_predecessor (registry_id, sealed_at, sealed_ceiling)
	VALUES (pred, (document->>'sealed_at')::timestamptz, (document->>'sealed_ceiling')::bigint)
	ON CONFLICT (registry_id) DO UPDATE
	   SET sealed_ceiling = greatest(registry_predecessor.sealed_ceiling, excluded.sealed_ceiling);
	INSERT INTO uidgen.server_life (life, system_identifier, timeline, host, port, member_role)
	VALUES (pred, 'uidgen registry ' || pred, 0, '', 0, current_user)
	ON CONFLICT ON CONSTRAINT server_life_pkey DO NOTHING;
	-- The next holder of a block starts above its imported ceiling
	-- (registry_claim() takes the greater of the row's ceiling and its
	-- clock); the block is reusable once that ceiling is behind the clock
	-- bound, so that never-leased blocks go first.
	INSERT INTO uidgen.worker_block AS w
	       (block, first_worker, last_worker, life, status, claimed_at, lease_expires_at, released_at, reusable_after,
	        lease_id, ceiling_delta)
	SELECT x.block, (x.block - 1) * cfg.block_size + 1,
	       least(x.block * cfg.block_size, (1::bigint << c.worker_bits) - 1), pred, 'released', now(), now(), now(),
	       c.epoch + (x.ceiling_delta + 1) * unit_span + cfg.max_clock_skew, gen_random_uuid(), x.ceiling_delta
	  FROM jsonb_to_recordset(document->'blocks') AS x(block bigint, ceiling_delta bigint)
	ON CONFLICT ON CONSTRAINT worker_block_pkey DO UPDATE
	   SET ceiling_delta = greatest(w.ceiling_delta, excluded.ceiling_delta),
	       reusable_after = greatest(w.reusable_after, excluded.reusable_after);
	-- Nothing leased here yet: a quarantine can only be of a restart since
	-- CREATE EXTENSION, as uid_registry_start_fleet() lifts it.
	UPDATE uidgen.registry_state SET quarantine_until = NULL;
	RETURN pred;
END
$$;
COMMENT ON FUNCTION @extschema@.uid_registry_import(jsonb)
	IS 'Takes over the fleet of a registry by its export: leases above its ceilings; returns its identity';

REVOKE EXECUTE ON FUNCTION @extschema@.uid_registry_configure(interval, int, interval, interval, int) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.uid_registry_start_fleet() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.uid_registry_quarantine_until() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.uid_registry_export(uuid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.uid_registry_import(jsonb) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.uid_registry_release(uuid) FROM PUBLIC;

-- A member that connects as another role from now on (one that does not
-- set the role it used: options='-c role=...') is refused under its system
-- identifier until the owner moves it: the system identifier and its
-- server lives go to member_role, so the running life renews on under the
-- new role.  NULL unbinds it: the next call under it binds it.
CREATE FUNCTION @extschema@.uid_registry_rebind(system_identifier text, member_role name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	DELETE FROM uidgen.member_system m WHERE m.system_identifier = uid_registry_rebind.system_identifier;
	IF member_role IS NOT NULL THEN
		INSERT INTO uidgen.member_system (system_identifier, member_role)
		VALUES (uid_registry_rebind.system_identifier, uid_registry_rebind.member_role);
		UPDATE uidgen.server_life l SET member_role = uid_registry_rebind.member_role
		 WHERE l.system_identifier = uid_registry_rebind.system_identifier;
	END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.uid_registry_rebind(text, name)
	IS 'Moves a member''s system identifier and server lives to another member role, or unbinds it';
REVOKE EXECUTE ON FUNCTION @extschema@.uid_registry_rebind(text, name) FROM PUBLIC;

-- Lets member_role make the member calls of this registry's protocol
-- (registry_identity(), registry_rules(), registry_claim(),
-- registry_renew()), whatever their arguments in this protocol version:
-- the one way to grant them, so that no grant of the owner's names a
-- signature that another version changes.  An upgrade script that
-- changes a call's arguments must grant the new call to every role that
-- held the old one (read from its ACL before the old one is dropped).
CREATE FUNCTION @extschema@.uid_registry_grant_member(member_role name) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	call regprocedure;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles r WHERE r.rolname = member_role) THEN
		RAISE EXCEPTION 'role "%" does not exist', member_role
			USING ERRCODE = 'undefined_object';
	END IF;
	FOR call IN
		SELECT p.oid::regprocedure FROM pg_proc p
		 WHERE p.pronamespace = 'uidgen'::regnamespace
		   AND p.proname IN ('registry_identity', 'registry_rules', 'registry_claim', 'registry_renew')
		 ORDER BY p.proname
	LOOP
		EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', call, member_role);
	END LOOP;
END
$$;
REVOKE EXECUTE ON FUNCTION @extschema@.uid_registry_grant_member(name) FROM PUBLIC;

-- Server lives and their blocks, for people.
CREATE VIEW uidgen.server_lives AS
	SELECT l.life, l.system_identifier, l.timeline, l.host, l.port, l.databases, l.joined_at, l.last_seen,
	       b.block, b.first_worker, b.last_worker, b.claimed_at, b.lease_expires_at, b.reusable_after,
	       CASE WHEN b.status = 'released' THEN 'released'
	            WHEN b.lease_expires_at < now() THEN 'expired'
	            ELSE 'leased' END AS status
	  FROM uidgen.server_life l
	  LEFT JOIN uidgen.worker_block b ON b.life = l.life;
COMMENT ON VIEW uidgen.server_lives IS 'At a registry: each server life and the worker blocks it leases';
GRANT SELECT ON uidgen.server_lives TO PUBLIC;

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

-- ---- partitioning by time, text forms, JavaScript-safe IDs -------------------
-- (docs/partitioning-and-text.md)

-- uid_layout() and uid_configure() also tell the largest ID the layout can
-- issue and whether JavaScript's numbers hold it exactly (2^53 - 1 at most).
-- New attributes at the end of the type keep both functions, their
-- privileges and comments, and whatever depends on them.
ALTER TYPE uidgen.layout_info ADD ATTRIBUTE max_id bigint, ADD ATTRIBUTE javascript_safe boolean;

-- The number of IDs a span of time covers: the width of an ID partition.
-- IMMUTABLE under the layout guard, with uid_min() (below: "User features").
CREATE FUNCTION @extschema@.uid_interval(span interval) RETURNS bigint
AS 'MODULE_PATHNAME', 'uid_interval'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.uid_interval(interval)
	IS 'The number of IDs in a span of whole time units (days of 24 hours): a partition''s width';

-- Text forms: 13 digits of Crockford's base32, in the IDs' order.
CREATE FUNCTION @extschema@.uid_encode(uid bigint) RETURNS text
AS 'MODULE_PATHNAME', 'uid_encode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.uid_encode(bigint)
	IS 'An ID as 13 characters of Crockford''s base32, ordered as the IDs are';

CREATE FUNCTION @extschema@.uid_decode(uid text) RETURNS bigint
AS 'MODULE_PATHNAME', 'uid_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.uid_decode(text)
	IS 'The ID of a text form of uid_encode(), in either case, I and L read as 1 and O as 0';

-- User features: UUID interop, masked IDs, ID blocks, uid_now()
-- (docs/reference.md; the UUID form in src/core/uuid_form.hpp, the mask in
-- src/core/id_mask.hpp)

-- IDs as UUIDv7-shaped UUIDs: the ID's time in the UUID's millisecond
-- field, the ID itself in the rest, so that the UUIDs of one layout's IDs
-- sort as the IDs do.  IMMUTABLE under the guard that protects
-- uid_timestamp(): uid_configure() refuses to change the layout while an
-- object depends on them (INV-7).
CREATE FUNCTION @extschema@.uid_to_uuid(uid bigint) RETURNS uuid
AS 'MODULE_PATHNAME', 'uid_to_uuid'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.uid_to_uuid(bigint)
	IS 'The ID as a UUIDv7-shaped UUID: its time in the timestamp field, ordered as the IDs are';

CREATE FUNCTION @extschema@.uuid_to_uid(uuid uuid) RETURNS bigint
AS 'MODULE_PATHNAME', 'uuid_to_uid'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.uuid_to_uid(uuid)
	IS 'The ID of a UUID made by uid_to_uuid(); any other UUID is refused';

-- Masked IDs: a keyed permutation of the layout's IDs, for public IDs that
-- tell neither time, worker nor volume.  The keys stay in this table, which
-- only the extension's owner reads; a call names its key.  pg_dump carries
-- the keys along (masks stored elsewhere mean nothing without them), so a
-- dump is as secret as the keys.
CREATE TABLE uidgen.mask_key (
	name       text PRIMARY KEY,
	key        bytea NOT NULL CHECK (pg_catalog.length(key) = 16),
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE uidgen.mask_key IS 'Keys of uid_mask(), by name; readable by the extension''s owner only';
REVOKE ALL ON uidgen.mask_key FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('uidgen.mask_key', '');
CREATE TRIGGER skip_replicated_write BEFORE INSERT OR UPDATE OR DELETE ON uidgen.mask_key
	FOR EACH ROW EXECUTE FUNCTION uidgen.skip_replicated_write();
ALTER TABLE uidgen.mask_key ENABLE ALWAYS TRIGGER skip_replicated_write;
CREATE TRIGGER skip_replicated_truncate BEFORE TRUNCATE ON uidgen.mask_key
	FOR EACH STATEMENT EXECUTE FUNCTION uidgen.skip_replicated_write();
ALTER TABLE uidgen.mask_key ENABLE ALWAYS TRIGGER skip_replicated_truncate;

-- 16 bytes from the server's strong random source (pg_strong_random).
CREATE FUNCTION uidgen.mask_key_random() RETURNS bytea
AS 'MODULE_PATHNAME', 'uid_mask_key_random'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
REVOKE EXECUTE ON FUNCTION uidgen.mask_key_random() FROM PUBLIC;

CREATE FUNCTION @extschema@.uid_mask_key_create(name text) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	INSERT INTO uidgen.mask_key (name, key) VALUES (uid_mask_key_create.name, uidgen.mask_key_random());
EXCEPTION WHEN unique_violation THEN
	RAISE EXCEPTION 'uid mask key "%" already exists', uid_mask_key_create.name
		USING ERRCODE = 'duplicate_object',
		      DETAIL = 'Masks made under a key mean nothing under another: a key is never replaced.';
END
$$;
COMMENT ON FUNCTION @extschema@.uid_mask_key_create(text)
	IS 'Creates a key for uid_mask() from the server''s strong random source';

-- The key is read as the extension's owner: whoever may execute these need
-- not read uidgen.mask_key.  Granted by the owner, to the roles that serve
-- public IDs.
CREATE FUNCTION @extschema@.uid_mask(uid bigint, key_name text) RETURNS bigint
AS 'MODULE_PATHNAME', 'uid_mask'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@.uid_mask(bigint, text)
	IS 'The public form of an ID: a permutation of 0 to uid_layout().max_id under the named key';

CREATE FUNCTION @extschema@.uid_unmask(masked bigint, key_name text) RETURNS bigint
AS 'MODULE_PATHNAME', 'uid_unmask'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@.uid_unmask(bigint, text)
	IS 'The ID behind a public form of uid_mask() under the same key';

REVOKE EXECUTE ON FUNCTION @extschema@.uid_mask_key_create(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.uid_mask(bigint, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.uid_unmask(bigint, text) FROM PUBLIC;

-- Blocks of IDs for an ORM's pooled-lo optimizer: the first of n
-- consecutive IDs of one time unit and one worker, all the caller's.
CREATE FUNCTION @extschema@.uid_next_block(n int) RETURNS bigint
AS 'MODULE_PATHNAME', 'uid_next_block'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.uid_next_block(int)
	IS 'The first of n consecutive IDs reserved for the caller, within one time unit (n <= 2^seq_bits)';

-- An ID value for now, for TimescaleDB's set_integer_now_func: the largest
-- ID of the time unit the statement started in.
CREATE FUNCTION @extschema@.uid_now() RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS 'SELECT @extschema@.uid_max(pg_catalog.statement_timestamp())';
COMMENT ON FUNCTION @extschema@.uid_now()
	IS 'The largest ID of the time unit the statement started in: an integer "now" for TimescaleDB';

-- ---- User features: the safe horizon and partitioning by time --------------
-- (INV-22; docs/partitioning-and-text.md)

-- The highest ID no transaction now open in this database can still commit:
-- a polling reader takes it in one statement and reads
-- WHERE id > last AND id <= horizon in a later one.  VOLATILE: it reads the
-- clock and the lock table.
CREATE FUNCTION @extschema@.uid_safe_horizon() RETURNS bigint
AS 'MODULE_PATHNAME', 'uid_safe_horizon'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION @extschema@.uid_safe_horizon()
	IS 'The highest ID that no transaction now open in this database can still commit';

-- uid_min(), uid_max() and uid_interval() read the layout as the field
-- functions do (under the lock that uid_configure's guard conflicts with,
-- and the guard refuses a change while objects depend on them), so they are
-- IMMUTABLE too: usable in index predicates and wherever PostgreSQL asks
-- for IMMUTABLE (INV-7).
ALTER FUNCTION @extschema@.uid_min(timestamptz) IMMUTABLE;
ALTER FUNCTION @extschema@.uid_max(timestamptz) IMMUTABLE;
ALTER FUNCTION @extschema@.uid_interval(interval) IMMUTABLE;
