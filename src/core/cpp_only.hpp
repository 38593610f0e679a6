/*
 * cpp_only.hpp
 *	  Included last by every source file of src/core.
 *
 * The core is plain C++17 and must stay usable (and unit-testable) without
 * a PostgreSQL server: PostgreSQL's headers redefine printf, snprintf and
 * friends and bring in longjmp-based error handling, neither of which may
 * leak into code that relies on destructors.  Core headers are also read by
 * src/pg, after PostgreSQL's headers, so the check lives in the core's own
 * translation units: it fails if anything they include pulled in postgres.h.
 */
#pragma once

#ifdef POSTGRES_H
static_assert(false, "src/core must not see PostgreSQL headers; go through src/pg");
#endif
