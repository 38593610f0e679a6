/*
 * agent_state.hpp
 *	  What the registry agent's process holds between its files: the
 *	  connection, the attempt it is in, and the status it publishes.
 *
 * Owned by the agent process alone (agent.cpp starts it and runs its loop):
 * no backend touches any of it, so nothing here takes a lock of its own.
 * registry_connection.cpp opens and closes conn, registry_calls.cpp calls
 * over it, agent.cpp sets it aside while it probes a new uidgen.registry
 * value (probe_pending()).  What backends see goes through the lease table
 * (lease_table.hpp), under its lock: set_status() and forget_blocks().
 */
#pragma once

#include "registry/lease_table.hpp"

extern "C" {
#include "libpq-fe.h"
}

#include <cstdint>

namespace uidgen::pg {

/* How often the agent looks at its blocks, and its quickest retry after a failure. */
constexpr long tick_ms = 1000;

/* The connection to the registry, nullptr when closed. */
extern PGconn *conn;

/* The attempt this round is (LeaseTable::attempts), for the status it sets. */
extern uint64 current_attempt;

/* While the agent tries the pending value: set_status() records its failures as pending_error. */
extern bool probing;

/*
 * A new agent process whose uidgen.registry differs from its predecessor's
 * (lease_table.hpp, registry): another identity there is another registry,
 * not a registry created again under the same name.
 */
extern bool text_changed_since_pin;

/*
 * Publishes the agent's status, numbered with current_attempt, and wakes the
 * registrations that wait on it; a failure is logged, the same error at most
 * once a minute.  While probing, only a failure is noted, as pending_error.
 */
void set_status(AgentStatus status, int sqlstate, const char *error);

/*
 * R5: only another registry makes the server forget its blocks; a new
 * agent process resumes its predecessor's, which live in shared memory.
 */
void forget_blocks();

} // namespace uidgen::pg
