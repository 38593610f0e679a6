# Crashes: a backend killed mid-load (the server's crash restart) and
# immediate shutdowns leave workers active with no holder; they are found,
# released with last_time no lower than the time reservation (nor than now +
# uidgen.max_borrow), and reused only after it, so no ID is ever issued twice.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('crash', conf => ["uidgen.max_borrow = '2s'", 'restart_after_crash = on']);
$node->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), round int)');

# Writers that insert and commit in a loop until their backend dies.
sub start_round_writers
{
	my ($round, $count) = @_;
	my @writers;
	for (1 .. $count)
	{
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start(
			[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c',
			  "DO \$\$ BEGIN FOR i IN 1..100000 LOOP INSERT INTO t (round) SELECT $round FROM generate_series(1, 50); COMMIT; END LOOP; END \$\$" ],
			'>', \$out, '2>', \$err);
		push @writers, $h;
	}
	$node->poll_query_until('postgres', "SELECT count(*) > 2000 FROM t WHERE round = $round")
	  or die "writers of round $round did not start";
	return @writers;
}

sub wait_writers
{
	$_->finish for @_;
}

my $crashes = 0;
for my $round (1 .. 3)
{
	my @writers = start_round_writers($round, 4);
	my $victim = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE query LIKE 'DO %' LIMIT 1");
	my $offset = -s $node->logfile;
	kill 'KILL', $victim;
	wait_writers(@writers);
	wait_for_crash_restart($node, $offset);
	$crashes++;
}
ok($node->log_contains('terminated by signal 9'), "$crashes crash restarts happened");

# Immediate shutdowns under load, twice.
for my $round (4 .. 5)
{
	my @writers = start_round_writers($round, 4);
	$node->stop('immediate');
	wait_writers(@writers);
	$node->start;
}

my $leaked = $node->safe_psql('postgres', q{
	SELECT count(*) FROM uidgen.worker_node w
	 WHERE status = 'active' AND NOT EXISTS (SELECT FROM pg_stat_activity a WHERE a.pid = w.pid)});
cmp_ok($leaked, '>', 0, "$leaked workers leaked by crashes");

# Before each worker is reused, remember the largest ID it issued.
$node->safe_psql('postgres', q{
	CREATE TABLE before_reuse AS SELECT uid_worker_id(id) AS worker, max(id) AS max_id FROM t GROUP BY 1});

# The workers the last crash leaked are not handed out at once: a new
# session takes another, and releasing them (here explicitly, with the
# max_borrow margin; registrations do it when nothing else is reusable)
# makes them reusable only after the last ID they can have issued.
$node->safe_psql('postgres', q{
	CREATE TABLE leaked AS SELECT id FROM uidgen.worker_node w
	 WHERE status = 'active' AND NOT EXISTS (SELECT FROM pg_stat_activity a WHERE a.pid = w.pid)});
is($node->safe_psql('postgres', q{
	SELECT uid_next() IS NOT NULL, uid_current_worker() IN (SELECT id FROM leaked)}),
	't|f', 'a new session does not take a leaked worker');
is($node->safe_psql('postgres', q{SELECT uid_reclaim_workers('2 s') <= (SELECT count(*) FROM leaked)}), 't',
	'the leaked workers are released');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM uidgen.worker_node WHERE status = 'active' AND pid NOT IN (SELECT pid FROM pg_stat_activity)}),
	'0', 'no active worker without a living holder');
is($node->safe_psql('postgres', q{
	SELECT bool_and(last_time >= (SELECT max(id) FROM t WHERE uid_worker_id(id) = w.id) >> 22)
	  FROM uidgen.worker_node w WHERE status = 'released' AND id IN (SELECT worker FROM before_reuse)}),
	't', 'each released worker is reusable only after the last ID it issued');

# After the margin (and the time reservation, which covers every ID they
# issued), new sessions reuse them, and each starts above what the worker
# issued before.
$node->poll_query_until('postgres', q{
	SELECT bool_and(last_time < uid_min(clock_timestamp()) >> 22) FROM uidgen.worker_node
	 WHERE status = 'released' AND id IN (SELECT worker FROM before_reuse)})
  or die 'the released workers never became reusable';
$node->pgbench('--no-vacuum --connect --client=8 --transactions=50', 0, [qr{processed: 400/400}], [],
	'churn after the margin', { 'after' => 'INSERT INTO t (round) SELECT 99 FROM generate_series(1, 20);' });
my $reused = $node->safe_psql('postgres', q{
	SELECT count(DISTINCT uid_worker_id(id)) FROM t WHERE round = 99
	   AND uid_worker_id(id) IN (SELECT worker FROM before_reuse)});
cmp_ok($reused, '>', 0, "$reused workers leaked by crashes were reused");
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM t JOIN before_reuse b ON uid_worker_id(t.id) = b.worker
	 WHERE t.round = 99 AND t.id <= b.max_id}),
	'0', 'every reused worker issued only IDs above its earlier ones');
is($node->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) AND bool_and(id > 0) FROM t'),
	't', 'no duplicate and no non-positive ID in ' . $node->safe_psql('postgres', 'SELECT count(*) FROM t') . ' rows');

$node->stop;
done_testing();
