/*
 * reservation.cpp
 *	  Raising uidgen.reserved_until ahead of the time units a backend issues.
 */
#include "pg/reservation.hpp"

#include "pg/catalog.hpp"
#include "pg/guard.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lock.h"
}

namespace uidgen::pg {

namespace {

/*
 * How far ahead of what it needs a backend reserves.  Longer means fewer
 * WAL flushes (one per window for a whole busy database); shorter means a
 * worker leaked by a crash is reusable sooner.  Ten seconds is the default
 * uidgen.max_borrow: a leaked worker waits about as long as it did in 1.0.
 */
constexpr int64_t window_ms = 10000;

/* The fourth key of the advisory lock that serialises raises; SQL's advisory functions use 1 and 2. */
constexpr uint16 raise_lock_key_kind = 4;

int64_t
read_mark()
{
	spi_run("SELECT last_value FROM uidgen.reserved_until", 0, nullptr, nullptr, Visibility::Latest,
			SPI_OK_SELECT);
	return spi_int64(0, 0);
}

/*
 * Raises the mark to cover delta, under a lock that makes the read and the
 * raise one step for every backend of the database; returns the last unit
 * covered.  The lock is a session lock held for this call only: released
 * here, also on error.
 */
int64_t
raise_mark(Oid sequence_relid, int64_t delta, int64_t window_units)
{
	LOCKTAG tag;
	volatile int64_t covered = 0;	/* assigned inside PG_TRY */

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, sequence_relid, 0, raise_lock_key_kind);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	PG_TRY();
	{
		covered = with_spi(Rights::Owner, [delta, window_units] {
			int64_t mark = read_mark();

			if (mark >= delta)
				return mark;	/* raised by another backend: adopt it */

			Oid types[1] = {INT8OID};
			Datum values[1] = {Int64GetDatum(delta + window_units)};

			spi_run("SELECT pg_catalog.setval('uidgen.reserved_until', $1)", 1, types, values,
					Visibility::Transaction, SPI_OK_SELECT);
			/* Durable before any ID under it is issued, whether or not this transaction commits. */
			XLogFlush(XactLastRecEnd);
			return delta + window_units;
		});
	}
	PG_FINALLY();
	{
		LockRelease(&tag, ExclusiveLock, true);
	}
	PG_END_TRY();
	return covered;
}

} // namespace

DatabaseReservation::DatabaseReservation(const Layout &layout)
	: window_units_((window_ms + layout.unit_ms() - 1) / layout.unit_ms())
{
}

int64_t
DatabaseReservation::extend(int64_t delta)
{
	int64_t window_units = window_units_;

	return pg_call([delta, window_units]() -> int64_t {
		Oid sequence_relid = reserved_until_relid();

		/*
		 * The extension's SQL is older than this library: issue as 1.0 did,
		 * and look again a window later (ALTER EXTENSION UPDATE may have run).
		 */
		if (!OidIsValid(sequence_relid))
			return delta + window_units;
		return raise_mark(sequence_relid, delta, window_units);
	});
}

std::optional<int64_t>
reserved_until()
{
	if (!OidIsValid(reserved_until_relid()))
		return std::nullopt;
	return read_mark();
}

} // namespace uidgen::pg
