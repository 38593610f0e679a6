# A copy of the registry database that PostgreSQL can tell from the
# original (issue 32, item 7): a template copy has another database OID, a
# dump restored into another server another system identifier and OID, and
# pg_upgrade another system identifier.  Such a copy is another registry:
# it draws a new identity, with no predecessors and no fleet started, at
# the first call that notices it, and quarantines.  A member pinned to the
# original then refuses the copy, which has not imported it, with the way to
# move (an export and an import, or a lost-registry move).
#
# Before: the copy kept the original's identity and only quarantined, so
# m1, re-pointed at the template copy by a reload, worked with it and, once
# its quarantine was over, leased there blocks the original leases to m2.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => '3s', max_borrow => '1s', conf => \@borrow);
# Blocks of one worker: the copy has two blocks to lease again.
$registry->safe_psql('registry', 'SELECT uid_registry_configure(block_size => 1)');

# The registry took over another one's fleet: a member of that one may move
# to it, and to nothing else.
$registry->safe_psql('postgres', 'CREATE DATABASE reg0');
$registry->safe_psql('reg0', 'CREATE EXTENSION uidgen; SELECT uid_registry_start_fleet()');
$registry->safe_psql('reg0', 'SELECT uid_registry_configure(block_size => 1)');
my $id = $registry->safe_psql('registry', 'SELECT registry_id FROM uidgen.registry_identity');
my $reg0_id = $registry->safe_psql('reg0', 'SELECT registry_id FROM uidgen.registry_identity');
(my $export = $registry->safe_psql('reg0', "SELECT uid_registry_export('$id')")) =~ s/'/''/g;
$registry->safe_psql('registry', "SELECT uid_registry_import('$export')");

my $m1 = new_member_node('m1', $registry, conf => \@borrow);
my $m2 = new_member_node('m2', $registry, conf => \@borrow);
for my $m ($m1, $m2)
{
	$m->safe_psql('postgres', 'CREATE DATABASE db2');
	for my $db ('postgres', 'db2')
	{
		$m->safe_psql($db, 'CREATE EXTENSION IF NOT EXISTS uidgen');
		$m->safe_psql($db, 'CREATE TABLE ids (id bigint)');
		$m->safe_psql($db, 'INSERT INTO ids SELECT uid_next() FROM generate_series(1, 100)');
	}
}

# ---- a template copy: another database OID ------------------------------------

# CREATE DATABASE ... TEMPLATE needs the template without sessions: the
# members' agents are kept out for the copy.
$registry->safe_psql('postgres', 'ALTER DATABASE registry ALLOW_CONNECTIONS false');
$registry->safe_psql('postgres', "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'registry'");
$registry->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = 'registry'")
  or die 'sessions of the registry database remain';
$registry->safe_psql('postgres', 'CREATE DATABASE reg2 TEMPLATE registry');
$registry->safe_psql('postgres', 'ALTER DATABASE registry ALLOW_CONNECTIONS true');
$registry->safe_psql('postgres', 'ALTER DATABASE reg2 ALLOW_CONNECTIONS true');

# m1 follows a connection-string change to the copy (a reload, as a DNS
# switch would do) and opens three databases that need workers of blocks it
# does not hold; m2 stays with the original.
my $line = (registry_conf($registry, db => 'reg2'))[1];
$m1->append_conf('postgresql.conf', "$line\n");
$m1->reload;
my @m1_dbs = ('postgres', 'db2', 'db3', 'db4', 'db5');
for my $db (@m1_dbs[2 .. 4])
{
	$m1->safe_psql('postgres', "CREATE DATABASE $db");
	$m1->safe_psql($db, 'CREATE EXTENSION uidgen');
	$m1->safe_psql($db, 'CREATE TABLE ids (id bigint)');
}

# The copy notices at the first call, m1's (or this one).
my $copy_id = $registry->safe_psql('reg2', 'SELECT registry_id FROM uidgen.registry_identity()');
isnt($copy_id, $id, 'the template copy draws a new identity');
is($registry->safe_psql('reg2', 'SELECT registry_id FROM uidgen.registry_identity()'), $copy_id,
	'once: the next call sees the same one');
is($registry->safe_psql('registry', 'SELECT registry_id FROM uidgen.registry_identity()'), $id,
	'the original keeps its identity');
is( $registry->safe_psql('reg2', q{
		SELECT cardinality(predecessors) = 0 AND fleet_started_at IS NULL AND created_at > now() - interval '1 min'
		  FROM uidgen.registry_identity()}),
	't', 'the copy imported nothing and started no fleet: it is new');
is($registry->safe_psql('registry', 'SELECT predecessors FROM uidgen.registry_identity()'), "{$reg0_id}",
	'the original keeps what it imported');
# The quarantine as recorded, which outlives its end (its 5 s can pass
# between two statements of a loaded machine).
my $quarantined_from_new = q{SELECT s.quarantine_until >= i.created_at + uidgen.registry_holder_bound()
	FROM uidgen.registry_state s, uidgen.registry_identity i};
is($registry->safe_psql('reg2', $quarantined_from_new), 't',
	'the copy quarantines, for registry_holder_bound() from its new identity');

# m1 refuses the copy (and goes on with the original), naming the ways to
# move there.
ok( poll_for($m1, 60, q{SELECT coalesce(bool_or(pending_error LIKE '%which this server joined%'
		                                        OR error LIKE '%which this server joined%'), false)
		FROM uidgen.registry_status}),
	'm1 refuses the copy')
  or diag($m1->safe_psql('postgres', 'SELECT agent_status, error, pending_error FROM uidgen.registry_status'));
my $error = $m1->safe_psql('postgres', q{SELECT coalesce(nullif(pending_error, ''), error) FROM uidgen.registry_status LIMIT 1});
like($error, qr/uid_registry_export\(importer\)/, 'the refusal names an export');
like($error, qr/uid_registry_import/, 'and an import');
like($error, qr/old_registry_lost => true/, 'and a lost-registry move');
note("m1: $error");

# Both members write while the copy's quarantine passes and after: m2
# under the original, m1 under whatever registry it works with.
my @runs = ((map { [ $m1, $_ ] } @m1_dbs), (map { [ $m2, $_ ] } ('postgres', 'db2')));
my @loops = map { start_timed_writer($_->[0], 14, db => $_->[1]) } @runs;
finish_sql_loops(@loops);
my @lists = map { $_->[0]->safe_psql($_->[1], 'SELECT id FROM ids') } @runs;
my $total = 0;
$total += () = $_ =~ /^\d/mg for @lists;
note('IDs per database: ' . join(', ', map { $_->[0]->name . "/$_->[1] " . $_->[0]->safe_psql($_->[1], 'SELECT count(*) FROM ids') } @runs));
cmp_ok($m2->safe_psql('postgres', 'SELECT count(*) FROM ids'), '>', 1000, 'm2 issued under the original');
is(duplicate_ids(@lists), 0, "no duplicate among m1's and m2's IDs ($total)");

# ---- a dump restored into another server: both differ ---------------------------

my $restored = new_registry_node('restored', member => 0);
$restored->safe_psql('postgres', 'CREATE DATABASE copy');
my $dump = $registry->basedir . '/registry.dump';
command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $registry->connstr('registry') ], 'the registry is dumped');
command_ok([ 'pg_restore', '-d', $restored->connstr('copy'), $dump ], 'and restored into another server');
my $restored_id = $restored->safe_psql('copy', 'SELECT registry_id FROM uidgen.registry_identity()');
isnt($restored_id, $id, 'the restored dump is another registry');
is( $restored->safe_psql('copy', 'SELECT cardinality(predecessors) = 0 AND fleet_started_at IS NULL '
		. 'FROM uidgen.registry_identity()'),
	't', 'it imported nothing and started no fleet');
is($restored->safe_psql('copy', $quarantined_from_new), 't', 'and it quarantines');

done_testing();
