# Native logical replication between two members of one registry: a FOR
# ALL TABLES publication on one member, a subscription on the other.  User
# rows keyed by DEFAULT uid_next() arrive; uidgen's own tables (schema
# uidgen), which the publication carries too, are neither overwritten nor
# extended by the publisher's rows (they skip rows applied by logical
# replication), so the subscriber keeps its own workers and layout; and the
# subscription does not get stuck on them: its initial copy finishes, it
# counts no error, and later rows still arrive.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry');
my $pub = new_member_node('publisher', $registry, init => { allows_streaming => 'logical' });
my $sub = new_member_node('subscriber', $registry);
wait_for_registry($_) for $pub, $sub;

# The same schema on both: events written on the publisher, sub_events on
# the subscriber (published by nobody: the subscriber has no publication).
for my $node ($pub, $sub)
{
	$node->safe_psql('postgres', q{
		CREATE TABLE events (id bigint PRIMARY KEY DEFAULT uid_next(), batch int NOT NULL);
		CREATE TABLE sub_events (id bigint PRIMARY KEY DEFAULT uid_next(), batch int NOT NULL)});
}

# Both members issue IDs before the subscription exists, many sessions
# each (--connect: a session, so a worker, a transaction), so that both
# have uidgen rows of their own: the publisher's are what the publication
# will carry.
finish_pgbench(
	start_pgbench($pub, 'INSERT INTO events (batch) SELECT 1 FROM generate_series(1, 50);',
		'--connect', '--client=4', '--transactions=10'),
	start_pgbench($sub, 'INSERT INTO sub_events (batch) SELECT 1 FROM generate_series(1, 50);',
		'--connect', '--client=4', '--transactions=10'));

# Every table of schema uidgen, and its rows as text (sorted).
my @uidgen_tables = split /\n/, $sub->safe_psql('postgres', q{
	SELECT c.oid::regclass FROM pg_class c WHERE c.relnamespace = 'uidgen'::regnamespace AND c.relkind IN ('r', 'p')
	 ORDER BY 1});
note("uidgen's tables: @uidgen_tables");
sub rows_of
{
	my ($node, $table) = @_;
	return { map { $_ => 1 } split /\n/, $node->safe_psql('postgres', "SELECT t::text FROM $table t") };
}
my %sub_before = map { $_ => rows_of($sub, $_) } @uidgen_tables;
my $sub_config = $sub->safe_psql('postgres', 'SELECT c::text FROM uidgen.config c');
my $sub_identity = $sub->safe_psql('postgres', 'SELECT uidgen.database_identity()');

$pub->safe_psql('postgres', 'CREATE PUBLICATION p FOR ALL TABLES');
is($pub->safe_psql('postgres', q{
	SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_publication_tables
	 WHERE pubname = 'p' AND schemaname = 'uidgen' AND tablename IN ('config', 'worker_node')}),
	'config,worker_node', "the publication carries uidgen.config and uidgen.worker_node");
cmp_ok($pub->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node'), '>=', 1,
	'the publisher has workers of its own to carry');

my $pub_connstr = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION s CONNECTION '$pub_connstr' PUBLICATION p");

# The initial copy of every table, uidgen's included, finishes.
ok(poll_for($sub, 180, q{
	SELECT count(*) > 0 AND bool_and(srsubstate IN ('r', 's')) FROM pg_subscription_rel}),
	'the initial copy of every published table finishes')
  or diag($sub->safe_psql('postgres', 'SELECT srrelid::regclass, srsubstate FROM pg_subscription_rel'));

# Both write at once while the subscription applies: the publisher from
# short sessions (each claims a worker and releases it: inserts and updates
# of its uidgen.worker_node for the subscription to apply) and from long
# ones, the subscriber into its own table.
finish_pgbench(
	start_pgbench($pub, 'INSERT INTO events (batch) SELECT 2 FROM generate_series(1, 50);',
		'--connect', '--client=4', '--transactions=25'),
	start_pgbench($pub, 'INSERT INTO events (batch) SELECT 2 FROM generate_series(1, 100);',
		'--client=2', '--transactions=50'),
	start_pgbench($sub, 'INSERT INTO sub_events (batch) SELECT 2 FROM generate_series(1, 50);',
		'--connect', '--client=2', '--transactions=50'));
$pub->wait_for_catchup('s');

my $expected = 4 * 10 * 50 + 4 * 25 * 50 + 2 * 50 * 100;
is($pub->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM events'), "$expected|$expected",
	"the publisher has its $expected events, each ID once");
is($sub->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM events'), "$expected|$expected",
	"the subscriber has all $expected of them");
is($sub->safe_psql('postgres', 'SELECT md5(string_agg(id::text, \',\' ORDER BY id)) FROM events'),
	$pub->safe_psql('postgres', 'SELECT md5(string_agg(id::text, \',\' ORDER BY id)) FROM events'),
	'the same IDs on both');
my $sub_count = 4 * 10 * 50 + 2 * 50 * 50;
is($sub->safe_psql('postgres', 'SELECT count(*) FROM sub_events'), $sub_count,
	"the subscriber's own $sub_count rows are there");
is(duplicate_ids($pub->safe_psql('postgres', 'SELECT id FROM events'),
		$sub->safe_psql('postgres', 'SELECT id FROM sub_events')), 0,
	'no ID of the publisher is an ID of the subscriber');

# uidgen's tables on the subscriber: nothing of the publisher's.
my $pub_identity = $pub->safe_psql('postgres', 'SELECT uidgen.database_identity()');
isnt($pub_identity, $sub_identity, 'the members have different database identities');
is($sub->safe_psql('postgres', 'SELECT c::text FROM uidgen.config c'), $sub_config,
	"the subscriber's uidgen.config is unchanged");
is($sub->safe_psql('postgres', "SELECT count(*) FROM uidgen.worker_node WHERE origin <> '$sub_identity'"), '0',
	"the subscriber's uidgen.worker_node has only workers it claimed itself")
  or diag(worker_rows($sub));
my $pub_workers = $pub->safe_psql('postgres', 'SELECT id FROM uidgen.worker_node');
my $sub_workers = $sub->safe_psql('postgres', 'SELECT id FROM uidgen.worker_node');
is(duplicate_ids($pub_workers, $sub_workers), 0, 'no worker id is in both members\' uidgen.worker_node');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node WHERE id IN (SELECT DISTINCT uid_worker_id(id) FROM events)'),
	'0', "none of the workers of the publisher's events is in the subscriber's uidgen.worker_node");
cmp_ok($sub->safe_psql('postgres', 'SELECT count(DISTINCT uid_worker_id(id)) FROM sub_events'), '>=', 2,
	'the subscriber used workers of its own');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM (SELECT DISTINCT uid_worker_id(id) AS w FROM sub_events) s
	 WHERE w NOT IN (SELECT id FROM uidgen.worker_node)'), '0',
	"and its uidgen.worker_node still has every one of them");

# Generic, for every table of schema uidgen: no row of the publisher's that
# the subscriber did not have before the subscription.  (The publisher has
# such rows in uidgen.config, uidgen.worker_node and uidgen.membership at
# least: its own identity, workers and joining.)
for my $table (@uidgen_tables)
{
	my $pub_rows = rows_of($pub, $table);
	my $sub_rows = rows_of($sub, $table);
	my $pub_only = grep { !$sub_before{$table}{$_} } keys %$pub_rows;
	cmp_ok($pub_only, '>', 0, "$table: the publisher has rows of its own to carry")
	  if $table =~ /^uidgen\.(config|worker_node|membership)$/;
	my @leaked = grep { $pub_rows->{$_} && !$sub_before{$table}{$_} } sort keys %$sub_rows;
	is(scalar @leaked, 0, "$table: no row of the publisher's on the subscriber")
	  or diag(join("\n", @leaked[0 .. ($#leaked < 4 ? $#leaked : 4)]));
}

# The subscription is not stuck: no error counted, and rows written now
# still arrive.
is($sub->safe_psql('postgres', q{SELECT apply_error_count, sync_error_count FROM pg_stat_subscription_stats WHERE subname = 's'}),
	'0|0', 'the subscription counted no apply or sync error');
is($sub->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_subscription WHERE subname = 's' AND pid IS NOT NULL AND relid IS NULL}),
	'1', 'its apply worker runs');
$pub->safe_psql('postgres', 'INSERT INTO events (batch) SELECT 3 FROM generate_series(1, 1000)');
$pub->wait_for_catchup('s');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM events WHERE batch = 3'), '1000',
	'rows written later still arrive');
is($sub->safe_psql('postgres', 'SELECT c::text FROM uidgen.config c'), $sub_config,
	"the subscriber's uidgen.config is still unchanged");
my $pub_worker_list = join(',', split /\n/, $pub_workers) || 'NULL';
is($sub->safe_psql('postgres', "SELECT count(*) FROM uidgen.worker_node WHERE id IN ($pub_worker_list)"),
	'0', "still none of the publisher's workers on the subscriber");

$sub->stop;
$pub->stop;
$registry->stop;
done_testing();
