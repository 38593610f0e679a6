/*
 * spi.hpp
 *	  Small helpers over SPI for uidgen's catalog tables.
 *
 * Like all of src/pg they are called from frames without live C++
 * destructors, so a PostgreSQL error may longjmp straight through them.
 */
#pragma once

extern "C" {
#include "postgres.h"

#include "executor/spi.h"
}

#include <cstdint>
#include <type_traits>

namespace uidgen::pg {

enum class Visibility
{
	Transaction,	/* the calling transaction's snapshot */
	Latest,			/* what has committed by now, whatever the isolation level */
	ReadOnly,		/* the transaction's snapshot, read-only: safe in parallel mode */
};

/*
 * Runs sql with parameters $1..$n; returns SPI_processed.  Errors unless the
 * result code is expected.  Latest visibility is for the worker table,
 * which must show other backends' committed registrations even inside a
 * REPEATABLE READ transaction.
 */
uint64 spi_run(const char *sql, int nargs, const Oid *types, const Datum *values, Visibility visibility,
			   int expected);

/* The same with SPI's nulls: ' ' for a value, 'n' for NULL. */
uint64 spi_run_nulls(const char *sql, int nargs, const Oid *types, const Datum *values, const char *nulls,
					 Visibility visibility, int expected);

/* Values of the current SPI result; row and column count from 0. */
bool spi_is_null(uint64 row, int col);
int64_t spi_int64(uint64 row, int col);
int32 spi_int32(uint64 row, int col);
bool spi_bool(uint64 row, int col);
TimestampTz spi_timestamptz(uint64 row, int col);
TransactionId spi_xid(uint64 row, int col);
/* palloc'd in the caller's memory context (before SPI_finish). */
char *spi_text(uint64 row, int col);

/*
 * Runs the enclosed work as the extension's owner with search_path pinned
 * to pg_catalog, pg_temp, so that neither the caller's rights nor objects in
 * the caller's schemas take part in it.  Transaction abort restores both.
 */
struct OwnerContext
{
	Oid saved_user;
	int saved_security_context;
	int guc_nest_level;
};
static_assert(std::is_trivially_destructible_v<OwnerContext>);
void begin_as_owner(OwnerContext *context);
void end_as_owner(const OwnerContext *context);

/* Pins search_path only, keeping the caller's rights. */
int begin_pinned_search_path();
void end_pinned_search_path(int guc_nest_level);

/* Whose rights with_spi() runs its work with. */
enum class Rights
{
	Caller,
	Owner, /* the extension's owner (begin_as_owner) */
};

/*
 * Runs work() inside an SPI connection with the given rights, search_path
 * pinned either way; returns what work returns, copied out before
 * SPI_finish (so it must not point into SPI memory).  An error longjmps
 * through work and this frame, and the transaction's abort cleans up: both
 * must hold only trivially destructible locals.
 */
template <typename Work>
inline auto
with_spi(Rights rights, Work work) -> decltype(work())
{
	OwnerContext owner;
	int nest_level = 0;

	SPI_connect();
	if (rights == Rights::Owner)
		begin_as_owner(&owner);
	else
		nest_level = begin_pinned_search_path();
	auto finish = [&] {
		if (rights == Rights::Owner)
			end_as_owner(&owner);
		else
			end_pinned_search_path(nest_level);
		SPI_finish();
	};
	static_assert(std::is_void_v<decltype(work())> || std::is_trivially_destructible_v<decltype(work())>,
				  "with_spi results cross a longjmp: keep them trivial");
	if constexpr (std::is_void_v<decltype(work())>)
	{
		work();
		finish();
	}
	else
	{
		auto result = work();
		finish();
		return result;
	}
}

} // namespace uidgen::pg
