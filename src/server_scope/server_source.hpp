/*
 * server_source.hpp
 *	  What the files of src/server_scope share about a backend's side of the
 *	  server-wide generator: its source (one generation of one keeper), the
 *	  worker it may have borrowed, and the steps between them.  For
 *	  src/server_scope only; others use server_generator.hpp.
 *
 * server_generator.cpp issues from the source's cached chunks;
 * keeper_link.cpp starts the database's keeper and waits for its time
 * reservation; private_borrowing.cpp borrows a private worker from the
 * keeper when the cursor cannot keep up, and gives it back.
 */
#pragma once

#include "core/generator.hpp"
#include "core/shared_cursor.hpp"
#include "registry/lease_table.hpp"
#include "server_scope/shared_state.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace uidgen::pg {

/* How long a backend waits for a keeper to start, or to raise the reservation. */
constexpr int64_t keeper_wait_ms = 10000;

/*
 * Chunks taken at the largest size that still ran ahead of the clock by more
 * than private_worker_lead_ms(), one after the other, before a backend asks
 * for a private worker: demand the shared cursor cannot meet.
 */
constexpr int pressure_for_private_worker = 4;

/* How far ahead of the clock the cursor's chunks run before they count towards a private worker. */
int64_t private_worker_lead_ms();

/*
 * The size a chunk may grow to: uidgen.max_chunk, and never more than an
 * eighth of what the cursor gives the whole database a unit.
 */
int64_t max_chunk_size(int seq_bits);

struct Source;

/* Thrown through a private worker's Generator when its keeper left: the source ended. */
struct SourceEnded
{
};

/*
 * Thrown through a private worker's Generator when its lease ended before
 * its reservation covered the next unit: the backend gives it back and
 * goes on with the cursor, whose own lease may go on.
 */
struct BorrowWithdrawn
{
};

/* A private worker's units are covered by its own reservation, which the keeper raises. */
class SharedReservation final : public TimeReservation
{
public:
	explicit SharedReservation(Source &source) : source_(source) {}
	int64_t extend(int64_t delta) override;

private:
	Source &source_;
};
static_assert(std::is_trivially_destructible_v<SharedReservation>);

/* A worker the keeper lent this backend: a generator of its own, as in 1.0. */
struct BorrowedWorker
{
	BorrowedWorker(Source &source, const Layout &layout, int index, int64_t worker, int64_t floor_delta)
		: index(index), reservation(source), generator(layout, worker, floor_delta, reservation)
	{
	}
	BorrowedWorker(const BorrowedWorker &) = delete;
	BorrowedWorker &operator=(const BorrowedWorker &) = delete;

	int index;		/* in SharedGenerator::privates */
	SharedReservation reservation;
	Generator generator;
	/* Its reservation as this backend last read it: it only grows while the worker is lent. */
	int64_t reserved = Generator::no_floor;
};
static_assert(std::is_trivially_destructible_v<BorrowedWorker>);

/* The generator this backend issues from: one generation of one keeper. */
struct Source
{
	Source(SharedGenerator *shared, uint32_t generation, const Layout &layout, int64_t worker, int64_t floor_delta,
		   bool leased, uint64_t joins_seen)
		: shared(shared), generation(generation), floor_delta(floor_delta), leased(leased), joins_seen(joins_seen),
		  cache(layout, worker, max_chunk_size(layout.seq_bits()))
	{
	}
	Source(const Source &) = delete;
	Source &operator=(const Source &) = delete;

	SharedGenerator *shared;
	uint32_t generation;
	int64_t floor_delta;	/* this backend's IDs from the source start after it */
	/* Its keeper's workers came from a registry; if not, the join count its claim saw. */
	bool leased;
	uint64_t joins_seen;
	/*
	 * The reservation as this backend last read it for the generation:
	 * within one it only grows, and its keeper's exit releases the workers
	 * at or above it, so units up to it need no look at the slot.
	 */
	int64_t reserved = Generator::no_floor;
	ChunkCache cache;
	int pressure = 0;
	std::optional<BorrowedWorker> borrowed;
};
static_assert(std::is_trivially_destructible_v<Source>);

struct ServerState
{
	std::optional<Source> source;
	/* The last unit this backend may have issued: a new source starts after it, so IDs keep increasing. */
	int64_t last_delta = Generator::no_floor;
	bool give_back_at_exit_registered = false;
};
static_assert(std::is_trivially_destructible_v<ServerState>);

extern ServerState server;

/* The unit of layout that this backend's clock reads now. */
int64_t now_delta(const Layout &layout);

/*
 * Whether the source's keeper claimed its workers without a registry and
 * the server joined one since: the hot path's look, one atomic load for
 * such a source only.
 */
inline bool
joined_since_keeper_claimed(const Source &source)
{
	return !source.leased && joined_since(source.joins_seen);
}

/* keeper_link.cpp */

/* Waits until the database's keeper is ready, starting one if there is none, and takes it as the source. */
void start_source();

/*
 * Waits until the cursor's reservation covers delta and returns it; nullopt
 * when the source ended meanwhile.
 */
std::optional<int64_t> wait_for_reservation(Source &source, int64_t delta);

/*
 * One round of a wait for a reservation that does not cover delta yet, for
 * the cursor's reservation and a borrowed worker's alike.
 */
void ask_keeper_and_wait(Source &source, int64_t delta, int64_t worker, const std::optional<LeaseId> &lease,
						 int64_t deadline);

/* private_borrowing.cpp */

/* Takes a free private worker, or asks the keeper for one and goes on with the cursor meanwhile. */
void try_to_borrow(Source &source);

/* The next ID of a borrowed worker; nullopt when its keeper left or its lease ended. */
std::optional<int64_t> next_from_borrowed(Source &source);

/* Gives the borrowed worker back with the last unit issued under it. */
void give_back(Source &source);

} // namespace uidgen::pg
