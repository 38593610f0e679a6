# Scope server through clock jumps, crash restarts and immediate shutdowns.
#
# The shared cursor never goes back, so a clock that jumps either way while
# the server runs only makes backends wait (within uidgen.max_borrow).  A
# crash restart or an immediate shutdown ends the generator's life without
# releasing its worker: the keeper of the next life reuses it only above
# its floor, which the time reservation (uidgen.reserved_until) covers, so a
# clock that reads earlier after the crash (or was ahead before it and is
# corrected) never brings an ID back.
#
# A layout of 64 IDs per millisecond makes writers run the cursor ahead of
# the clock before each crash.  Every ID committed before and after goes
# into one table, whose primary key checks them all; the load client checks
# the IDs it receives after each restart; and each worker's IDs of a later
# phase must lie above all of its earlier ones.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use UidgenTest;

set_fake_clock('+0');
my $node = new_uidgen_node('scope_crash', scope => 'server', fake_clock => 1,
	conf => ["uidgen.max_borrow = '2s'", 'restart_after_crash = on']);
$node->safe_psql('postgres', 'SELECT uid_configure(41, 16, 6)');
$node->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), phase int)');

# ---- clock jumps while the server runs -----------------------------------

# One session across the jumps, with writers around it.
my @writers = start_writers($node, 't', 1, 3);
my $s = $node->background_psql('postgres');
$s->query_safe('CREATE TEMP TABLE mine (n serial, id bigint)');
my $take = 'INSERT INTO mine (id) SELECT uid_next() FROM generate_series(1, 20000)';
$s->query_safe($take);
for my $jump ('-4', '+3', '+0')
{
	set_fake_clock($jump);
	$s->query_safe($take);
}
my ($low, $high) = clock_offset($node);
# The server's clock lies between low and high (a round trip apart): it
# reads real time within a second, not +3 s or -4 s, so long as the round
# trip is under 2 s (a loaded machine's was 1.8 s).
ok($low < 1 && $high > -1 && $high - $low < 2, sprintf('the clock is back to real time (%+.2f to %+.2f s)', $low, $high));
stop_writers($node, @writers);
is($s->query_safe(q{
	SELECT bool_and(id > prev) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM mine) x WHERE prev IS NOT NULL}),
	't', 'clock 4 s back, 3 s ahead, then right: one session\'s 80,000 IDs kept increasing');
$s->query_safe('INSERT INTO t (id, phase) SELECT id, 1 FROM mine');
$s->quit;
is($node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE phase = 1'),
	$node->safe_psql('postgres', 'SELECT count(DISTINCT id) FROM t WHERE phase = 1'),
	'no duplicate between the session and the writers (primary key)');

# ---- crashes and restarts ----------------------------------------------------

my $phase = 1;
sub scenario
{
	my (%s) = @_;

	set_fake_clock($s{before});
	$phase++;
	my @writers = start_writers($node, 't', $phase, 4, 40000);
	my $g = server_generator($node);
	note("before: " . join(', ', map { "$_ = $g->{$_}" } sort keys %$g));
	# The real time of the crash: how far ahead the IDs were is measured
	# against it, not against the clock after the restart, which a loaded
	# machine may reach long after.
	my $crashed_at;
	if ($s{stop} eq 'kill')
	{
		my $victim = $node->safe_psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE query LIKE 'DO \$\$ BEGIN LOOP INSERT INTO %' LIMIT 1");
		$crashed_at = Time::HiRes::time();
		kill_and_wait_for_restart($node, $victim);
		finish_sql_loops(@writers);
		set_fake_clock('+0');
	}
	else
	{
		$crashed_at = Time::HiRes::time();
		$node->stop('immediate');
		finish_sql_loops(@writers);
		set_fake_clock('+0');
		start_with_fake_clock($node);
	}
	is($node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.server_generator'), '0',
		"$s{name}: a new life, no generator before its first uid_next()");
	my $ahead = $node->safe_psql('postgres',
		"SELECT round(extract(epoch FROM uid_timestamp(max(id))) - $crashed_at) FROM t WHERE phase = $phase");
	cmp_ok($ahead, '>=', $s{before} - 5,
		"$s{name}: the IDs from before the crash were $ahead s ahead of the real clock when it crashed");

	$phase++;
	$node->safe_psql('postgres', "ALTER TABLE t ALTER phase SET DEFAULT $phase");
	my ($code, $f) = run_load($node, '--mode', 'churn', '--method', 'insert', '--table', 't',
		'--connections', '4', '--ids', '15000', '--per-connection', '500', '--fetch', '250');
	is($code, 0, "$s{name}: the load client found nothing wrong, nor did the primary key");
	is($f->{duplicates}, '0', "$s{name}: no duplicate among the $f->{ids} IDs after the restart");
	# Once the leaked workers' margin has passed, bulk sessions make the
	# keeper claim private workers: released leaked ones, if they are reusable.
	# The keeper of this life found them leaked when it started (the load
	# above started it): the margin ends max_borrow after that, on the
	# server's clock.
	$node->poll_query_until('postgres', q{
		SELECT clock_timestamp() > started_at + current_setting('uidgen.max_borrow')::interval FROM uidgen.server_generator})
	  or die "$s{name}: the leaked workers' margin did not pass";
	($code, $f) = run_load($node, '--mode', 'steady', '--method', 'insert', '--table', 't', '--connections', '4',
		'--ids', '30000', '--fetch', '5000');
	is($code + $f->{duplicates}, 0, "$s{name}: bulk sessions after the margin: no duplicate among $f->{ids} IDs");
	my $h = server_generator($node);
	isnt($h->{keeper_pid}, $g->{keeper_pid}, "$s{name}: a new keeper (pid $h->{keeper_pid})");
	note("after: " . join(', ', map { "$_ = $h->{$_}" } sort keys %$h));
	is(worker_order_violations($node, 't', 'phase'), '',
		"$s{name}: every worker, the server's and any reused, issued only above its IDs from before");
}

# The clock runs ahead before each crash and is right after it: for the IDs
# from before, the clock has gone back.  (Servers start, and come back from
# a crash, with the clock right: see start_with_fake_clock.)
scenario(name => 'SIGKILL under load', before => '+0', stop => 'kill');
scenario(name => 'clock 30 s ahead, SIGKILL, then right', before => '+30', stop => 'kill');
scenario(name => 'clock 5 min ahead, immediate shutdown, then right', before => '+300', stop => 'immediate');
scenario(name => 'clock 1 h ahead, SIGKILL, then right', before => '+3600', stop => 'kill');
set_fake_clock('+0');

my ($rows, $distinct) = split /\|/, $node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM t');
is($rows, $distinct, "no duplicate among all $rows IDs of every phase");
diag("server scope, crashes and clock: $rows IDs stored, " . ($rows - $distinct) . ' duplicates');
ok($node->log_contains('terminated by signal 9'), 'crash restarts happened');

$node->stop;
done_testing();
