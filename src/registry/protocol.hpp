/*
 * protocol.hpp
 *	  The member's side of the registry protocol, defined once: the version
 *	  this build speaks and the text of each call.
 *
 * The registry's side is src/registry/sql/registry_calls.sql, whose
 * uidgen.registry_protocol_version() is the registry's version; the rule
 * between the two is spoken_protocol() (core/protocol_version.hpp): one
 * version apart, both speak the lower.  Every call names its arguments and
 * the reply columns it reads, so that what a later version adds (an
 * argument with a default, a reply column) never reaches a member of the
 * version before.  The identity call, the first of each round, carries
 * this build's version and replies the registry's: the agent speaks the
 * lower of the two from then on.
 *
 * A test build speaks version 2 (make MEMBER_PROTOCOL=2), which adds an
 * argument to registry_renew() and a reply column to registry_rules(), so
 * that test/t/100_registry_protocol_versions.pl shows the rule with a
 * registry of each version.  The version a release adds replaces it.
 */
#pragma once

#ifndef UIDGEN_MEMBER_PROTOCOL
#define UIDGEN_MEMBER_PROTOCOL 1
#endif

namespace uidgen::pg {

/* The highest version of the registry protocol this build speaks. */
constexpr int member_protocol = UIDGEN_MEMBER_PROTOCOL;
static_assert(member_protocol >= 1 && member_protocol <= 2, "a build speaks protocol 1, or 2 for the test");

/* $1 the member's version. */
constexpr char identity_call[] =
	"SELECT registry_id, predecessors, registry_protocol FROM uidgen.registry_identity(protocol => $1)";

/* $1 the version spoken, $2 and $3 the highest counter seen and its proof (NULL for none). */
constexpr char rules_call[] =
	"SELECT time_bits, worker_bits, seq_bits, epoch_ms, unit_ms, max_borrow_ms, lease_ttl_ms, block_size, "
	"max_clock_skew_ms, clock_ms, counter, counter_proof "
	"FROM uidgen.registry_rules(protocol => $1, counter_seen => $2, counter_seen_proof => $3)";
constexpr int rules_columns = 12;

/* Version 2 of the test build: the reply column it adds. */
constexpr char rules_call_2[] =
	"SELECT time_bits, worker_bits, seq_bits, epoch_ms, unit_ms, max_borrow_ms, lease_ttl_ms, block_size, "
	"max_clock_skew_ms, clock_ms, counter, counter_proof, registry_note "
	"FROM uidgen.registry_rules(protocol => $1, counter_seen => $2, counter_seen_proof => $3)";

/* $1 the version spoken, $2 to $7 the server life's identity (Identity in registry_calls.cpp). */
constexpr char claim_call[] =
	"SELECT block, first_worker, last_worker, floor_delta, lease_ms, held_back_until, lease_id, ceiling_delta, "
	"(extract(epoch FROM held_back_until) * 1000000)::bigint "
	"FROM uidgen.registry_claim(protocol => $1, life => $2, system_identifier => $3, timeline => $4, host => $5, "
	"port => $6, databases => $7)";
constexpr int claim_params = 7;

/*
 * $1 the version spoken, $2 to $7 the server life's identity, then its
 * blocks, grants and given-back leases as arrays.
 */
#define UIDGEN_RENEW_CALL(added_argument)                                                                            \
	"SELECT block, lease_ms, lease_id, ceiling_delta, (extract(epoch FROM quarantine_until) * 1000000)::bigint "    \
	"FROM uidgen.registry_renew(protocol => $1, life => $2, system_identifier => $3, timeline => $4, host => $5, "  \
	"port => $6, databases => $7, blocks => $8, floors => $9, grant_workers => $10, grant_databases => $11, "       \
	"lease_ids => $12, grant_leases => $13, ceilings => $14, released_leases => $15" added_argument ")"
constexpr char renew_call[] = UIDGEN_RENEW_CALL("");
constexpr int renew_params = 15;

/* Version 2 of the test build: the argument it adds. */
constexpr char renew_call_2[] = UIDGEN_RENEW_CALL(", member_note => $16");
#undef UIDGEN_RENEW_CALL

/*
 * The version spoken with the registry, as the agent's last identity call
 * settled it (0 before the first; LeaseTable::protocol), and its change.
 */
int protocol_spoken();
void note_protocol(int spoken);

} // namespace uidgen::pg
