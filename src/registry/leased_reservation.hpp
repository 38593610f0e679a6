/*
 * leased_reservation.hpp
 *	  The time reservation of a worker from a registry's block: the
 *	  database's reservation, capped by the block's lease.
 *
 * A generator extends its reservation before it issues a unit beyond it,
 * about once per reservation window, so checking the lease there costs the
 * hot path nothing: the cap is what the lease covers as it stands (the rest
 * of the lease on the monotonic clock, plus max_borrow), and the registry
 * leases the block again only above it (INV-16, INV-17).  A lease
 * that ran out, or was lost, marks the reservation, so that the backend
 * gives its worker up and claims another from a live block.
 */
#pragma once

#include "core/error.hpp"
#include "core/reservation.hpp"
#include "layout/reservation.hpp"
#include "registry/lease_table.hpp"

#include <algorithm>
#include <cstdio>
#include <type_traits>

namespace uidgen::pg {

/* The causes for which a backend looks again at its worker before its next ID: bits of one byte. */
namespace Recheck {
constexpr uint8_t table_invalidated = 1;	/* a relcache invalidation of the worker table */
constexpr uint8_t registry_changed = 2;		/* uidgen.registry was set, changed or unset */
constexpr uint8_t lease_ended = 4;			/* the worker's lease ran out or was lost */
constexpr uint8_t joined = 8;				/* claimed without a registry, and a database joined one */
} // namespace Recheck

/*
 * The error of a worker claimed without a registry, once the server joined
 * one: it issues nothing more, so that no ID of a number the registry may
 * grant elsewhere is issued after the setting.  Class 08, as the end of a
 * lease: the session claims again, from the registry.
 */
[[noreturn]] inline void
throw_joined(int64_t worker)
{
	char message[128];

	snprintf(message, sizeof(message), "uidgen worker %lld was claimed before this server joined a registry",
			 static_cast<long long>(worker));
	throw Error(ErrorKind::ConnectionFailure, message,
				"This server began to work for the registry named by uidgen.registry; workers of the "
				"database's own numbering issue nothing more, since the registry may grant their numbers "
				"elsewhere.",
				"The next command claims a worker from the registry.");
}

/* The error of a worker whose lease ended: class 08, as any failure of the registry. */
[[noreturn]] inline void
throw_lease_ended(int64_t worker)
{
	char message[128];

	snprintf(message, sizeof(message), "the registry's lease of uidgen worker %lld has run out",
			 static_cast<long long>(worker));
	throw Error(ErrorKind::ConnectionFailure, message,
				"The server's registry agent could not renew it in time (see uidgen.registry_status).",
				"The next uid_next() claims a worker from a block the server still holds.");
}

/*
 * The error of a worker whose clock asks for a time unit above its lease's
 * ceiling: the registry starts the block's next holder above the ceiling,
 * so nothing is issued beyond it, whatever this server's clock says.
 * Class 08: the session claims again, and fails so until the clock is back
 * within its leases.
 */
[[noreturn]] inline void
throw_past_ceiling(int64_t worker, const Layout &layout, int64_t delta, int64_t ceiling)
{
	char message[160];
	char detail[320];

	snprintf(message, sizeof(message), "the clock of this server is %lld ms past the ceiling of its uidgen lease",
			 static_cast<long long>((delta - ceiling) * layout.unit_ms()));
	snprintf(detail, sizeof(detail),
			 "Worker %lld may issue up to time unit %lld under the lease the registry granted (the registry's "
			 "clock at the grant plus the lease's length and max_borrow); this server's clock asks for unit %lld.",
			 static_cast<long long>(worker), static_cast<long long>(ceiling), static_cast<long long>(delta));
	throw Error(ErrorKind::ConnectionFailure, message, detail,
				"Correct this server's clock; uidgen.registry_status shows how far it is from the registry's.");
}

/*
 * Refuses a worker of lease, whose cap (lease_cap_delta(), nullopt once the
 * lease ended) does not cover delta: with the ceiling's error when the
 * clock asks for a unit above the ceiling, else the lease's end.
 */
inline void
refuse_unless_covered(int64_t worker, const Layout &layout, const LeaseId &lease, int64_t delta,
					  std::optional<int64_t> cap)
{
	if (cap && *cap >= delta)
		return;
	std::optional<int64_t> ceiling = cap ? lease_ceiling_delta(lease) : std::nullopt;
	if (ceiling && *ceiling < delta)
		throw_past_ceiling(worker, layout, delta, *ceiling);
	throw_lease_ended(worker);
}

class LeasedReservation final : public TimeReservation
{
public:
	/*
	 * leased: the worker came from a registry's block; otherwise this is the
	 * database's reservation.  A lease that ends sets Recheck::lease_ended
	 * in recheck, so that the hot path, which looks at it anyway, needs no
	 * test of its own.
	 */
	LeasedReservation(const Layout &layout, int64_t worker, bool leased, const LeaseId &lease, uint64_t joins_seen,
					  uint8_t &recheck)
		: database_(layout), layout_(layout), worker_(worker), leased_(leased), lease_(lease), joins_seen_(joins_seen),
		  recheck_(recheck)
	{
	}

	int64_t extend(int64_t delta) override
	{
		if (!leased_)
		{
			/*
			 * Before and after the reservation is read: a join that counts
			 * after the second look reads a reservation at least as high as
			 * the one extended to here (lease_table.hpp, joins_so_far()).
			 */
			refuse_if_joined();
			int64_t covered = database_.extend(delta);
			refuse_if_joined();
			return covered;
		}
		/* Not raising the database's reservation for units the lease does not cover. */
		refuse_unless_covered(delta, lease_cap_delta(lease_, layout_));
		int64_t covered = database_.extend(delta);
		/*
		 * The cap again, after the raise: uid_registry_move() drops the
		 * blocks of the registry it leaves, then reads the reservation its
		 * floor starts above.  A cap read here is from before the drop, so
		 * the raise is below the move's floor; after it, there is no cap.
		 */
		std::optional<int64_t> cap = lease_cap_delta(lease_, layout_);
		refuse_unless_covered(delta, cap);
		return std::min(covered, *cap);
	}

	bool leased() const { return leased_; }
	const LeaseId &lease() const { return lease_; }
	uint64_t joins_seen() const { return joins_seen_; }
	bool lost() const { return lost_; }

	/*
	 * Claimed without a registry, and the server joined one since: looked
	 * at before every ID (one atomic load), so that the worker stops when
	 * the setting reaches the agent, not at its next raise (INV-19).
	 */
	bool joined() const { return !leased_ && joined_since(joins_seen_); }

	/* Raises the join's error when joined(), as a raise would. */
	void refuse_if_joined_since_claim()
	{
		if (!leased_)
			refuse_if_joined();
	}

private:
	void refuse_unless_covered(int64_t delta, std::optional<int64_t> cap)
	{
		if (cap && *cap >= delta)
			return;
		lost_ = true;
		recheck_ |= Recheck::lease_ended;
		uidgen::pg::refuse_unless_covered(worker_, layout_, lease_, delta, cap);
	}

	void refuse_if_joined()
	{
		if (joins_so_far() == joins_seen_)
			return;
		lost_ = true;
		recheck_ |= Recheck::joined;
		throw_joined(worker_);
	}

	DatabaseReservation database_;
	Layout layout_;
	int64_t worker_;
	bool leased_;
	LeaseId lease_;				/* leased: the lease it came from */
	uint64_t joins_seen_;
	uint8_t &recheck_;
	bool lost_ = false;
};
static_assert(std::is_trivially_destructible_v<LeasedReservation>);

} // namespace uidgen::pg
