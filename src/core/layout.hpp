/*
 * layout.hpp
 *	  The bit layout of a UID: UidGenerator's BitsAllocator, made strict.
 *
 * High bit to low bit: sign (always 0) | unused (always 0) | delta time |
 * worker id | sequence.  uid = (delta << (w + s)) | (worker << s) | seq.
 *
 * Unlike BitsAllocator.allocate(), compose() range-checks every field, so
 * an oversized field is an error and never bleeds into its neighbour.
 *
 * Instants are Unix time in milliseconds throughout the core.
 */
#pragma once


#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace uidgen {

enum class TimeUnit
{
	Millisecond,
	Second,
};

/* "millisecond" or "second"; also accepts plurals and "ms" / "s". */
TimeUnit parse_time_unit(std::string_view name);
const char *time_unit_name(TimeUnit unit);
int64_t time_unit_ms(TimeUnit unit);

/* The fields of one UID. */
struct UidFields
{
	int64_t delta;
	int64_t worker;
	int64_t sequence;

	bool operator==(const UidFields &other) const
	{
		return delta == other.delta && worker == other.worker && sequence == other.sequence;
	}
};

class Layout
{
public:
	static constexpr int usable_bits = 63; /* the sign bit stays 0 */

	/* 41-bit milliseconds since 2026-01-01 UTC, 13-bit worker, 9-bit sequence. */
	static constexpr int default_time_bits = 41;
	static constexpr int default_worker_bits = 13;
	static constexpr int default_seq_bits = 9;
	static constexpr int64_t default_epoch_ms = INT64_C(1767225600000);
	static constexpr TimeUnit default_unit = TimeUnit::Millisecond;

	/* Checks the shape (bit counts); throws Error(InvalidParameter). */
	Layout(int time_bits, int worker_bits, int seq_bits, int64_t epoch_ms, TimeUnit unit);
	static Layout default_layout();

	/*
	 * Checks what only makes sense for a layout about to be used for
	 * generation: its epoch is not in the future and its time field has not
	 * run out at now_ms.  Throws Error(InvalidParameter).
	 */
	void check_usable_at(int64_t now_ms) const;

	int time_bits() const { return time_bits_; }
	int worker_bits() const { return worker_bits_; }
	int seq_bits() const { return seq_bits_; }
	int unused_bits() const { return usable_bits - time_bits_ - worker_bits_ - seq_bits_; }
	int64_t epoch_ms() const { return epoch_ms_; }
	TimeUnit unit() const { return unit_; }
	int64_t unit_ms() const { return unit_ms_; }
	/* The time units a span of ms (>= 0) reaches into: rounded up, so that a margin is never cut short. */
	int64_t units_covering(int64_t ms) const { return (ms + unit_ms_ - 1) / unit_ms_; }
	/*
	 * The whole time units within a span of ms (>= 0), at least one: rounded
	 * down, for a margin or a raise where a unit less is the safe side (each
	 * use says why), never for a bound that must cover the span.
	 */
	int64_t units_within(int64_t ms) const { return ms < unit_ms_ ? 1 : ms / unit_ms_; }

	int64_t max_delta() const { return max_delta_; }
	int64_t max_worker() const { return max_worker_; }
	int64_t max_sequence() const { return max_sequence_; }
	/* The largest UID the layout can produce. */
	int64_t max_uid() const;

	/* Field composition; every field is range-checked (Error(OutOfRange)). */
	int64_t compose(int64_t delta, int64_t worker, int64_t sequence) const;

	/*
	 * compose() for callers that have already kept every field in range (the
	 * generators): the hot path.
	 */
	int64_t compose_unchecked(int64_t delta, int64_t worker, int64_t sequence) const
	{
		return (delta << timestamp_shift_) | (worker << worker_shift_) | sequence;
	}

	/* Throws Error(OutOfRange) for a negative bigint or one with unused bits set. */
	UidFields decompose(int64_t uid) const;

	/*
	 * The largest ID of time unit delta (0 <= delta <= max_delta()): what a
	 * reservation up to delta lets any worker reach.
	 */
	int64_t max_uid_of_unit(int64_t delta) const { return compose_unchecked(delta, max_worker_, max_sequence_); }

	/*
	 * The unit a generator must start after so that every ID it issues lies
	 * above uid, an ID of any layout (-1, no floor, for a negative one): the
	 * bound of another install, or of a session's IDs, holds across layouts
	 * because it compares IDs, not times.  May lie beyond max_delta().
	 */
	int64_t unit_floor_above(int64_t uid) const { return uid < 0 ? -1 : uid >> timestamp_shift_; }

	/* Time units since the epoch at now_ms, rounded down (negative before the epoch). */
	int64_t delta_at(int64_t unix_ms) const
	{
		int64_t since = unix_ms - epoch_ms_;

		/* The hot path: no division for millisecond layouts. */
		if (unit_ms_ == 1)
			return since;

		int64_t delta = since / unit_ms_;

		if (since % unit_ms_ < 0)
			delta -= 1;
		return delta;
	}

	/* The first millisecond of delta; nullopt when it does not fit in int64 milliseconds. */
	std::optional<int64_t> start_of(int64_t delta) const;

	/* The first instant the layout cannot represent; nullopt when beyond int64 milliseconds. */
	std::optional<int64_t> exhausted_at() const { return start_of(max_delta_ + 1); }

	/*
	 * The smallest and largest UID of the time unit containing unix_ms; for
	 * index range scans by time.  Throws Error(OutOfRange) outside the layout.
	 */
	int64_t min_uid_at(int64_t unix_ms) const;
	int64_t max_uid_at(int64_t unix_ms) const;

	bool operator==(const Layout &other) const;
	bool operator!=(const Layout &other) const { return !(*this == other); }

	/* e.g. "41/13/9 milliseconds since 2026-01-01 00:00:00 UTC" */
	std::string describe() const;

	/* describe() in a plain buffer, for code that PostgreSQL errors may longjmp over. */
	struct Text
	{
		char text[128];
	};
	Text describe_text() const;

private:
	int64_t delta_in_range(int64_t unix_ms) const;

	int time_bits_;
	int worker_bits_;
	int seq_bits_;
	int64_t epoch_ms_;
	TimeUnit unit_;
	int64_t unit_ms_;
	int timestamp_shift_;
	int worker_shift_;
	int64_t max_delta_;
	int64_t max_worker_;
	int64_t max_sequence_;
};

/* "2026-01-01 00:00:00.000 UTC"; for messages. */
std::string format_utc(int64_t unix_ms);

/*
 * Everything the code outside src/core keeps in its frames must be
 * trivially destructible: a PostgreSQL error longjmps over them
 * (INV-15; scripts/check-boundary.pl checks that each
 * type has its assertion).
 */
static_assert(std::is_trivially_destructible_v<Layout>);
static_assert(std::is_trivially_destructible_v<Layout::Text>);
static_assert(std::is_trivially_destructible_v<UidFields>);

} // namespace uidgen
