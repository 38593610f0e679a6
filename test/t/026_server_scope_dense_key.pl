# uidgen.scope = 'server' under concurrent batch writers whose demand runs
# the shared cursor ahead of the clock: eight clients inserting 100 rows a
# transaction leave the primary key as full as a sequence's.  The IDs come
# out in one order only while every backend issues from the cursor: a
# private worker's IDs of a unit sort apart from the cursor's (the worker
# bits sit above the sequence), so inserts meet the key in two places and
# split its pages in the middle.  The cursor borrows time first.
#
# The database's sequence field has 6 bits, 64 IDs a millisecond, so that
# the clients outrun one worker on any machine (the default's 512 only on a
# fast one), and 48,000 rows, so that the cursor cannot run more than 750 ms
# ahead however fast they are.  Before, the cursor lent a private worker to
# the first backend whose chunks ran two units ahead.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('server_scope_dense_key', scope => 'server');
$node->safe_psql('postgres', q{
	SELECT uid_configure(41, 13, 6, '2026-01-01+00', 'millisecond');
	CREATE EXTENSION pgstattuple;
	CREATE TABLE dense (id bigint PRIMARY KEY DEFAULT uid_next(), n int NOT NULL,
		issued_at timestamptz NOT NULL DEFAULT clock_timestamp())});

my ($clients, $transactions) = (8, 60);
my $job = start_pgbench($node, 'INSERT INTO dense (n) SELECT g FROM generate_series(1, 100) g;',
	'--client', $clients, '--jobs', 2, '--transactions', $transactions);
finish_pgbench($job);
my $g = server_generator($node);
my $rows = $clients * $transactions * 100;
is($node->safe_psql('postgres', 'SELECT count(*) FROM dense'), $rows, "all $rows rows are in");
my ($ahead_median, $ahead_max) = split /\|/, $node->safe_psql('postgres', q{
	SELECT extract(epoch FROM percentile_disc(0.5) WITHIN GROUP (ORDER BY uid_timestamp(id) - issued_at)) * 1000,
		extract(epoch FROM max(uid_timestamp(id) - issued_at)) * 1000 FROM dense});
cmp_ok($ahead_max, '>', 2, "the clients outran the cursor: IDs up to $ahead_max ms ahead of the clock "
	. "(median $ahead_median ms)");

# The mechanism: every ID from the cursor, under the keeper's worker.
is($node->safe_psql('postgres', 'SELECT count(DISTINCT uid_worker_id(id)) FROM dense'), '1',
	"every ID carries the keeper's worker $g->{worker}");
is($g->{private_workers}, '0', 'the keeper lent no private worker');

my ($density, $leaves) = split /\|/, $node->safe_psql('postgres', q{
	SELECT avg_leaf_density, leaf_pages FROM pgstatindex('dense_pkey')});
cmp_ok($density, '>=', 88, "the primary key's leaves are $density % full ($leaves pages; at least 88 %)");
note('generator: ' . join(', ', map { "$_ = $g->{$_}" } sort keys %$g));

# Demand far beyond the cursor still gets a private worker: a bulk session
# whose chunks run more than a second ahead borrows one.
my $bulk = $node->background_psql('postgres');
my ($borrowed, $keeper) = borrow_private_worker($node, $bulk, 'SELECT count(uid_next()) FROM generate_series(1, 100000)');
isnt($borrowed, $keeper->{worker}, "a bulk session borrowed private worker $borrowed");
$bulk->quit;

done_testing();
