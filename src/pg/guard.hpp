/*
 * guard.hpp
 *	  The C++ <-> PostgreSQL error boundary.
 *
 * PostgreSQL reports errors with longjmp; C++ with exceptions.  Neither may
 * cross into the other's frames:
 *
 *	cpp_entry()	wraps every SQL-callable function.  It catches every C++
 *				exception and raises the PostgreSQL error only after the
 *				catch block has ended, so no C++ frame is live when ereport
 *				longjmps.
 *	pg_call()	runs PostgreSQL code from C++ that may be unwound by
 *				exceptions: a longjmp out of the callee is caught, turned into
 *				PgError and thrown.  The callee must be plain C-like code with
 *				only trivially destructible locals.
 *
 * A PgError always reaches cpp_entry, which re-throws the original
 * PostgreSQL error, so the transaction aborts exactly as if the error had
 * never been caught.
 */
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
}

#include <exception>
#include <type_traits>
#include <utility>

namespace uidgen::pg {

/* A PostgreSQL error, copied out of the error stack, on its way to cpp_entry. */
class PgError : public std::exception
{
public:
	explicit PgError(ErrorData *edata) : edata_(edata) {}
	const char *what() const noexcept override;
	ErrorData *edata() const noexcept { return edata_; }

private:
	ErrorData *edata_;
};

/* Raises the error saved by the catch blocks of cpp_entry; never returns. */
[[noreturn]] void raise_saved_error();

/* Saves the exception being handled; called only from within a catch block. */
void save_current_exception() noexcept;

template <typename Impl>
inline Datum
cpp_entry(FunctionCallInfo fcinfo, Impl impl)
{
	try
	{
		return impl(fcinfo);
	}
	catch (...)
	{
		save_current_exception();
	}
	raise_saved_error();
}

namespace detail {
struct ErrorStackState
{
	sigjmp_buf *exception_stack;
	ErrorContextCallback *context_stack;
	MemoryContext memory_context;
};
static_assert(std::is_trivially_destructible_v<ErrorStackState>);
[[noreturn]] void throw_caught_pg_error(const ErrorStackState &saved);

inline void
restore(const ErrorStackState &saved)
{
	PG_exception_stack = saved.exception_stack;
	error_context_stack = saved.context_stack;
}
} // namespace detail

template <typename Fn>
inline auto
pg_call(Fn &&fn) -> decltype(fn())
{
	using Result = decltype(fn());
	static_assert(std::is_void_v<Result> || std::is_trivially_destructible_v<Result>,
				  "pg_call results cross a longjmp: keep them trivial");

	detail::ErrorStackState saved{PG_exception_stack, error_context_stack, CurrentMemoryContext};
	sigjmp_buf local_stack;

	if (sigsetjmp(local_stack, 0) == 0)
	{
		PG_exception_stack = &local_stack;
		try
		{
			if constexpr (std::is_void_v<Result>)
			{
				fn();
				detail::restore(saved);
				return;
			}
			else
			{
				Result result = fn();
				detail::restore(saved);
				return result;
			}
		}
		catch (...)
		{
			/* A C++ exception from inside fn: local_stack is about to die. */
			detail::restore(saved);
			throw;
		}
	}
	detail::throw_caught_pg_error(saved);
}

} // namespace uidgen::pg

/*
 * Declares an SQL-callable function whose body is the C++ function
 * <name>_impl(FunctionCallInfo).
 */
#define UIDGEN_FUNCTION(name)                                                                                   \
	static Datum name##_impl([[maybe_unused]] FunctionCallInfo fcinfo);                                       \
	extern "C" {                                                                                               \
	PG_FUNCTION_INFO_V1(name);                                                                                 \
	Datum name(PG_FUNCTION_ARGS)                                                                               \
	{                                                                                                          \
		return uidgen::pg::cpp_entry(fcinfo, name##_impl);                                                     \
	}                                                                                                          \
	}                                                                                                          \
	static Datum name##_impl([[maybe_unused]] FunctionCallInfo fcinfo)
