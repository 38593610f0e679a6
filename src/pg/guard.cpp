/*
 * guard.cpp
 *	  The C++ <-> PostgreSQL error boundary: saving and raising errors.
 */
#include "pg/guard.hpp"

#include "core/error.hpp"

extern "C" {
#include "mb/pg_wchar.h"
#include "utils/elog.h"
#include "utils/memutils.h"
}

#include <cstring>
#include <new>
#include <type_traits>

namespace uidgen::pg {

namespace {

/*
 * What the catch blocks of cpp_entry saw.  Plain arrays: nothing here may
 * need a destructor, because the error is raised with a longjmp.
 */
struct SavedError
{
	ErrorData *pg_error;
	int sqlerrcode;
	char message[1024];
	char detail[1024];
	char hint[1024];
};
static_assert(std::is_trivially_destructible_v<SavedError>);

SavedError saved;

void
copy_text(char (&buffer)[1024], const char *text)
{
	std::strncpy(buffer, text, sizeof(buffer) - 1);
	buffer[sizeof(buffer) - 1] = '\0';
}

int
sqlstate_of(ErrorKind kind)
{
	switch (kind)
	{
		case ErrorKind::InvalidParameter:
			return ERRCODE_INVALID_PARAMETER_VALUE;
		case ErrorKind::OutOfRange:
			return ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
		case ErrorKind::TimeOutOfRange:
			return ERRCODE_DATETIME_VALUE_OUT_OF_RANGE;
		case ErrorKind::LimitExceeded:
			return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
		case ErrorKind::NotInPrerequisiteState:
			return ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
		case ErrorKind::ConnectionFailure:
			return ERRCODE_CONNECTION_FAILURE;
		case ErrorKind::InvalidText:
			return ERRCODE_INVALID_TEXT_REPRESENTATION;
	}
	return ERRCODE_INTERNAL_ERROR;
}

} // namespace

const char *
PgError::what() const noexcept
{
	return edata_ && edata_->message ? edata_->message : "PostgreSQL error";
}

void
save_current_exception() noexcept
{
	saved.pg_error = nullptr;
	saved.sqlerrcode = ERRCODE_INTERNAL_ERROR;
	saved.message[0] = saved.detail[0] = saved.hint[0] = '\0';

	try
	{
		throw;
	}
	catch (const PgError &e)
	{
		saved.pg_error = e.edata();
	}
	catch (const Error &e)
	{
		saved.sqlerrcode = sqlstate_of(e.kind());
		copy_text(saved.message, e.what());
		copy_text(saved.detail, e.detail().c_str());
		copy_text(saved.hint, e.hint().c_str());
	}
	catch (const std::bad_alloc &)
	{
		saved.sqlerrcode = ERRCODE_OUT_OF_MEMORY;
		copy_text(saved.message, "out of memory");
	}
	catch (const std::exception &e)
	{
		copy_text(saved.message, e.what());
	}
	catch (...)
	{
		copy_text(saved.message, "unknown C++ exception");
	}
}

void
raise_saved_error()
{
	if (saved.pg_error != nullptr)
	{
		ErrorData *edata = saved.pg_error;

		saved.pg_error = nullptr;
		ReThrowError(edata);
	}
	/* Truncation may have cut a multibyte character of echoed input. */
	for (char *text : {saved.message, saved.detail, saved.hint})
		text[pg_mbcliplen(text, strlen(text), sizeof(saved.message) - 1)] = '\0';
	ereport(ERROR,
			(errcode(saved.sqlerrcode),
			 errmsg_internal("%s", saved.message),
			 saved.detail[0] ? errdetail_internal("%s", saved.detail) : 0,
			 saved.hint[0] ? errhint("%s", saved.hint) : 0));
	pg_unreachable();
}

namespace detail {

void
throw_caught_pg_error(const ErrorStackState &state)
{
	PG_exception_stack = state.exception_stack;
	error_context_stack = state.context_stack;
	MemoryContextSwitchTo(state.memory_context);

	ErrorData *edata = CopyErrorData();
	FlushErrorState();
	throw PgError(edata);
}

} // namespace detail
} // namespace uidgen::pg
