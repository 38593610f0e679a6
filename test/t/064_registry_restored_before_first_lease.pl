# A registry restored from a backup taken before its first lease (or failed
# over to a standby that had not replayed it) has an empty block table, as
# a new registry has, but its members may hold leases it forgot.  It must
# quarantine as any registry that may have lost state does, not lease block
# 1 again at once.
#
# Before: the quarantine began only when the block table had a row, so the
# restored registry leased m1's block 1 to m2 at once, and both issued
# under worker 1 at the same time.
#
# Worker bits 2 and blocks of one worker: blocks 1 to 3.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => '10s', max_borrow => '1s',
	init => { allows_streaming => 1 }, conf => \@borrow);
$registry->safe_psql('registry', 'SELECT uid_configure(worker_bits => 2, seq_bits => 9)');
$registry->safe_psql('registry', 'SELECT uid_registry_configure(block_size => 1)');

# A restart before the first lease (to preload uidgen, say) quarantines the
# registry, which cannot tell it from a restore; the owner's
# uid_registry_start_fleet() lifts that while nothing was leased.
$registry->restart;
is($registry->safe_psql('registry', 'SELECT quarantined FROM uidgen.registry_check_state()'), 't',
	'a registry restarted before its first lease holds leases back');
$registry->safe_psql('registry', 'SELECT uid_registry_start_fleet()');
is($registry->safe_psql('registry', 'SELECT quarantined FROM uidgen.registry_check_state()'), 'f',
	'uid_registry_start_fleet() lifts that while nothing was leased');
$registry->backup('empty');
note('the backup has no lease');

my $m1 = new_member_node('m1', $registry, conf => \@borrow);
wait_for_registry($m1);
$m1->safe_psql('postgres', 'CREATE TABLE ids (id bigint)');
$m1->safe_psql('postgres', 'INSERT INTO ids SELECT uid_next() FROM generate_series(1, 100)');
is($m1->safe_psql('postgres', 'SELECT min(uid_worker_id(id)) FROM ids'), '1', 'm1 issues under worker 1');

# The registry is replaced by the backup, reached through the registry's
# connection string from here on.
# m1's agent may re-assert its blocks there at once (it renews every
# second or two): every block the restored registry shows is m1's.
replace_registry_with_backup($registry, 'empty');
my $m1_life = $m1->safe_psql('postgres', 'SELECT DISTINCT life FROM uidgen.registry_status');
is($registry->safe_psql('registry', "SELECT count(*) FROM uidgen.worker_block WHERE life <> '$m1_life'"), '0',
	'the restored registry has no lease but those m1 re-asserts');

# m2 asks at once, and both write for 8 s, going on past errors.
my $m2 = new_member_node('m2', $registry, conf => \@borrow);
$m2->safe_psql('postgres', 'CREATE TABLE ids (id bigint)');
my @writers = (start_timed_writer($m1, 8), start_timed_writer($m2, 8));
finish_sql_loops(@writers);
ok($registry->safe_psql('registry', 'SELECT quarantine_until IS NOT NULL FROM uidgen.registry_state') eq 't',
	'the restored registry quarantined itself: it may have lost leases');
ok($m2->poll_query_until('postgres', q{SELECT count(*) > 0 FROM uidgen.registry_status WHERE lease_left_ms > 0}),
	'm2 is leased a block once the quarantine is over');
$m2->safe_psql('postgres', 'INSERT INTO ids SELECT uid_next() FROM generate_series(1, 100)');
isnt($m2->safe_psql('postgres', 'SELECT min(uid_worker_id(id)) FROM ids'), '1',
	"m2 is not given worker 1: m1 re-asserted block 1, which the restore forgot");
# A lease whose ceiling, as its holder has it, the registry's clock has
# passed lapsed, and is not renewed even though the registry's row still
# names it: a restore may have forgotten the newer lease of its block (a
# holder that missed its lapse, suspended, would otherwise get it back).
my ($life, $block, $lease, $ceiling) = split /\|/, $registry->safe_psql('registry', q{
	SELECT life, block, lease_id, ceiling_delta FROM uidgen.worker_block WHERE block = 1});
my $renew = "SELECT (SELECT count(*) FROM uidgen.registry_renew(1, l.life, l.system_identifier, l.timeline, l.host, l.port, '{}', "
  . "'{$block}', '{-1}', '{}', '{}', '{$lease}', '{}', ARRAY[%s]::bigint[])) FROM uidgen.server_life l WHERE l.life = '$life'";
is($registry->safe_psql('registry', sprintf($renew, 'uidgen.registry_delta(now()) - 1')), '0',
	'a renewal whose ceiling is behind the registry\'s clock is refused');
is($registry->safe_psql('registry', sprintf($renew, $ceiling)), '1', 'one whose ceiling is ahead is renewed');
my $m1_ids = $m1->safe_psql('postgres', 'SELECT id FROM ids');
my $m2_ids = $m2->safe_psql('postgres', 'SELECT id FROM ids');
is(duplicate_ids($m1_ids, $m2_ids), 0, 'no ID was issued twice');

done_testing();
