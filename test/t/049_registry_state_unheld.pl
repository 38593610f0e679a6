# What no session may hold at the registry (a review of issue 32's counter
# witness, test first: on a719b60 parts A, B, C and C2 failed):
#
# A. A template copy of the registry draws another identity, and another
#    secret, at its first call of any kind: a member role that pumps the
#    copy's counter cannot bring its proof to the original and quarantine
#    it.
# B. registry_rules() is refused inside a transaction block (25001), as
#    every member call is: before, a member role rolled a quarantine back
#    and kept the counter moved (setval() is not undone), blinding every
#    member's witness; registry_identity() too, whose first call after a
#    restart records the registry's new state.
# C. A session whose first call after a restart of the registry stays open
#    -- a member role's long statement or open transaction, the owner's
#    transaction with autocommit off -- does not make the quarantine slide:
#    a restart's quarantine counts from the server's start.  Before, every
#    other call counted it from its own now() while the change stayed
#    unrecorded (no new leases for as long as the session stayed open).
# D. The extension installs and updates inside a transaction block and in
#    a string of several statements (an implicit block).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use UidgenTest;

my @borrow = ("uidgen.max_borrow = '1s'");
# A lease long enough that a loaded machine restarts the registry and looks
# at its quarantine well within it (it counts from the server's start).
my $registry = new_registry_node('registry', member => 0, lease_ttl => '8s', max_borrow => '1s', conf => \@borrow);
my $intruder = new_member_role($registry, 'intruder');
$registry->safe_psql('postgres', 'CREATE DATABASE regcopy TEMPLATE registry');
(my $copy_as_intruder = $intruder) =~ s/dbname='?registry'?/dbname=regcopy/;

my $member = new_member_node('member', $registry, conf => \@borrow);
$member->safe_psql('postgres', 'CREATE TABLE ids (id bigint)');
$member->safe_psql('postgres', 'INSERT INTO ids SELECT uid_next() FROM generate_series(1, 100)');

sub quarantine_end
{
	return $registry->safe_psql('registry', 'SELECT extract(epoch FROM uid_registry_quarantine_until())');
}

# The end of the last quarantine as the state check computes it, which it
# gives after the end too: a loaded machine may spend a whole quarantine
# before it looks.
sub computed_quarantine_end
{
	return $registry->safe_psql('registry', 'SELECT extract(epoch FROM quarantine_until) FROM uidgen.registry_check_state()');
}

ok($registry->poll_query_until('registry', 'SELECT uid_registry_quarantine_until() IS NULL'),
	'no quarantine to begin with');

# ---- A: a proof from a template copy -------------------------------------------
# The rules calls are the copy's first: nothing else has looked at it.
my $target = $registry->safe_psql('registry', 'SELECT last_value FROM uidgen.registry_counter') + 1000;
my ($rc, $err, $reply) = psql_as($copy_as_intruder, qq{
	SELECT r.counter || ' ' || r.counter_proof
	  FROM generate_series(1, $target) g, LATERAL uidgen.registry_rules(protocol => 1 + 0 * g) r
	 ORDER BY r.counter DESC LIMIT 1});
is($rc, 0, "a member role pumps the copy's counter") or diag($err);
my ($forged, $proof) = split / /, $reply;
($rc, $err) = psql_as($intruder, "SELECT counter FROM uidgen.registry_rules(protocol => 1, counter_seen => $forged, "
	  . "counter_seen_proof => '$proof')");
is($rc, 0, 'the original answers the call') or diag($err);
is(quarantine_end(), '', "A: the copy's proof does not quarantine the original");
isnt($registry->safe_psql('regcopy', 'SELECT registry_id FROM uidgen.registry_identity()'),
	$registry->safe_psql('registry', 'SELECT registry_id FROM uidgen.registry_identity()'),
	'the template copy is another registry');
isnt($registry->safe_psql('regcopy', 'SELECT secret FROM uidgen.registry_secret'),
	$registry->safe_psql('registry', 'SELECT secret FROM uidgen.registry_secret'),
	'with another secret');

# ---- B: member calls inside a transaction block --------------------------------
for my $call ('uidgen.registry_rules(protocol => 1)', 'uidgen.registry_identity(protocol => 1)')
{
	($rc, $err) = psql_as($intruder, "BEGIN; SELECT count(*) FROM $call; ROLLBACK;");
	(my $name = $call) =~ s/\(.*//;
	like($err, qr/$name\(\) cannot run inside a transaction block/, "B: $name() is refused in a transaction block");
}
is($registry->safe_psql('registry', 'BEGIN; SELECT count(*) FROM uidgen.registry_identity(); COMMIT'), '1',
	"people's registry_identity() (no protocol) still runs in one");

# ---- C: a transaction left open after a restart ----------------------------------
# Each holder opens its transaction with its first call after the restart,
# so that it is the first to see the new state, and keeps it open past the
# quarantine the restart calls for.
my $bound = $registry->safe_psql('registry', 'SELECT extract(epoch FROM uidgen.registry_holder_bound())');
my $sleep = 'pg_sleep(' . ($bound * 3) . ')';
for my $holder ([ 'owner', $registry->connstr('registry'), 'BEGIN', 'SELECT uid_registry_quarantine_until()' ],
	[ 'member role', $intruder, 'BEGIN', 'SELECT registry_id FROM uidgen.registry_identity()' ],
	[ 'member role\'s long statement', $intruder, 'SELECT 1', "SELECT registry_id, $sleep FROM uidgen.registry_identity()" ])
{
	my ($who, $connstr, $begin, $first_call) = @$holder;
	$member->stop('fast');
	$registry->restart;
	my ($out, $errs) = ('', '');
	my $hold = IPC::Run::start([ 'psql', '-X', '-At', '-d', $connstr, '-c', $begin, '-c', $first_call,
			'-c', "SELECT $sleep", '-c', 'ROLLBACK' ], '>', \$out, '2>', \$errs);
	ok($registry->poll_query_until('registry', q{
		SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE '%pg_sleep%' AND pid <> pg_backend_pid()}),
		"C: the $who holds its first call open after the restart");
	ok($registry->poll_query_until('registry', q{
		SELECT s.quarantine_until >= pg_postmaster_start_time() + uidgen.registry_holder_bound()
		  FROM uidgen.registry_check_state() s}),
		'C: the restart quarantines');
	my $first = computed_quarantine_end();
	$member->start;
	# Past the end the restart called for, with the transaction still open.
	ok($registry->poll_query_until('registry', "SELECT extract(epoch FROM now()) > $first + 1"),
		'C: the quarantine would be over');
	my $later = computed_quarantine_end();
	ok($later eq '' || $later <= $first,
		"C: the $who\'s open transaction does not extend the quarantine (end $first, now " . ($later || 'none') . ')');
	ok(poll_for($member, 60, q{SELECT bool_and(agent_status = 'ready') FROM uidgen.registry_status}),
		'C: the member works again');
	(my $db = "fresh_$who") =~ s/\W/_/g;
	$member->safe_psql('postgres', "CREATE DATABASE $db");
	$member->safe_psql($db, 'CREATE EXTENSION uidgen; SELECT uid_next()');
	pass("C: a new database of the member issues while the $who\'s transaction is open");
	$registry->safe_psql('registry', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE query LIKE '%pg_sleep%' AND pid <> pg_backend_pid()});
	$hold->finish;
}

# ---- D: the extension inside transaction blocks -----------------------------------
$registry->safe_psql('postgres', 'CREATE DATABASE in_block; CREATE DATABASE in_string');
is($registry->safe_psql('in_block', 'BEGIN; CREATE EXTENSION uidgen; SELECT count(*) FROM uidgen.registry_state; COMMIT'),
	'1', 'D: CREATE EXTENSION runs inside a transaction block');
($rc, $err) = psql_as($registry->connstr('in_string'),
	'CREATE EXTENSION uidgen VERSION \'1.0.0\'; ALTER EXTENSION uidgen UPDATE; SELECT uid_next()');
is($rc, 0, 'D: and installs and updates in a string of several statements') or diag($err);

done_testing();
