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

