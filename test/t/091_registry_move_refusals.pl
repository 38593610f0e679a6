# What moving a fleet refuses (issue 32, INV-20): a member moves only to a
# registry that imported the one it joined, whichever way it reaches it (a
# reload of uidgen.registry, or the same text reaching another registry, as
# a DNS switch does); an import of another layout, of the registry's own
# export, of something else or after the registry leased; an export of a
# registry that may have lost leases; and a sealed registry leases no new
# block and raises no ceiling.  Each refusal changes nothing: the member
# goes on issuing under the registry it has.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry', member => 0);
$registry->safe_psql('postgres', 'CREATE DATABASE other');
$registry->safe_psql('other', "CREATE EXTENSION uidgen; SELECT uid_registry_start_fleet()");

my $m1 = new_member_node('m1', $registry);
wait_for_registry($m1);
$m1->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next())');
$m1->safe_psql('postgres', 'INSERT INTO t SELECT FROM generate_series(1, 1000)');

sub identity_of
{
	my ($db) = @_;
	return $registry->safe_psql($db, 'SELECT registry_id FROM uidgen.registry_identity');
}
my $r1 = identity_of('registry');
my $r2 = identity_of('other');

# ---- a reload to a registry that imported nothing ---------------------------

my $line = (registry_conf($registry, db => 'other'))[1];
$m1->append_conf('postgresql.conf', "$line\n");
$m1->reload;
ok( $m1->poll_query_until('postgres', q{
		SELECT count(*) > 0 FROM uidgen.registry_status WHERE pending_error LIKE '%has not imported%'}),
	'a reload to a registry that did not import the one joined stays pending');
like($m1->safe_psql('postgres', 'SELECT pending_error FROM uidgen.registry_status LIMIT 1'),
	qr/uidgen registry \Q$r2\E has not imported uidgen registry \Q$r1\E.*uid_registry_export\(importer\).*uid_registry_import.*old_registry_lost => true/,
	'pending_error names both identities and the functions to run');
$m1->safe_psql('postgres', 'INSERT INTO t SELECT FROM generate_series(1, 1000)');
pass('the member goes on issuing under the registry it joined');
like(psql_error($m1, 'postgres', 'SELECT uid_registry_move()'),
	qr/ERROR:  55000: the uidgen registry agent has not switched to the new uidgen.registry.*DETAIL:  uidgen registry \Q$r2\E has not imported/s,
	'uid_registry_move() refuses it (55000), with the reason');
is($m1->safe_psql('postgres', 'SELECT registry_id FROM uidgen.membership'), $r1, 'and the database stays where it was');
is($registry->safe_psql('other', 'SELECT count(*) FROM uidgen.worker_block_lease'), '0',
	'the registry that imported nothing leased nothing to it');

# Back to the registry it joined.
$line = (registry_conf($registry))[1];
$m1->append_conf('postgresql.conf', "$line\n");
$m1->reload;
$m1->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM uidgen.registry_status WHERE coalesce(pending_registry, '') = ''})
  or die 'm1 does not go back to its registry';

# ---- imports refused ----------------------------------------------------------

# A registry of another layout.
$registry->safe_psql('postgres', 'CREATE DATABASE narrow');
$registry->safe_psql('narrow', "CREATE EXTENSION uidgen; SELECT uid_configure(worker_bits => 8, seq_bits => 14)");
like(psql_error($registry, 'narrow', "SELECT uid_registry_export('$r2')"),
	qr/ERROR:  55000: cannot export uidgen registry .* while it holds new leases back/,
	'a new registry in its wait cannot be exported: it may replace a lost one whose ceilings it does not know');
$registry->safe_psql('narrow', 'SELECT uid_registry_start_fleet()');
my $narrow = $registry->safe_psql('narrow', "SELECT uid_registry_export('$r2')");
like(psql_error($registry, 'other', "SELECT uid_registry_import('$narrow')"),
	qr/ERROR:  55000: uidgen registry [-0-9a-f]+ has another layout than this registry/,
	'an export of another layout is refused (55000)');
like(psql_error($registry, 'narrow', "SELECT uid_registry_import('$narrow')"),
	qr/ERROR:  22023: uidgen registry [-0-9a-f]+ cannot import its own export/, 'a registry\'s own export is refused');
like(psql_error($registry, 'other', q{SELECT uid_registry_import('{"registry_id": 1}')}),
	qr/ERROR:  22023: the document is not an export of a uidgen registry/, 'so is a document of another kind');
is($registry->safe_psql('other', 'SELECT count(*) FROM uidgen.registry_predecessor'), '0',
	'and none of them recorded anything');

# ---- a sealed registry ----------------------------------------------------------

my $ceilings = 'SELECT max(ceiling_delta) FROM uidgen.worker_block';
my $export = $registry->safe_psql('registry', "SELECT uid_registry_export('$r2')");
my $sealed = $registry->safe_psql('registry', 'SELECT sealed_ceiling FROM uidgen.registry_state');
is($registry->safe_psql('registry', $ceilings), $sealed, 'the sealed ceiling is the highest ceiling granted');
like($registry->safe_psql('registry', 'SELECT sealed_at FROM uidgen.registry_identity()'), qr/\d/,
	'uidgen.registry_identity() shows when it was sealed');

# The member renews, without a higher ceiling: it issues up to it (its
# renewals stop once the registry's clock nears that ceiling, a lease and
# max_borrow after the export at most: so, right after the export).
my $renewed = $registry->safe_psql('registry', 'SELECT max(lease_expires_at) FROM uidgen.worker_block');
$registry->poll_query_until('registry', "SELECT max(lease_expires_at) > '$renewed' FROM uidgen.worker_block")
  or die 'm1 renews nothing at the sealed registry';
is($registry->safe_psql('registry', $ceilings), $sealed, 'a renewal at a sealed registry raises no ceiling');
$m1->safe_psql('postgres', 'INSERT INTO t SELECT FROM generate_series(1, 1000)');
pass('and the member goes on issuing under its lease');

# A new member cannot lease there.
my $m2 = new_member_node('m2', $registry);
ok( $m2->poll_query_until('postgres', q{
		SELECT count(*) > 0 FROM uidgen.registry_status WHERE error LIKE '%is sealed: it leases no more worker blocks%'}),
	'a sealed registry leases no new block');
like(psql_error($m2, 'postgres', 'SELECT uid_next()'), qr/ERROR:  08/, 'so a new member issues nothing (class 08)');

# An import after the registry leased.
(my $quoted = $export) =~ s/'/''/g;
$registry->safe_psql('postgres', 'CREATE DATABASE busy');
$registry->safe_psql('busy', "CREATE EXTENSION uidgen; SELECT uid_registry_start_fleet()");
my $m3 = new_member_node('m3', $registry, conf => [ (registry_conf($registry, db => 'busy'))[1] ]);
wait_for_registry($m3);
like(psql_error($registry, 'busy', "SELECT uid_registry_import('$quoted')"),
	qr/ERROR:  55000: uidgen registry [-0-9a-f]+ has leased worker blocks already/,
	'a registry that has leased imports nothing (55000)');

# ---- the same text reaching another registry (a DNS switch) -------------------

# Database registry becomes other's: the same uidgen.registry reaches a
# registry that imported nothing, then one that imported the old one.
sub swap_names
{
	my ($away, $in) = @_;
	$registry->safe_psql('postgres', qq{
		SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname IN ('registry', '$in')});
	$registry->safe_psql('postgres', "ALTER DATABASE registry RENAME TO $away");
	$registry->safe_psql('postgres', "ALTER DATABASE $in RENAME TO registry");
}
swap_names('registry_old', 'other');
ok( $m1->poll_query_until('postgres', qq{
		SELECT count(*) > 0 FROM uidgen.registry_status
		 WHERE error LIKE '%is uidgen registry $r2, not $r1%uid_registry_move(old_registry_lost => true))'}),
	'the member refuses the other registry behind the same text, and says how to move, in full');
like(psql_error($m1, 'postgres', 'SELECT uid_registry_move()'),
	qr/ERROR:  55000: uidgen registry \Q$r2\E has not imported uidgen registry \Q$r1\E, which this server joined.*HINT:  Run SELECT uid_registry_export\(importer\) at the old registry and SELECT uid_registry_import\(...\) with its result at the new one, then move again; if the old registry is gone for good, run SELECT uid_registry_move\(old_registry_lost => true\)\./s,
	'uid_registry_move() refuses a registry that did not import the one joined (55000), with the way to do it');
is($m1->safe_psql('postgres', 'SELECT registry_id FROM uidgen.membership'), $r1, 'the database stays where it was');

# With the import, the same move goes through.
is($registry->safe_psql('registry', "SELECT uid_registry_import('$quoted')"), $r1, 'the new registry imports the old');
is($m1->safe_psql('postgres', 'SELECT uid_registry_move()'), $r2, 'then the member moves');
my $max_before = $m1->safe_psql('postgres', 'SELECT max(id) FROM t');
$m1->safe_psql('postgres', 'INSERT INTO t SELECT FROM generate_series(1, 1000)');
is($m1->safe_psql('postgres', "SELECT count(*) FROM t WHERE id > $max_before"), '1000',
	'and issues above everything it issued before');
is($registry->safe_psql('registry', qq{
	SELECT count(*) FROM uidgen.worker_block_lease l
	  JOIN jsonb_to_recordset('$quoted'::jsonb -> 'blocks') AS x(block bigint, ceiling_delta bigint) USING (block)
	 WHERE l.floor_delta < x.ceiling_delta}), '0', 'above the ceilings imported');

done_testing();
