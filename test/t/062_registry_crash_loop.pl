# A server in a crash loop must not hold the fleet's blocks for a lease TTL
# each: every restart is a new server life, and the blocks of the lives
# that ended stay out of the pool until their leases run out.  A life's
# leases last as long as the life has lived (at least a tenth of the TTL
# and 30 seconds, at most the TTL), so the blocks of short lives come back
# soon, and renewals lengthen the leases of a life that keeps running.
#
# Before: every lease lasted the TTL (5 minutes here); with two blocks per
# system identifier, the third life of a crashing server leased nothing
# for five minutes.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => '5min', max_borrow => '1s', conf => \@borrow);
$registry->safe_psql('registry',
	"SELECT uid_registry_configure(block_size => 1, max_clock_skew => '1s', max_system_blocks => 2)");
my $m1 = new_member_node('m1', $registry, conf => \@borrow);
wait_for_registry($m1);

# What is left of the lease of block, at the registry, in seconds (renewals
# of a young life come every 5 s, each for 30 s).
sub lease_left
{
	my ($block) = @_;
	return $registry->safe_psql('registry', qq{
		SELECT extract(epoch FROM lease_expires_at - now()) FROM uidgen.worker_block WHERE block = $block});
}

my $left = lease_left(1);
ok($left > 0 && $left <= 30, "a new life's lease lasts 30 s, not the TTL of 5 min ($left s left)");
my ($first) = grep { $_->{block} ne '' && $_->{block} ne 'null' } registry_status($m1);
ok(defined $first && $first->{lease_left_ms} > 0 && $first->{lease_left_ms} <= 30_000,
	'the member counts the lease it was given, not the TTL (' . ($first->{lease_left_ms} // 'no block') . ' ms left)');

# The server crashes twice: each life leases a block in reserve.
$m1->stop('immediate');
$m1->start;
wait_for_registry($m1);
is($m1->safe_psql('postgres', 'SELECT string_agg(block::text, \',\') FROM uidgen.registry_status'),
	'2', 'the second life leases block 2');
$m1->stop('immediate');
$m1->start;

# The third life finds its system's two blocks still held, and is refused
# with the limit's error until the first life's block is reusable.
ok( $m1->poll_query_until('postgres',
		q{SELECT error LIKE '%hold 2 worker blocks, their limit%' FROM uidgen.registry_status}),
	'the third life is refused at max_system_blocks');
my $first_ceiling = $registry->safe_psql('registry', 'SELECT ceiling_delta FROM uidgen.worker_block WHERE block = 1');
my $refused_at = time;
ok(poll_for($m1, 120,
		q{SELECT count(*) > 0 FROM uidgen.registry_status WHERE block IS NOT NULL AND lease_left_ms > 0}),
	'the third life leases a block within two minutes, not after the TTL');
note('leased after ' . (time - $refused_at) . ' s');
is($m1->safe_psql('postgres', 'SELECT string_agg(block::text, \',\') FROM uidgen.registry_status'),
	'1', "it is block 1 again, the first life's");
cmp_ok( $registry->safe_psql('registry', q{
		SELECT h.floor_delta FROM uidgen.worker_block b JOIN uidgen.worker_block_lease h USING (block, lease_id)
		 WHERE b.block = 1}),
	'>=', $first_ceiling, "the new lease of block 1 starts above the first life's ceiling");
$m1->safe_psql('postgres', 'CREATE EXTENSION IF NOT EXISTS uidgen');
like($m1->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/, 'the third life issues');

# A life that has run for an hour is leased for the whole TTL at its next
# renewal (due after a sixth of its 30 s lease).
my $life = $m1->safe_psql('postgres', 'SELECT life FROM uidgen.registry_status LIMIT 1');
$registry->safe_psql('registry',
	"UPDATE uidgen.server_life SET joined_at = now() - interval '1 hour' WHERE life = '$life'");
ok( $registry->poll_query_until('registry',
		q{SELECT lease_expires_at > now() + interval '4 min' FROM uidgen.worker_block WHERE block = 1}),
	'renewals lengthen the lease of a life that has lived');
ok( $m1->poll_query_until('postgres',
		q{SELECT bool_and(lease_left_ms > 240000) FROM uidgen.registry_status WHERE block IS NOT NULL}),
	'and the member counts the longer lease');

done_testing();
