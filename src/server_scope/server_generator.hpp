/*
 * server_generator.hpp
 *	  A backend's side of the server-wide generator (uidgen.scope = server).
 *
 * The backend takes chunks of the database's shared cursor (shared_state.hpp)
 * into a cache of its own and issues from it; it starts the database's keeper
 * (keeper.hpp) when there is none, and waits for it, interruptibly and for a
 * bounded time, when the cursor runs ahead of the time reservation.
 * Nothing here writes to the database, so any transaction, read-only ones
 * included, can take IDs.
 */
#pragma once

#include <cstdint>
#include <optional>

namespace uidgen::pg {

/* The next ID of this backend from the server-wide generator. */
int64_t next_server_uid();

/*
 * The first of n (1 to 2^s) consecutive IDs of one unit of the shared
 * cursor's worker; this backend's cached chunk and any borrowed worker are
 * given up first, so its IDs keep increasing.
 */
int64_t next_server_block(int64_t n);

/* The worker of the chunk this backend issues from; nullopt before its first ID. */
std::optional<int64_t> server_worker();

/* At exit: a worker borrowed from the keeper goes back, with the last unit issued under it. */
void give_back_at_exit_if_borrowed();

} // namespace uidgen::pg
