/*
 * server_generator.cpp
 *	  Taking IDs from the database's server-wide generator: the cached
 *	  chunks of the shared cursor, and blocks (server_source.hpp).
 */
#include "server_scope/server_generator.hpp"

#include "pg/guard.hpp"
#include "pg/pg_clock.hpp"
#include "pg/settings.hpp"
#include "server_scope/keeper.hpp"
#include "server_scope/server_source.hpp"

#include <algorithm>

namespace uidgen::pg {

ServerState server;

/*
 * The size a chunk may grow to: uidgen.max_chunk, and never more than an
 * eighth of what the cursor gives the whole database a unit.
 */
int64_t
max_chunk_size(int seq_bits)
{
	return std::max<int64_t>(1, std::min<int64_t>(max_chunk_setting, (int64_t{1} << seq_bits) / 8));
}

int64_t
now_delta(const Layout &layout)
{
	return layout.delta_at(backend_clock().now_ms());
}

namespace {

/*
 * Takes a chunk from the source into the cache: a false return means the
 * source ended (its keeper left or was replaced) and the chunk is dropped.
 */
bool
refill(Source &source)
{
	SharedGenerator *g = source.shared;
	const CursorWords &words = source.cache.words();
	const Layout &layout = words.layout();
	int64_t now = now_delta(layout);
	uint64_t size = source.cache.next_size(now);
	uint64_t min_word = words.first_of(std::max(now, source.floor_delta + 1));
	std::optional<CursorChunk> chunk = take_chunk(g->cursor, min_word, size);

	/* A closed cursor, or one published for a later generation (shared_state.hpp). */
	if (!chunk || g->generation.load(std::memory_order_acquire) != source.generation)
		return false;
	g->chunks.fetch_add(1, std::memory_order_relaxed);
	g->ids.fetch_add(size, std::memory_order_relaxed);

	int64_t last = words.delta_of(chunk->end - 1);
	if (last > layout.max_delta())
		throw_time_exhausted(layout);
	if (!wait_for_reservation(source, last))
		return false;	/* the source ended */

	/* Borrowed further than max_borrow: wait for the clock, as the cached generator does. */
	std::optional<int64_t> start = layout.start_of(last);
	int64_t now_ms = backend_clock().now_ms();
	if (start && *start - max_borrow_ms > now_ms)
	{
		g->waits.fetch_add(1, std::memory_order_relaxed);
		wait_until_ms(backend_clock(), *start - max_borrow_ms);
	}

	bool outran = size == source.cache.max_size() && start && *start - now_ms > private_worker_lead_ms();
	source.pressure = outran ? source.pressure + 1 : 0;

	uint64_t dropped = source.cache.fill(*chunk, now_delta(layout));
	if (dropped > 0)
		g->dropped.fetch_add(dropped, std::memory_order_relaxed);
	/* An upper bound of what this backend issues from the chunk is enough for the next source's floor. */
	server.last_delta = std::max(server.last_delta, last);
	return true;
}

/*
 * Gives the borrowed worker back and drops the cached IDs, which the next
 * chunk, block or source starts above (server.last_delta).
 */
void
empty_source(Source &source)
{
	if (source.borrowed)
		give_back(source);
	uint64_t dropped = source.cache.clear();
	if (dropped > 0)
		source.shared->dropped.fetch_add(dropped, std::memory_order_relaxed);
}

/*
 * Leaves a source whose keeper claimed without a registry once the server
 * joined one, at once rather than at its next reservation (INV-19): the
 * borrowed worker goes back above what it issued, the cached IDs are
 * dropped (the next source starts above them), and the keeper, woken, sees
 * the join and leaves; its successor claims from the registry, so the
 * session's statement goes on under a grant, above its last ID.
 */
void
leave_joined_source()
{
	SharedGenerator *g = server.source->shared;

	empty_source(*server.source);
	server.source.reset();
	wake_keeper(g);
}

/* The source to issue from: started when there is none, left and started again once the server joined. */
Source &
current_source()
{
	for (;;)
	{
		if (!server.source)
			start_source();
		if (!joined_since_keeper_claimed(*server.source))
			return *server.source;
		leave_joined_source();
	}
}

/* The slow path: a borrowed worker, a new chunk, or a new source first when there is none. */
int64_t
next_from_new_chunk()
{
	for (;;)
	{
		Source &source = current_source();
		int64_t uid;

		if (source.borrowed)
		{
			if (std::optional<int64_t> borrowed_uid = next_from_borrowed(source))
				return *borrowed_uid;
			continue;
		}
		if (!refill(source))
		{
			server.source.reset();
			continue;
		}
		if (source.pressure >= pressure_for_private_worker)
		{
			try_to_borrow(source);
			if (source.borrowed)
				continue;
		}
		if (source.cache.take(now_delta(source.cache.words().layout()), &uid))
			return uid;
		/* Otherwise the chunk went stale while this backend waited: take another. */
	}
}

} // namespace

int64_t
next_server_uid()
{
	if (__builtin_expect(server.source.has_value(), 1))
	{
		Source &source = *server.source;
		const Layout &layout = source.cache.words().layout();
		int64_t uid;

		if (unlikely(joined_since_keeper_claimed(source)))
			leave_joined_source();
		else if (source.borrowed)
		{
			if (std::optional<int64_t> borrowed_uid = next_from_borrowed(source))
				return *borrowed_uid;
		}
		else if (__builtin_expect(source.cache.take(now_delta(layout), &uid), 1))
			return uid;
	}
	return next_from_new_chunk();
}

int64_t
next_server_block(int64_t n)
{
	for (;;)
	{
		Source &source = current_source();
		SharedGenerator *g = source.shared;

		/* The block comes from the cursor, above everything this backend issued so far. */
		empty_source(source);

		const CursorWords &words = source.cache.words();
		const Layout &layout = words.layout();
		int64_t now = now_delta(layout);
		uint64_t min_word = words.first_of(std::max(now, source.floor_delta + 1));
		std::optional<CursorChunk> block =
			take_block(g->cursor, min_word, static_cast<uint64_t>(n), layout.seq_bits());

		/* A closed cursor, or one published for a later generation: as refill(). */
		if (!block || g->generation.load(std::memory_order_acquire) != source.generation)
		{
			server.source.reset();
			continue;
		}
		g->chunks.fetch_add(1, std::memory_order_relaxed);
		g->ids.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);

		int64_t unit = words.delta_of(block->first);
		if (unit > layout.max_delta())
			throw_time_exhausted(layout);
		if (!wait_for_reservation(source, unit))
		{
			server.source.reset();
			continue;
		}
		std::optional<int64_t> start = layout.start_of(unit);
		if (start && *start - max_borrow_ms > backend_clock().now_ms())
		{
			g->waits.fetch_add(1, std::memory_order_relaxed);
			wait_until_ms(backend_clock(), *start - max_borrow_ms);
		}
		server.last_delta = std::max(server.last_delta, unit);
		return words.uid_of(block->first, source.cache.worker());
	}
}

std::optional<int64_t>
server_worker()
{
	if (!server.source)
		return std::nullopt;
	if (server.source->borrowed)
		return server.source->borrowed->generator.worker_id();
	return server.source->cache.worker();
}

} // namespace uidgen::pg
