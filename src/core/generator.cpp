/*
 * generator.cpp
 *	  The cached and default generators.
 */
#include "core/generator.hpp"

#include "core/cpp_only.hpp"
#include "core/error.hpp"

#include <string>

namespace uidgen {

Generator::Generator(const Layout &layout, int64_t worker_id, int64_t floor_delta, TimeReservation &reservation)
	: layout_(layout), reservation_(reservation), worker_(worker_id), last_(floor_delta),
	  sequence_(layout.max_sequence()), reserved_(floor_delta)
{
	/*
	 * S starts at its maximum, so that a clock still at the floor makes the
	 * first ID move to the unit after it rather than reuse the floor's.
	 */
	if (worker_id < 0 || worker_id > layout.max_worker())
		throw Error(ErrorKind::OutOfRange, "worker id " + std::to_string(worker_id) + " is out of range",
					"The layout allows worker ids 0 to " + std::to_string(layout.max_worker()) + ".");
	/* Every unit up to the one after the last must have a start the clock can reach. */
	if (!layout.exhausted_at())
		throw Error(ErrorKind::InvalidParameter,
					"layout " + layout.describe() + " outlasts the time range of a bigint",
					"Its time field would run beyond 292 million years of milliseconds.",
					"Use fewer time bits.");
	if (floor_delta < no_floor || floor_delta > layout.max_delta())
		throw Error(ErrorKind::OutOfRange,
					"time floor " + std::to_string(floor_delta) + " is out of range for layout " +
						layout.describe());
}

void
throw_time_exhausted(const Layout &layout)
{
	auto end = layout.exhausted_at();
	throw Error(ErrorKind::LimitExceeded, "the UID time field is exhausted",
				"Layout " + layout.describe() + " ran out at " +
					(end ? format_utc(*end) : std::string("the end of int64 milliseconds")) + ".",
				"A layout cannot change once workers have registered; generate IDs with a new layout "
				"(more time bits or a later epoch) in a new database.");
}

int64_t
Generator::next_cached(Clock &clock, const GeneratorLimits &limits)
{
	int64_t now = layout_.delta_at(clock.now_ms());

	if (now > last_)
	{
		if (now > layout_.max_delta())
			throw_time_exhausted(layout_);
		start_unit(now);
	}
	else if (sequence_ < layout_.max_sequence())
		sequence_++;
	else
	{
		/* Borrow the next unit, but never more than max_borrow ahead of the clock. */
		int64_t next = last_ + 1;

		if (next > layout_.max_delta())
			throw_time_exhausted(layout_);
		wait_until_ms(clock, *layout_.start_of(next) - limits.max_borrow_ms);
		start_unit(next);
	}
	return layout_.compose_unchecked(last_, worker_, sequence_);
}

int64_t
Generator::next_default(Clock &clock, const GeneratorLimits &limits)
{
	for (;;)
	{
		int64_t now_ms = clock.now_ms();
		int64_t now = layout_.delta_at(now_ms);

		if (now > last_)
		{
			if (now > layout_.max_delta())
				throw_time_exhausted(layout_);
			start_unit(now);
			break;
		}
		if (now == last_)
		{
			if (sequence_ < layout_.max_sequence())
			{
				sequence_++;
				break;
			}
			/* This unit is used up: wait for the next, as UidGenerator does, but asleep. */
			if (last_ + 1 > layout_.max_delta())
				throw_time_exhausted(layout_);
			wait_until_ms(clock, *layout_.start_of(last_ + 1));
			continue;
		}

		/* The clock is behind the last unit issued. */
		int64_t last_start = *layout_.start_of(last_);
		if (last_start - now_ms > limits.max_backwards_wait_ms)
		{
			int64_t behind = last_ - now;
			const char *unit = layout_.unit() == TimeUnit::Millisecond ? "millisecond" : "second";

			throw Error(ErrorKind::NotInPrerequisiteState,
						"clock moved backwards by " + std::to_string(behind) + " " + unit +
							(behind == 1 ? "" : "s"),
						"The last ID was issued for " + format_utc(last_start) + ", and the clock reads " +
							format_utc(now_ms) + "; the generator waits for at most " +
							std::to_string(limits.max_backwards_wait_ms) + " ms.",
						"Wait for the clock to catch up, raise uidgen.max_backwards_wait, or set "
						"uidgen.generator to \"cached\", which borrows time instead of failing.");
		}
		wait_until_ms(clock, last_start);
	}
	return layout_.compose_unchecked(last_, worker_, sequence_);
}

int64_t
Generator::next_block(GeneratorKind kind, Clock &clock, const GeneratorLimits &limits, int64_t n)
{
	if (n < 1 || n > layout_.max_sequence() + 1)
		throw Error(ErrorKind::InvalidParameter, "block size " + std::to_string(n) + " is out of range",
					"A block is at most the " + std::to_string(layout_.max_sequence() + 1) +
						" IDs of one time unit under layout " + layout_.describe() + ".");

	int64_t first = next(kind, clock, limits);

	if (sequence_ > layout_.max_sequence() - (n - 1))
	{
		/* A new unit starts at sequence 0, which always has room for n. */
		sequence_ = layout_.max_sequence();
		first = next(kind, clock, limits);
	}
	sequence_ += n - 1;
	return first;
}

} // namespace uidgen
