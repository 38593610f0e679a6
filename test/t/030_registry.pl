# One ID space across databases and servers: a registry database leases
# blocks of worker ids to server lives; every database of every member takes
# its workers from its server's blocks.  Several databases of one server and
# a second server issue at once, in both scopes, with zero duplicates over
# the union; the registry's view, uid_origin(), joining a database that
# issued IDs before, and the errors of bad settings.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry', lease_ttl => '30s');
wait_for_registry($registry);

my @status = registry_status($registry);
is($status[0]{agent_status}, 'ready', 'the registry server is a member of itself: its agent is ready');
cmp_ok(scalar(@status), '>=', 1, 'and holds a block in reserve before any uid_next()');
like($status[0]{life}, qr/^[0-9a-f-]{36}$/, "its server life is a UUID ($status[0]{life})");
is($registry->safe_psql('postgres', 'SHOW uidgen.registry') =~ /dbname='?registry/ ? 1 : 0, 1,
	'superusers see uidgen.registry');

# ---- several databases of one server --------------------------------------

# Database postgres issued IDs before the registry was set (new_registry_node
# created the extension there first); two fresh databases join at once.
for my $db (qw(app1 app2))
{
	$registry->safe_psql('postgres', "CREATE DATABASE $db");
	$registry->safe_psql($db, 'CREATE EXTENSION uidgen; CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), db text)');
}
$registry->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), db text)');

my $second = new_member_node('second', $registry, scope => 'server');
wait_for_registry($second);
$second->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), db text)');
$second->safe_psql('postgres', 'CREATE DATABASE app3');
$second->safe_psql('app3', 'CREATE EXTENSION uidgen; CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), db text)');

isnt((registry_status($second))[0]{life}, $status[0]{life}, 'the second server is another server life');

# Every database of both servers at once, 4 sessions each, 2 x 10,000 rows a session.
my $insert = q{DO $$ BEGIN FOR i IN 1..2 LOOP INSERT INTO t (db) SELECT current_database() FROM generate_series(1, 10000); COMMIT; END LOOP; END $$};
my @loops;
for my $target ([ $registry, 'postgres' ], [ $registry, 'app1' ], [ $registry, 'app2' ], [ $second, 'postgres' ], [ $second, 'app3' ])
{
	push @loops, start_sql_loop($target->[0], $insert, db => $target->[1]) for 1 .. 4;
}
finish_sql_loops(@loops);

my @lists;
my $total = 0;
for my $target ([ $registry, 'postgres' ], [ $registry, 'app1' ], [ $registry, 'app2' ], [ $second, 'postgres' ], [ $second, 'app3' ])
{
	my $ids = $target->[0]->safe_psql($target->[1], 'SELECT id FROM t');
	my $n = () = $ids =~ /\n/g;
	$n++ if $ids ne '';
	is($n, 80000, "$target->[1] on " . $target->[0]->name . ': 80,000 rows');
	$total += $n;
	push @lists, $ids;
}
is(duplicate_ids(@lists), 0, "no ID in two databases or servers ($total IDs over 5 databases of 2 servers)");

# Workers come from the servers' blocks, disjoint between the servers.
my $blocks = $registry->safe_psql('registry', q{
	SELECT count(DISTINCT life), count(*), bool_and(first_worker <= last_worker) FROM uidgen.server_lives WHERE block IS NOT NULL});
like($blocks, qr/^2\|\d+\|t$/, "the registry's view shows blocks of two server lives ($blocks)");
is($registry->safe_psql('registry', q{
	SELECT count(*) FROM uidgen.worker_block a JOIN uidgen.worker_block b
	    ON a.block < b.block AND a.first_worker <= b.last_worker AND b.first_worker <= a.last_worker}),
	'0', 'blocks never overlap');
for my $target ([ $registry, 'app1' ], [ $second, 'app3' ])
{
	my $life = (registry_status($target->[0]))[0]{life};
	my $workers = $target->[0]->safe_psql($target->[1], 'SELECT string_agg(DISTINCT uid_worker_id(id)::text, \',\') FROM t');
	is($registry->safe_psql('registry', qq{
		SELECT count(*) FROM unnest('{$workers}'::bigint[]) w
		 WHERE NOT EXISTS (SELECT FROM uidgen.worker_block b WHERE b.life = '$life' AND w BETWEEN b.first_worker AND b.last_worker)}),
		'0', "every worker of $target->[1] on " . $target->[0]->name . " ($workers) is in a block of its server life");
}

# ---- uid_origin ------------------------------------------------------------

# The agents report grants with their renewals: wait for one.
$registry->poll_query_until('registry', q{SELECT count(DISTINCT database) >= 4 FROM uidgen.worker_grant})
  or die 'grants were not reported';
my $id3 = $second->safe_psql('app3', 'SELECT max(id) FROM t');
my $origin = $registry->safe_psql('registry', "SELECT system_identifier, database, port FROM uid_origin($id3)");
my $sysid = $second->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
is($origin, "$sysid|app3|" . $second->port, 'uid_origin() at the registry names the server and database of an ID');
is($second->safe_psql('app3', "SELECT database FROM uid_origin($id3)"), 'app3',
	'and a member answers for IDs of its own server life');
is($registry->safe_psql('registry', 'SELECT uid_origin(42) IS NULL'), 't', 'an ID from before any lease: NULL');

# ---- joining ---------------------------------------------------------------

# A database that issued IDs on its own joins: its old workers are retired,
# and its new workers start above every ID it issued before.
my $late = new_uidgen_node('late', conf => [ "shared_preload_libraries = 'uidgen'" ]);
$late->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), joined bool DEFAULT false)');
$late->safe_psql('postgres', 'INSERT INTO t SELECT FROM generate_series(1, 1000)');
my $late_session = $late->background_psql('postgres');
$late_session->query_safe('INSERT INTO t SELECT FROM generate_series(1, 10)');
$late->append_conf('postgresql.conf', join("\n", registry_conf($registry)) . "\n");
$late->reload;
$late->poll_query_until('postgres', q{SELECT count(*) > 0 FROM uidgen.registry_status WHERE block IS NOT NULL})
  or die 'the late member holds no block';
$late->safe_psql('postgres', 'INSERT INTO t (joined) SELECT true FROM generate_series(1, 1000)');
$late_session->query_safe('INSERT INTO t (joined) SELECT true FROM generate_series(1, 10)');
$late_session->quit;
like($late->safe_psql('postgres', 'SELECT registry FROM uidgen.membership'), qr/dbname='?registry/,
	'a database that issued IDs before joins when the registry is set (a reload)');
is($late->safe_psql('postgres', q{
	SELECT (SELECT min(id) FROM t WHERE joined) > (SELECT max(id) FROM t WHERE NOT joined)
	   AND (SELECT min(uid_timestamp(id)) FROM t WHERE joined)
	       > (SELECT max(uid_timestamp(id)) FROM t WHERE NOT joined)}),
	't', 'every ID after joining is above every ID from before, the running session\'s too');
is($late->safe_psql('postgres', q{
	SELECT count(*) FROM t n WHERE joined AND NOT EXISTS (
	    SELECT FROM uidgen.registry_status s WHERE uid_worker_id(n.id) BETWEEN s.first_worker AND s.last_worker)}),
	'0', 'and all of them come from the server\'s leased blocks');
is($late->safe_psql('postgres', q{
	SELECT bool_and(uid_timestamp(id) > (SELECT epoch + join_floor * interval '1 ms' FROM uidgen.config, uidgen.membership))
	  FROM t WHERE joined}), 't', 'above the join floor');

$second->safe_psql('postgres', 'CREATE DATABASE fresh');
$second->safe_psql('fresh', 'CREATE EXTENSION uidgen; SELECT uid_next()');
is($second->safe_psql('fresh', 'SELECT join_floor FROM uidgen.membership'), '-1',
	'a database that never issued an ID joins with no floor');

# ---- bad settings ----------------------------------------------------------

# A member without the library preloaded.
my $nopreload = new_uidgen_node('nopreload', conf => [ (registry_conf($registry))[1] ]);
like(psql_error($nopreload, 'postgres', 'SELECT uid_next()'),
	qr/ERROR:  55000: uidgen.registry is set, but uidgen is not in shared_preload_libraries.*HINT:  Add uidgen/s,
	'no preload: 55000 with a hint');

# A malformed connection string is refused where it is set.
like(psql_error($second, 'postgres', q{ALTER SYSTEM SET uidgen.registry = 'host=x dbname'}),
	qr/ERROR:  22023: invalid uidgen.registry connection string\nDETAIL:  missing "="/, 'a malformed connection string is refused');

# A registry database without the extension, and a wrong password: class 08, no ID, the password never shown.
$registry->safe_psql('postgres', 'CREATE DATABASE empty');
$registry->safe_psql('postgres', q{CREATE ROLE member LOGIN PASSWORD 'right'});
my $bad = new_uidgen_node('bad', conf => [ registry_conf($registry, db => 'empty') ]);
my $err = psql_error($bad, 'postgres', 'SELECT uid_next()');
like($err, qr/ERROR:  08004: .*the uidgen registry ".*dbname=empty.*" failed.*no uidgen/s,
	'a registry database without the extension: 08004 naming it');
is($bad->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node'), '0', 'and nothing was claimed');

$bad->append_conf('postgresql.conf', "uidgen.registry = 'host=" . $registry->host . ' port=' . $registry->port
	. " dbname=registry user=member password=wrong'\n");
# Ahead of the test framework's "trust" lines.
my $hba = $registry->data_dir . '/pg_hba.conf';
my $hba_text = slurp_file($hba);
open my $fh, '>', $hba or die $!;
print $fh "local all member scram-sha-256\n$hba_text";
close $fh;
$registry->reload;
$bad->reload;
$bad->poll_query_until('postgres', q{SELECT error LIKE '%password%' FROM uidgen.registry_status}) or die 'no error';
$err = psql_error($bad, 'postgres', 'SELECT uid_next()');
like($err, qr/ERROR:  08001: .*uidgen registry .*failed/s, 'a wrong password: 08001');
unlike($err . $bad->safe_psql('postgres', 'SELECT registry FROM uidgen.registry_status'), qr/wrong/,
	'the password is shown nowhere');

# A registry whose max_borrow differs from the member's.
$registry->safe_psql('registry', "SELECT uid_registry_configure(max_borrow => '3s')");
$second->safe_psql('postgres', 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = \'uidgen registry agent\'');
$second->poll_query_until('postgres', q{SELECT bool_or(error LIKE '%max_borrow%') FROM uidgen.registry_status})
  or die 'max_borrow was not refused';
pass('a member whose uidgen.max_borrow differs from the registry\'s refuses it');
$registry->safe_psql('registry', "SELECT uid_registry_configure(max_borrow => '10s')");

done_testing();
