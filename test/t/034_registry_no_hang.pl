# Nothing under a registry holds up a backend's exit or the server's
# shutdown (issue 20, item 6):
#  - a transaction that made a session's first claim cannot be PREPAREd, as
#    without a registry (0A000), so no prepared transaction holds a claim
#    row that the session's exit release would wait for;
#  - the exit release never waits on a row that another transaction, even a
#    prepared one, is inserting: it leaves the worker leaked;
#  - the registry agent never blocks in libpq: with the registry's server
#    stopped (SIGSTOP) the agent gives up its call after its timeout, and a
#    fast shutdown of the member finishes at once.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use UidgenTest;

my $registry = new_registry_node('registry', member => 0);
my $member = new_member_node('member', $registry);
wait_for_registry($member);

# Stops node with pg_ctl -m fast, waiting at most seconds; on failure stops
# it immediately, so that the test can go on.  Returns (stopped in time,
# seconds taken).
sub fast_stop_within
{
	my ($node, $seconds) = @_;
	my $started = time;
	my $ok = IPC::Run::run([ 'pg_ctl', '-D', $node->data_dir, '-m', 'fast', '-t', $seconds, 'stop' ],
		'>', \my $out, '2>', \my $err);
	my $took = time - $started;
	unless ($ok)
	{
		note("pg_ctl -m fast stop: $out$err");
		IPC::Run::run([ 'pg_ctl', '-D', $node->data_dir, '-m', 'immediate', 'stop' ], '>', \$out, '2>', \$err);
	}
	# The node's record of its postmaster, which start() looks at.
	$node->_update_pid(0);
	return ($ok, $took);
}

# ---- PREPARE of a first claim -----------------------------------------------

my $err = psql_error($member, 'postgres', "BEGIN; SELECT uid_next(); PREPARE TRANSACTION 'first_claim'");
like($err, qr/ERROR:  0A000: cannot PREPARE a transaction that registered a uidgen worker/,
	'under a registry, PREPARE of the transaction of a first claim is refused: 0A000');
# The session left (psql ended); with the PREPARE refused there is nothing
# its exit release could wait for.
my ($stopped, $took) = fast_stop_within($member, 30);
ok($stopped, sprintf('then a fast shutdown finishes (%.1f s)', $took));
$member->start;
$member->safe_psql('postgres', "ROLLBACK PREPARED '$_'")
  for split /\n/, $member->safe_psql('postgres', 'SELECT gid FROM pg_prepared_xacts');
wait_for_registry($member);

# A committed claim first: then two-phase commit works as without a registry.
my $session = $member->background_psql('postgres');
$session->query_safe('SELECT uid_next()');
$session->query_safe("BEGIN; SELECT uid_next(); PREPARE TRANSACTION 'after_commit'");
$member->safe_psql('postgres', "COMMIT PREPARED 'after_commit'");
pass('once a claim committed, a transaction that issues can be prepared');
$session->quit;

# ---- the exit release and a row being inserted by a prepared transaction ----

# A session whose claim rolled back holds its worker with no row; then a
# prepared transaction inserts that worker's row.  The exit release must
# not wait for it.
$session = $member->background_psql('postgres');
# A fresh worker (a reused one has a row).
$session->query_safe('SET uidgen.worker_reuse = off');
$session->query_safe('BEGIN; SELECT uid_next(); ROLLBACK');
my $worker = $session->query_safe('SELECT uid_current_worker()');
my $pid = $session->query_safe('SELECT pg_backend_pid()');
is($member->safe_psql('postgres', "SELECT count(*) FROM uidgen.worker_node WHERE id = $worker"), '0',
	"worker $worker has no row: its claim rolled back");
$member->safe_psql('postgres', qq{
	BEGIN;
	INSERT INTO uidgen.worker_node (id, host_name, port, type, launch_date, modified, created, status, origin)
	VALUES ($worker, 'elsewhere', '0', 2, current_date, now(), now(), 'active', 'elsewhere');
	PREPARE TRANSACTION 'row_insert';
});
$session->quit;
ok(poll_for($member, 60, "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid"),
	'the session exits although a prepared transaction inserts its worker\'s row');
($stopped, $took) = fast_stop_within($member, 30);
ok($stopped, sprintf('and a fast shutdown finishes (%.1f s)', $took));
$member->start;
$member->safe_psql('postgres', "ROLLBACK PREPARED '$_'")
  for split /\n/, $member->safe_psql('postgres', 'SELECT gid FROM pg_prepared_xacts');
wait_for_registry($member);
like($member->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/, 'the member issues after the restart');

# ---- a registry that stops answering ---------------------------------------

# Every process of the registry's server, the postmaster first so that it
# forks no other.
my $registry_pid = $registry->{_pid};
my @registry_pids = ($registry_pid,
	grep { /^\d+$/ } map { s/\s//gr } split /\n/, `ps -o pid= --ppid $registry_pid`);
kill 'STOP', @registry_pids;
note('registry stopped: ' . join(' ', @registry_pids));

# The lease (10 s) is renewed every 1.7 s: once less than 7 s is left, the
# agent is inside a call that gets no answer.
ok(poll_for($member, 60, 'SELECT coalesce(min(lease_left_ms) < 7000, true) FROM uidgen.registry_status'),
	'the agent\'s renewal gets no answer');
# It gives up the call after its own timeout, and says so.
ok(poll_for($member, 90, q{SELECT bool_or(agent_status = 'failed') FROM uidgen.registry_status}),
	'the agent gives up a call the registry does not answer');
note('registry_status: ' . $member->safe_psql('postgres', 'SELECT agent_status, error FROM uidgen.registry_status'));

# While it tries to connect again (the registry's postmaster does not
# answer either), a fast shutdown.
ok(poll_for($member, 60, q{SELECT bool_or(agent_status = 'connecting') FROM uidgen.registry_status}),
	'the agent tries to connect again');
($stopped, $took) = fast_stop_within($member, 15);
ok($stopped, sprintf('a fast shutdown of the member finishes while the registry does not answer (%.1f s)', $took));
kill 'CONT', @registry_pids;

$member->start;
wait_for_registry($member);
like($member->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/,
	'with the registry back, the member issues again');
ok(!$member->log_contains('terminated by signal'), 'no process of the member crashed');

done_testing();
