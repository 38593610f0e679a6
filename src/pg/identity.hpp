/*
 * identity.hpp
 *	  Who this is: the machine's host name and the database's identity, as
 *	  the worker table and the registry record them.
 */
#pragma once

namespace uidgen::pg {

/* This machine's host name, at most 64 bytes as WORKER_NODE's HOST_NAME; palloc'd. */
char *server_host_name();

/* This database's identity: "system identifier/database OID", palloc'd. */
char *database_identity();

} // namespace uidgen::pg
