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

