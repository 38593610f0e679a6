# Test 065's scenario under a registry (issue 32, item 8).  In scope backend
# a leased claim is written in the session's own transaction, not committed
# apart: session A reuses a released worker granted to its database and
# issues ahead of the clock in a transaction that never commits, so the
# worker's row reads "released" at its previous holder's time throughout.
# What keeps the next holder above A is the server life: A's exit notes its
# last unit in the lease table in shared memory before anything else
# (note_grant_exit()), and a reuse starts above that note; an exit that
# runs no callback is a crash, whose restart is a new server life that
# reuses none of the old life's grants.  Here A's release cannot be
# written (another session locked the worker table), so the row stays as it
# was and the note alone decides; then A is killed, for the crash.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $count = 100000;

# Few IDs per unit, so that A's IDs run far ahead of the clock (4 a
# millisecond: 25 s for $count), within max_borrow.
my $registry = new_registry_node('registry', member => 0, max_borrow => '40s');
$registry->safe_psql('registry', 'SELECT uid_configure(time_bits => 48, worker_bits => 13, seq_bits => 2)');
my $member = new_member_node('member', $registry, conf => [ "uidgen.max_borrow = '40s'", 'restart_after_crash = on' ]);
wait_for_registry($member);

# A released worker of this database's grants, whose last unit has passed.
sub one_released_worker
{
	my $worker = $member->safe_psql('postgres', 'SELECT uid_current_worker() FROM (SELECT uid_next()) s');
	$member->poll_query_until('postgres', "SELECT status = 'released' FROM uidgen.worker_node WHERE id = $worker")
	  or die "the session did not release worker $worker";
	my $released_at = $member->safe_psql('postgres', "SELECT released_at FROM uidgen.worker_node WHERE id = $worker");
	wait_for_clock_past($member, $released_at, '1.5 s');
	return $worker;
}

# Session A: $count IDs into file in a transaction it keeps open.
sub start_uncommitted_session
{
	my ($file) = @_;
	open my $f, '>', "$file.sql" or die "cannot write $file.sql: $!";
	print $f "BEGIN;\n\\copy (SELECT uid_next() FROM generate_series(1, $count)) TO '$file'\nSELECT pg_sleep(3600);\n";
	close $f;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $member->connstr('postgres'), '-f', "$file.sql" ],
		'>', \$out, '2>', \$err);
	$member->poll_query_until('postgres', q{SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(3600)%')})
	  or die "session A did not get going: $err";
	my $pid = $member->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(3600)%'});
	return ($h, $pid);
}

# Session B issues $count IDs into file; returns them with B's worker.
sub issue_again
{
	my ($file, $table) = @_;
	my $worker = $member->safe_psql('postgres', qq{
		\\copy (SELECT uid_next() FROM generate_series(1, $count)) TO '$file'
		SELECT uid_current_worker();});
	$member->safe_psql('postgres', "CREATE TABLE $table (id bigint); COPY $table FROM '$file'");
	return $worker;
}

# 1. A rolls back by exiting, its release unwritten.
my $reused = one_released_worker();
my $shift = $member->safe_psql('postgres', 'SELECT worker_bits + seq_bits FROM uidgen.config');
is($shift, 15, 'the member adopted the registry\'s layout at its first claim');
my ($h, $pid) = start_uncommitted_session("$dir/a1.txt");
$member->safe_psql('postgres', 'CREATE TABLE a1 (id bigint)');
$member->safe_psql('postgres', "COPY a1 FROM '$dir/a1.txt'");
is($member->safe_psql('postgres', "SELECT count(*), min(uid_worker_id(id)), max(uid_worker_id(id)) FROM a1"),
	"$count|$reused|$reused", "session A reused worker $reused and issued $count IDs");
is($member->safe_psql('postgres', "SELECT uid_timestamp(max(id)) > clock_timestamp() + interval '5 s' FROM a1"), 't',
	'session A issued more than 5 s ahead of the clock');
is($member->safe_psql('postgres', "SELECT status FROM uidgen.worker_node WHERE id = $reused"), 'released',
	'outside A\'s transaction the reused worker reads released: its claim is in that transaction');

# A locker queued behind A's claim takes the worker table when A's
# transaction ends, so that A's exit cannot write its release.
my $locker = start_sql_loop($member, 'BEGIN; LOCK TABLE uidgen.worker_node IN SHARE MODE; SELECT pg_sleep(3600)');
$member->poll_query_until('postgres', q{SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'uidgen.worker_node'::regclass AND mode = 'ShareLock' AND NOT granted)})
  or die 'the locker did not queue behind A';
$member->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
$h->finish;
$member->poll_query_until('postgres', "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)")
  or die 'session A did not exit';
my $row = $member->safe_psql('postgres', "SELECT status, last_time < (SELECT max(id >> $shift) FROM a1) FROM uidgen.worker_node WHERE id = $reused");
$member->safe_psql('postgres', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'BEGIN; LOCK TABLE%'});
finish_sql_loops($locker);
is($row, 'released|t', 'A\'s exit wrote no release: the row reads released below A\'s IDs');

my $b_worker = issue_again("$dir/b1.txt", 'b1');
is($b_worker, $reused, "session B reused worker $reused");
is($member->safe_psql('postgres', 'SELECT count(*) FROM a1 JOIN b1 USING (id)'), '0',
	'session B issued none of the IDs A issued under its uncommitted claim');

# 2. A crashes: the restart is a new server life.
$reused = one_released_worker();
($h, $pid) = start_uncommitted_session("$dir/a2.txt");
kill_and_wait_for_restart($member, $pid);
$h->finish;
$member->safe_psql('postgres', "CREATE TABLE a2 (id bigint); COPY a2 FROM '$dir/a2.txt'");
is($member->safe_psql('postgres', 'SELECT count(*), min(uid_worker_id(id)) FROM a2'), "$count|$reused",
	"session A reused worker $reused before it was killed");
wait_for_registry($member);
issue_again("$dir/b2.txt", 'b2');
is($member->safe_psql('postgres', 'SELECT count(*) FROM a2 JOIN b2 USING (id)'), '0',
	'after the crash, session B issued none of the IDs A issued');

done_testing();
