/*
 * registry_hosts.hpp
 *	  The agent's waits: for a descriptor, and for the host names of the
 *	  registry's connection string, resolved apart with a bound (registry_connection.cpp).
 *
 * PQconnectStartParams() resolves a host name synchronously (libpq is
 * non-blocking only with hostaddr), for as long as the resolver takes: a
 * resolver that does not answer would hold the agent, and a fast shutdown
 * that waits for it, for the resolver's own timeouts.  So the agent
 * resolves each name in a thread of its own (core/resolver.hpp), waits for
 * it with its own bound, interruptibly, and hands libpq the addresses as
 * hostaddr, keeping host for what libpq checks against the name (TLS's
 * verify-full, the passfile).  A name that takes longer is not asked again
 * while its first resolution runs: the next attempt waits for that one.
 */
#pragma once

extern "C" {
#include "postgres.h"
}

#include <cstdint>

#include <type_traits>

namespace uidgen::pg {

/*
 * Waits until fd is ready for events (WL_SOCKET_*), or deadline
 * (monotonic_ms()) passes: false then.  Interrupts are served: SIGTERM (a
 * fast shutdown) ends the process here, whatever the peer or the resolver
 * does.  The agent's every wait.
 */
bool wait_for_fd(int fd, int events, int64_t deadline);

/*
 * The host, hostaddr and port keywords to add after the connection string,
 * palloc'd; nullptr for a keyword to leave as the connection string has it.
 * host is nullptr when libpq has no name to resolve: sockets, numeric
 * addresses, a hostaddr given, or no host in the connection string or in
 * PGHOST (a host named only in a service file is resolved by libpq).
 */
struct RegistryHosts
{
	char *host;
	char *hostaddr;
	char *port;
};
static_assert(std::is_trivially_destructible_v<RegistryHosts>);

/*
 * Resolves the host names of conninfo by deadline (monotonic_ms());
 * interrupts are served meanwhile (SIGTERM ends the process).  False, with
 * reason, when a name could not be resolved, or not in time.
 */
bool resolve_registry_hosts(const char *conninfo, int64_t deadline, RegistryHosts *hosts, char *reason,
							size_t reason_size);

} // namespace uidgen::pg
