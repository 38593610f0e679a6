# pglogical both ways between two members of one registry: a table keyed
# by DEFAULT uid_next() written on both at once and replicated each way.
# Both end with the same rows, all of them: a primary key conflict between
# the peers would mean a duplicate ID, and pglogical would resolve it by
# keeping one of the rows.  uidgen's own tables are in the replication set
# too, and a peer's rows do not get applied over the local ones.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

# pglogical is Debian's package for PostgreSQL 15 (postgresql-15-pglogical);
# a server built from source has none.
my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
plan skip_all => "pglogical is not installed in this server's library directory ($pkglibdir)"
  unless -e "$pkglibdir/pglogical.so";

# From 15.19 on, PostgreSQL decodes only with the output plugins that
# output_plugin_libraries lists; before, the setting does not exist.
my @allow_output_plugin = `postgres --describe-config` =~ /^output_plugin_libraries\t/m
  ? ("output_plugin_libraries = 'pgoutput, pglogical_output'") : ();

my $registry = new_registry_node('registry');
my %node;
for my $name ('a', 'b')
{
	$node{$name} = new_member_node("node_$name", $registry,
		init => { allows_streaming => 'logical' },
		conf => [
			"shared_preload_libraries = 'pglogical,uidgen'",
			'track_commit_timestamp = on',
			@allow_output_plugin,
			'max_worker_processes = 16',
			'pglogical.conflict_log_level = warning',
		]);
}
wait_for_registry($_) for values %node;

# events is replicated; issued, local on each, records every ID its server
# inserted, whatever pglogical does with the rows afterwards.
for my $name ('a', 'b')
{
	my $dsn = $node{$name}->connstr . ' dbname=postgres';
	$node{$name}->safe_psql('postgres', qq{
		CREATE EXTENSION pglogical;
		CREATE TABLE events (id bigint PRIMARY KEY DEFAULT uid_next(), node text NOT NULL, batch int NOT NULL);
		CREATE TABLE issued (id bigint NOT NULL);
		SELECT pglogical.create_node(node_name := 'node_$name', dsn := '$dsn');
		SELECT pglogical.replication_set_add_table('default', 'events')});
}

# uidgen's tables in the replication set.
for my $node (values %node)
{
	my ($ret, $out, $err) = $node->psql('postgres',
		q{SELECT pglogical.replication_set_add_all_tables('default', ARRAY['uidgen'])});
	is($ret, 0, $node->name . ": pglogical takes schema uidgen's tables into its replication set") or diag($err);
}
is($node{a}->safe_psql('postgres', q{
	SELECT string_agg(relname, ',' ORDER BY relname) FROM pglogical.tables
	 WHERE nspname = 'uidgen' AND set_name = 'default' AND relname IN ('config', 'worker_node')}),
	'config,worker_node', 'uidgen.config and uidgen.worker_node are replicated');

# Both have issued IDs, so that both have workers of their own, before
# they subscribe to each other (synchronize_data: each copies the other's
# tables, uidgen's included; events is still empty, as pglogical wants of
# one side of a subscription both ways).
finish_pgbench(map { start_pgbench($node{$_}, 'SELECT uid_next() FROM generate_series(1, 50);',
	'--connect', '--client=2', '--transactions=10') } 'a', 'b');
my %identity = map { $_ => $node{$_}->safe_psql('postgres', 'SELECT uidgen.database_identity()') } 'a', 'b';
my %config = map { $_ => $node{$_}->safe_psql('postgres', 'SELECT c::text FROM uidgen.config c') } 'a', 'b';

for my $pair ([ 'a', 'b' ], [ 'b', 'a' ])
{
	my ($sub, $provider) = @$pair;
	my $dsn = $node{$provider}->connstr . ' dbname=postgres';
	$node{$sub}->safe_psql('postgres', qq{
		SELECT pglogical.create_subscription(subscription_name := '${sub}_from_$provider', provider_dsn := '$dsn',
			replication_sets := ARRAY['default'], synchronize_data := true, forward_origins := '{}')});
}
for my $pair ([ 'a', 'b' ], [ 'b', 'a' ])
{
	my ($sub, $provider) = @$pair;
	ok(poll_for($node{$sub}, 180, qq{
		SELECT status = 'replicating' FROM pglogical.show_subscription_status('${sub}_from_$provider')})
	  && poll_for($node{$sub}, 180, q{SELECT bool_and(sync_status = 'r') FROM pglogical.local_sync_status}),
		"node $sub replicates from node $provider, every table synchronized")
	  or diag($node{$sub}->safe_psql('postgres', q{
		SELECT status FROM pglogical.show_subscription_status();
		SELECT sync_nspname, sync_relname, sync_status FROM pglogical.local_sync_status}));
}

# Both write at once: long sessions and a session a transaction on each.
my $insert = q{WITH i AS (INSERT INTO events (node, batch) SELECT '%s', %d FROM generate_series(1, %d) RETURNING id)
	INSERT INTO issued SELECT id FROM i;};
my @jobs = map {
	(start_pgbench($node{$_}, sprintf($insert, $_, 2, 100), '--client=2', '--transactions=50'),
	 start_pgbench($node{$_}, sprintf($insert, $_, 2, 50), '--connect', '--client=2', '--transactions=25'))
} 'a', 'b';
finish_pgbench(@jobs);

# Synchronized: each waits until the other has confirmed its current WAL.
$_->safe_psql('postgres', 'SELECT pglogical.wait_slot_confirm_lsn(NULL, NULL)') for values %node;

my $per_node = 2 * 50 * 100 + 2 * 25 * 50;
my $total = 2 * $per_node;
my %issued = map { $_ => $node{$_}->safe_psql('postgres', 'SELECT id FROM issued') } 'a', 'b';
for my $name ('a', 'b')
{
	my @ids = split /\n/, $issued{$name};
	is(scalar @ids, $per_node, "node $name inserted $per_node rows");
}
is(duplicate_ids($issued{a}, $issued{b}), 0, "no duplicate among the $total IDs both nodes issued");
for my $name ('a', 'b')
{
	is($node{$name}->safe_psql('postgres', q{SELECT count(*), count(DISTINCT id) FROM events}), "$total|$total",
		"node $name has all $total rows");
	is($node{$name}->safe_psql('postgres', q{
		SELECT string_agg(node || '=' || n, ',' ORDER BY node) FROM (SELECT node, count(*) n FROM events GROUP BY node) c}),
		"a=$per_node,b=$per_node", "node $name: $per_node rows of each node, none lost to a conflict");
	is($node{$name}->safe_psql('postgres', qq{SELECT count(*) FROM issued i LEFT JOIN events e ON e.id = i.id AND e.node = '$name'
		WHERE e.id IS NULL}), '0', "node $name: every ID it issued is its own row of events");
}
is($node{a}->safe_psql('postgres', q{SELECT md5(string_agg(format('%s %s %s', id, node, batch), ',' ORDER BY id)) FROM events}),
	$node{b}->safe_psql('postgres', q{SELECT md5(string_agg(format('%s %s %s', id, node, batch), ',' ORDER BY id)) FROM events}),
	'both nodes have the same rows');
ok(!grep({ $_->log_contains(qr/CONFLICT: remote INSERT/) } values %node),
	'pglogical logged no insert conflict');

# uidgen's tables: each keeps only what it wrote itself.
for my $name ('a', 'b')
{
	my $node = $node{$name};
	is($node->safe_psql('postgres', 'SELECT c::text FROM uidgen.config c'), $config{$name},
		"node $name: uidgen.config is unchanged");
	is($node->safe_psql('postgres', "SELECT count(*) FROM uidgen.worker_node WHERE origin <> '$identity{$name}'"), '0',
		"node $name: uidgen.worker_node has only workers it claimed")
	  or diag(worker_rows($node));
	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT DISTINCT uid_worker_id(id) w FROM issued) i
		 WHERE w NOT IN (SELECT id FROM uidgen.worker_node)}), '0',
		"node $name: every worker of its IDs is in its uidgen.worker_node");
}
is(duplicate_ids(map { $_->safe_psql('postgres', 'SELECT id FROM uidgen.worker_node') } values %node), 0,
	'no worker id is in both nodes\' uidgen.worker_node');

$_->stop for values %node;
$registry->stop;
done_testing();
