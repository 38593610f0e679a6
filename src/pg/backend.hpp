/*
 * backend.hpp
 *	  This backend's generator: its worker, its claim and its hot path.
 */
#pragma once

#include "core/generator.hpp"

extern "C" {
#include "postgres.h"

#include "access/xact.h"
}

#include <cstdint>

namespace uidgen::pg {

namespace detail {
/* True when uid_next() may skip every check but the read-only one. */
extern bool ready_to_issue;
extern Generator *generator;
extern int64_t last_uid;
extern bool have_last_uid;
void prepare_to_issue();
} // namespace detail

/*
 * The next ID of this backend.  After the first call this reads the clock
 * and does arithmetic: no SPI, lock, allocation or write (DESIGN invariant 4).
 */
int64_t next_uid();

/* The last ID this backend issued; false before the first. */
bool last_issued_uid(int64_t *uid);

/* This backend's worker id; false before its first ID. */
bool current_worker(int64_t *worker);

void register_backend_callbacks();

} // namespace uidgen::pg
