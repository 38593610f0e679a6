# A reused worker whose claim never committed (issue 20, item 6): scope
# backend, no registry.  Session A reuses a released worker and issues IDs
# ahead of the clock (borrowing) in a transaction it never commits; the
# server crashes (A is killed).  Session B then registers.  Had A's claim
# been written only in A's own transaction, the row would still read
# "released" at its previous holder's time, and B would reuse the worker
# from that old floor, issuing A's IDs again.  The claim of a reused worker
# is committed in a transaction of its own, by a background worker, before
# the session issues under it; where no background worker can be started,
# the session takes a fresh worker instead.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $dir = PostgreSQL::Test::Utils::tempdir();

# IDs a session issues in one transaction (fast, ahead of the clock: 2^13
# per unit), before it is killed with that transaction still open.
my $count = 200000;

# Runs a session that issues $count IDs into file in a transaction it keeps
# open; returns its handle and pid once the IDs are all written.
sub start_uncommitted_session
{
	my ($node, $db, $file) = @_;
	my $script = "BEGIN;\n\\copy (SELECT uid_next() FROM generate_series(1, $count)) TO '$file'\n"
	  . "SELECT pg_sleep(3600);\n";
	my ($out, $err) = ('', '');
	open my $f, '>', "$file.sql" or die "cannot write $file.sql: $!";
	print $f $script;
	close $f;
	my $h = IPC::Run::start([ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db), '-f', "$file.sql" ],
		'>', \$out, '2>', \$err);
	$node->poll_query_until('postgres',
		"SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(3600)%')")
	  or die "session A did not get going: $err";
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(3600)%'");
	return ($h, $pid);
}

# One released worker, whose last unit has passed: the next registration
# reuses it.
sub one_released_worker
{
	my ($node, $db) = @_;
	my $worker = $node->safe_psql($db, 'SELECT uid_current_worker() FROM (SELECT uid_next()) s');
	$node->poll_query_until($db,
		"SELECT status = 'released' FROM uidgen.worker_node WHERE id = $worker")
	  or die "the session did not release worker $worker";
	my $released_at = $node->safe_psql($db, "SELECT released_at FROM uidgen.worker_node WHERE id = $worker");
	wait_for_clock_past($node, $released_at, '1.5 s');
	return $worker;
}

# Kills session A (pid, handle h), which wrote its IDs to a_file, and waits
# for the crash restart; then session B issues as many into b_file.  Both
# are loaded into tables name_a and name_b of database name; returns A's
# worker.
sub crash_then_issue_again
{
	my ($node, $name, $pid, $h, $a_file, $b_file) = @_;
	kill_and_wait_for_restart($node, $pid);
	$h->finish;
	$node->safe_psql($name,
		"\\copy (SELECT uid_next() FROM generate_series(1, $count)) TO '$b_file'");
	$node->safe_psql($name, qq{
		CREATE TABLE ${name}_a (id bigint);
		CREATE TABLE ${name}_b (id bigint);
		COPY ${name}_a FROM '$a_file';
		COPY ${name}_b FROM '$b_file';
	});
	return $node->safe_psql($name,
		"SELECT string_agg(DISTINCT uid_worker_id(id)::text, ',') FROM ${name}_a");
}

sub duplicates
{
	my ($node, $name) = @_;
	return $node->safe_psql($name, "SELECT count(*) FROM ${name}_a JOIN ${name}_b USING (id)");
}

# The scenario in a new database name of node; returns (the row of the
# released worker while A's transaction was open: its status and whether A
# holds it, duplicates between A's IDs and B's).  A reuses the released
# worker when reuses is true, else it takes a fresh one.
sub run_scenario
{
	my ($node, $name, $reuses) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $name");
	$node->safe_psql($name, 'CREATE EXTENSION uidgen');
	my $reused = one_released_worker($node, $name);
	my ($a_file, $b_file) = ("$dir/$name-a.txt", "$dir/$name-b.txt");
	my ($h, $pid) = start_uncommitted_session($node, $name, $a_file);
	my $row = $node->safe_psql($name,
		"SELECT status, pid = $pid FROM uidgen.worker_node WHERE id = $reused");

	my $a_worker = crash_then_issue_again($node, $name, $pid, $h, $a_file, $b_file);
	my $issued = $node->safe_psql($name, "SELECT count(*) FROM ${name}_a");
	is($issued, $count, "$name: session A issued its $count IDs before it was killed");
	if ($reuses)
	{
		is($a_worker, $reused, "$name: session A reused worker $reused");
	}
	else
	{
		isnt($a_worker, $reused, "$name: session A took a fresh worker, not the released $reused");
	}
	return ($row, duplicates($node, $name));
}

# Borrowing deep enough that A's IDs run ahead of the clock by more than a
# crash restart takes.  (Streaming allowed: a synchronous standby is named
# below, which commits wait for only when WAL senders may run.)
my $node = new_uidgen_node('claim', init => { allows_streaming => 1 },
	conf => ["uidgen.max_borrow = '60s'", 'restart_after_crash = on']);

my ($row, $dups) = run_scenario($node, 'committer', 1);
is($row, 'active|t', 'the reused worker reads active, held by A, while A\'s transaction is open');
is($dups, 0, 'session B issued none of the IDs A issued under its uncommitted transaction');

# With its claim committed, the transaction that made it may be prepared
# (a fresh worker's pending claim is refused, test/sql/prepared.sql).
$node->safe_psql('postgres', 'CREATE DATABASE prepared');
$node->safe_psql('prepared', 'CREATE EXTENSION uidgen');
my $released = one_released_worker($node, 'prepared');
is($node->safe_psql('prepared', qq{
	BEGIN;
	SELECT uid_next() > 0;
	PREPARE TRANSACTION 'reused_claim';
	SELECT uid_current_worker() = $released;
	COMMIT PREPARED 'reused_claim';
	SELECT status, pid = pg_backend_pid() FROM uidgen.worker_node WHERE id = $released;}),
	"t\nt\nactive|t", 'a transaction that reused a worker was prepared; its claim stood committed');

# A registration whose own transaction locked or wrote rows of the worker
# table starts no committer, which would wait for that transaction (until
# its lock_timeout): it takes a fresh worker at once.
$node->safe_psql('postgres', 'CREATE DATABASE locked');
$node->safe_psql('locked', 'CREATE EXTENSION uidgen');
my $offset = -s $node->logfile;
for my $lock ('SELECT id FROM uidgen.worker_node FOR UPDATE',
	'UPDATE uidgen.worker_node SET application_name = application_name', 'LOCK TABLE uidgen.worker_node')
{
	one_released_worker($node, 'locked');
	my $highest = $node->safe_psql('locked', 'SELECT max(id) FROM uidgen.worker_node');
	my @out = split /\n/, $node->safe_psql('locked', qq{
		SET statement_timeout = '60s';
		BEGIN;
		$lock;
		SELECT uid_next() > 0, uid_current_worker() > $highest;
		COMMIT;});
	is($out[-1], 't|t', "after $lock in its transaction, a session took a fresh worker");
}
ok(!$node->log_contains(qr/lock timeout/, $offset), 'no claim committer waited for its session\'s locks');

# A synchronous standby that does not answer does not hold a registration
# in a database that does not wait for one: the claim is flushed locally.
$node->safe_psql('postgres', 'CREATE DATABASE unsynced');
$node->safe_psql('unsynced', 'CREATE EXTENSION uidgen');
$node->safe_psql('postgres', 'ALTER DATABASE unsynced SET synchronous_commit = local');
my $free = one_released_worker($node, 'unsynced');
# (A restart, not a reload: the checkpointer applies the standby names to
# commits, and a reload reaches it only some time later.)
$node->append_conf('postgresql.conf', "synchronous_standby_names = 'nosuch'\n");
$node->restart;
is($node->safe_psql('unsynced', q{
	SET statement_timeout = '60s';
	SELECT uid_next() > 0, uid_current_worker();}), "t|$free",
	'with a synchronous standby that never answers, a session reused a worker');
$node->append_conf('postgresql.conf', "synchronous_standby_names = ''\n");
$node->reload;

# A copy of a database (here a template clone) takes fresh workers from the
# top of the range down, above what the original handed out, and knows
# them free by their having no row: the same, for a fresh worker.
$node->safe_psql('postgres', 'CREATE DATABASE copied TEMPLATE committer');
my ($h, $pid) = start_uncommitted_session($node, 'copied', "$dir/copied-a.txt");
my $top = $node->safe_psql('copied', "SELECT count(*) FROM uidgen.worker_node WHERE status = 'active' AND pid = $pid");
is($top, 1, 'the copy\'s fresh worker has a committed row, held by A, while A\'s transaction is open');
crash_then_issue_again($node, 'copied', $pid, $h, "$dir/copied-a.txt", "$dir/copied-b.txt");
is(duplicates($node, 'copied'), 0, 'in the copy, session B issued none of the IDs A issued');

# No background worker can be started: a session never issues under a
# reused worker whose claim is not committed, and takes a fresh one instead
# (a fresh id is never handed out again, whether its claim committed or not).
$node->append_conf('postgresql.conf', "max_worker_processes = 0\n");
$node->restart;
$offset = -s $node->logfile;
($row, $dups) = run_scenario($node, 'fallback', 0);
is($row, 'released|f', 'without a background worker, the released worker stays released');
is($dups, 0, 'session B issued none of the IDs A issued');
# A copy has no fresh ids of a sequence to fall back on: it refuses.
like(psql_error($node, 'copied', 'SELECT uid_next()'),
	qr/ERROR:  53400: could not start a background worker to commit the claim of uidgen worker \d+.*HINT:  Raise max_worker_processes/s,
	'a copy without a background worker refuses to register (53400)');
# Nor has a database whose sequence ran out of fresh ids (3 worker bits: 7).
$node->safe_psql('postgres', 'CREATE DATABASE small');
$node->safe_psql('small', 'CREATE EXTENSION uidgen');
$node->safe_psql('small', 'SELECT uid_configure(41, 3, 19)');
$node->safe_psql('small', 'SELECT uid_next()') for 1 .. 7;
$node->poll_query_until('small', "SELECT count(*) = 7 FROM uidgen.worker_node WHERE status = 'released'")
  or die 'the seven sessions did not release their workers';
wait_for_clock_past($node, $node->safe_psql('small', 'SELECT max(released_at) FROM uidgen.worker_node'), '1.5 s');
like(psql_error($node, 'small', 'SELECT uid_next()'),
	qr/ERROR:  53400: could not start a background worker.*DETAIL:  No fresh worker id is left/s,
	'with no fresh worker id left, a session that cannot commit a reused claim gets 53400');
# The same in a transaction that locked the worker table: the error names the lock.
like(psql_error($node, 'small', 'BEGIN; LOCK TABLE uidgen.worker_node IN ROW SHARE MODE; SELECT uid_next()'),
	qr/ERROR:  55000: cannot register a uidgen worker in a transaction that locked uidgen.worker_node.*DETAIL:  No fresh worker id is left/s,
	'so it does after locking the worker table, with 55000 naming the lock');

ok($node->log_contains(qr/could not start a background worker to commit the claim of uidgen worker/, $offset),
	'the fallback was logged');

done_testing();
