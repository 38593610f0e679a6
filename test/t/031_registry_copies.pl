# Copies under a registry: a copy of a member's data directory, a promoted
# standby, or a server a dump is restored on, is another server life with
# blocks of its own; a template clone or a dump restored on the same server
# is one more database of that server's life, which grants each worker once.
# So a copy and its original, issuing at once, never share an ID.
# Template clones beside their template, a dump restored beside its running
# original (on the same and on another server), a standby promoted while its
# old primary runs on (scope backend and server), and a data directory copied
# hot and cold and started as a second primary.  Each scenario counts
# duplicates over the union of every ID the original and its copies issued;
# at the end, so does the whole test, and the registry shows one life per
# server start.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;
use Time::HiRes qw(time);

my $started = time;
sub mark { note(sprintf('%s at %.1fs', $_[0], time - $started)); }

my $sessions = 4;
my $rows_per_session = 20000;
my $rows = $sessions * $rows_per_session;
my $table = 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), src text NOT NULL)';

# Every ID the test issued, over all servers (each ID counted where it was
# issued, not where a copy carries it), and every life seen.
my @all_ids;
my $all_count = 0;
my %lives;

sub life_of
{
	my ($node) = @_;
	my $life = (registry_status($node))[0]{life};
	$lives{$life} = 1;
	return $life;
}

# The IDs of rows with the given src labels, one a line.
sub ids
{
	my ($node, $db, @labels) = @_;
	return $node->safe_psql($db, 'SELECT id FROM t WHERE src IN (' . join(', ', map { "'$_'" } @labels) . ')');
}

sub count_ids { my ($list) = @_; my $n = () = $list =~ /^\d/mg; return $n; }

# Runs, all at once, $sessions psql sessions per target [node, db, label],
# each inserting rows labelled label in two transactions; reports what they
# printed on stderr.
sub insert_at_once
{
	my @runs;
	for my $target (@_)
	{
		my ($node, $db, $label) = @$target;
		my $half = $rows_per_session / 2;
		my $sql = "DO \$\$ BEGIN FOR i IN 1..2 LOOP INSERT INTO t (src) SELECT '$label' FROM generate_series(1, $half); "
		  . "COMMIT; END LOOP; END \$\$";
		for (1 .. $sessions)
		{
			my $err = '';
			my $h = IPC::Run::start([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db), '-c', $sql ],
				'>', \my $out, '2>', \$err);
			push @runs, [ $h, \$err, $node->name . "/$db" ];
		}
	}
	for my $run (@runs)
	{
		$run->[0]->finish;
		diag("$run->[2]: ${ $run->[1] }") if ${ $run->[1] } ne '';
	}
}

sub is_count
{
	my ($node, $db, $label, $expected) = @_;
	is($node->safe_psql($db, "SELECT count(*) FROM t WHERE src = '$label'"), $expected,
		$node->name . "/$db: $expected rows '$label'");
}

# How many distinct workers of the rows labelled label lie outside every
# block the registry ever leased to life (or, with inside => 1, inside one).
sub workers_vs_life
{
	my ($node, $db, $label, $life, %params) = @_;
	my $workers = $node->safe_psql($db,
		"SELECT string_agg(DISTINCT uid_worker_id(id)::text, ',') FROM t WHERE src = '$label'");
	my $not = $params{inside} ? '' : 'NOT';
	return $main::registry->safe_psql('registry', qq{
		SELECT count(*) FROM unnest('{$workers}'::bigint[]) w
		 WHERE $not EXISTS (SELECT FROM uidgen.worker_block_lease h
		                     WHERE h.life = '$life' AND w BETWEEN h.first_worker AND h.last_worker)});
}

# Checks for one scenario: zero duplicates over its lists, and the total.
sub no_duplicates
{
	my ($what, $expected_total, @lists) = @_;
	my $total = 0;
	$total += count_ids($_) for @lists;
	is($total, $expected_total, "$what: $expected_total IDs issued");
	is(duplicate_ids(@lists), 0, "$what: no duplicate over the original and its copies ($total IDs)");
	push @all_ids, @lists;
	$all_count += $total;
}

our $registry = new_registry_node('registry', lease_ttl => '30s');
wait_for_registry($registry);
my $registry_life = life_of($registry);

my $m1 = new_member_node('m1', $registry, init => { allows_streaming => 1 });
my $m2 = new_member_node('m2', $registry, scope => 'server');
wait_for_registry($_) for $m1, $m2;
my $m1_life = life_of($m1);
my $m2_life = life_of($m2);

# ---- 1. template clones beside their template -----------------------------

mark('scenario 1');

$m1->safe_psql('postgres', 'CREATE DATABASE tmpl');
$m1->safe_psql('tmpl', "CREATE EXTENSION uidgen; $table; INSERT INTO t (src) SELECT 'before' FROM generate_series(1, 1000)");
$m1->safe_psql('postgres', 'CREATE DATABASE c1 TEMPLATE tmpl; CREATE DATABASE c2 TEMPLATE tmpl');
# The same on the server-scope member, whose keeper of the template must
# leave first (README: pg_terminate_backend(keeper_pid)).
$m2->safe_psql('postgres', 'CREATE DATABASE stmpl');
$m2->safe_psql('stmpl', "CREATE EXTENSION uidgen; $table; INSERT INTO t (src) SELECT 'before' FROM generate_series(1, 1000)");
$m2->safe_psql('stmpl', 'SELECT pg_terminate_backend(keeper_pid) FROM uidgen.server_generator');
$m2->poll_query_until('postgres', q{SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = 'stmpl'})
  or die 'the keeper of stmpl did not leave';
$m2->safe_psql('postgres', 'CREATE DATABASE sc1 TEMPLATE stmpl');
is($m1->safe_psql('c2', q{SELECT count(*) FROM t WHERE src = 'before'}), '1000', 'a clone holds the template\'s IDs');
is((registry_status($m1, 'c1'))[0]{life}, $m1_life, 'a clone is a database of its server\'s life');
is((registry_status($m2, 'sc1'))[0]{life}, $m2_life, 'so is a clone on the server-scope member');
isnt($m2_life, $m1_life, 'the two members are two lives');

insert_at_once([ $m1, 'tmpl', 'tmpl' ], [ $m1, 'c1', 'c1' ], [ $m1, 'c2', 'c2' ],
	[ $m2, 'stmpl', 'stmpl' ], [ $m2, 'sc1', 'sc1' ]);
is_count(@$_, $rows) for [ $m1, 'tmpl', 'tmpl' ], [ $m1, 'c1', 'c1' ], [ $m1, 'c2', 'c2' ],
	[ $m2, 'stmpl', 'stmpl' ], [ $m2, 'sc1', 'sc1' ];
no_duplicates('template clones (scope backend)', 1000 + 3 * $rows,
	ids($m1, 'tmpl', 'before', 'tmpl'), ids($m1, 'c1', 'c1'), ids($m1, 'c2', 'c2'));
no_duplicates('template clone (scope server)', 1000 + 2 * $rows,
	ids($m2, 'stmpl', 'before', 'stmpl'), ids($m2, 'sc1', 'sc1'));
is(workers_vs_life($m1, $_, $_, $m1_life), '0', "every worker of m1/$_ is in a block of m1's life")
  for qw(tmpl c1 c2);
is(workers_vs_life($m2, $_, $_, $m2_life), '0', "every worker of m2/$_ is in a block of m2's life")
  for qw(stmpl sc1);

# ---- 2. a dump restored beside its running original -----------------------

mark('scenario 2');

$m1->safe_psql('postgres', 'CREATE DATABASE app');
$m1->safe_psql('app', "CREATE EXTENSION uidgen; $table; INSERT INTO t (src) SELECT 'before' FROM generate_series(1, 1000)");
my $dump = PostgreSQL::Test::Utils::tempdir() . '/app.dump';
$m1->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $m1->connstr('app') ], 'pg_dump of m1/app');
# On another server (scope server) and on the same one.
for my $target ([ $m2, 'app_r' ], [ $m1, 'app_r1' ])
{
	$target->[0]->safe_psql('postgres', "CREATE DATABASE $target->[1]");
	$target->[0]->command_ok([ 'pg_restore', '-d', $target->[0]->connstr($target->[1]), $dump ],
		'pg_restore into ' . $target->[0]->name . "/$target->[1]");
}
is($m2->safe_psql('app_r', q{SELECT count(*) FROM t WHERE src = 'before'}), '1000', 'the restored copy holds the IDs');
is((registry_status($m2, 'app_r'))[0]{life}, $m2_life, 'the restore on m2 is of m2\'s life, not m1\'s');
is((registry_status($m1, 'app_r1'))[0]{life}, $m1_life, 'the restore on m1 is of m1\'s life');

insert_at_once([ $m1, 'app', 'app' ], [ $m2, 'app_r', 'app_r' ], [ $m1, 'app_r1', 'app_r1' ]);
is_count(@$_, $rows) for [ $m1, 'app', 'app' ], [ $m2, 'app_r', 'app_r' ], [ $m1, 'app_r1', 'app_r1' ];
no_duplicates('a dump restored beside its original', 1000 + 3 * $rows,
	ids($m1, 'app', 'before', 'app'), ids($m2, 'app_r', 'app_r'), ids($m1, 'app_r1', 'app_r1'));
is(workers_vs_life($m2, 'app_r', 'app_r', $m2_life), '0', 'every worker of the restore on m2 is in a block of m2\'s life');
is(workers_vs_life($m1, 'app_r1', 'app_r1', $m1_life), '0', 'every worker of the restore on m1 is in a block of m1\'s life');

# ---- 3. a standby promoted while its old primary runs on --------------------

mark('scenario 3');

for my $scope ('backend', 'server')
{
	my $primary = new_member_node("primary_$scope", $registry, scope => $scope, init => { allows_streaming => 1 });
	wait_for_registry($primary);
	my $primary_life = life_of($primary);
	$primary->safe_psql('postgres', "$table; INSERT INTO t (src) SELECT 'before' FROM generate_series(1, 1000)");
	my $standby = new_streaming_standby($primary, "standby_$scope");
	like($standby->safe_psql('postgres', 'SHOW uidgen.registry'), qr/dbname='?registry/,
		"scope $scope: the standby has the primary's uidgen.registry");
	# A session of the primary holds its worker across the promotion and issues after it.
	my $held = $primary->background_psql('postgres');
	$held->query_safe(q{INSERT INTO t (src) SELECT 'held' FROM generate_series(1, 1000)});
	$primary->wait_for_catchup($standby);
	is($standby->safe_psql('postgres', 'SELECT count(*) FROM t'), '2000', "scope $scope: the standby replayed the IDs");

	$standby->promote;
	$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'the standby was not promoted';
	wait_for_registry($standby);
	my $standby_life = life_of($standby);
	isnt($standby_life, $primary_life, "scope $scope: the promoted standby is another server life");

	$held->query_safe(q{INSERT INTO t (src) SELECT 'held' FROM generate_series(1, 1000)});
	insert_at_once([ $primary, 'postgres', 'primary' ], [ $standby, 'postgres', 'promoted' ]);
	$held->query_safe(q{INSERT INTO t (src) SELECT 'held' FROM generate_series(1, 1000)});
	$held->quit;
	is_count($primary, 'postgres', 'primary', $rows);
	is_count($primary, 'postgres', 'held', 3000);
	is_count($standby, 'postgres', 'promoted', $rows);
	no_duplicates("scope $scope: a promoted standby beside its old primary", 1000 + 3000 + 2 * $rows,
		ids($primary, 'postgres', 'before', 'held', 'primary'), ids($standby, 'postgres', 'promoted'));
	is(workers_vs_life($standby, 'postgres', 'promoted', $standby_life), '0',
		"scope $scope: every worker of the promoted standby is in a block of its own life");
	is(workers_vs_life($standby, 'postgres', 'promoted', $primary_life, inside => 1), '0',
		"scope $scope: and none in a block of the old primary's life");
	is(workers_vs_life($primary, 'postgres', 'primary', $primary_life), '0',
		"scope $scope: every worker of the old primary is in a block of its life");
}

# ---- 4. a data directory copied and started as a second primary ------------

mark('scenario 4');

# Hot: a base backup of m1, taken while a session of m1/app holds a worker,
# started as an independent primary (no recovery, no streaming).
my $held = $m1->background_psql('app');
$held->query_safe(q{INSERT INTO t (src) SELECT 'held' FROM generate_series(1, 1000)});
$m1->backup('hot');
my $hot = PostgreSQL::Test::Cluster->new('hot_copy');
$hot->init_from_backup($m1, 'hot');
$hot->start;
wait_for_registry($hot);
my $hot_life = life_of($hot);
isnt($hot_life, $m1_life, 'the hot copy is another server life');
is($hot->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 'f', 'the hot copy is a primary');
is($hot->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()'),
	$m1->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()'), 'with m1\'s system identifier');

$held->query_safe(q{INSERT INTO t (src) SELECT 'held' FROM generate_series(1, 1000)});
insert_at_once([ $m1, 'app', 'after_hot' ], [ $hot, 'app', 'hot' ]);
$held->query_safe(q{INSERT INTO t (src) SELECT 'held' FROM generate_series(1, 1000)});
$held->quit;
is_count(@$_, $rows) for [ $m1, 'app', 'after_hot' ], [ $hot, 'app', 'hot' ];
is_count($m1, 'app', 'held', 3000);
no_duplicates('a hot copy of a data directory beside its original', 2 * $rows + 3000,
	ids($m1, 'app', 'after_hot', 'held'), ids($hot, 'app', 'hot'));
is(workers_vs_life($hot, 'app', 'hot', $hot_life), '0', 'every worker of the hot copy is in a block of its life');

# Cold: m2 (scope server) stopped, its data directory copied, and both
# started: two new lives.
$m2->stop;
$m2->backup_fs_cold('cold');
my $cold = PostgreSQL::Test::Cluster->new('cold_copy');
$cold->init_from_backup($m2, 'cold');
$m2->start;
$cold->start;
wait_for_registry($_) for $m2, $cold;
my $m2_life2 = life_of($m2);
my $cold_life = life_of($cold);
isnt($m2_life2, $m2_life, 'the restarted m2 is a new server life');
isnt($cold_life, $m2_life2, 'the cold copy is another server life than its original');
isnt($cold_life, $m2_life, 'and than the original\'s life it was copied from');

insert_at_once([ $m2, 'app_r', 'after_cold' ], [ $cold, 'app_r', 'cold' ]);
is_count(@$_, $rows) for [ $m2, 'app_r', 'after_cold' ], [ $cold, 'app_r', 'cold' ];
no_duplicates('a cold copy of a data directory beside its original', 2 * $rows,
	ids($m2, 'app_r', 'after_cold'), ids($cold, 'app_r', 'cold'));
is(workers_vs_life($cold, 'app_r', 'cold', $cold_life), '0', 'every worker of the cold copy is in a block of its life');
is(workers_vs_life($m2, 'app_r', 'after_cold', $m2_life2), '0', 'every worker of the restarted m2 is in a block of its new life');

# ---- every ID, every life --------------------------------------------------

mark('totals');

# Registry, m1, m2 twice, two primaries, two standbys, the hot and the cold copy.
is(scalar(keys %lives), 10, 'ten server starts, ten lives seen on the members');
is($registry->safe_psql('registry', 'SELECT count(DISTINCT life) FROM uidgen.server_lives'), '10',
	'the registry knows each server start as a separate life');
is($registry->safe_psql('registry', "SELECT count(*) FROM uidgen.server_lives WHERE life IN ('"
	. join("', '", keys %lives) . "')"), $registry->safe_psql('registry', 'SELECT count(*) FROM uidgen.server_lives'),
	'and they are the lives the members report');
is(duplicate_ids(@all_ids), 0, "no duplicate over every ID of every server ($all_count IDs)");

done_testing();
