/*
 * join_committer.cpp
 *	  The join committer: a background worker that joins a database to its
 *	  registry for a session, in a transaction of its own.
 */
#include "registry/membership/join_committer.hpp"

#include "layout/catalog.hpp"
#include "pg/identity.hpp"
#include "pg/uuid_codec.hpp"
#include "registry/lease_table.hpp"
#include "registry/membership/leased_claim.hpp"
#include "registry/registry_pin.hpp"
#include "worker_table/committer.hpp"

extern "C" {
#include "common/hashfn.h"
#include "miscadmin.h"
}

#include <cstring>
#include <type_traits>

namespace uidgen::pg {

namespace {

/* What the session asks for, passed in bgw_extra. */
struct JoinRequest
{
	Oid database;
	pg_uuid_t registry_id;
	uint64 registry_hash;	/* of the registry's text: the background worker must see the same */
	int64_t now_delta;
	int64_t borrow_units;
	bool adopt_layout;
};
static_assert(std::is_trivially_destructible_v<JoinRequest> && std::is_trivially_copyable_v<JoinRequest>);
static_assert(sizeof(JoinRequest) <= BGW_EXTRALEN, "a join request fits in bgw_extra");

uint64
registry_hash(const char *registry)
{
	return hash_bytes_extended(reinterpret_cast<const unsigned char *>(registry), static_cast<int>(strlen(registry)),
							   0);
}

} // namespace

bool
commit_join_apart(const char *registry, const pg_uuid_t &registry_id, int64_t now_delta, int64_t borrow_units,
				  bool adopt_layout)
{
	JoinRequest request;

	memset(&request, 0, sizeof(request));
	request.database = MyDatabaseId;
	request.registry_id = registry_id;
	request.registry_hash = registry_hash(registry);
	request.now_delta = now_delta;
	request.borrow_units = borrow_units;
	request.adopt_layout = adopt_layout;

	return run_committer("uidgen_join_committer_main", "uidgen join committer", &request, sizeof(request));
}

} // namespace uidgen::pg

using namespace uidgen::pg;

void
uidgen_join_committer_main(Datum)
{
	committer_main<JoinRequest>("uidgen join committer", [](const JoinRequest &request) {
		char registry[registry_text_size];
		describe_current_registry(registry);
		/* A reload changed uidgen.registry since the session looked: it joins on its own. */
		if (registry_hash(registry) != request.registry_hash)
			return;

		char pinned[uuid_text_size];
		uuid_text(request.registry_id, pinned);
		/* First the layout, which the join's floor is in (an error here: the session says it). */
		if (request.adopt_layout)
			(void) adopt_layout_if_unclaimed();
		if (!joined_floor(registry, pinned))
			(void) write_join(registry, pinned, database_identity(), worker_table_relid(), request.now_delta,
							  request.borrow_units);
	});
}
