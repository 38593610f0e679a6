/*
 * lease_policy.cpp
 *	  A member's decisions about its leases (lease_policy.hpp).
 */
#include "core/lease_policy.hpp"

#include "core/cpp_only.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace uidgen {

Layout
RegistryRules::layout() const
{
	return Layout(time_bits, worker_bits, seq_bits, epoch_ms, unit_ms == 1000 ? TimeUnit::Second : TimeUnit::Millisecond);
}

std::optional<RegistryRules>
checked_rules(const RulesReply &r)
{
	auto bits_ok = [](int64_t bits) { return bits >= 1 && bits <= Layout::usable_bits; };

	if (!bits_ok(r.time_bits) || !bits_ok(r.worker_bits) || !bits_ok(r.seq_bits) ||
		r.time_bits + r.worker_bits + r.seq_bits > Layout::usable_bits || (r.unit_ms != 1 && r.unit_ms != 1000) ||
		r.max_borrow_ms < 0 || r.lease_ttl_ms <= 0 || r.block_size < 1 ||
		r.block_size > std::numeric_limits<int32_t>::max() || r.max_clock_skew_ms < 0 || r.clock_ms <= 0 ||
		r.clock_ms > std::numeric_limits<int64_t>::max() / 2)
		return std::nullopt;

	RegistryRules rules{};
	rules.time_bits = static_cast<int>(r.time_bits);
	rules.worker_bits = static_cast<int>(r.worker_bits);
	rules.seq_bits = static_cast<int>(r.seq_bits);
	rules.epoch_ms = r.epoch_ms;
	rules.unit_ms = static_cast<int>(r.unit_ms);
	rules.max_borrow_ms = r.max_borrow_ms;
	rules.lease_ttl_ms = r.lease_ttl_ms;
	rules.block_size = static_cast<int>(r.block_size);
	rules.max_clock_skew_ms = r.max_clock_skew_ms;
	return rules;
}

ClockOffset
clock_offset(int64_t sent_ms, int64_t received_ms, int64_t registry_clock_ms)
{
	return ClockOffset{registry_clock_ms - (sent_ms + received_ms) / 2, (received_ms - sent_ms + 1) / 2};
}

bool
ClockOffset::beyond(int64_t max_clock_skew_ms) const
{
	return std::abs(offset_ms) - uncertainty_ms > max_clock_skew_ms;
}

bool
renewal_due(int64_t left_ms, int64_t lease_ms)
{
	return left_ms < lease_ms * 5 / 6;
}

bool
counts_as_spare(int64_t left_ms, int64_t lease_ms)
{
	return left_ms > lease_ms / 3;
}

bool
block_wanted(int blocks, int max_blocks, int waiting, int64_t spare, int block_size)
{
	return blocks < max_blocks && ((waiting > 0 && spare == 0) || spare < (int64_t{block_size} + 1) / 2);
}

bool
give_back_wanted(int blocks, int max_blocks, int waiting, int64_t spare_without, int block_size)
{
	return blocks > 1 && !block_wanted(blocks - 1, max_blocks, waiting, spare_without, block_size);
}

std::optional<int64_t>
lease_cap(const Layout &layout, int64_t ceiling_delta, int64_t left_ms, int64_t now_ms, int64_t max_borrow_ms)
{
	if (left_ms <= 0)
		return std::nullopt;
	return std::min(ceiling_delta, layout.delta_at(now_ms + left_ms + max_borrow_ms));
}

} // namespace uidgen
