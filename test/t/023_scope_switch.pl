# Switching uidgen.scope across restarts, backend -> server -> backend ->
# server -> backend, by fast and by immediate shutdowns, with writers
# running into each restart and new load after it; then by reloads, with
# sessions of the old scope going on beside new ones of the other.  Workers of one scope
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
	my $name = "phase $phase, scope $scope" . ($stop_mode ? " after a shutdown ($stop_mode)" : '');
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

# ---- a reload switches new sessions only ------------------------------------

# uidgen.scope is a reload setting: a session keeps the scope of its first
# ID, so sessions of both scopes run side by side.
$node->safe_psql('postgres', 'ALTER TABLE t ALTER phase SET DEFAULT 6');
# Fewer IDs a statement than one worker gives a millisecond (512): a session
# of scope server that asked for more would borrow a private worker from the
# keeper, and its last ID would come from that one.
my $mine = 'INSERT INTO mine (id) SELECT uid_next() FROM generate_series(1, 200)';
sub session_with_ids
{
	my $s = $node->background_psql('postgres');
	$s->query_safe('CREATE TEMP TABLE mine (n serial, id bigint)');
	$s->query_safe($mine);
	return ($s, $s->query_safe('SELECT uid_current_worker()'));
}
sub reload_scope
{
	my ($scope) = @_;
	$node->adjust_conf('postgresql.conf', 'uidgen.scope', "'$scope'");
	$node->reload;
	$node->poll_query_until('postgres', "SELECT current_setting('uidgen.scope') = '$scope'")
	  or die "uidgen.scope did not become $scope";
}
sub check_session
{
	my ($s, $worker, $what) = @_;
	$s->query_safe($mine);
	is($s->query_safe('SELECT uid_current_worker()'), $worker, "$what kept its worker $worker");
	is($s->query_safe(q{
		SELECT bool_and(id > prev) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM mine) x
		 WHERE prev IS NOT NULL}), 't', "$what: its IDs kept increasing");
	$s->query_safe('INSERT INTO t (id) SELECT id FROM mine');
	$s->quit;
}

my ($backend_session, $backend_worker) = session_with_ids();
reload_scope('server');
my ($server_session, $server_worker) = session_with_ids();
is($server_worker, server_generator($node)->{worker}, 'reloaded to server: a new session takes the server\'s worker');
my ($code, $f) = run_load($node, '--mode', 'churn', '--method', 'insert', '--table', 't',
	'--connections', '4', '--ids', '5000', '--per-connection', '250', '--fetch', '50');
is($code + $f->{duplicates}, 0, "reloaded to server: $f->{ids} IDs of new sessions, no duplicate");
is($f->{distinct_workers}, '1', 'reloaded to server: new sessions share one worker');
check_session($backend_session, $backend_worker, 'a session of scope backend from before the reload');

reload_scope('backend');
($code, $f) = run_load($node, '--mode', 'churn', '--method', 'insert', '--table', 't',
	'--connections', '4', '--ids', '5000', '--per-connection', '250', '--fetch', '50');
is($code + $f->{duplicates}, 0, "reloaded to backend: $f->{ids} IDs of new sessions, no duplicate");
cmp_ok($f->{distinct_workers}, '>', 1, 'reloaded to backend: new sessions take workers of their own');
check_session($server_session, $server_worker, 'a session of scope server from before the reload');
is(worker_order_violations($node, 't', 'phase'), '', 'reloads: each worker reused from an earlier phase issued only above it');

my ($rows, $distinct) = split /\|/, $node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM t');
is($rows, $distinct, "no duplicate among all $rows IDs of the six phases");
my $shared = $node->safe_psql('postgres', q{
	SELECT count(DISTINCT uid_worker_id(id)) FROM t WHERE phase IN (1, 3, 5)
	   AND uid_worker_id(id) IN (SELECT uid_worker_id(id) FROM t WHERE phase IN (2, 4))});
note("$shared workers issued under both scopes");
diag("scope switches: $rows IDs stored, " . ($rows - $distinct) . ' duplicates');

$node->stop;
done_testing();
