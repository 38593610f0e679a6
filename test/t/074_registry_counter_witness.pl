# A copy of the registry that PostgreSQL cannot tell from the original
# (issue 32, item 7): a file-level copy of the stopped registry server keeps
# the system identifier and the database OID, and once its own restart's
# quarantine is over it looks like the original as it was when copied, as a
# registry reverted to a memory snapshot does.  Members are the witness:
# every reply of registry_rules() carries the registry's counter (a
# sequence, which only a revert sets back), each member sends the highest
# it saw, and a registry that receives one above its own has gone back: it
# quarantines, so that members re-assert what it forgot before it leases.
#
# Here the original goes on after the copy and leases block 3 to m2, which
# issues under it; then the original fails and the copy takes its place:
# m1 is re-pointed at it first, a new member, m3, joins it, and m2 follows.
# Before: nothing told the copy it had gone back, so it leased block 3,
# which it never heard of, to m3 at once, while m2 still issued under its
# lease of it from the original: m2 and m3 issued the same IDs.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use UidgenTest;

my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => '10s', max_borrow => '1s', conf => \@borrow);
$registry->safe_psql('registry', 'SELECT uid_registry_configure(block_size => 1)');

my $m1 = new_member_node('m1', $registry, conf => \@borrow);
$m1->safe_psql('postgres', 'CREATE TABLE ids (id bigint)');
$m1->safe_psql('postgres', 'INSERT INTO ids SELECT uid_next() FROM generate_series(1, 100)');

# The copy: the registry's data directory, stopped, copied file by file.
$registry->stop('fast');
$registry->backup_fs_cold('cold');
$registry->start;
ok($registry->poll_query_until('registry', 'SELECT uid_registry_quarantine_until() IS NULL'),
	"the original's restart quarantine passes");

# The original goes on: it leases to m2 what the copy never heard of, and
# its counter rises past the copy's with every round of its members.
my $m2 = new_member_node('m2', $registry, conf => \@borrow);
$m2->safe_psql('postgres', 'CREATE TABLE ids (id bigint)');
$m2->safe_psql('postgres', 'INSERT INTO ids SELECT uid_next() FROM generate_series(1, 100)');
my $m2_blocks = held_blocks($m2);
my $counter = $registry->safe_psql('registry', 'SELECT last_value FROM uidgen.registry_counter');
note("m2 holds block(s) $m2_blocks; the original's counter is at $counter");
# m3 joins later; its server is ready now.
my $m3 = new_uidgen_node('m3', conf => [ "shared_preload_libraries = 'uidgen'", @borrow ]);
$m3->safe_psql('postgres', 'CREATE TABLE ids (id bigint)');

# The copy starts as a second server.  Its restart is noticed and its
# quarantine passes (someone looked at it), as for a registry reverted to a
# memory snapshot, which has no restart to notice at all.
my $copy = PostgreSQL::Test::Cluster->new('copy');
$copy->init_from_backup($registry, 'cold');
$copy->start;
is($copy->safe_psql('registry', 'SELECT registry_id FROM uidgen.registry_identity()'),
	$registry->safe_psql('registry', 'SELECT registry_id FROM uidgen.registry_identity'),
	'the copy keeps the identity: nothing tells it from the original');
ok($copy->poll_query_until('registry', 'SELECT uid_registry_quarantine_until() IS NULL'),
	"the copy's restart quarantine passes");
my $copy_counter = $copy->safe_psql('registry', 'SELECT last_value FROM uidgen.registry_counter');
cmp_ok($copy_counter, '<', $counter, "the copy's counter is behind the original's");
is($copy->safe_psql('registry', "SELECT count(*) FROM uidgen.worker_block WHERE block IN ($m2_blocks)"), '0',
	"the copy does not know m2's blocks");

# m2 writes from now on, through what follows.
my @loops = (start_timed_writer($m2, 30, until => 'SELECT count(*) > 1000 FROM ids'));

# The original fails and the copy takes its place: m1 is re-pointed first.
$registry->stop('immediate');
my $line = (registry_conf($copy))[1];
$m1->append_conf('postgresql.conf', "$line\n");
$m1->reload;

# m1's first call notices it: the copy holds new leases back, and m1 says so.
my $port = $copy->port;
my $deadline = time + 30;
my $held = '';
while (time < $deadline && $held eq '')
{
	$held = $copy->safe_psql('registry', 'SELECT uid_registry_quarantine_until()');
	select(undef, undef, undef, 0.1);
}
isnt($held, '', 'the copy quarantines at the first call of a member that saw the original go on');

# m3 joins the copy and writes; m2 follows at once.  Before the checks of
# m1 below, which a loaded machine can make longer than what m2's leases
# from the original (10 s from their last renewal) have left: m2 must
# still hold them when it reaches the copy, to re-assert them there.
$m3->append_conf('postgresql.conf', "$line\n");
$m3->reload;
push @loops, start_timed_writer($m3, 30);
$m2->append_conf('postgresql.conf', "$line\n");
$m2->reload;

ok( poll_for($m1, 30, "SELECT coalesce(bool_or(registry LIKE '%port=$port%' AND quarantine_until IS NOT NULL), false) "
		. 'FROM uidgen.registry_status'),
	"m1 works with the copy, and its registry_status shows the quarantine");
like(slurp_file($m1->logfile), qr/uidgen registry \S+ has gone back: its counter is \d+, not above the \d+ this server saw/,
	'm1 logs that the registry went back');
ok($copy->poll_query_until('registry', "SELECT last_value >= $counter FROM uidgen.registry_counter"),
	"the copy's counter moves above what the members saw");
finish_sql_loops(@loops);

my @lists = map { $_->safe_psql('postgres', 'SELECT id FROM ids') } ($m1, $m2, $m3);
my $total = 0;
$total += () = $_ =~ /^\d/mg for @lists;
note('IDs of m2: ' . $m2->safe_psql('postgres', 'SELECT count(*) FROM ids') . ', of m3: '
	  . $m3->safe_psql('postgres', 'SELECT count(*) FROM ids'));
cmp_ok($m3->safe_psql('postgres', 'SELECT count(*) FROM ids'), '>', 0, 'm3 issued under the copy');
note('blocks at the copy: ' . $copy->safe_psql('registry', q{
	SELECT string_agg(b.block || ' ' || l.port, ', ' ORDER BY b.block)
	  FROM uidgen.worker_block b JOIN uidgen.server_life l USING (life)}));
my $m3_port = $m3->port;
is( $copy->safe_psql('registry', qq{
		SELECT count(*) FROM uidgen.worker_block b JOIN uidgen.server_life l USING (life)
		 WHERE b.block IN ($m2_blocks) AND l.port = $m3_port}),
	'0', "the copy leased none of m2's blocks to m3: m2 re-asserted them in the quarantine");
is(duplicate_ids(@lists), 0, "no duplicate among the IDs of m1, m2 and m3 ($total)");

done_testing();
