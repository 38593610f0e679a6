/*
 * layout.cpp
 *	  Validation, composition and decomposition of UID layouts.
 */
#include "core/layout.hpp"

#include "core/cpp_only.hpp"
#include "core/error.hpp"

#include <cstdio>
#include <cstring>
#include <ctime>

namespace uidgen {

namespace {

int64_t
field_max(int bits)
{
	return (INT64_C(1) << bits) - 1;
}

std::string
bits_phrase(int bits)
{
	return std::to_string(bits) + (bits == 1 ? " bit" : " bits");
}

void
check_field_bits(const char *name, int bits)
{
	if (bits < 1)
		throw Error(ErrorKind::InvalidParameter,
					std::string(name) + " must be at least 1, not " + std::to_string(bits),
					"Every field of a UID needs at least one bit.");
}

} // namespace

TimeUnit
parse_time_unit(std::string_view name)
{
	if (name == "millisecond" || name == "milliseconds" || name == "ms")
		return TimeUnit::Millisecond;
	if (name == "second" || name == "seconds" || name == "s")
		return TimeUnit::Second;
	throw Error(ErrorKind::InvalidParameter, "unrecognized time unit \"" + std::string(name) + "\"", {},
				"Valid units are \"millisecond\" and \"second\".");
}

const char *
time_unit_name(TimeUnit unit)
{
	return unit == TimeUnit::Millisecond ? "millisecond" : "second";
}

int64_t
time_unit_ms(TimeUnit unit)
{
	return unit == TimeUnit::Millisecond ? 1 : 1000;
}

Layout::Layout(int time_bits, int worker_bits, int seq_bits, int64_t epoch_ms, TimeUnit unit)
	: time_bits_(time_bits), worker_bits_(worker_bits), seq_bits_(seq_bits), epoch_ms_(epoch_ms),
	  unit_(unit), unit_ms_(time_unit_ms(unit))
{
	check_field_bits("time_bits", time_bits);
	check_field_bits("worker_bits", worker_bits);
	check_field_bits("seq_bits", seq_bits);

	/* Each is at least 1, so a sum over 63 cannot hide an int overflow here. */
	if (time_bits > usable_bits || worker_bits > usable_bits || seq_bits > usable_bits ||
		time_bits + worker_bits + seq_bits > usable_bits)
		throw Error(ErrorKind::InvalidParameter,
					"layout " + std::to_string(time_bits) + "/" + std::to_string(worker_bits) + "/" +
						std::to_string(seq_bits) + " does not fit in a bigint",
					"time_bits + worker_bits + seq_bits is " +
						std::to_string(int64_t{time_bits} + worker_bits + seq_bits) +
						", but a bigint has 63 bits besides its sign bit.",
					"Reduce one of the fields.");

	timestamp_shift_ = worker_bits + seq_bits;
	worker_shift_ = seq_bits;
	max_delta_ = field_max(time_bits);
	max_worker_ = field_max(worker_bits);
	max_sequence_ = field_max(seq_bits);
}

Layout
Layout::default_layout()
{
	return Layout(default_time_bits, default_worker_bits, default_seq_bits, default_epoch_ms, default_unit);
}

void
Layout::check_usable_at(int64_t now_ms) const
{
	if (epoch_ms_ > now_ms)
		throw Error(ErrorKind::InvalidParameter, "epoch " + format_utc(epoch_ms_) + " is in the future",
					{}, "Choose an epoch at or before the current time.");

	if (!exhausted_at())
		throw Error(ErrorKind::InvalidParameter, "layout " + describe() + " outlasts the time range of a bigint",
					"Its time field would run beyond 292 million years of milliseconds.",
					"Use fewer time bits.");

	int64_t now_delta = delta_at(now_ms);
	if (now_delta > max_delta_)
	{
		auto end = exhausted_at();
		throw Error(ErrorKind::InvalidParameter,
					"layout " + describe() + " is already exhausted",
					"Its " + bits_phrase(time_bits_) + " of time ran out at " +
						(end ? format_utc(*end) : std::string("an instant beyond int64 milliseconds")) + ".",
					"Use more time bits or a later epoch.");
	}
}

int64_t
Layout::max_uid() const
{
	return compose_unchecked(max_delta_, max_worker_, max_sequence_);
}

int64_t
Layout::compose(int64_t delta, int64_t worker, int64_t sequence) const
{
	auto check = [](const char *name, int64_t value, int64_t max) {
		if (value < 0 || value > max)
			throw Error(ErrorKind::OutOfRange,
						std::string(name) + " " + std::to_string(value) + " is out of range",
						"The layout allows 0 to " + std::to_string(max) + ".");
	};
	check("time delta", delta, max_delta_);
	check("worker id", worker, max_worker_);
	check("sequence", sequence, max_sequence_);
	return compose_unchecked(delta, worker, sequence);
}

UidFields
Layout::decompose(int64_t uid) const
{
	if (uid < 0)
		throw Error(ErrorKind::OutOfRange, std::to_string(uid) + " is not a UID",
					"A UID is never negative.");

	int used_bits = time_bits_ + worker_bits_ + seq_bits_;
	if (used_bits < usable_bits && (uid >> used_bits) != 0)
		throw Error(ErrorKind::OutOfRange, std::to_string(uid) + " is not a UID of layout " + describe(),
					"It has bits set above the layout's " + std::to_string(used_bits) + " bits.",
					"Decode it with the layout that made it: uid_parse(uid, time_bits, worker_bits, "
					"seq_bits, epoch, unit).");

	return UidFields{uid >> timestamp_shift_, (uid >> worker_shift_) & max_worker_, uid & max_sequence_};
}

std::optional<int64_t>
Layout::start_of(int64_t delta) const
{
	int64_t offset;
	int64_t start;

	if (__builtin_mul_overflow(delta, unit_ms_, &offset) || __builtin_add_overflow(epoch_ms_, offset, &start))
		return std::nullopt;
	return start;
}

int64_t
Layout::delta_in_range(int64_t unix_ms) const
{
	int64_t delta = delta_at(unix_ms);

	if (delta < 0)
		throw Error(ErrorKind::TimeOutOfRange, "time " + format_utc(unix_ms) + " is before the layout's epoch",
					"The epoch is " + format_utc(epoch_ms_) + ".");
	if (delta > max_delta_)
		throw Error(ErrorKind::TimeOutOfRange,
					"time " + format_utc(unix_ms) + " is beyond the end of the layout",
					"The layout's time field runs out at " + format_utc(*exhausted_at()) + ".");
	return delta;
}

int64_t
Layout::min_uid_at(int64_t unix_ms) const
{
	return compose_unchecked(delta_in_range(unix_ms), 0, 0);
}

int64_t
Layout::max_uid_at(int64_t unix_ms) const
{
	return compose_unchecked(delta_in_range(unix_ms), max_worker_, max_sequence_);
}

bool
Layout::operator==(const Layout &other) const
{
	return time_bits_ == other.time_bits_ && worker_bits_ == other.worker_bits_ &&
		   seq_bits_ == other.seq_bits_ && epoch_ms_ == other.epoch_ms_ && unit_ == other.unit_;
}

std::string
Layout::describe() const
{
	return std::to_string(time_bits_) + "/" + std::to_string(worker_bits_) + "/" + std::to_string(seq_bits_) +
		   " " + time_unit_name(unit_) + "s since " + format_utc(epoch_ms_);
}

Layout::Text
Layout::describe_text() const
{
	Text out{};
	std::string text = describe();

	std::strncpy(out.text, text.c_str(), sizeof(out.text) - 1);
	return out;
}

std::string
format_utc(int64_t unix_ms)
{
	int64_t seconds = unix_ms / 1000;
	int64_t millis = unix_ms % 1000;

	if (millis < 0)
	{
		millis += 1000;
		seconds -= 1;
	}

	std::time_t t = static_cast<std::time_t>(seconds);
	std::tm tm{};
	if (gmtime_r(&t, &tm) == nullptr)
		return std::to_string(unix_ms) + " ms since 1970-01-01 UTC";

	char buf[64];
	if (millis != 0)
		std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%03d UTC", tm.tm_year + 1900,
					  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
	else
		std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d UTC", tm.tm_year + 1900, tm.tm_mon + 1,
					  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	return buf;
}

} // namespace uidgen
