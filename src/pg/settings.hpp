/*
 * settings.hpp
 *	  uidgen's configuration parameters (GUCs).
 */
#pragma once

#include "core/generator.hpp"

namespace uidgen::pg {

/* How backends get their IDs: uidgen.scope. */
enum class Scope
{
	Backend,	/* a worker per backend (1.0) */
	Server,		/* one generator per database in shared memory (server_generator.hpp) */
};

/* The values behind the GUCs; defined in module.cpp. */
extern int generator_setting;		/* a GeneratorKind */
extern int max_backwards_wait_ms;
extern int max_borrow_ms;
extern bool worker_reuse;
extern int scope_setting;			/* a Scope */
extern int keeper_idle_timeout_ms;
extern int max_chunk_setting;
/* uidgen.claim_pool_size: workers a database's claim pool keeps claimed ahead (claim_pool.hpp); 0: no pool. */
extern int claim_pool_size;
constexpr int max_claim_pool_size = 32;
extern int max_server_databases;	/* slots for server-wide generators (shared_state.hpp) */
/*
 * uidgen.debug_clock_offset: a developer setting, superuser only, that moves
 * the clock every uidgen process reads (PgClock::now_ms) by that many
 * milliseconds.  Tests step a member's clock with it where libfaketime
 * cannot reach (background workers forked by the PostgreSQL 15 postmaster
 * while it waits in select()); 0, the default, is the system clock.
 */
extern int debug_clock_offset_ms;
/* uidgen.registry: the libpq connection string of the registry; empty for none. */
extern char *registry_setting;

inline bool
registry_configured()
{
	return registry_setting != nullptr && registry_setting[0] != '\0';
}

inline Scope
current_scope()
{
	return static_cast<Scope>(scope_setting);
}

inline GeneratorKind
current_generator_kind()
{
	return static_cast<GeneratorKind>(generator_setting);
}

inline GeneratorLimits
current_limits()
{
	return GeneratorLimits{max_borrow_ms, max_backwards_wait_ms};
}

void define_settings();

} // namespace uidgen::pg
