/*
 * backend_generator.cpp
 *	  The per-backend generator and the life of its worker claim.
 *
 * A backend registers on its first uid_next() (worker_table.cpp) and keeps its
 * worker for life.  What can happen to the claim afterwards is followed
 * here, through PostgreSQL's transaction callbacks:
 *
 *	- the claim row of a reused worker is committed apart from the backend's
 *	  transactions before its first ID (claim_committer.hpp); a fresh
 *	  worker's is written in the transaction that issues the first ID, and
 *	  again in every later transaction that issues one, until one of them
 *	  commits; a rolled-back subtransaction that wrote it undoes it;
 *	- PREPARE TRANSACTION is refused while the claim is written but not yet
 *	  committed, because the prepared transaction would keep the claim row
 *	  locked and undecided while the backend goes on issuing IDs, and its
 *	  exit release would have to wait for it; with a registry as without;
 *	- every top-level transaction end takes back the session locks that an
 *	  abort, DISCARD ALL or pg_advisory_unlock_all() released (worker_lock.hpp);
 *	- at exit, a transaction of its own marks the worker released with the
 *	  last time unit it issued.
 *
 * All of it is one state object, BackendState; whether uid_next() may skip
 * every check is derived from it, never kept beside it.
 */
#include "backend_scope/backend_generator.hpp"

#include "backend_scope/horizon_lock.hpp"
#include "claim/claim.hpp"
#include "core/generator.hpp"
#include "layout/catalog.hpp"
#include "layout/reservation.hpp"
#include "pg/guard.hpp"
#include "pg/identity.hpp"
#include "pg/pg_clock.hpp"
#include "pg/relation_lock.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "registry/lease_table.hpp"
#include "registry/leased_reservation.hpp"
#include "registry/membership/leased_claim.hpp"
#include "server_scope/server_generator.hpp"
#include "worker_table/claim_committer.hpp"
#include "worker_table/worker_lock.hpp"
#include "worker_table/worker_table.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
}

#include <algorithm>
#include <type_traits>

/* PostgreSQL calls these through pointers: C linkage (defined at the end). */
extern "C" {
static void uidgen_release_at_exit(int code, Datum arg);
static void uidgen_unlock_at_exit(int code, Datum arg);
}

namespace uidgen::pg {

namespace {

/*
 * Where the claim row of the issuing worker stands: not written in any
 * transaction that may still commit, written in a subtransaction of the
 * current transaction, or committed.
 */
class ClaimState
{
public:
	bool written() const { return stage_ != Stage::Unwritten; }
	bool pending() const { return stage_ == Stage::Pending; }

	void written_in(SubTransactionId subid)
	{
		stage_ = Stage::Pending;
		pending_in_ = subid;
	}

	/* Committed apart from the backend's transactions (claim_committer.hpp). */
	void committed_apart()
	{
		stage_ = Stage::Durable;
		pending_in_ = InvalidSubTransactionId;
	}

	/* Both locks were free for a moment: the row must be written again. */
	void forget() { *this = ClaimState(); }

	void at_commit()
	{
		if (stage_ == Stage::Pending)
			stage_ = Stage::Durable;
	}

	/* A top-level abort, or a PREPARE (which refuses a pending claim first). */
	void at_abort()
	{
		if (stage_ == Stage::Pending)
			forget();
	}

	void at_subxact_end(SubXactEvent event, SubTransactionId subid, SubTransactionId parent_subid)
	{
		if (stage_ != Stage::Pending || pending_in_ != subid)
			return;
		if (event == SUBXACT_EVENT_ABORT_SUB)
			forget();
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
			pending_in_ = parent_subid;
	}

private:
	enum class Stage
	{
		Unwritten,
		Pending,
		Durable,
	};
	Stage stage_ = Stage::Unwritten;
	SubTransactionId pending_in_ = InvalidSubTransactionId;
};
static_assert(std::is_trivially_destructible_v<ClaimState>);

/* The worker this backend issues under, and everything that decides whether it may. */
struct IssuingWorker
{
	/* A floor past the end of the layout's time leaves a generator that can only say so. */
	IssuingWorker(const Layout &layout, int64_t worker, int64_t floor_delta, bool leased, const LeaseId &lease,
				  uint64_t joins_seen)
		: reservation(layout, worker, leased, lease, joins_seen, recheck),
		  generator(layout, worker, std::min(floor_delta, layout.max_delta()), reservation)
	{
	}
	IssuingWorker(const IssuingWorker &) = delete;
	IssuingWorker &operator=(const IssuingWorker &) = delete;

	/* The hot path's test: a worker claimed without a registry adds one atomic load. */
	bool ready() const { return claim.written() && !locks_lost && recheck == 0 && !reservation.joined(); }

	/*
	 * The worker table it was claimed from, as the list of held workers
	 * records it (worker_lock.hpp): the one record of what this backend
	 * holds.
	 */
	Oid worker_table() const
	{
		const HeldWorker *held = issuing_entry(generator.worker_id());

		Assert(held != nullptr);
		return held ? held->worker_table : InvalidOid;
	}

	/*
	 * Why prepare_to_issue() must look again before the next ID: a bit of
	 * Recheck per cause, so that the hot path tests them all at once.
	 * Before reservation, which sets Recheck::lease_ended and Recheck::joined.
	 */
	uint8_t recheck = 0;
	LeasedReservation reservation;	 /* before generator, which refers to it */
	Generator generator;
	ClaimState claim;
	bool locks_lost = false;		 /* a session lock could not be taken back */
};
static_assert(std::is_trivially_destructible_v<IssuingWorker>);

struct BackendState
{
	std::optional<IssuingWorker> issuing;
	std::optional<int64_t> last_uid;
	/* uidgen.scope when this backend took its first ID: kept, so its IDs keep increasing. */
	std::optional<Scope> scope;
	bool exit_callbacks_registered = false;
};
static_assert(std::is_trivially_destructible_v<BackendState>);

BackendState state;

/* uid_next() may skip every check but the read-only one. */
inline bool
ready_to_issue()
{
	return state.issuing && state.issuing->ready();
}

void
write_claim_again()
{
	IssuingWorker &issuing = *state.issuing;
	int64_t worker = issuing.generator.worker_id();

	with_spi(Rights::Owner, [worker] { write_claim(worker, database_identity()); });
	issuing.claim.written_in(GetCurrentSubTransactionId());
}

void
retire_issuing_worker()
{
	const Generator &generator = state.issuing->generator;

	retire_worker(state.issuing->worker_table(), generator.worker_id(), generator.last_delta());
	state.issuing.reset();
}

void
register_worker()
{
	Registration r = claim_new_worker(ClaimCommit::Apart);
	/*
	 * A worker that replaces another (a join, a withdrawn lease, lost locks,
	 * a reinstall) starts above the session's last ID, borrowed time
	 * included, so that the session's IDs keep increasing (INV-3, S1).
	 */
	int64_t floor = std::max(r.claim.floor_delta,
							 state.last_uid ? r.layout.unit_floor_above(*state.last_uid) : Generator::no_floor);

	state.issuing.emplace(r.layout, r.claim.worker, floor, r.leased, r.lease, r.joins_seen);
	if (r.committed)
		state.issuing->claim.committed_apart();
	else
		state.issuing->claim.written_in(GetCurrentSubTransactionId());

	if (!state.exit_callbacks_registered)
	{
		before_shmem_exit(uidgen_unlock_at_exit, 0);
		before_shmem_exit(uidgen_release_at_exit, 0);
		state.exit_callbacks_registered = true;
	}
}

/* Forgets every worker, and releases their locks: their worker table was dropped. */
void
forget_worker_table()
{
	unlock_all_workers();
	state.issuing.reset();
}

/*
 * Both locks were free for a moment, so another backend may have found the
 * worker leaked, released it and even issued under it: commit the claim
 * again, apart from this transaction as at registration (the row may read
 * released now, and a claim written only here would leave it so if this
 * backend died), and go on above anything issued since.  The row's
 * last_time is not enough (a holder that died under a claim it never
 * committed left no trace in it), but the time reservation covers whatever
 * anyone issued.  Without a claim committer the worker is retired.
 */
void
resume_after_lost_locks()
{
	IssuingWorker &issuing = *state.issuing;
	int64_t worker = issuing.generator.worker_id();
	int64_t floor = with_spi(Rights::Owner, [worker] {
		return std::max(worker_last_time(worker).value_or(Generator::no_floor),
						reserved_until().value_or(Generator::no_floor));
	});

	/* As at registration: no committer that would wait for this transaction's locks on the table. */
	Oid worker_table = issuing.worker_table();
	if (!with_spi(Rights::Owner, [worker_table, worker] {
			return !relation_locked_here(worker_table, RowShareLock) && commit_claim_apart(worker);
		}))
	{
		/* Released at exit above what anyone issued under it meanwhile, not only above our own IDs. */
		retire_worker(worker_table, worker, std::max(floor, issuing.generator.last_delta()));
		state.issuing.reset();
		return;
	}
	if (floor > issuing.generator.last_delta())
	{
		/* Copies: emplace() destroys the worker these come from before it builds the new one. */
		Layout layout = issuing.generator.layout();
		bool leased = issuing.reservation.leased();
		LeaseId lease = issuing.reservation.lease();
		uint64_t joins_seen = issuing.reservation.joins_seen();

		state.issuing.emplace(layout, worker, floor, leased, lease, joins_seen);
	}
	else
		issuing.locks_lost = false;
	state.issuing->claim.committed_apart();
}

/* Takes back lost session locks; runs at every top-level transaction end. */
void
check_locks()
{
	IssuingWorker *issuing = state.issuing ? &*state.issuing : nullptr;

	if (issuing != nullptr && !relock_worker(issuing->worker_table(), issuing->generator.worker_id()))
		issuing->locks_lost = true;
}

/* Everything uid_next() checks before it issues, off the hot path. */
void
prepare_to_issue()
{
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute uid_next() in a read-only transaction")));

	if (state.issuing && state.issuing->recheck != 0)
	{
		/* DROP and CREATE EXTENSION: the worker belonged to a worker table that is gone. */
		if (worker_table_relid() != state.issuing->worker_table())
			forget_worker_table();
		/* uidgen.registry was set or unset, the worker's lease ran out, or the server joined: claim another. */
		else if (state.issuing->reservation.lost() || state.issuing->reservation.leased() != registry_configured())
			retire_issuing_worker();
		else
			state.issuing->recheck = 0;
	}
	/*
	 * The server joined a registry while this session went on without
	 * processing the reload (a statement across it; one that processed it
	 * retired the worker above): the session cannot name the registry to
	 * claim from, so the statement stops here, with the error of the
	 * reservation's own look, and the next command claims (INV-19).
	 */
	if (state.issuing)
		state.issuing->reservation.refuse_if_joined_since_claim();
	if (state.issuing && state.issuing->locks_lost)
	{
		if (relock_worker(state.issuing->worker_table(), state.issuing->generator.worker_id()))
			resume_after_lost_locks();
		else
			retire_issuing_worker();
	}
	if (!state.issuing)
		register_worker();
	else if (!state.issuing->claim.written())
		write_claim_again();
}

} // namespace

void
backend_at_xact_event(XactEvent event)
{
	IssuingWorker *issuing = state.issuing ? &*state.issuing : nullptr;

	if (issuing == nullptr)
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			/*
			 * Under a registry as without one: a prepared transaction would
			 * keep the claim row (and a database's membership row) undecided
			 * while the session goes on, and an exit release would find it
			 * so.
			 */
			if (issuing->claim.pending())
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that registered a uidgen worker"),
						 errdetail("The claim of worker %lld is not committed yet; a prepared transaction "
								   "would hold it undecided while this session goes on.",
								   static_cast<long long>(issuing->generator.worker_id())),
						 errhint("Commit one transaction that calls uid_next() in this session before using "
								 "two-phase commit.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			issuing->claim.at_commit();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			/*
			 * The abort is about to release the object lock; take back the
			 * advisory lock first (pg_advisory_unlock_all() in this
			 * transaction), so that the worker is never free of both.
			 */
			check_locks();
			issuing->claim.at_abort();
			break;
		case XACT_EVENT_PREPARE:
			/* A pending claim was refused above: nothing to forget. */
			issuing->claim.at_abort();
			break;
		default:
			break;
	}
}

void
backend_at_subxact_event(SubXactEvent event, SubTransactionId subid, SubTransactionId parent_subid)
{
	if (state.issuing)
		state.issuing->claim.at_subxact_end(event, subid, parent_subid);
}

void
backend_at_resource_release(ResourceReleasePhase phase, bool is_top_level)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !is_top_level)
		return;
	/* A registration that failed (in a subtransaction, say) gives its worker back. */
	unlock_candidates();
	check_locks();
}

/*
 * At exit, the issuing worker's last unit goes with it into its release
 * (claim/claim.hpp).
 */
void
retire_and_release_at_exit()
{
	if (state.issuing)
		retire_issuing_worker();
	release_at_exit();
}

/*
 * Default-method session locks outlive the backend's last transaction:
 * nothing in PostgreSQL releases them at a clean exit, so a later backend
 * would inherit them with this PGPROC.  Registered before release_at_exit,
 * so it runs after it, even when releasing failed.
 */
void
unlock_at_exit()
{
	/*
	 * Forget the workers first, or the transaction end of a later exit
	 * callback (temporary relations are dropped in one) would take the locks
	 * back.
	 */
	state.issuing.reset();
	unlock_all_workers();
}

int64_t
next_uid()
{
	/* Before any clock reading of the generators: uid_safe_horizon() relies on the order. */
	mark_before_issuing();
	if (__builtin_expect(!state.scope.has_value(), 0))
		state.scope = current_scope();
	if (*state.scope == Scope::Server)
	{
		int64_t uid = next_server_uid();

		state.last_uid = uid;
		return uid;
	}
	if (unlikely(!ready_to_issue() || XactReadOnly))
		prepare_to_issue();

	int64_t uid = state.issuing->generator.next(current_generator_kind(), backend_clock(), current_limits());

	state.last_uid = uid;
	return uid;
}

int64_t
next_uid_block(int64_t n)
{
	/* As next_uid(): a block is IDs the session's transaction may commit. */
	mark_before_issuing();
	if (__builtin_expect(!state.scope.has_value(), 0))
		state.scope = current_scope();

	int64_t first;

	if (*state.scope == Scope::Server)
		first = next_server_block(n);
	else
	{
		if (unlikely(!ready_to_issue() || XactReadOnly))
			prepare_to_issue();
		first = state.issuing->generator.next_block(current_generator_kind(), backend_clock(), current_limits(), n);
	}
	/* The block's top is the last ID issued to this session. */
	state.last_uid = first + (n - 1);
	return first;
}

std::optional<int64_t>
last_issued_uid()
{
	return state.last_uid;
}

std::optional<int64_t>
current_worker()
{
	if (state.scope == Scope::Server)
		return server_worker();
	if (!state.issuing)
		return std::nullopt;
	return state.issuing->generator.worker_id();
}

void
registry_setting_changed()
{
	if (state.issuing)
		state.issuing->recheck |= Recheck::registry_changed;
}

void
backend_relcache_invalidated(Oid relid)
{
	if (state.issuing && (relid == InvalidOid || relid == state.issuing->worker_table()))
		state.issuing->recheck |= Recheck::table_invalidated;
}

} // namespace uidgen::pg

/*
 * The callbacks run inside PostgreSQL's transaction machinery and call only
 * PostgreSQL code; nothing in them throws a C++ exception.
 */
static void
uidgen_release_at_exit(int, Datum)
{
	uidgen::pg::retire_and_release_at_exit();
}

static void
uidgen_unlock_at_exit(int, Datum)
{
	uidgen::pg::unlock_at_exit();
}
