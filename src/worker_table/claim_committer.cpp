/*
 * claim_committer.cpp
 *	  The claim committer: a background worker that writes one claim row for
 *	  a backend and commits it, in a transaction of its own.
 */
#include "worker_table/claim_committer.hpp"

#include "pg/identity.hpp"
#include "worker_table/committer.hpp"
#include "worker_table/worker_table.hpp"

extern "C" {
#include "miscadmin.h"
}

#include <type_traits>

namespace uidgen::pg {

namespace {

/* What the backend asks for, passed in bgw_extra. */
struct ClaimRequest
{
	Oid database;
	Oid role;
	int32 pid;
	int64_t worker;
	TimestampTz backend_start;
	char application_name[NAMEDATALEN];
};
static_assert(std::is_trivially_destructible_v<ClaimRequest> && std::is_trivially_copyable_v<ClaimRequest>);
static_assert(sizeof(ClaimRequest) <= BGW_EXTRALEN, "a claim request fits in bgw_extra");

} // namespace

bool
commit_claim_apart(int64_t worker)
{
	ClaimHolder holder = this_backend();
	ClaimRequest request;

	memset(&request, 0, sizeof(request));
	request.database = MyDatabaseId;
	request.role = holder.role;
	request.pid = holder.pid;
	request.worker = worker;
	request.backend_start = holder.backend_start;
	strlcpy(request.application_name, holder.application_name, sizeof(request.application_name));

	return run_committer("uidgen_claim_committer_main", "uidgen claim committer", &request, sizeof(request)) &&
		   claim_is_committed(worker);
}

} // namespace uidgen::pg

using namespace uidgen::pg;

void
uidgen_claim_committer_main(Datum)
{
	committer_main<ClaimRequest>("uidgen claim committer", [](const ClaimRequest &request) {
		ClaimHolder holder{request.pid, request.backend_start, request.role, request.application_name};
		write_claim(request.worker, database_identity(), holder);
	});
}
