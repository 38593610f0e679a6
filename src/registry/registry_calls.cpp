/*
 * registry_calls.cpp
 *	  The member's side of the registry's calls (sql/registry_calls.sql):
 *	  what the agent sends, and how it checks and keeps what comes back.
 *
 * Every reply is checked before use (registry_connection.hpp for its shape
 * and integers; here for ranges): a reply out of range is a protocol
 * violation (08P01), recorded like any other failure.  Nothing here
 * throws, and nothing allocates under the lease table's lock.
 */
#include "registry/registry_calls.hpp"

#include "core/lease_policy.hpp"
#include "core/protocol_version.hpp"
#include "pg/identity.hpp"
#include "pg/pg_clock.hpp"
#include "pg/settings.hpp"
#include "pg/time_convert.hpp"
#include "pg/uuid_codec.hpp"
#include "registry/agent_state.hpp"
#include "registry/protocol.hpp"
#include "registry/registry_connection.hpp"

extern "C" {
#include "access/xlog.h"
#include "lib/stringinfo.h"
#include "postmaster/postmaster.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

#include <algorithm>
#include <optional>

namespace uidgen::pg {

namespace {

/*
 * Notes the registry's quarantine from column col of row: its end in
 * microseconds since the Unix epoch, NULL for none (registry_status shows
 * it).  Otherwise records the reply as a protocol violation, clears it and
 * returns false.
 */
bool
note_quarantine(PGresult *result, const char *what, int row, int col)
{
	LeaseTable *state = lease_table();
	int64_t unix_us;
	bool none;

	if (!reply_int64(result, what, row, col, &unix_us, &none))
		return false;
	TimestampTz until = unix_us - unix_ms_at_pg_epoch * 1000;
	if (!none && (unix_us < PG_INT64_MIN / 2 || !IS_VALID_TIMESTAMP(until)))
	{
		char problem[128];

		snprintf(problem, sizeof(problem), "column \"%s\" of the reply is out of range: %lld", PQfname(result, col),
				 static_cast<long long>(unix_us));
		record_bad_reply(result, what, problem);
		return false;
	}
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	state->quarantined = !none;
	state->quarantine_until = none ? 0 : until;
	LWLockRelease(&state->lock);
	return true;
}

/*
 * Notes the registry's counter, replied to a call that sent what this
 * server saw at that identity (the one check_identity() read this round);
 * false, with the failure recorded, when the registry went back: it was
 * set back to an earlier state of itself, which it has noticed too and
 * quarantines for (registry_rules()).  The round ends there: the next one
 * sends a counter the registry has moved above, and re-asserts the leases
 * in the quarantine.
 */
bool
note_counter(const pg_uuid_t &identity, bool had_sent, int64_t sent, const SignedCounter &counter)
{
	LeaseTable *state = lease_table();

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	bool went_back = state->counter_witness.note_reply(identity.data, had_sent, sent, counter);
	LWLockRelease(&state->lock);
	if (!went_back)
		return true;

	char message[error_text_size];
	char identity_text[uuid_text_size];

	uuid_text(identity, identity_text);
	snprintf(message, sizeof(message),
			 "uidgen registry %s has gone back: its counter is %lld, not above the %lld this server saw there; it was "
			 "set back to an earlier state of itself (a file-level copy, a restore or a revert to a snapshot) and "
			 "holds new leases back while its members re-assert theirs",
			 identity_text, static_cast<long long>(counter.value), static_cast<long long>(sent));
	set_status(AgentStatus::Failed, ERRCODE_CONNECTION_FAILURE, message);
	return false;
}

/* Appends name as a quoted element of a text[] literal. */
void
append_array_text(StringInfo array, const char *name)
{
	appendStringInfoChar(array, '"');
	for (const char *c = name; *c != '\0'; c++)
	{
		if (*c == '"' || *c == '\\')
			appendStringInfoChar(array, '\\');
		appendStringInfoChar(array, *c);
	}
	appendStringInfoChar(array, '"');
}

} // namespace

/*
 * Fetches the registry's rules and checks the two clocks against each
 * other: the registry's, read between two readings of ours, may be off by
 * half the round trip.  Sends the highest registry counter seen at the
 * identity read this round, and notes the one replied (note_counter()).
 */
bool
fetch_rules()
{
	LeaseTable *state = lease_table();
	pg_uuid_t identity;
	Predecessors predecessors;
	SignedCounter counter_sent{};
	char version_text[16];
	char counter_text[24];
	const char *params[3] = {version_text, nullptr, nullptr};
	int spoken = protocol_spoken();

	bool identified = seen_registry(&identity, &predecessors);
	LWLockAcquire(&state->lock, LW_SHARED);
	bool had_sent = identified && state->counter_witness.to_send(identity.data, &counter_sent);
	LWLockRelease(&state->lock);
	snprintf(version_text, sizeof(version_text), "%d", spoken);
	if (had_sent)
	{
		snprintf(counter_text, sizeof(counter_text), "%lld", static_cast<long long>(counter_sent.value));
		params[1] = counter_text;
		params[2] = counter_sent.proof;
	}

	const char *what = "reading the registry's rules";
	bool added_column = spoken >= 2;	/* the test build's version 2 (protocol.hpp) */
	int64_t sent = backend_clock().now_ms();
	PGresult *r = call(what, added_column ? rules_call_2 : rules_call, 3, params);
	int64_t received = backend_clock().now_ms();

	if (r == nullptr)
		return false;
	if (!reply_has_shape(r, what, 1, rules_columns + (added_column ? 1 : 0)))
		return false;
	RulesReply reply{};
	SignedCounter counter{};
	int64_t *column[] = {&reply.time_bits,	  &reply.worker_bits,  &reply.seq_bits,	  &reply.epoch_ms,
						 &reply.unit_ms,	  &reply.max_borrow_ms, &reply.lease_ttl_ms, &reply.block_size,
						 &reply.max_clock_skew_ms, &reply.clock_ms, &counter.value};
	for (int col = 0; col < 11; col++)
	{
		if (!reply_int64(r, what, 0, col, column[col]))
			return false;
	}
	const char *proof = PQgetisnull(r, 0, 11) ? "" : PQgetvalue(r, 0, 11);
	if (!SignedCounter::proof_shaped(proof))
	{
		record_bad_reply(r, what, "column \"counter_proof\" of the reply is not a counter's proof");
		return false;
	}
	strlcpy(counter.proof, proof, sizeof(counter.proof));
	if (added_column && !PQgetisnull(r, 0, 12))
		ereport(LOG, (errmsg("uidgen registry agent: the registry's note: %.200s", PQgetvalue(r, 0, 12))));
	PQclear(r);
	if (identified && !note_counter(identity, had_sent, counter_sent.value, counter))
		return false;
	std::optional<RegistryRules> checked = checked_rules(reply);
	if (!checked)
	{
		char problem[384];

		snprintf(problem, sizeof(problem),
				 "the registry's rules are out of range: time_bits %lld, worker_bits %lld, seq_bits %lld, "
				 "unit_ms %lld, max_borrow_ms %lld, lease_ttl_ms %lld, block_size %lld, max_clock_skew_ms %lld, "
				 "clock_ms %lld",
				 static_cast<long long>(reply.time_bits), static_cast<long long>(reply.worker_bits),
				 static_cast<long long>(reply.seq_bits), static_cast<long long>(reply.unit_ms),
				 static_cast<long long>(reply.max_borrow_ms), static_cast<long long>(reply.lease_ttl_ms),
				 static_cast<long long>(reply.block_size), static_cast<long long>(reply.max_clock_skew_ms),
				 static_cast<long long>(reply.clock_ms));
		record_bad_reply(nullptr, what, problem);
		return false;
	}
	RegistryRules rules = *checked;

	/* R12: no call to the registry while the clocks disagree beyond the bound. */
	ClockOffset offset = clock_offset(sent, received, reply.clock_ms);
	if (offset.beyond(rules.max_clock_skew_ms))
	{
		char message[error_text_size];

		snprintf(message, sizeof(message),
				 "this server's clock and the registry's differ by %lld ms, more than its max_clock_skew of "
				 "%lld ms; synchronize the clocks",
				 static_cast<long long>(offset.offset_ms), static_cast<long long>(rules.max_clock_skew_ms));
		set_status(AgentStatus::Failed, ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION, message);
		return false;
	}
	/*
	 * max_borrow bounds how far past its lease a holder's IDs may reach, and
	 * so when the registry may lease its block again: every member must
	 * agree with the registry on it.
	 */
	if (max_borrow_ms != rules.max_borrow_ms)
	{
		char message[error_text_size];

		snprintf(message, sizeof(message),
				 "uidgen.max_borrow is %d ms on this server and %lld ms at the registry; every member must use "
				 "the registry's",
				 max_borrow_ms, static_cast<long long>(rules.max_borrow_ms));
		set_status(AgentStatus::Failed, ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION, message);
		return false;
	}

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	state->rules = rules;
	state->have_rules = true;
	LWLockRelease(&state->lock);
	return true;
}

/*
 * Reads which registry this is (uidgen.registry_identity()) on conn.
 *
 * check_identity() refuses to go on at another than the one this server
 * life pinned: created again, rebuilt, or another database behind the same
 * connection string, it knows nothing of the leases this server holds.  The
 * first identity under a uidgen.registry setting is pinned
 * (registry_pin.hpp).
 */
bool
read_identity(pg_uuid_t *seen, Predecessors *predecessors, int *spoken)
{
	const char *what = "reading the registry's identity";
	char version_text[16];
	snprintf(version_text, sizeof(version_text), "%d", member_protocol);
	const char *params[] = {version_text};
	PGresult *r = call(what, identity_call, 1, params);

	if (r == nullptr)
		return false;
	if (!reply_has_shape(r, what, 1, 3))
		return false;
	int64_t registry_protocol;
	if (!reply_int64(r, what, 0, 2, &registry_protocol))
		return false;
	*spoken = spoken_protocol(member_protocol, static_cast<int>(std::clamp<int64_t>(registry_protocol, 0, 1000000)));
	if (*spoken == 0)
	{
		char message[error_text_size];

		PQclear(r);
		snprintf(message, sizeof(message),
				 "uidgen member protocol %d cannot work with registry protocol %lld: a member and a registry work "
				 "together only one protocol version apart or less; upgrade uidgen on the older side",
				 member_protocol, static_cast<long long>(registry_protocol));
		set_status(AgentStatus::Failed, ERRCODE_PROTOCOL_VIOLATION, message);
		return false;
	}
	if (PQgetisnull(r, 0, 0))
	{
		record_bad_reply(r, what, "column \"registry_id\" of the reply is null");
		return false;
	}

	const char *text = PQgetvalue(r, 0, 0);
	if (!parse_uuid_text(text, seen))
	{
		char problem[128];

		snprintf(problem, sizeof(problem), "column \"registry_id\" of the reply is not a UUID: \"%.40s\"", text);
		record_bad_reply(r, what, problem);
		return false;
	}

	/* "{uuid,uuid}": more than max_predecessors are not kept, so a move from them is refused. */
	const char *list = PQgetisnull(r, 0, 1) ? "{}" : PQgetvalue(r, 0, 1);
	size_t length = strlen(list);
	predecessors->count = 0;
	if (length < 2 || list[0] != '{' || list[length - 1] != '}')
	{
		record_bad_reply(r, what, "column \"predecessors\" of the reply is not an array");
		return false;
	}
	for (size_t pos = 1; pos + 1 < length && predecessors->count < max_predecessors;)
	{
		char one[uuid_text_size];
		size_t end = pos;

		while (end + 1 < length && list[end] != ',')
			end++;
		if (end - pos >= sizeof(one) || (memcpy(one, list + pos, end - pos), one[end - pos] = '\0',
										 !parse_uuid_text(one, &predecessors->ids[predecessors->count])))
		{
			record_bad_reply(r, what, "column \"predecessors\" of the reply is not an array of UUIDs");
			return false;
		}
		predecessors->count++;
		pos = end + 1;
	}
	PQclear(r);
	return true;
}

/*
 * Whether this server may work with registry seen, which took over
 * predecessors: the one it pinned, none pinned yet, one that imported the
 * pinned one (which is sealed: INV-20), or any on purpose when the pinned
 * one is gone for good (lost_move_wanted()).  Otherwise the refusal is
 * written to message.
 */
bool
may_move_to(const pg_uuid_t &seen, const Predecessors &predecessors, char message[error_text_size])
{
	pg_uuid_t pinned;

	if (!pinned_registry(&pinned) || memcmp(pinned.data, seen.data, UUID_LEN) == 0 || imported(predecessors, pinned)
		|| lost_move_wanted())
		return true;

	char seen_text[uuid_text_size];
	char pinned_text[uuid_text_size];

	uuid_text(seen, seen_text);
	uuid_text(pinned, pinned_text);
	snprintf(message, error_text_size,
			 "uidgen registry %s has not imported uidgen registry %s, which this server joined: its leases could "
			 "overlap those the old registry's members still hold, so nothing is leased there (run SELECT "
			 "uid_registry_export(importer) at the old registry and SELECT uid_registry_import(...) with its result at "
			 "the new one; if the old registry is gone for good, run SELECT uid_registry_move(old_registry_lost "
			 "=> true) in every member database)",
			 seen_text, pinned_text);
	return false;
}

bool
check_identity()
{
	pg_uuid_t seen;
	pg_uuid_t pinned;
	Predecessors predecessors;
	int spoken;

	if (!read_identity(&seen, &predecessors, &spoken))
		return false;
	/* Another registry under another uidgen.registry: as in adopt_pending(). */
	if (text_changed_since_pin && pinned_registry(&pinned) && memcmp(pinned.data, seen.data, UUID_LEN) != 0)
	{
		char message[error_text_size];

		if (!may_move_to(seen, predecessors, message))
		{
			set_status(AgentStatus::Failed, ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION, message);
			return false;
		}
		forget_blocks();
		unpin_registry();
	}
	text_changed_since_pin = false;
	if (!note_registry_identity(seen, predecessors, current_attempt, &pinned))
	{
		char message[error_text_size];
		char seen_text[uuid_text_size];
		char pinned_text[uuid_text_size];

		uuid_text(seen, seen_text);
		uuid_text(pinned, pinned_text);
		snprintf(message, sizeof(message),
				 "the registry database is uidgen registry %s, not %s, which this server joined: created again, "
				 "copied or rebuilt, it knows nothing of this server's leases; nothing is leased or renewed there (to "
				 "move to it, run uid_registry_export(importer) at the old registry, uid_registry_import(...) with its "
				 "result here, then uid_registry_move() in each member database; if the old one is gone for good, "
				 "uid_registry_move(old_registry_lost => true))",
				 seen_text, pinned_text);
		set_status(AgentStatus::Failed, ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION, message);
		return false;
	}
	/* Only for a registry this server works with: registry_status shows what it speaks there. */
	note_protocol(spoken);
	return true;
}

Identity
identity_of(LeaseTable *state)
{
	Identity id{};
	pg_uuid_t uuid;

	memcpy(uuid.data, state->life, UUID_LEN);
	uuid_text(uuid, id.life);
	snprintf(id.system_identifier, sizeof(id.system_identifier), UINT64_FORMAT, GetSystemIdentifier());
	snprintf(id.timeline, sizeof(id.timeline), "%u", GetWALInsertionTimeLine());
	strlcpy(id.host, server_host_name(), sizeof(id.host));
	snprintf(id.port, sizeof(id.port), "%d", PostPortNumber);

	/* Copied out first: nothing may allocate under the table's lock. */
	Oid *databases = static_cast<Oid *>(palloc(sizeof(Oid) * max_grants));
	NameData *names_of = static_cast<NameData *>(palloc(sizeof(NameData) * max_grants));
	int count = 0;

	LWLockAcquire(&state->lock, LW_SHARED);
	for (int i = 0; i < state->ngrants; i++)
	{
		databases[count] = state->grants[i].database;
		names_of[count++] = state->grants[i].database_name;
	}
	LWLockRelease(&state->lock);

	StringInfoData names;
	initStringInfo(&names);
	appendStringInfoChar(&names, '{');
	for (int i = 0; i < count; i++)
	{
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = databases[j] == databases[i];
		if (seen)
			continue;
		if (names.len > 1)
			appendStringInfoChar(&names, ',');
		append_array_text(&names, NameStr(names_of[i]));
	}
	appendStringInfoChar(&names, '}');
	id.databases = names.data;
	return id;
}

/* Renews every lease this life holds; a block the registry no longer gives it is dropped. */
bool
renew(LeaseTable *state)
{
	StringInfoData blocks, floors, ceilings, lease_ids, workers, databases, grant_leases;
	char text[lease_id_text_size];
	LeasedBlock *held = static_cast<LeasedBlock *>(palloc(sizeof(LeasedBlock) * max_leased_blocks));
	Grant *grants = static_cast<Grant *>(palloc(sizeof(Grant) * max_grants));
	int nheld;
	int ngrants;

	/*
	 * Copied out first: nothing may allocate under the table's lock.  Only
	 * leases still running: one that lapsed here stays lapsed, even if the
	 * registry (a restored one) would still renew it.
	 */
	int64_t now_mono = monotonic_ms();
	LWLockAcquire(&state->lock, LW_SHARED);
	nheld = 0;
	for (int i = 0; i < state->nblocks; i++)
	{
		if (state->blocks[i].deadline_mono_ms > now_mono)
			held[nheld++] = state->blocks[i];
	}
	ngrants = state->ngrants;
	memcpy(grants, state->grants, sizeof(Grant) * ngrants);
	int nreleased = state->nreleased;
	LeaseId released[max_leased_blocks];
	memcpy(released, state->released, sizeof(LeaseId) * nreleased);
	LWLockRelease(&state->lock);

	initStringInfo(&blocks);
	initStringInfo(&floors);
	initStringInfo(&ceilings);
	initStringInfo(&lease_ids);
	initStringInfo(&workers);
	initStringInfo(&databases);
	initStringInfo(&grant_leases);
	for (int i = 0; i < nheld; i++)
	{
		lease_id_text(held[i].lease_id, text);
		appendStringInfo(&blocks, "%s%lld", i > 0 ? "," : "", static_cast<long long>(held[i].block));
		appendStringInfo(&floors, "%s%lld", i > 0 ? "," : "", static_cast<long long>(held[i].floor_delta));
		appendStringInfo(&ceilings, "%s%lld", i > 0 ? "," : "", static_cast<long long>(held[i].ceiling_delta));
		appendStringInfo(&lease_ids, "%s%s", i > 0 ? "," : "", text);
	}
	int nreported = 0;
	for (int i = 0; i < ngrants; i++)
	{
		if (grants[i].reported)
			continue;
		appendStringInfo(&workers, "%s%lld", nreported > 0 ? "," : "", static_cast<long long>(grants[i].worker));
		lease_id_text(grants[i].lease_id, text);
		appendStringInfo(&grant_leases, "%s%s", nreported > 0 ? "," : "", text);
		if (nreported > 0)
			appendStringInfoChar(&databases, ',');
		append_array_text(&databases, NameStr(grants[i].database_name));
		nreported++;
	}
	int reported_up_to = ngrants;
	StringInfoData released_leases;
	initStringInfo(&released_leases);
	for (int i = 0; i < nreleased; i++)
	{
		lease_id_text(released[i], text);
		appendStringInfo(&released_leases, "%s%s", i > 0 ? "," : "", text);
	}

	char *blocks_text = psprintf("{%s}", blocks.data);
	char *floors_text = psprintf("{%s}", floors.data);
	char *workers_text = psprintf("{%s}", workers.data);
	char *databases_text = psprintf("{%s}", databases.data);
	char *lease_ids_text = psprintf("{%s}", lease_ids.data);
	char *grant_leases_text = psprintf("{%s}", grant_leases.data);
	char *ceilings_text = psprintf("{%s}", ceilings.data);
	char *released_text = psprintf("{%s}", released_leases.data);
	Identity id = identity_of(state);
	int spoken = protocol_spoken();
	char version_text[16];
	snprintf(version_text, sizeof(version_text), "%d", spoken);
	/* The test build's version 2 adds an argument (protocol.hpp). */
	const char *member_note = "a member of protocol 2";
	const char *params[] = {version_text, id.life, id.system_identifier, id.timeline, id.host, id.port, id.databases,
							blocks_text, floors_text, workers_text, databases_text, lease_ids_text,
							grant_leases_text, ceilings_text, released_text, member_note};
	static_assert(sizeof(params) / sizeof(params[0]) == renew_params + 1);
	int64_t sent = monotonic_ms();
	PGresult *r = spoken >= 2 ? call("renewing the leases", renew_call_2, renew_params + 1, params)
							  : call("renewing the leases", renew_call, renew_params, params);

	if (r == nullptr)
		return false;

	/* Parsed first: the table's lock is held for a copy only. */
	const char *what = "renewing the leases";
	if (!reply_has_shape(r, what, -1, 5))
		return false;
	int nrenewed = PQntuples(r);
	/* Every row carries it; with none renewed, the claim that follows tells. */
	if (nrenewed > 0 && !note_quarantine(r, what, 0, 4))
		return false;
	int64_t *renewed = static_cast<int64_t *>(palloc(sizeof(int64_t) * (nrenewed + 1)));
	LeaseId *renewed_lease = static_cast<LeaseId *>(palloc(sizeof(LeaseId) * (nrenewed + 1)));
	int64_t *deadline = static_cast<int64_t *>(palloc(sizeof(int64_t) * (nrenewed + 1)));
	int64_t *ceiling = static_cast<int64_t *>(palloc(sizeof(int64_t) * (nrenewed + 1)));
	int64_t *length = static_cast<int64_t *>(palloc(sizeof(int64_t) * (nrenewed + 1)));
	for (int row = 0; row < nrenewed; row++)
	{
		if (!reply_int64(r, what, row, 0, &renewed[row]) || !reply_int64(r, what, row, 1, &length[row]) ||
			!reply_lease_id(r, what, row, 2, &renewed_lease[row]) || !reply_int64(r, what, row, 3, &ceiling[row]))
			return false;
		if (length[row] <= 0)
		{
			char problem[128];

			snprintf(problem, sizeof(problem), "the registry renewed block %lld for %lld ms",
					 static_cast<long long>(renewed[row]), static_cast<long long>(length[row]));
			record_bad_reply(r, what, problem);
			return false;
		}
		deadline[row] = sent + length[row];
	}
	PQclear(r);

	int kept = 0;
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	for (int i = 0; i < state->nblocks; i++)
	{
		for (int row = 0; row < nrenewed; row++)
		{
			/* By its lease ID: the block alone may be this life's again under another lease. */
			if (renewed[row] == state->blocks[i].block && renewed_lease[row] == state->blocks[i].lease_id)
			{
				state->blocks[i].deadline_mono_ms = deadline[row];
				state->blocks[i].lease_ms = length[row];
				state->blocks[i].ceiling_delta = std::max(state->blocks[i].ceiling_delta, ceiling[row]);
				state->blocks[kept++] = state->blocks[i];
				break;
			}
		}
	}
	state->nblocks = kept;
	for (int i = 0; i < reported_up_to; i++)
		state->grants[i].reported = true;
	/* The releases sent are done; any given back since stay for the next renewal. */
	int left = 0;
	for (int i = 0; i < state->nreleased; i++)
	{
		if (std::find(released, released + nreleased, state->released[i]) == released + nreleased)
			state->released[left++] = state->released[i];
	}
	state->nreleased = left;
	LWLockRelease(&state->lock);
	ConditionVariableBroadcast(&state->changed);
	return true;
}

bool
claim_block(LeaseTable *state)
{
	Identity id = identity_of(state);
	char version_text[16];
	snprintf(version_text, sizeof(version_text), "%d", protocol_spoken());
	const char *params[] = {version_text, id.life, id.system_identifier, id.timeline, id.host, id.port, id.databases};
	static_assert(sizeof(params) / sizeof(params[0]) == claim_params);
	int64_t sent = monotonic_ms();
	PGresult *r = call("leasing a block of worker ids", claim_call, claim_params, params);

	if (r == nullptr)
		return false;
	const char *what = "leasing a block of worker ids";
	if (!reply_has_shape(r, what, 1, 9))
		return false;
	int64_t block;
	bool held_back;
	if (!reply_int64(r, what, 0, 0, &block, &held_back))
		return false;
	if (!note_quarantine(r, what, 0, 8))
		return false;
	if (held_back)
	{
		char message[error_text_size];

		if (PQgetisnull(r, 0, 5))
		{
			record_bad_reply(r, what, "column \"held_back_until\" of the reply is null");
			return false;
		}
		snprintf(message, sizeof(message),
				 "the uidgen registry hands out no worker block until %.64s: it may have lost leases (it was "
				 "restarted, restored or failed over), which their holders re-assert first, or it is new and may "
				 "replace a registry whose members still issue (uid_registry_start_fleet() or "
				 "uid_registry_import() there ends that wait)",
				 PQgetvalue(r, 0, 5));
		PQclear(r);
		set_status(AgentStatus::Failed, ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION, message);
		return false;
	}

	LeasedBlock b{};
	b.block = block;
	if (!reply_int64(r, what, 0, 1, &b.first_worker) || !reply_int64(r, what, 0, 2, &b.last_worker) ||
		!reply_int64(r, what, 0, 3, &b.floor_delta) || !reply_int64(r, what, 0, 4, &b.lease_ms) ||
		!reply_lease_id(r, what, 0, 6, &b.lease_id) || !reply_int64(r, what, 0, 7, &b.ceiling_delta))
		return false;
	PQclear(r);
	if (b.block < 1 || b.first_worker < 1 || b.last_worker < b.first_worker || b.lease_ms <= 0 ||
		b.ceiling_delta <= b.floor_delta)
	{
		char problem[256];

		snprintf(problem, sizeof(problem),
				 "the registry leased block %lld of workers %lld to %lld for %lld ms, time units %lld to %lld",
				 static_cast<long long>(b.block), static_cast<long long>(b.first_worker),
				 static_cast<long long>(b.last_worker), static_cast<long long>(b.lease_ms),
				 static_cast<long long>(b.floor_delta + 1), static_cast<long long>(b.ceiling_delta));
		record_bad_reply(nullptr, what, problem);
		return false;
	}
	b.claimed_at_ms = backend_clock().now_ms();
	b.deadline_mono_ms = sent + b.lease_ms;
	b.next_worker = b.first_worker;

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	if (state->nblocks < max_leased_blocks)
		state->blocks[state->nblocks++] = b;
	LWLockRelease(&state->lock);
	ConditionVariableBroadcast(&state->changed);
	return true;
}

} // namespace uidgen::pg
