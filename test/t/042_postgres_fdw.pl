# postgres_fdw over members of one registry: a coordinator whose
# partitioned table has its partitions on two shards (foreign tables), and a
# plain foreign table, all with DEFAULT uid_next(), while the shards insert
# into the same tables directly (their columns DEFAULT uid_next() too).
# Through a foreign table the coordinator evaluates the default and
# postgres_fdw sends the value, so rows of one shard carry IDs of two
# servers: no ID may repeat over the union, and each row's worker is one
# its writer's server claimed.  One shard uses uidgen.scope = server.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry');
my $coord = new_member_node('coordinator', $registry);
my %shard = (
	1 => new_member_node('shard1', $registry),
	2 => new_member_node('shard2', $registry, scope => 'server'));
wait_for_registry($_) for $coord, values %shard;

for my $n (1, 2)
{
	$shard{$n}->safe_psql('postgres',
		'CREATE TABLE events (id bigint PRIMARY KEY DEFAULT uid_next(), shard int NOT NULL, via text NOT NULL)');
}

$coord->safe_psql('postgres', 'CREATE EXTENSION postgres_fdw');
for my $n (1, 2)
{
	my ($host, $port) = ($shard{$n}->host, $shard{$n}->port);
	$coord->safe_psql('postgres', qq{
		CREATE SERVER shard$n FOREIGN DATA WRAPPER postgres_fdw
			OPTIONS (host '$host', port '$port', dbname 'postgres', batch_size '50');
		CREATE USER MAPPING FOR CURRENT_USER SERVER shard$n});
}
$coord->safe_psql('postgres', q{
	CREATE TABLE events (id bigint NOT NULL DEFAULT uid_next(), shard int NOT NULL, via text NOT NULL)
		PARTITION BY LIST (shard);
	CREATE FOREIGN TABLE events_1 PARTITION OF events FOR VALUES IN (1) SERVER shard1 OPTIONS (table_name 'events');
	CREATE FOREIGN TABLE events_2 PARTITION OF events FOR VALUES IN (2) SERVER shard2 OPTIONS (table_name 'events');
	CREATE FOREIGN TABLE shard1_events (id bigint DEFAULT uid_next(), shard int NOT NULL, via text NOT NULL)
		SERVER shard1 OPTIONS (table_name 'events');
	CREATE FOREIGN TABLE shard1_events_no_default (id bigint, shard int NOT NULL, via text NOT NULL)
		SERVER shard1 OPTIONS (table_name 'events')});

# Where the default is evaluated: a foreign table without one sends NULL,
# which the shard refuses; its own DEFAULT uid_next() does not apply.
like(psql_error($coord, 'postgres', q{INSERT INTO shard1_events_no_default (shard, via) VALUES (1, 'none')}),
	qr/null value in column "id"/, "the shard's default does not apply to a row sent by postgres_fdw");
my $one = $coord->safe_psql('postgres', q{INSERT INTO events (shard, via) VALUES (1, 'one') RETURNING id});
is($shard{1}->safe_psql('postgres', "SELECT id FROM events WHERE via = 'one'"), $one,
	'the ID the coordinator returned is the one the shard stored');
is($coord->safe_psql('postgres', "SELECT uid_worker_id($one) IN (SELECT id FROM uidgen.worker_node)"), 't',
	"and it is of a worker the coordinator claimed");

# All at once: the coordinator through the partitioned table (both shards,
# long sessions) and through the plain foreign table (a session a
# transaction), each shard directly (a session a transaction).
my @jobs = (
	start_pgbench($coord, q{INSERT INTO events (shard, via) SELECT 1 + i % 2, 'partition' FROM generate_series(1, 100) i;},
		'--client=2', '--transactions=50'),
	start_pgbench($coord, q{INSERT INTO shard1_events (shard, via) SELECT 1, 'foreign' FROM generate_series(1, 20);},
		'--connect', '--client=2', '--transactions=25'),
	map {
		start_pgbench($shard{$_}, "INSERT INTO events (shard, via) SELECT $_, 'direct' FROM generate_series(1, 50);",
			'--connect', '--client=2', '--transactions=25')
	} 1, 2);
finish_pgbench(@jobs);

my %expected = (
	1 => { partition => 5000, foreign => 1000, direct => 2500, one => 1 },
	2 => { partition => 5000, direct => 2500 });
for my $n (1, 2)
{
	my $counts = join ',', map { "$_=$expected{$n}{$_}" } sort keys %{ $expected{$n} };
	is($shard{$n}->safe_psql('postgres', q{SELECT string_agg(via || '=' || n, ',' ORDER BY via)
		FROM (SELECT via, count(*) n FROM events GROUP BY via) c}), $counts, "shard $n has $counts");
}
is($coord->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM events'), '16001|16001',
	'the coordinator sees 16001 rows through the partitioned table, each ID once');

my @ids = map { $shard{$_}->safe_psql('postgres', 'SELECT id FROM events') } 1, 2;
is(duplicate_ids(@ids), 0, 'no ID repeats over the union of both shards (16001 IDs)');

# Each row's worker is one its writer's server claimed: the coordinator's
# for rows it sent, the shard's for its direct rows; no worker is claimed by
# two servers.
my %workers = map { $_->name => $_->safe_psql('postgres', 'SELECT id FROM uidgen.worker_node') } $coord, values %shard;
is(duplicate_ids(values %workers), 0, 'no worker id is in two servers\' uidgen.worker_node');
my $coord_workers = join(',', split /\n/, $workers{coordinator}) || 'NULL';
for my $n (1, 2)
{
	my $shard_workers = join(',', split /\n/, $workers{"shard$n"}) || 'NULL';
	is($shard{$n}->safe_psql('postgres', qq{
		SELECT count(*) FROM events
		 WHERE CASE via WHEN 'direct' THEN uid_worker_id(id) NOT IN ($shard_workers)
		                ELSE uid_worker_id(id) NOT IN ($coord_workers) END}), '0',
		"shard $n: rows sent by the coordinator carry its workers, direct rows the shard's");
}

# The registry agrees: the system of the server each ID came from.
for my $n (1, 2)
{
	my $system = $shard{$n}->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
	my $coord_system = $coord->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
	my $sample = $shard{$n}->safe_psql('postgres', q{
		SELECT string_agg(format('(%s, %L)', id, via), ',') FROM (
			SELECT DISTINCT ON (uid_worker_id(id), via) id, via FROM events ORDER BY uid_worker_id(id), via, id) s});
	is($registry->safe_psql('registry', qq{
		SELECT count(*) FROM (VALUES $sample) s(id, via)
		 WHERE (uid_origin(id)).system_identifier IS DISTINCT FROM
		       CASE via WHEN 'direct' THEN '$system' ELSE '$coord_system' END}), '0',
		"shard $n: uid_origin() at the registry names the server that issued each worker's first ID");
}

$_->stop for $coord, values %shard;
$registry->stop;
done_testing();
