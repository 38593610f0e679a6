/*
 * backend_generator.hpp
 *	  This backend's generator: its worker, its claim and its hot path.
 */
#pragma once

extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "utils/resowner.h"
}

#include "core/layout.hpp"

#include <cstdint>
#include <optional>

namespace uidgen::pg {

/*
 * The next ID of this backend.  After the first call this reads the clock
 * and does arithmetic: no SPI, lock, allocation or write, except that once
 * per reservation window it raises the time reservation (INV-4, INV-9),
 * and that the first ID of a
 * transaction takes its horizon mark (horizon_lock.hpp).
 */
int64_t next_uid();

/*
 * The first of n consecutive IDs of one time unit and one worker, all issued
 * to the caller (uid_next_block()); n is 1 to 2^s, which the caller checks.
 */
int64_t next_uid_block(int64_t n);

/* The last ID this backend issued; nullopt before the first. */
std::optional<int64_t> last_issued_uid();

/* This backend's worker id; nullopt before its first ID. */
std::optional<int64_t> current_worker();

/*
 * What the backend's generator does at PostgreSQL's events; called by the
 * one set of callbacks (module.cpp).
 */
void backend_at_xact_event(XactEvent event);
void backend_at_subxact_event(SubXactEvent event, SubTransactionId subid, SubTransactionId parent_subid);
void backend_at_resource_release(ResourceReleasePhase phase, bool is_top_level);
void backend_relcache_invalidated(Oid relid);

/* uidgen.registry's assign hook: the issuing worker may no longer be of the kind it asks for. */
void registry_setting_changed();

} // namespace uidgen::pg
