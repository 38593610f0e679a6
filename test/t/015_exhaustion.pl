# Running out: a layout with few worker bits exhausts with the documented
# error and recovers through uid_reclaim_workers(); a layout whose time runs
# out stops with the documented error, never a negative or wrapped ID.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('exhaustion', conf => ['restart_after_crash = on']);

# Worker ids 1 to 3 only.
$node->safe_psql('postgres', 'CREATE DATABASE few');
$node->safe_psql('few', 'CREATE EXTENSION uidgen; SELECT uid_configure(41, 2, 9)');
my @holders = map { $node->background_psql('few') } 1 .. 3;
$_->query_safe('SELECT uid_next()') for @holders;
my ($ret, $out, $err) = $node->psql('few', 'SELECT uid_next()');
like($err, qr/no uidgen worker id is left/, 'a fourth session finds no worker id');
like($err, qr/uid_reclaim_workers/, 'the hint names uid_reclaim_workers()');

# The holders die without releasing (a crash restart kills every backend).
# (Waiting for the crash restart to begin and end: a query right after the
# kill could still reach the server before it.)
my $victim = $holders[0]->query_safe('SELECT pg_backend_pid()');
kill_and_wait_for_restart($node, $victim);
eval { $_->quit } for @holders;
is($node->safe_psql('few', q{SELECT count(*) FROM uidgen.worker_node WHERE status = 'active'}), '3',
	'three workers leaked');
is($node->safe_psql('few', q{SELECT uid_reclaim_workers('0')}), '3', 'uid_reclaim_workers released them');
# Even with no margin they are reusable only once the clock has passed the
# time reservation, which covers every ID their holders issued.
$node->poll_query_until('few', q{
	SELECT count(*) > 0 FROM uidgen.worker_node
	 WHERE status = 'released' AND last_time < uid_min(clock_timestamp()) >> 11})
  or die 'the released workers never became reusable';
is($node->safe_psql('few', 'SELECT uid_next() > 0, uid_current_worker() BETWEEN 1 AND 3'), 't|t',
	'a new session reuses one');

# Time: 12 bits of milliseconds, from an epoch 0.1 s ago, run out 4 s from
# now: time enough for the first inserts on a loaded machine (with 0.5 s,
# a run beside a server build inserted none).
$node->safe_psql('postgres', 'CREATE DATABASE brief');
$node->safe_psql('brief', q{
	CREATE EXTENSION uidgen;
	SELECT uid_configure(12, 10, 9, date_trunc('milliseconds', clock_timestamp()) - interval '0.1 s');
	CREATE TABLE t (id bigint)});
for my $generator ('cached', 'default')
{
	($ret, $out, $err) = $node->psql('brief', qq{
		SET uidgen.generator = '$generator';
		DO \$\$ BEGIN
			LOOP INSERT INTO t SELECT uid_next(); COMMIT; END LOOP;
		END \$\$});
	like($err, qr/the UID time field is exhausted/, "$generator: generation stops with the documented error");
	like($err, qr/\bERROR:.*exhausted/, "$generator: it is an error");
}
is($node->safe_psql('brief', q{SELECT count(*) > 0, bool_and(id > 0), max(id) <= (2::bigint ^ 31)::bigint - 1,
	count(*) = count(DISTINCT id) FROM t}), 't|t|t|t', 'every ID issued is positive, within the layout and distinct');
($ret, $out, $err) = $node->psql('brief', 'SELECT uid_next()');
like($err, qr/ran out at/, 'the error says when the layout ran out');
($ret, $out, $err) = $node->psql('brief', q{DO $$ BEGIN PERFORM uid_next(); EXCEPTION WHEN program_limit_exceeded THEN RAISE NOTICE 'sqlstate 54000'; END $$});
like($err, qr/sqlstate 54000/, 'with SQLSTATE 54000');

$node->stop;
done_testing();
