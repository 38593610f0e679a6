/*
 * generator.hpp
 *	  One backend's UID generator: UidGenerator's two strategies.
 *
 * State: worker id W, last time unit L (delta since the epoch) and sequence S.
 * Every ID is compose(L, W, S) and (L, S) strictly increases, so a generator
 * never repeats itself whatever the clock does.
 *
 *	cached	time is borrowed: when S runs out, L moves one unit ahead of the
 *			clock instead of waiting; L returns to the wall clock as soon as
 *			the rate drops.  L never runs more than max_borrow_ms ahead of the
 *			wall clock: at that bound the generator sleeps.
 *	default	time is the wall clock: when S runs out it sleeps until the next
 *			unit; a clock that went back by up to max_backwards_wait_ms is
 *			waited for, further back is an error.
 *
 * Both keep L monotonic, so it is safe to switch between them at any call,
 * and both issue a time unit only once their TimeReservation covers it.
 */
#pragma once

#include "core/clock.hpp"
#include "core/layout.hpp"
#include "core/reservation.hpp"

#include <cstdint>
#include <type_traits>

namespace uidgen {

enum class GeneratorKind
{
	Cached,
	Default,
};

struct GeneratorLimits
{
	int64_t max_borrow_ms = 10000;
	int64_t max_backwards_wait_ms = 1000;
};
static_assert(std::is_trivially_destructible_v<GeneratorLimits>);

/* Throws the Error(LimitExceeded) that says when the layout's time ran out. */
[[noreturn]] void throw_time_exhausted(const Layout &layout);

class Generator
{
public:
	/*
	 * floor_delta: the generator only issues time units after it.  A worker
	 * reused from a released worker table row starts after that row's last_time;
	 * a fresh worker passes no_floor.  reservation must outlive the
	 * generator; it is extended before any unit beyond it is issued.
	 */
	static constexpr int64_t no_floor = -1;

	Generator(const Layout &layout, int64_t worker_id, int64_t floor_delta, TimeReservation &reservation);

	/* Throws Error(LimitExceeded) when the time field is exhausted, and for
	 * the default generator Error(NotInPrerequisiteState) on a clock too far
	 * behind; whatever Clock::sleep_ms throws passes through.  On any throw
	 * the state is unchanged, and so when the reservation cannot be extended. */
	int64_t next(GeneratorKind kind, Clock &clock, const GeneratorLimits &limits)
	{
		return kind == GeneratorKind::Cached ? next_cached(clock, limits) : next_default(clock, limits);
	}

	int64_t next_cached(Clock &clock, const GeneratorLimits &limits);
	int64_t next_default(Clock &clock, const GeneratorLimits &limits);

	/*
	 * The first of n (1 to 2^s) consecutive IDs of one time unit, all issued
	 * to the caller: the next ID as next() makes it, and when its unit lacks
	 * room for n - 1 more, the rest of that unit is skipped (never issued)
	 * and the block starts the next unit as next() would, borrowing or
	 * waiting.  The sequence then moves past the block.  Throws
	 * Error(InvalidParameter) for n out of range; on any other throw the
	 * state may have moved up (IDs skipped, never issued twice).
	 */
	int64_t next_block(GeneratorKind kind, Clock &clock, const GeneratorLimits &limits, int64_t n);

	const Layout &layout() const { return layout_; }
	int64_t worker_id() const { return worker_; }
	/* L: the latest time unit issued (or the floor, before the first ID). */
	int64_t last_delta() const { return last_; }
	int64_t sequence() const { return sequence_; }
	/* The last unit the reservation covers (the floor, before it was first extended). */
	int64_t reserved_delta() const { return reserved_; }

private:
	/* Moves L to a later unit, once the reservation covers it. */
	void start_unit(int64_t delta)
	{
		if (__builtin_expect(delta > reserved_, 0))
			reserved_ = reservation_.extend(delta);
		last_ = delta;
		sequence_ = 0;
	}

	Layout layout_;
	TimeReservation &reservation_;
	int64_t worker_;
	int64_t last_;
	int64_t sequence_;
	int64_t reserved_;
};
static_assert(std::is_trivially_destructible_v<Generator>);

} // namespace uidgen
