# Every reply of the registry is checked (issue 20, item 7): a registry
# database whose functions return other shapes (no row, two rows, a column
# less, text where a number belongs, NULLs) is a class 08 error
# (08P01) in uidgen.registry_status and for the sessions that wait, never a
# crash of the member.  A column more is what a later protocol version
# adds: the member reads only the columns it names, and goes on (the
# protocol's rule, src/registry/README.md).  And no secret of the connection string (password,
# sslpassword) shows in a message, a view or the log.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry', member => 0);

# The fake registry: uidgen's real functions renamed, and in their place
# functions of other shapes.
$registry->safe_psql('postgres', 'CREATE DATABASE fake');
$registry->safe_psql('fake', "CREATE EXTENSION uidgen; SELECT uid_registry_start_fleet(); SELECT uid_registry_configure(lease_ttl => '10s')");
my $claim_args = 'protocol int, life uuid, system_identifier text, timeline int, host text, port int, databases text[]';
my $renew_args = "$claim_args, blocks bigint[], floors bigint[], grant_workers bigint[], grant_databases text[], "
  . 'lease_ids uuid[], grant_leases uuid[], ceilings bigint[], released_leases uuid[]';
my $rules_columns = 'time_bits int, worker_bits int, seq_bits int, epoch_ms bigint, unit_ms int, max_borrow_ms bigint, '
  . 'lease_ttl_ms bigint, block_size int, max_clock_skew_ms bigint, clock_ms bigint, counter bigint, counter_proof text';
my $claim_columns = 'block bigint, first_worker bigint, last_worker bigint, floor_delta bigint, lease_ms bigint, '
  . 'held_back_until timestamptz, lease_id uuid, ceiling_delta bigint';
# registry_renew() names itself in its body: a copy under the other name,
# and the original out of the extension, to be dropped.
$registry->safe_psql('fake', qq{
	ALTER FUNCTION uidgen.registry_rules(int, bigint, text) RENAME TO real_registry_rules;
	ALTER FUNCTION uidgen.registry_claim($claim_args) RENAME TO real_registry_claim;
	DO \$\$ BEGIN
		EXECUTE replace(replace(pg_get_functiondef('uidgen.registry_renew(int, uuid, text, int, text, int, text[], bigint[], bigint[], '
		                                             'bigint[], text[], uuid[], uuid[], bigint[], uuid[])'::regprocedure),
		                        'registry_renew.', 'real_registry_renew.'),
		                'FUNCTION uidgen.registry_renew(', 'FUNCTION uidgen.real_registry_renew(');
	END \$\$;
	ALTER EXTENSION uidgen DROP FUNCTION uidgen.registry_renew($renew_args);
});

# Replaces function (rules, claim or renew) of the fake registry with one
# returning columns from body; undef body puts the real one back.
sub fake
{
	my ($function, $columns, $body) = @_;
	my $args = { rules => 'protocol int, counter_seen bigint, counter_seen_proof text', claim => $claim_args, renew => $renew_args }->{$function};
	my $sql = "DROP FUNCTION IF EXISTS uidgen.registry_$function($args);";
	if (defined $body)
	{
		$sql .= "CREATE FUNCTION uidgen.registry_$function($args) RETURNS TABLE ($columns) "
		  . "LANGUAGE sql AS \$fake\$ $body \$fake\$;";
	}
	else
	{
		$sql .= "CREATE FUNCTION uidgen.registry_$function($args) RETURNS TABLE ($columns) LANGUAGE sql AS \$fake\$ "
		  . "SELECT * FROM uidgen.real_registry_$function("
		  . join(', ', map { "\$$_" } 1 .. ($function eq 'rules' ? 3 : $function eq 'claim' ? 7 : 15)) . ') $fake$;';
	}
	$registry->safe_psql('fake', $sql);
}

my $rules = 'r.time_bits, r.worker_bits, r.seq_bits, r.epoch_ms, r.unit_ms, r.max_borrow_ms, r.lease_ttl_ms, '
  . 'r.block_size, r.max_clock_skew_ms, r.clock_ms, r.counter, r.counter_proof';
# The first shape is there before the member starts.
fake('rules', $rules_columns, "SELECT $rules FROM uidgen.real_registry_rules(\$1, \$2, \$3) r WHERE false");

my $password = 'pw-secret-4711';
my $sslpassword = 'ssl-secret-0815';
(my $connstr = $registry->connstr('fake') . " password=$password sslpassword=$sslpassword") =~ s/'/''/g;
my $member = new_uidgen_node('member',
	conf => [ "shared_preload_libraries = 'uidgen'", "uidgen.registry = '$connstr'" ]);
my $started = $member->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');
my @messages;

# Waits until the agent reports error_pattern; then checks that the member
# did not restart and, with uid_next => 1, that uid_next() fails with 08P01.
sub expect_refusal
{
	my ($label, $error_pattern, %params) = @_;
	(my $like = $error_pattern) =~ s/'/''/g;
	ok(poll_for($member, 60, "SELECT coalesce(bool_or(error LIKE '$like'), false) FROM uidgen.registry_status"),
		"$label: the agent reports it")
	  or diag('registry_status: '
		  . ($member->psql('postgres', 'SELECT agent_status, error FROM uidgen.registry_status'))[1]);
	my ($ret, $now) = $member->psql('postgres', 'SELECT pg_postmaster_start_time()');
	is($now, $started, "$label: the member did not restart");
	if ($params{uid_next})
	{
		my $err = psql_error($member, 'postgres', 'SELECT uid_next()');
		push @messages, $err;
		like($err, qr/ERROR:  08P01: /, "$label: uid_next() fails with 08P01") or diag($err);
	}
	push @messages, $member->safe_psql('postgres', q{SELECT registry || coalesce(error, '') FROM uidgen.registry_status});
}

# ---- uidgen.registry_rules() --------------------------------------------------

expect_refusal('rules, no row', q{%reading the registry's rules: the registry replied with 0 rows, expected 1%},
	uid_next => 1);
fake('rules', $rules_columns, "SELECT $rules FROM uidgen.real_registry_rules(\$1, \$2, \$3) r UNION ALL "
	. "SELECT $rules FROM uidgen.real_registry_rules(\$1, \$2, \$3) r");
expect_refusal('rules, two rows', '%the registry replied with 2 rows, expected 1%', uid_next => 1);
fake('rules', 'time_bits int, worker_bits int', 'SELECT 41, 13');
expect_refusal('rules, 2 columns', '%reading the registry\'s rules%column "seq_bits" does not exist%', uid_next => 1);
(my $text_columns = $rules_columns) =~ s/^time_bits int/time_bits text/;
fake('rules', $text_columns, "SELECT 'forty-one', " . ($rules =~ s/^r\.time_bits, //r)
	. ' FROM uidgen.real_registry_rules($1, $2, $3) r');
expect_refusal('rules, text for a number', '%column "time_bits" of the reply is not an integer: "forty-one"%',
	uid_next => 1);
fake('rules', $rules_columns, 'SELECT NULL::int, ' . ($rules =~ s/^r\.time_bits, //r)
	. ' FROM uidgen.real_registry_rules($1, $2, $3) r');
expect_refusal('rules, a NULL', '%column "time_bits" of the reply is null%', uid_next => 1);
fake('rules', $rules_columns, 'SELECT r.time_bits, r.worker_bits, r.seq_bits, r.epoch_ms, 7, r.max_borrow_ms, '
	. 'r.lease_ttl_ms, r.block_size, r.max_clock_skew_ms, r.clock_ms, r.counter, r.counter_proof '
	. 'FROM uidgen.real_registry_rules($1, $2, $3) r');
expect_refusal('rules, a unit of 7 ms', '%unit_ms%', uid_next => 1);
fake('rules', $rules_columns, "SELECT $rules FROM uidgen.real_registry_rules(\$1, \$2, \$3) r");

# ---- uidgen.registry_claim() ----------------------------------------------------

my $claim_values = 'c.block, c.first_worker, c.last_worker, c.floor_delta, c.lease_ms, c.held_back_until, c.lease_id, '
  . 'c.ceiling_delta';
my $real_claim = 'uidgen.real_registry_claim($1, $2, $3, $4, $5, $6, $7) c';
fake('claim', $claim_columns, "SELECT $claim_values FROM $real_claim WHERE false");
expect_refusal('claim, no row', '%leasing a block of worker ids: the registry replied with 0 rows, expected 1%',
	uid_next => 1);
fake('claim', $claim_columns, "SELECT NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, "
	. 'NULL::timestamptz, NULL::uuid, NULL::bigint');
expect_refusal('claim, NULLs', '%leasing a block of worker ids: column "held_back_until" of the reply is null%',
	uid_next => 1);
(my $claim_text = $claim_columns) =~ s/first_worker bigint/first_worker text/;
fake('claim', $claim_text, "SELECT c.block, 'one', c.last_worker, c.floor_delta, c.lease_ms, c.held_back_until, "
	. "c.lease_id, c.ceiling_delta FROM $real_claim");
expect_refusal('claim, text for a number', '%column "first_worker" of the reply is not an integer: "one"%',
	uid_next => 1);
fake('claim', $claim_columns, "SELECT c.block, c.last_worker, c.first_worker - 1, c.floor_delta, c.lease_ms, "
	. "c.held_back_until, c.lease_id, c.ceiling_delta FROM $real_claim");
expect_refusal('claim, an empty block', '%leasing a block of worker ids: the registry leased block % of workers % to %',
	uid_next => 1);
(my $claim_grant_text = $claim_columns) =~ s/lease_id uuid/lease_id text/;
fake('claim', $claim_grant_text, "SELECT c.block, c.first_worker, c.last_worker, c.floor_delta, c.lease_ms, "
	. "c.held_back_until, 'lease-1', c.ceiling_delta FROM $real_claim");
expect_refusal('claim, a lease ID that is not a UUID', '%column "lease_id" of the reply is not a lease ID: "lease-1"%',
	uid_next => 1);
fake('claim', $claim_columns, undef);
wait_for_registry($member);
like($member->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/, 'with the real functions, the member issues');

# ---- uidgen.registry_identity() -------------------------------------------------

# Which registry this is: a registry_id or predecessors that are not UUIDs as
# uuid_out() writes them are refused (08P01) before PostgreSQL's uuid_in()
# sees them, which would raise an error in the agent for text of a UUID's
# length and hyphens but no hex digits, and would take braces, which uidgen
# never writes.
my $log_offset = -s $member->logfile;
$registry->safe_psql('fake', 'ALTER FUNCTION uidgen.registry_identity(int) RENAME TO real_registry_identity');
sub fake_identity
{
	my ($registry_id, $predecessors) = @_;
	$registry->safe_psql('fake', 'DROP FUNCTION IF EXISTS uidgen.registry_identity(int); '
		. 'CREATE FUNCTION uidgen.registry_identity(protocol int) '
		. 'RETURNS TABLE (registry_id text, predecessors text, registry_protocol int) LANGUAGE sql AS $fake$ '
		. "SELECT $registry_id, $predecessors, i.registry_protocol FROM uidgen.real_registry_identity(\$1) i \$fake\$");
}
fake_identity(q{'registry-1'}, 'i.predecessors::text');
expect_refusal('identity, not a UUID',
	q{%reading the registry's identity: column "registry_id" of the reply is not a UUID: "registry-1"%});
fake_identity(q{'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'}, 'i.predecessors::text');
expect_refusal('identity, hyphens in place but no hex digits',
	'%column "registry_id" of the reply is not a UUID: "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"%');
fake_identity(q{'{' || i.registry_id || '}'}, 'i.predecessors::text');
expect_refusal('identity, a UUID in braces', '%column "registry_id" of the reply is not a UUID: "{%}"%');
fake_identity('i.registry_id::text', q{'{' || i.registry_id || ',not-a-uuid}'});
expect_refusal('identity, predecessors not UUIDs',
	'%column "predecessors" of the reply is not an array of UUIDs%');
$registry->safe_psql('fake', 'DROP FUNCTION uidgen.registry_identity(int); '
	. 'ALTER FUNCTION uidgen.real_registry_identity(int) RENAME TO registry_identity');
$member->poll_query_until('postgres', q{SELECT bool_and(agent_status = 'ready') FROM uidgen.registry_status})
  or die 'the agent did not recover';
ok(!$member->log_contains(qr/background worker "uidgen registry agent" \(PID \d+\) exited/, $log_offset),
	'the agent read every identity without an error');

# ---- uidgen.registry_renew() ----------------------------------------------------

my $real_renew = 'uidgen.real_registry_renew($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) r';
my $renew_columns = 'block bigint, lease_ms bigint, lease_id uuid, ceiling_delta bigint, quarantine_until timestamptz';
fake('renew', $renew_columns,
	"SELECT NULL::bigint, r.lease_ms, r.lease_id, r.ceiling_delta, r.quarantine_until FROM $real_renew");
expect_refusal('renew, a NULL', '%renewing the leases: column "block" of the reply is null%');
fake('renew', 'block bigint, lease_ms text, lease_id uuid, ceiling_delta bigint, quarantine_until timestamptz',
	"SELECT r.block, '10 s', r.lease_id, r.ceiling_delta, r.quarantine_until FROM $real_renew");
expect_refusal('renew, text for a number', '%column "lease_ms" of the reply is not an integer: "10 s"%');
fake('renew', 'block bigint, lease_ms bigint', "SELECT r.block, r.lease_ms FROM $real_renew");
# A registry whose renewals name no grant (as before grants had an ID).
expect_refusal('renew, no lease_id', '%renewing the leases: column "lease_id" does not exist%');
fake('renew', $renew_columns, undef);
$member->poll_query_until('postgres', q{SELECT bool_and(agent_status = 'ready') FROM uidgen.registry_status})
  or die 'the agent did not recover';
like($member->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/, 'with the real functions back, it issues');

# A column more: what a later protocol version adds, which this member never reads.
$registry->safe_psql('fake', 'CREATE TABLE public.rules_calls (at timestamptz)');
fake('rules', "$rules_columns, extra int", 'WITH c AS (INSERT INTO public.rules_calls VALUES (now()) RETURNING 1) '
	. "SELECT $rules, 1 FROM uidgen.real_registry_rules(\$1, \$2, \$3) r, c");
ok($registry->poll_query_until('fake', 'SELECT count(*) >= 2 FROM public.rules_calls'),
	'rules, a column more: the member reads the rules');
is($member->safe_psql('postgres', q{SELECT bool_and(agent_status = 'ready' AND error IS NULL) FROM uidgen.registry_status}),
	't', 'rules, a column more: the member goes on');
fake('rules', $rules_columns, "SELECT $rules FROM uidgen.real_registry_rules(\$1, \$2, \$3) r");

is($member->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $started, 'the member never restarted');
ok(!$member->log_contains('terminated by signal'), 'no process of the member died of a signal');

# ---- secrets ----------------------------------------------------------------------

# A connection that fails, for its message.
$member->safe_psql('postgres', "ALTER SYSTEM SET uidgen.registry = '"
	. ($registry->connstr('nowhere') . " password=$password sslpassword=$sslpassword") =~ s/'/''/gr . "'");
$member->reload;
ok(poll_for($member, 60, q{SELECT coalesce(bool_or(pending_error LIKE '%nowhere%'), false) FROM uidgen.registry_status}),
	'a registry that cannot be reached is reported');
push @messages, psql_error($member, 'postgres', 'SELECT uid_next()');
push @messages, $member->safe_psql('postgres',
	q{SELECT registry || coalesce(error, '') || coalesce(pending_registry, '') || coalesce(pending_error, '') FROM uidgen.registry_status});
$member->safe_psql('postgres', 'ALTER SYSTEM RESET uidgen.registry');
$member->reload;

# The lines of node's log but the statements the test ran and the line in
# which PostgreSQL itself reports the setting's new value at a reload (it
# does so for any setting: a password belongs in a passfile).
sub uidgen_log_lines
{
	my ($node) = @_;
	return join("\n", grep { !/LOG:  statement: |LOG:  parameter "uidgen\.registry" changed to / }
		split /\n/, slurp_file($node->logfile));
}

my %seen = (
	'messages and uidgen.registry_status' => join("\n", @messages),
	'uidgen.membership' => $member->safe_psql('postgres', 'SELECT registry FROM uidgen.membership'),
	'uidgen.server_lives' => $registry->safe_psql('fake', 'SELECT * FROM uidgen.server_lives'),
	"the member's log" => uidgen_log_lines($member),
	"the registry's log" => uidgen_log_lines($registry));
like($seen{'uidgen.membership'}, qr/dbname/, 'uidgen.membership names the registry');
for my $where (sort keys %seen)
{
	unlike($seen{$where}, qr/\Q$password\E/, "no password in $where");
	unlike($seen{$where}, qr/\Q$sslpassword\E/, "no sslpassword in $where");
}

done_testing();
