/*
 * registry_pin.hpp
 *	  Which registry this server life works with: the identity it pinned.
 *
 * A registry is named by a random UUID drawn when its extension is created
 * (uidgen.registry_identity there).  The agent pins the first it reaches
 * under a uidgen.registry setting, for the server life, and from then on
 * leases and renews nothing at a registry of another identity: one created
 * again, rebuilt, or another database behind the same connection string
 * knows nothing of the leases this server holds.  Each member database
 * pins the identity it joined in uidgen.membership; uid_registry_move()
 * moves both (INV-20).
 */
#pragma once

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "utils/uuid.h"
}

#include <type_traits>

namespace uidgen::pg {

/*
 * The registries a registry took over (uid_registry_import()), as its
 * uidgen.registry_identity() lists them; at most max_predecessors.
 */
struct Predecessors
{
	int count;
	pg_uuid_t ids[16];
};
static_assert(std::is_trivially_destructible_v<Predecessors>);

/* Whether id is one of predecessors. */
bool imported(const Predecessors &predecessors, const pg_uuid_t &id);

/*
 * The agent: the identity the registry replied in attempt, and the
 * registries it took over; whether it is the one pinned (pinning it when
 * none is).  R11: a member leases and renews only at the identity it
 * pinned.
 */
bool note_registry_identity(const pg_uuid_t &seen, const Predecessors &predecessors, uint64 attempt,
							pg_uuid_t *pinned);

/* The registry the agent saw last and the registries it took over; false when it has seen none. */
bool seen_registry(pg_uuid_t *seen, Predecessors *predecessors);

/*
 * Whether a member may move to a registry that did not import the one it
 * joined: while a uid_registry_move(old_registry_lost => true) runs, begun
 * by the call and ended with its transaction, however that ends.  Counted,
 * so that one call's end does not end another's.
 */
void begin_lost_move();
void lost_move_at_xact_event(XactEvent event);
bool lost_move_wanted();

/* The agent: whether a backend waits for the identity to be read afresh. */
bool identity_read_wanted();

/*
 * Has the agent read the registry's identity afresh (in an attempt begun
 * after the call), waiting at most until_mono; false when that attempt
 * failed before it read it, or no attempt came in time.
 */
bool read_identity_afresh(int64_t until_mono);

/* The agent, when uidgen.registry changes: the next registry pins anew. */
void unpin_registry();

/* The identity pinned; false when the agent has not pinned one yet. */
bool pinned_registry(pg_uuid_t *id);

/*
 * Pins the identity the agent saw last, and when that is another than the
 * one pinned, drops every block leased under the old one (their workers
 * then issue nothing more) and its rules.  False when the agent has seen none; changed
 * tells whether the pin moved.
 */
bool pin_seen_registry(pg_uuid_t *adopted, bool *changed);

} // namespace uidgen::pg
