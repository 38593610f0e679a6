# A block whose workers all went to databases that were dropped since goes
# back to the registry (issue: a server with a database per tenant kept
# every block it ever leased for its whole life).  A member grants six
# workers from blocks of two to six databases, which are then dropped: its
# agent gives back every such block but one within a round, renews them no
# more, and once they are reusable another member leases one of them, above
# everything the first member issued under its workers.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => '6s', max_borrow => '1s', conf => \@borrow);
$registry->safe_psql('registry', 'SELECT uid_registry_configure(block_size => 2)');
my $m1 = new_member_node('m1', $registry, conf => \@borrow);
wait_for_registry($m1);

$m1->safe_psql('postgres', 'CREATE DATABASE tenant_template');
$m1->safe_psql('tenant_template', 'CREATE EXTENSION uidgen');
my @ids;
for my $i (1 .. 6)
{
	$m1->safe_psql('postgres', "CREATE DATABASE tenant_$i TEMPLATE tenant_template");
	push @ids, split /\n/, $m1->safe_psql("tenant_$i", 'SELECT uid_next() FROM generate_series(1, 200)');
}
my $held_sql = q{SELECT count(DISTINCT block) FROM uidgen.registry_status WHERE block IS NOT NULL AND lease_left_ms > 0};
my $before = $m1->safe_psql('postgres', $held_sql);
cmp_ok($before, '>=', 3, "six databases took workers from $before blocks of two");
my $granted = $m1->safe_psql('postgres', q{
	SELECT string_agg(DISTINCT block::text, ',') FROM uidgen.registry_status WHERE workers_granted > 0});

$m1->safe_psql('postgres', "DROP DATABASE tenant_$_") for 1 .. 6;
ok(poll_for($m1, 30, "SELECT ($held_sql) = 1"), 'once they are dropped, the member keeps one block')
  or diag($m1->safe_psql('postgres', 'SELECT block, workers_granted, lease_left_ms FROM uidgen.registry_status'));
my $given = $m1->safe_psql('postgres', qq{
	SELECT string_agg(b::text, ',' ORDER BY b) FROM unnest('{$granted}'::bigint[]) b
	 WHERE b NOT IN (SELECT block FROM uidgen.registry_status WHERE block IS NOT NULL AND lease_left_ms > 0)});
my $ngiven = () = $given =~ /\d+/g;
cmp_ok($ngiven, '>=', 2, "it gave back blocks $given");
like(slurp_file($m1->logfile), qr/gave back worker block \d+: each database its workers went to was dropped/,
	'and logged each');

# The registry renews them no more: they lapse, and become reusable.
ok($registry->poll_query_until('registry', qq{
	SELECT bool_and(reusable_after < now()) FROM uidgen.worker_block WHERE block IN ($given)}),
	'the registry lets them lapse: renewed no more');

my %ceiling = map { split /:/ } split /\n/, $registry->safe_psql('registry',
	"SELECT block || ':' || ceiling_delta FROM uidgen.worker_block WHERE block IN ($given)");

# Another member now leases one of them (a reusable block comes before a new number).
my $m2 = new_member_node('m2', $registry, conf => \@borrow);
wait_for_registry($m2);
my $taken = $m2->safe_psql('postgres',
	"SELECT min(block) FROM uidgen.registry_status WHERE block IN ($given)");
isnt($taken, '', "another member leased given-back block $taken");
my $floor = $registry->safe_psql('registry', qq{
	SELECT l.floor_delta FROM uidgen.worker_block_lease l JOIN uidgen.worker_block b USING (block, lease_id)
	 WHERE b.block = '$taken'});
cmp_ok($floor, '>=', $ceiling{$taken} // 0,
	"its lease starts at unit $floor, at or above the given-back lease's ceiling $ceiling{$taken}");

# Its sessions issue under the given-back workers, above all the first member issued.
push @ids, split /\n/, $m2->safe_psql('postgres', 'SELECT uid_next() FROM generate_series(1, 200)') for 1 .. 4;
is(duplicate_ids(\@ids), 0, 'no ID issued twice among ' . scalar(@ids) . ' of both members');

$m1->stop;
$m2->stop;
$registry->stop;
done_testing();
