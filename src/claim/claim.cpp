/*
 * claim.cpp
 *	  The one claim path: a worker for a backend or a keeper, from the
 *	  worker table or from the registry's grants, and its release at exit.
 */
#include "claim/claim.hpp"

#include "layout/catalog.hpp"
#include "layout/reservation.hpp"
#include "pg/guard.hpp"
#include "pg/identity.hpp"
#include "pg/pg_clock.hpp"
#include "pg/relation_lock.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "registry/lease_table.hpp"
#include "registry/membership/leased_claim.hpp"
#include "worker_table/claim_committer.hpp"
#include "worker_table/claim_pool.hpp"
#include "worker_table/worker_lock.hpp"

extern "C" {
#include "access/xact.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "access/xlog.h"
#include "commands/extension.h"
#include "storage/lmgr.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
}

#include <algorithm>
#include <optional>

namespace uidgen::pg {

namespace {

int64_t
borrow_units(const Layout &layout)
{
	return layout.units_covering(max_borrow_ms);
}

/*
 * Releases worker at exit, unless another backend may hold it now (we could
 * not take its session locks back: its row is not ours to write) or its row
 * is locked, or inserted or deleted by a transaction in progress or prepared
 * (an exiting backend must not wait): then it is left leaked.
 */
void
release_if_still_held(Oid worker_table, int64_t worker, const char *identity, int64_t last_delta)
{
	if (relock_worker(worker_table, worker) && lock_row_nowait(worker_table, worker))
		write_release(worker, identity, last_delta);
}

void
release_held_workers(Oid worker_table)
{
	char *identity = database_identity();

	for (int i = 0; i < held_worker_count(); i++)
	{
		const HeldWorker &held = held_worker(i);

		if (held.use != WorkerUse::Candidate && held.worker_table == worker_table)
			release_if_still_held(worker_table, held.worker, identity, held.last_delta);
	}
}

/*
 * A worker whose claim could not be committed apart: no background worker
 * slot came, the committer failed, or it would have waited for this very
 * transaction (locked_here: it locked or wrote rows of the worker table).
 * A reused worker is given back for a fresh id of the database's sequence,
 * whose claim may wait for the caller's transaction, since the sequence
 * never hands that id out again, with or without a row.  A copy has no such
 * ids, nor has a sequence run out of them: then the registration fails.
 */
Claim
claim_without_committer(const Layout &layout, const Claimant &claimant, Oid relid, const Claim &claim,
						int64_t now_delta, bool locked_here)
{
	static bool logged = false;

	bool fresh_left = !claimant.is_copy && fresh_worker_left(layout);

	/* The committer would wait for this transaction: name the lock, not max_worker_processes. */
	if (locked_here && !fresh_left)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot register a uidgen worker in a transaction that locked uidgen.worker_node"),
				 claimant.is_copy
					 ? errdetail("Database \"%s\" is a copy of another database; its workers are issued under only "
								 "once their claim committed in a transaction of its own, which would wait for this "
								 "one.",
								 get_database_name(MyDatabaseId))
					 : errdetail("No fresh worker id is left, and a released one is issued under only once its claim "
								 "committed in a transaction of its own, which would wait for this one."),
				 errhint("Take the first ID in another transaction.")));
	if (!fresh_left)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start a background worker to commit the claim of uidgen worker %lld",
						static_cast<long long>(claim.worker)),
				 errdetail(claimant.is_copy
							   ? "This database is a copy of another database; its workers are issued under only "
								 "once their claim committed in a transaction of its own."
							   : "No fresh worker id is left, and a released one is issued under only once its "
								 "claim committed in a transaction of its own."),
				 errhint("Raise max_worker_processes (each keeper and claim pool takes one), or run the command again.")));
	if (!locked_here && !logged)
	{
		logged = true;
		ereport(LOG,
				(errmsg("could not start a background worker to commit the claim of uidgen worker %lld",
						static_cast<long long>(claim.worker)),
				 errdetail("This backend takes fresh worker ids instead of reusing released ones."),
				 errhint("Raise max_worker_processes.")));
	}
	unlock_worker(relid, claim.worker);
	return claim_worker(layout, claimant, relid, now_delta, borrow_units(layout), false);
}

} // namespace

Registration
claim_new_worker(ClaimCommit commit)
{
	/* Before anything else: a database's join after this stops a worker claimed without a registry. */
	uint64_t joins = joins_so_far();
	Registration r = with_spi(Rights::Owner, [joins, commit] {
		Oid relid = worker_table_relid();
		bool leased = registry_configured();

		/*
		 * A worker of the database's own numbering, once the server works
		 * for a registry, could be one the registry grants elsewhere.
		 */
		if (!leased && server_has_registry())
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot claim a uidgen worker without the registry this server now uses"),
					 errdetail("uidgen.registry was set by a reload that this session has not processed yet."),
					 errhint("Run the command again: the next command processes the reload.")));
		/* A member whose setting was unset issues nothing of its own numbering until it leaves (INV-19). */
		if (!leased)
			refuse_membership_without_registry();

		/* Before the lock below: adopting the registry's layout locks uidgen.config exclusively. */
		bool adopted_here = leased && adopt_registry_layout(relid);

		/* uid_configure takes an ExclusiveLock: the layout cannot change under a registration. */
		LockRelationOid(config_relid(), RowShareLock);
		char *original_identity;
		Layout layout = read_layout(true, &original_identity);
		/*
		 * Under the lock: a uid_configure() that got the lock between the
		 * adoption (committed apart) and this one found no worker claimed
		 * yet, and changed the layout.
		 */
		if (leased)
			refuse_unless_registry_layout(layout);
		int64_t now_delta = layout.delta_at(backend_clock().now_ms());

		if (now_delta > layout.max_delta())
			throw_time_exhausted(layout);
		/* Numbered from 1 again after DROP and CREATE EXTENSION: above all that earlier installs issued (S2). */
		int64_t install_floor = install_floor_delta(layout);
		refuse_below_install_floor(layout, install_floor);

		Claimant claimant = identify_claimant(original_identity);
		/* A committer would wait for this transaction: then no claim is committed apart. */
		bool apart = commit == ClaimCommit::Apart && !leased;
		bool locked_here = apart && relation_locked_here(relid, RowShareLock);
		LeaseId lease{};
		/* A claim the pool committed ahead needs no committer (claim_pool.hpp). */
		std::optional<Claim> pooled;
		if (apart && !locked_here && worker_reuse)
			pooled = take_pooled_worker(relid, claimant.identity, now_delta);
		Claim claim = pooled ? *pooled
				: leased ? claim_leased_worker(layout, claimant, relid, now_delta, borrow_units(layout), worker_reuse,
											   &lease)
						 : claim_worker(layout, claimant, relid, now_delta, borrow_units(layout), worker_reuse);
		/*
		 * A worker from the blocks takes no id from the sequence that says a
		 * worker was ever claimed here; a leased claim that rolls back would
		 * leave the layout free to change under the session that goes on
		 * issuing (test 070).  Not when the layout was adopted in this very
		 * transaction: a rollback undoes the adoption, and a layout fixed at
		 * the one before would refuse the registry's for good; the next
		 * claim adopts it again.
		 */
		if (leased && !adopted_here)
			record_worker_claimed();
		/*
		 * A backend issues under a worker whose row alone says it is free only
		 * once its claim committed (claim_committer.hpp).
		 */
		bool committed = false;
		if (apart && claim.row_decides)
		{
			committed = pooled.has_value() || (!locked_here && commit_claim_apart(claim.worker));
			/* So that the next session that reuses a worker finds one committed ahead. */
			if (!pooled && worker_reuse)
				wake_claim_pool();
			if (!committed)
				claim = claim_without_committer(layout, claimant, relid, claim, now_delta, locked_here);
		}
		if (!committed)
			write_claim(claim.worker, claimant.identity);
		claim.floor_delta = std::max(claim.floor_delta, install_floor);
		/*
		 * Leaked workers this registration released are rows this transaction
		 * wrote: it counts as a claim written here, which PREPARE refuses (a
		 * prepared transaction would hold them).
		 */
		bool settled = committed && !relation_locked_here(relid, RowExclusiveLock);
		/*
		 * A pooled worker's row names the pool: it names this backend once
		 * this transaction commits, for whoever reads who holds what.  Not
		 * for safety (the claim is committed, and settled stays as it is);
		 * a read-only transaction leaves the pool's name.
		 */
		if (pooled && !XactReadOnly)
			write_claim(claim.worker, claimant.identity);
		return Registration{relid, layout, claim, leased, joins, lease, settled};
	});

	start_issuing(r.relid, r.claim.worker);
	return r;
}

void
release_at_exit()
{
	if (held_worker_count() == 0)
		return;
	/* Before anything that could stop the release below: reuse in this server life starts above it. */
	for (int i = 0; i < held_worker_count(); i++)
	{
		const HeldWorker &held = held_worker(i);

		if (held.use != WorkerUse::Candidate)
			note_grant_exit(held.worker, held.last_delta);
	}
	if (RecoveryInProgress())
		return;

	/* A FATAL error may leave a transaction open, or failed. */
	AbortOutOfAnyTransaction();
	StartTransactionCommand();
	if (!OidIsValid(get_extension_oid("uidgen", true)))
	{
		/* Dropped while we lived: nothing to release. */
		CommitTransactionCommand();
		return;
	}
	/*
	 * An exiting backend holds interrupts off, so lock_timeout cannot end a
	 * wait: take nothing that could wait.  A worker left unreleased is found
	 * leaked later, which is safe.
	 */
	(void) set_config_option("transaction_isolation", "read committed", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	(void) set_config_option("transaction_read_only", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true,
							 0, false);
	/* Nor wait for a WAL flush: a release lost in a crash leaves the row active, found leaked. */
	(void) set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0,
							 false);
	/* Our workers belong to a worker table that DROP and CREATE EXTENSION replaced: not this one's. */
	forget_catalog_cache();
	Oid worker_table = worker_table_relid();
	if (!ConditionalLockRelationOid(worker_table, RowExclusiveLock))
	{
		CommitTransactionCommand();
		return;
	}
	PushActiveSnapshot(GetTransactionSnapshot());
	with_spi(Rights::Owner, [worker_table] { release_held_workers(worker_table); });
	PopActiveSnapshot();
	CommitTransactionCommand();
}

} // namespace uidgen::pg
