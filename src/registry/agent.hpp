/*
 * agent.hpp
 *	  The background worker that does all of this server's registry I/O.
 */
#pragma once

namespace uidgen::pg {

/* Registers the agent with the postmaster; from _PG_init while preloading. */
void register_registry_agent();

} // namespace uidgen::pg
