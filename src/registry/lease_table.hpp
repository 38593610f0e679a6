/*
 * lease_table.hpp
 *	  This server's share of a fleet's ID space: the worker blocks its
 *	  registry agent leased for this server life, in shared memory.
 *
 * With uidgen.registry set, every worker a database of this server claims
 * comes from a block leased to this server life (INV-16 to INV-18 of
 * docs/design.md).  The agent (agent.cpp; its calls in registry_calls.cpp)
 * claims and renews the blocks over libpq; backends and keepers take
 * workers out of them here and never talk to the registry themselves.
 * Leases are kept on the monotonic clock: a worker may issue only time
 * units its block's lease still covers (lease_cap_delta).
 *
 * Each lease of a block is named by a random ID (its lease ID) the registry
 * drew: renewals and every worker taken out of it go by that ID, never by
 * the block's range of workers, so that a lease that lapsed stays dead even
 * when the registry later leases the same block to this server life again.
 * The table lives as long as the server life: a new agent process resumes
 * the leases and grants of the one before (agent.cpp).
 */
#pragma once

#include "core/counter_witness.hpp"
#include "core/layout.hpp"
#include "core/lease_policy.hpp"
#include "pg/uuid_codec.hpp"

extern "C" {
#include "postgres.h"

#include "datatype/timestamp.h"

#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
}

#include <atomic>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace uidgen::pg {

enum class AgentStatus : int
{
	Off,		/* no registry set */
	Connecting, /* set, not reached yet or reaching again */
	Ready,		/* the last exchange with the registry succeeded */
	Failed,		/* the last attempt failed: see error */
};

/* What the registry decides for the whole fleet, adopted by members: RegistryRules (core/lease_policy.hpp). */

/* A lease ID: names one lease of one block, drawn by the registry (a UUID; all zero for none). */
struct LeaseId
{
	uint8 bytes[16];

	bool operator==(const LeaseId &other) const { return memcmp(bytes, other.bytes, sizeof(bytes)) == 0; }
	bool operator!=(const LeaseId &other) const { return !(*this == other); }
};
static_assert(std::is_trivially_destructible_v<LeaseId>);

/* A lease ID as text, and back: a UUID's (pg/uuid_codec.hpp). */
constexpr int lease_id_text_size = uuid_text_size;
void lease_id_text(const LeaseId &id, char out[lease_id_text_size]);
bool parse_lease_id(const char *text, LeaseId *id);

constexpr int max_leased_blocks = 64;
constexpr int max_grants = 4096;
constexpr int registry_text_size = 256;
constexpr int error_text_size = 512;
/* Predecessors of a registry a member keeps (uidgen.registry_predecessor there); beyond, a move is refused. */
constexpr int max_predecessors = 16;

struct LeasedBlock
{
	LeaseId lease_id;
	int64_t block;
	int64_t first_worker;
	int64_t last_worker;
	int64_t floor_delta;		/* its workers start after this unit */
	int64_t ceiling_delta;		/* and issue no unit after this one, the registry's ceiling (only rises) */
	int64_t claimed_at_ms;		/* wall clock, for uid_origin() */
	int64_t deadline_mono_ms;	/* the lease, on the monotonic clock */
	int64_t lease_ms;			/* how long it was last granted or renewed for */
	int64_t next_worker;		/* the first not granted yet */
};
static_assert(std::is_trivially_destructible_v<LeasedBlock>);

/*
 * A worker of this server life's blocks, the lease it came from, and the
 * database it went to.  Once that database is dropped (dropped: marked as the
 * DROP DATABASE commits, dropped_databases.hpp; the drop waited for every
 * process connected to it, each of which noted its last unit at exit), the
 * worker goes to the next database that finds no fresh worker, above
 * issued_until and the lease's floor, under the same lease
 * (take_granted_worker()).
 */
struct Grant
{
	LeaseId lease_id;
	int64_t worker;
	Oid database;
	NameData database_name;
	bool reported;				/* the registry knows (for uid_origin()) */
	bool dropped;				/* its database was dropped: the worker may go to another */
	uint64 stamp;				/* a new one each time the worker goes to a database */
	int64_t issued_until;		/* the last unit its holders issued, noted at their exit */
};
static_assert(std::is_trivially_destructible_v<Grant>);

/*
 * Every field but joins is read and written under lock, an LWLock: the
 * table is up to 4,096 grants that readers loop over, far more than a
 * spinlock may cover.  Whoever holds it only copies and compares: no
 * allocation, no clock read, nothing that may raise an error, so that no
 * error can leave it held inside a C++ frame.
 */
struct LeaseTable
{
	LWLock lock;
	int lock_tranche;
	ConditionVariable changed;	/* blocks or status changed */
	Latch *agent_latch;
	int agent_pid;
	uint8 life[16];				/* this server life: drawn at startup, never on disk */
	AgentStatus status;
	int error_sqlstate;
	char error[error_text_size];
	/*
	 * The agent numbers its attempts to reach the registry: attempts is the
	 * last it began, status_attempt the one status and error are of.  A
	 * registration reports only a failure of an attempt begun after it
	 * started; it asks for one in attempt_wanted.
	 */
	uint64 attempts;
	uint64 status_attempt;
	uint64 attempt_wanted;
	char registry[registry_text_size]; /* the connection string without its secrets */
	/*
	 * A new uidgen.registry the agent has not switched to yet, without its
	 * secrets (empty for none), and why not: the agent goes on with the
	 * connection it has until the new text reaches a registry (agent.cpp).
	 */
	char pending_registry[registry_text_size];
	char pending_error[error_text_size];
	/*
	 * Until when the registry leases no new block (a quarantine after a
	 * restart, restore or failover), as its last reply said: valid only
	 * while quarantined is set.
	 */
	bool quarantined;
	TimestampTz quarantine_until;
	bool have_rules;
	RegistryRules rules;
	/*
	 * The version of the registry protocol the agent speaks there: the
	 * lower of this build's and the one the registry's last identity reply
	 * gave (protocol.hpp); 0 before the first.
	 */
	int protocol;
	int waiting;				/* registrations waiting for a block */
	int nblocks;
	LeasedBlock blocks[max_leased_blocks];
	int ngrants;
	uint64 grant_stamps;		/* the last Grant::stamp given */
	Grant grants[max_grants];
	/*
	 * How many times the agent began to work for a registry (set_status()) or
	 * a database of this server life joined one (membership/
	 * leased_claim.cpp): a worker claimed without one issues nothing once
	 * this moves (INV-19).
	 */
	std::atomic<uint64_t> joins;
	/*
	 * The identity of the registry (its uidgen.registry_identity): pinned
	 * by the agent at its first exchange under this uidgen.registry, and
	 * the one it saw last (registry_pin.hpp, INV-20).
	 */
	bool registry_pinned;
	uint8 registry_id[16];
	bool registry_seen;
	uint8 registry_seen_id[16];
	uint64 registry_seen_attempt;	/* the attempt that read registry_seen_id */
	uint64 identity_wanted;			/* an attempt that reads it is wanted (uid_registry_move()) */
	/*
	 * The registries the one seen last imported, sealed, with their
	 * ceilings: a member moves to it only from one of them, or from one
	 * that is gone for good, on purpose: lost_moves counts the
	 * uid_registry_move(old_registry_lost => true) calls whose
	 * transactions have not ended.
	 */
	int registry_seen_npredecessors;
	uint8 registry_seen_predecessors[max_predecessors][16];
	std::atomic<uint32_t> lost_moves;
	/*
	 * The highest registry counter the agent saw, at which identity: sent
	 * with its next rules call there, so that a registry set back to an
	 * earlier state of itself notices (core/counter_witness.hpp).
	 */
	CounterWitness counter_witness;
	/*
	 * Leases of blocks the agent gave back (lease_bookkeeping.hpp), to be
	 * marked released at the registry with its next renewal, so that they
	 * no longer count against max_system_blocks there.
	 */
	int nreleased;
	LeaseId released[max_leased_blocks];
};
static_assert(std::is_trivially_destructible_v<LeaseTable>);

/*
 * Attaches (and at the first attach, initializes) the lease table in the
 * main shared memory, which the shared-memory hooks (module.cpp) reserve;
 * from the startup hook, under AddinShmemInitLock.  Preloading only.
 */
Size lease_table_size();
void attach_lease_table();
/* nullptr unless uidgen is preloaded. */
LeaseTable *lease_table();

/*
 * Joining (INV-19).  The server's join count moves when its agent begins to
 * work for a registry (the setting, before any block is leased) and when a
 * database joins one.  A worker claimed without a registry keeps the count
 * it saw at its claim and issues nothing once the count has moved: its
 * generator looks before every ID (joined_since()), and its reservation at
 * every raise, since a database's join raises the count before it reads
 * the reservation its floor starts above.  0 without a lease table (not
 * preloaded: no registry either).
 */
uint64_t joins_so_far();
void count_join();

/* The count's word, for the hot path; nullptr without a lease table. */
extern const std::atomic<uint64_t> *join_count;

/*
 * Whether the join count moved since a worker's claim saw seen: one atomic
 * load, no lock, so that a generator may look before every ID.
 */
inline bool
joined_since(uint64_t seen)
{
	return join_count != nullptr && join_count->load(std::memory_order_acquire) != seen;
}

/*
 * Whether the agent works for a registry: its view of uidgen.registry, which
 * a session that has not processed the reload yet does not share.
 */
bool server_has_registry();

/*
 * A worker for database from this server life's blocks, with the unit it
 * starts after: a fresh one, else one whose database was dropped, above
 * what that database's holders noted at their exit.  Waits (interruptibly, at most timeout_ms) for the agent to
 * lease a block when none has one left.  Errors with a class 08 SQLSTATE
 * naming the registry when none can be had.  Not under the table's lock.
 */
struct GrantedWorker
{
	int64_t worker;
	int64_t floor_delta;
	LeaseId lease_id;
};
static_assert(std::is_trivially_destructible_v<GrantedWorker>);
GrantedWorker take_granted_worker(Oid database, const char *database_name, int timeout_ms);

/*
 * Whether grant i may go to another database now: its database was dropped,
 * and its lease lasts at least for_ms more.  Under the table's lock.
 */
bool grant_reusable(const LeaseTable *state, int i, int64_t now_mono, int64_t for_ms);

/*
 * Notes at a holder's exit the last unit it issued under worker, whether or
 * not its release row gets written; reuse starts above it.  Shared memory
 * lasts exactly as long as the server life whose grants it holds, so no
 * crash can lose it while a grant could be reused.
 */
void note_grant_exit(int64_t worker, int64_t last_delta);
int64_t grant_issued_until(int64_t worker);

/* The number of the agent's last attempt to reach the registry, for wait_for_agent(). */
uint64 agent_attempts();

/*
 * Waits for the agent's next change (at most a second), interruptibly;
 * raises report_registry_failure(what) instead when an attempt of the agent
 * begun after attempt since failed, or until_mono has passed.  A failure of
 * an earlier attempt is no answer for a registration that began later: it
 * asks the agent for another attempt and waits for it.
 */
void wait_for_agent(int64_t until_mono, uint64 since, const char *what);

/* The workers granted to database in this server life under leases still live (palloc'd), for reuse. */
int64_t *granted_workers(Oid database, int *count);

/* The lease of the block take_granted_worker() would take a worker from now, if one has room. */
std::optional<LeaseId> lease_with_room();

/* The live lease under which worker went to database, if any. */
std::optional<LeaseId> live_lease(int64_t worker, Oid database);

/*
 * The last time unit (of layout) that a worker of lease may issue under
 * that lease as it stands: now plus what is left of the lease plus
 * max_borrow, as the registry counts before it leases the block again (it
 * adds the clock bound too).  nullopt once the lease has ended on the
 * monotonic clock, or when this server life holds that lease no more
 * (it lapsed, even if the same block was leased again since: that is
 * another lease): then nothing more is issued under it.  Costs a lock: called when
 * a reservation is extended or a keeper ticks, not per ID.
 */
std::optional<int64_t> lease_cap_delta(const LeaseId &lease, const Layout &layout);

/* The registry's ceiling of lease, while this server life holds it: for errors. */
std::optional<int64_t> lease_ceiling_delta(const LeaseId &lease);

/* The floor of lease (its workers issue only above it), while this server life holds it. */
std::optional<int64_t> lease_floor_delta(const LeaseId &lease);

/* The rules the agent fetched, or nullopt before it reached the registry. */
std::optional<RegistryRules> registry_rules();

/*
 * Raises the agent's last error as a class 08 error that names the
 * registry, or with fresh false (the agent's last failure is older than the
 * registration), that no answer came in time.
 */
[[noreturn]] void report_registry_failure(const char *what, bool fresh);

void wake_agent();

/* The registry's connection string without its secrets, as the agent last set it. */
void describe_current_registry(char out[registry_text_size]);

} // namespace uidgen::pg
