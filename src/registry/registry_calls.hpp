/*
 * registry_calls.hpp
 *	  The registry agent's calls, one function per function of the
 *	  registry's side of the protocol (src/registry/sql/registry_calls.sql).
 *
 * Each runs over conn (agent_state.hpp), checks the reply before it uses it
 * (registry_connection.hpp), notes what it learnt in the lease table, and
 * returns false with the failure recorded (set_status()) when the round
 * must stop there.
 */
#pragma once

#include "pg/uuid_codec.hpp"
#include "registry/lease_table.hpp"
#include "registry/registry_pin.hpp"

#include <type_traits>

namespace uidgen::pg {

/* The text of this server life's identity, as the registry functions take it: 6 parameters. */
struct Identity
{
	char life[uuid_text_size];
	char system_identifier[32];
	char timeline[16];
	char host[256];
	char port[16];
	char *databases;			/* a text[] literal, palloc'd */
};
static_assert(std::is_trivially_destructible_v<Identity>);

Identity identity_of(LeaseTable *state);

/*
 * registry_rules(): fetches the registry's rules and checks the two clocks
 * against each other (R12) and max_borrow.
 */
bool fetch_rules();

/*
 * registry_identity(): which registry this is, the registries it took over,
 * and the protocol version spoken with it (spoken, protocol.hpp); refused
 * when this build and the registry are more than one version apart.
 */
bool read_identity(pg_uuid_t *seen, Predecessors *predecessors, int *spoken);

/*
 * Whether this server may work with registry seen, which took over
 * predecessors; otherwise the refusal is written to message.
 */
bool may_move_to(const pg_uuid_t &seen, const Predecessors &predecessors, char message[error_text_size]);

/*
 * registry_identity() at the start of a round: goes no further at another
 * registry than the one pinned (R11), pinning the first.
 */
bool check_identity();

/* registry_renew(): renews every lease this life holds, reports grants and releases. */
bool renew(LeaseTable *state);

/* registry_claim(): leases another block of workers. */
bool claim_block(LeaseTable *state);

} // namespace uidgen::pg
