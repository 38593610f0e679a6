/*
 * module.cpp
 *	  Module magic, _PG_init, the GUCs, and the one set of callbacks that
 *	  PostgreSQL calls at transaction and cache events.
 */
#include "backend_scope/backend_generator.hpp"
#include "backend_scope/horizon_lock.hpp"
#include "layout/catalog.hpp"
#include "pg/guard.hpp"
#include "pg/settings.hpp"
#include "registry/agent.hpp"
#include "registry/dropped_databases.hpp"
#include "registry/lease_table.hpp"
#include "registry/registry_pin.hpp"
#include "server_scope/shared_state.hpp"

extern "C" {
#include "lib/stringinfo.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_database.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/inval.h"
}

#include <climits>

extern "C" {

PG_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);
}

namespace uidgen::pg {

int generator_setting = static_cast<int>(GeneratorKind::Cached);
int max_backwards_wait_ms = 1000;
int max_borrow_ms = 10000;
bool worker_reuse = true;
int scope_setting = static_cast<int>(Scope::Backend);
int keeper_idle_timeout_ms = 300 * 1000;
int max_server_databases = 64;
int max_chunk_setting = 8;
int claim_pool_size = 8;
int debug_clock_offset_ms = 0;
char *registry_setting = nullptr;

namespace {

const struct config_enum_entry generator_options[] = {
	{"cached", static_cast<int>(GeneratorKind::Cached), false},
	{"default", static_cast<int>(GeneratorKind::Default), false},
	{nullptr, 0, false},
};

const struct config_enum_entry scope_options[] = {
	{"backend", static_cast<int>(Scope::Backend), false},
	{"server", static_cast<int>(Scope::Server), false},
	{nullptr, 0, false},
};

/* A malformed connection string is refused where it is set, never met later by the agent. */
bool
check_registry(char **newval, void **, GucSource)
{
	char *error = nullptr;
	PQconninfoOption *options;

	if (*newval == nullptr || (*newval)[0] == '\0')
		return true;
	options = PQconninfoParse(*newval, &error);
	if (options == nullptr)
	{
		GUC_check_errmsg("invalid uidgen.registry connection string");
		if (error != nullptr)
		{
			GUC_check_errdetail("%s", error);
			PQfreemem(error);
		}
		return false;
	}
	PQconninfoFree(options);
	return true;
}

void
assign_registry(const char *, void *)
{
	registry_setting_changed();
}

/*
 * What SHOW, pg_settings and current_setting() give a role that is not a
 * superuser: GUC_SUPERUSER_ONLY lets pg_read_all_settings (and so
 * pg_monitor) read the value, which may hold a password.  The keywords and
 * other values are shown, those libpq marks secret (dispchar "*": password,
 * sslpassword) masked; a value that does not parse
 * (it cannot be set) is not shown at all.  Built with PostgreSQL's own
 * allocator: nothing here throws.
 */
const char *
show_registry()
{
	const char *value = registry_setting != nullptr ? registry_setting : "";
	char *error = nullptr;

	if (value[0] == '\0' || superuser())
		return value;

	PQconninfoOption *options = PQconninfoParse(value, &error);

	if (error != nullptr)
		PQfreemem(error);
	if (options == nullptr)
		return "********";

	StringInfoData text;

	initStringInfo(&text);
	for (PQconninfoOption *option = options; option->keyword != nullptr; option++)
	{
		if (option->val == nullptr)
			continue;
		appendStringInfo(&text, "%s%s='", text.len > 0 ? " " : "", option->keyword);
		for (const char *c = option->dispchar[0] == '*' ? "********" : option->val; *c != '\0'; c++)
		{
			if (*c == '\'' || *c == '\\')
				appendStringInfoChar(&text, '\\');
			appendStringInfoChar(&text, *c);
		}
		appendStringInfoChar(&text, '\'');
	}
	PQconninfoFree(options);
	return text.data;
}

} // namespace

void
define_settings()
{
	DefineCustomEnumVariable("uidgen.generator",
							 gettext_noop("Selects how uid_next() follows the clock."),
							 gettext_noop("\"cached\" borrows future time units when a unit's sequence "
										  "runs out; \"default\" waits for the next unit."),
							 &generator_setting, generator_setting, generator_options, PGC_USERSET, 0,
							 nullptr, nullptr, nullptr);

	DefineCustomIntVariable("uidgen.max_backwards_wait",
							gettext_noop("Longest wait of the default generator for a clock that moved "
										 "backwards; further back is an error."),
							nullptr, &max_backwards_wait_ms, max_backwards_wait_ms, 0, 3600 * 1000,
							PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);

	/*
	 * One bound for the server: it is also the least margin before a dead
	 * backend's worker is reused.  What makes that margin safe is the time
	 * reservation (reservation.hpp), which covers whatever the dead backend
	 * borrowed under any value this had.
	 */
	DefineCustomIntVariable("uidgen.max_borrow",
							gettext_noop("How far the cached generator may run ahead of the clock."),
							gettext_noop("Also the least margin before the worker id of a backend that died "
										 "without releasing it is reused; the time reservation keeps it safe."),
							&max_borrow_ms, max_borrow_ms, 0, 3600 * 1000, PGC_SIGHUP, GUC_UNIT_MS,
							nullptr, nullptr, nullptr);

	DefineCustomBoolVariable("uidgen.worker_reuse",
							 gettext_noop("Reuses the worker ids of released workers before allocating "
										  "new ones."),
							 gettext_noop("Off allocates a new worker id for every backend, which uses up "
										  "the layout's worker ids faster."),
							 &worker_reuse, worker_reuse, PGC_SUSET, 0, nullptr, nullptr,
							 nullptr);

	/*
	 * A backend reads it at its first ID and keeps that scope, so that it
	 * never switches between its own worker and the shared one; both kinds
	 * of worker live side by side in the worker table and under one time
	 * reservation, so a reload or restart that switches never duplicates
	 * (INV-14).  Not PGC_POSTMASTER: that
	 * needs preloading, which PostgreSQL 17 and later can do without.
	 */
	DefineCustomEnumVariable("uidgen.scope",
							 gettext_noop("Selects whether each backend or each database of the server has a "
										  "generator."),
							 gettext_noop("\"backend\" gives every session a worker of its own; \"server\" "
										  "gives each database one generator in shared memory that all its "
										  "sessions take IDs from."),
							 &scope_setting, scope_setting, scope_options, PGC_SIGHUP, 0, nullptr, nullptr,
							 nullptr);

	DefineCustomIntVariable("uidgen.keeper_idle_timeout",
							gettext_noop("How long a database's uidgen keeper stays without IDs issued "
										 "before it leaves."),
							gettext_noop("A keeper holds a connection to its database; 0 keeps it for the "
										 "life of the server."),
							&keeper_idle_timeout_ms, keeper_idle_timeout_ms, 0, INT_MAX, PGC_SIGHUP,
							GUC_UNIT_MS, nullptr, nullptr, nullptr);

	DefineCustomIntVariable("uidgen.claim_pool_size",
							gettext_noop("How many released workers a database's uidgen claim pool keeps "
										 "claimed ahead for new sessions."),
							gettext_noop("A session that reuses a worker takes one whose claim is already "
										 "committed, instead of starting a claim committer; 0 turns the pool "
										 "off.  The pool is a background worker per database with sessions "
										 "that reuse workers."),
							&claim_pool_size, claim_pool_size, 0, max_claim_pool_size, PGC_SIGHUP, 0, nullptr,
							nullptr, nullptr);

	/*
	 * The slots are sized once, when the shared memory is made: a restart.
	 * PostgreSQL takes a setting of that kind only from a preloaded library;
	 * without preloading (a named DSM segment), there are 64.
	 */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomIntVariable("uidgen.max_server_databases",
								gettext_noop("How many databases of the server can use uidgen.scope = server at once."),
								gettext_noop("A database keeps its place from its first ID until it is dropped or "
											 "the server stops; each also needs a background worker for its "
											 "keeper."),
								&max_server_databases, max_server_databases, 1, 10000, PGC_POSTMASTER, 0,
								nullptr, nullptr, nullptr);

	/*
	 * Larger chunks cost fewer atomic operations but let concurrent
	 * inserters' runs of IDs interleave, which splits B-tree pages in the
	 * middle rather than at the right edge (README, "Performance").
	 */
	DefineCustomIntVariable("uidgen.max_chunk",
							gettext_noop("Most IDs a session takes at once from the server-wide generator."),
							gettext_noop("A session's chunk starts at 1 and doubles up to this while it uses "
										 "its chunks up within a time unit."),
							&max_chunk_setting, max_chunk_setting, 1, 4096, PGC_SIGHUP, 0, nullptr, nullptr,
							nullptr);

	/*
	 * The registry is reached by one background worker per server, which
	 * needs the library preloaded; the value may hold a password, so only
	 * superusers and pg_read_all_settings see it (GUC_SUPERUSER_ONLY), and
	 * the latter with its secrets masked (show_registry()).
	 */
	DefineCustomStringVariable("uidgen.registry",
							   gettext_noop("Connection string of the registry database that leases worker "
											"ids to this server."),
							   gettext_noop("Empty keeps IDs unique within each database only. Needs "
											"shared_preload_libraries = 'uidgen'."),
							   &registry_setting, "", PGC_SIGHUP, GUC_SUPERUSER_ONLY, check_registry,
							   assign_registry, show_registry);

	/*
	 * A developer setting, as PostgreSQL's own (GUC_NOT_IN_SAMPLE, hidden
	 * from SHOW ALL): tests move one server's clock with it where
	 * libfaketime cannot reach (pg_clock.hpp).  PGC_SIGHUP, so that every
	 * process of the server, its background workers too, reads one value.
	 */
	DefineCustomIntVariable("uidgen.debug_clock_offset",
							gettext_noop("Moves the clock uidgen reads by this much; for testing only."),
							nullptr, &debug_clock_offset_ms, 0, -86400 * 1000, 86400 * 1000, PGC_SIGHUP,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL | GUC_SUPERUSER_ONLY, nullptr,
							nullptr, nullptr);

	MarkGUCPrefixReserved("uidgen");
}

} // namespace uidgen::pg

/*
 * The one callback of each kind: each subsystem that cares gets the event,
 * the layout's cache first.  They run inside PostgreSQL's transaction
 * machinery; nothing they call throws a C++ exception.
 */
static void
uidgen_xact_callback(XactEvent event, void *)
{
	uidgen::pg::catalog_at_xact_event(event);
	uidgen::pg::backend_at_xact_event(event);
	uidgen::pg::horizon_at_xact_event(event);
	uidgen::pg::dropped_databases_at_xact_event(event);
	uidgen::pg::lost_move_at_xact_event(event);
}

static void
uidgen_subxact_callback(SubXactEvent event, SubTransactionId subid, SubTransactionId parent_subid, void *)
{
	uidgen::pg::catalog_at_subxact_event(event);
	uidgen::pg::backend_at_subxact_event(event, subid, parent_subid);
}

static void
uidgen_resource_release_callback(ResourceReleasePhase phase, bool, bool is_top_level, void *)
{
	uidgen::pg::backend_at_resource_release(phase, is_top_level);
}

static void
uidgen_relcache_callback(Datum, Oid relid)
{
	uidgen::pg::catalog_relcache_invalidated(relid);
	uidgen::pg::backend_relcache_invalidated(relid);
}

/* The object-access hook: a DROP DATABASE, for the grants of its database (dropped_databases.hpp). */
static object_access_hook_type previous_object_access_hook = nullptr;

static void
uidgen_object_access(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id, void *arg)
{
	if (previous_object_access_hook)
		previous_object_access_hook(access, class_id, object_id, sub_id, arg);
	if (access == OAT_DROP && class_id == DatabaseRelationId)
		uidgen::pg::database_drop_begins(object_id);
}

/*
 * The one shared-memory hook of each kind, while preloading: the
 * server-wide generators and the lease table live in the main shared memory.
 */
static shmem_request_hook_type previous_request_hook = nullptr;
static shmem_startup_hook_type previous_startup_hook = nullptr;

static void
uidgen_shmem_request(void)
{
	if (previous_request_hook)
		previous_request_hook();
	RequestAddinShmemSpace(uidgen::pg::shared_state_size());
	RequestAddinShmemSpace(uidgen::pg::lease_table_size());
}

static void
uidgen_shmem_startup(void)
{
	if (previous_startup_hook)
		previous_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	uidgen::pg::attach_shared_state();
	uidgen::pg::attach_lease_table();
	LWLockRelease(AddinShmemInitLock);
}

void
_PG_init(void)
{
	uidgen::pg::define_settings();
	RegisterXactCallback(uidgen_xact_callback, nullptr);
	RegisterSubXactCallback(uidgen_subxact_callback, nullptr);
	RegisterResourceReleaseCallback(uidgen_resource_release_callback, nullptr);
	CacheRegisterRelcacheCallback(uidgen_relcache_callback, 0);
	/* Preloaded, the server-wide generators live in the main shared memory (shared_state.hpp). */
	if (process_shared_preload_libraries_in_progress)
	{
		uidgen::pg::use_main_shared_memory();
		previous_request_hook = shmem_request_hook;
		shmem_request_hook = uidgen_shmem_request;
		previous_startup_hook = shmem_startup_hook;
		shmem_startup_hook = uidgen_shmem_startup;
		uidgen::pg::register_registry_agent();
		previous_object_access_hook = object_access_hook;
		object_access_hook = uidgen_object_access;
	}
}
