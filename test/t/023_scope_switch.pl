# Switching uidgen.scope across restarts, backend -> server -> backend ->
# server -> backend, by fast and by immediate shutdowns, with writers
# running into each restart and new load after it.  Workers of one scope
# may be reused by the other, only above what they issued: every ID of every
# phase goes into one table, whose primary key checks them all, and each
# worker's IDs of a later phase lie above all of its earlier ones.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('scope_switch', scope => 'backend', conf => ["uidgen.max_borrow = '2s'"]);
$node->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), phase int)');

my @phases = (
	[ 'backend', undef ],
	[ 'server',  'fast' ],
	[ 'backend', 'immediate' ],
	[ 'server',  'immediate' ],
	[ 'backend', 'fast' ]);
my @writers;
for my $i (0 .. $#phases)
{
	my ($scope, $stop_mode) = @{ $phases[$i] };
	my $phase = $i + 1;
	my $name = "phase $phase, scope $scope" . ($stop_mode ? " after a $stop_mode shutdown" : '');
	if ($stop_mode)
	{
		set_scope($node, $scope, stop_mode => $stop_mode);
		finish_sql_loops(@writers);
	}
	is($node->safe_psql('postgres', 'SHOW uidgen.scope'), $scope, "$name: in force");

	$node->safe_psql('postgres', "ALTER TABLE t ALTER phase SET DEFAULT $phase");
	my ($code, $f) = run_load($node, '--mode', 'churn', '--method', 'insert', '--table', 't',
		'--connections', '4', '--ids', '5000', '--per-connection', '250', '--fetch', '50');
	is($code, 0, "$name: churn: the client found nothing wrong, nor did the primary key");
	my ($code2, $f2) = run_load($node, '--mode', 'steady', '--method', 'mixed', '--table', 't',
		'--connections', '4', '--ids', '20000', '--fetch', '100');
	is($code2, 0, "$name: steady: the client found nothing wrong, nor did the primary key");
	is($f->{duplicates} + $f2->{duplicates}, 0, "$name: no duplicate among " . ($f->{ids} + $f2->{ids}) . ' IDs');

	my $generators = $node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.server_generator');
	if ($scope eq 'server')
	{
		is($generators, '1', "$name: one server generator");
		is($f->{distinct_workers}, '1', "$name: 80 sessions, one worker");
	}
	else
	{
		is($generators, '0', "$name: no server generator");
		cmp_ok($f->{distinct_workers}, '>', 1, "$name: sessions took workers of their own ($f->{distinct_workers})");
	}
	is(worker_order_violations($node, 't', 'phase'), '',
		"$name: each worker reused from an earlier phase issued only above it");

	@writers = start_writers($node, 't', $phase, 2) if $i < $#phases;
}

my ($rows, $distinct) = split /\|/, $node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM t');
is($rows, $distinct, "no duplicate among all $rows IDs of the five phases");
my $shared = $node->safe_psql('postgres', q{
	SELECT count(DISTINCT uid_worker_id(id)) FROM t WHERE phase IN (1, 3, 5)
	   AND uid_worker_id(id) IN (SELECT uid_worker_id(id) FROM t WHERE phase IN (2, 4))});
note("$shared workers issued under both scopes");
diag("scope switches: $rows IDs stored, " . ($rows - $distinct) . ' duplicates');

$node->stop;
done_testing();
