/*
 * registry_connection.hpp
 *	  The registry agent's libpq client: connecting without blocking, one
 *	  call at a time with a bound, and the checks every reply passes.
 *
 * Every function records its failure with set_status() (agent_state.hpp)
 * before it returns false or nullptr; a call's caller only stops its round.
 * Used by the agent process alone, over conn (agent_state.hpp).
 */
#pragma once

#include "registry/lease_table.hpp"

extern "C" {
#include "libpq-fe.h"
}

#include <cstddef>
#include <cstdint>

namespace uidgen::pg {

/*
 * How long connecting may take, and (call_timeout_ms, in the .cpp) each
 * call: the registry's own statement_timeout (5 s, set at connection) ends
 * a slow call first; these bound a registry that does not answer at all.
 */
constexpr int64_t connect_timeout_ms = 5000;

/*
 * The connection string without the options libpq marks secret (dispchar
 * "*": password, sslpassword, and whatever a later libpq adds), for
 * messages, the views and uidgen.membership.
 */
void describe_registry(const char *conninfo, char *out, size_t size);

/* Closes conn, if open. */
void disconnect();

/*
 * Connects conn to the registry of conninfo without blocking, within
 * timeout_ms: the host names resolved apart first (registry_hosts.hpp).
 */
bool connect_to_registry(const char *conninfo, int64_t timeout_ms = connect_timeout_ms);

/*
 * Runs a query of params on conn without blocking, within a call's bound;
 * the result, or nullptr after recording the failure.
 */
PGresult *call(const char *what, const char *sql, int nparams, const char *const *params);

/* Records a reply the agent cannot use (08P01); clears result. */
void record_bad_reply(PGresult *result, const char *what, const char *problem);

/*
 * Whether result has rows rows (any number for -1) of columns columns;
 * otherwise records the reply as a protocol violation and clears it.
 */
bool reply_has_shape(PGresult *result, const char *what, int rows, int columns);

/*
 * Column col of row as an integer, parsed strictly; otherwise records the
 * reply as a protocol violation, clears it and returns false.  A NULL is
 * refused unless null is given: then it is reported there.
 */
bool reply_int64(PGresult *result, const char *what, int row, int col, int64_t *value, bool *null = nullptr);

/*
 * Column col of row as a lease ID, the text form of a UUID, parsed
 * strictly; otherwise records the reply as a protocol violation, clears it
 * and returns false.
 */
bool reply_lease_id(PGresult *result, const char *what, int row, int col, LeaseId *id);

} // namespace uidgen::pg
