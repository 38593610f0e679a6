# A registry restored from a backup has forgotten the leases granted after
# the backup.  A block the backup shows as leased (to m1) and that went to
# another member since (m2, which issued under it and is gone now) must
# not be leased again above m1's ceiling only: m2's IDs lie above it.  The
# quarantine ends when every lost ceiling is below the registry's clock
# (INV-16, ASM-3 of docs/design.md), so the next holder's floor must be at the
# registry's clock as well as above the recorded ceiling.
#
# Before: the floor was the recorded ceiling (m1's), below every ID m2
# issued, so a member whose clock then stepped back into m2's time issued
# IDs m2 had issued.  The step is uidgen.debug_clock_offset (libfaketime
# does not reach the agent on PostgreSQL 15), and the test shows it reached
# m3's backend (the times of its IDs, or its error).
#
# With worker_bits 1 and blocks of one worker the fleet has a single block.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use UidgenTest;

my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => '2s', max_borrow => '1s',
	init => { allows_streaming => 1 }, conf => \@borrow);
$registry->safe_psql('registry', 'SELECT uid_configure(worker_bits => 1, seq_bits => 9)');
$registry->safe_psql('registry', 'SELECT uid_registry_configure(block_size => 1)');

my $m1 = new_member_node('m1', $registry, conf => \@borrow);
wait_for_registry($m1);
$registry->backup('old');
note('the backup shows block 1 leased to m1');
# Read after the backup: at least the ceiling the backup records (m1 renews).
my ($m1_life, $m1_ceiling) = split /\|/,
  $registry->safe_psql('registry', 'SELECT life, ceiling_delta FROM uidgen.worker_block WHERE block = 1');
$m1->stop('immediate');

# m2 is leased block 1 once m1's lease has lapsed, writes for 6 s, and is
# gone.  It goes on past a batch that fails: a renewal late on a loaded
# machine lets a lease of 2 s lapse for a moment.
my $m2 = new_member_node('m2', $registry, conf => \@borrow);
$m2->safe_psql('postgres', 'CREATE TABLE ids (id bigint, at timestamptz DEFAULT clock_timestamp())');
poll_for($m2, 60, q{SELECT count(*) > 0 FROM uidgen.registry_status WHERE block = 1 AND lease_left_ms > 0})
  or die 'm2 was not leased block 1';
$m2->safe_psql('postgres', q{
	DO $$ DECLARE t0 timestamptz := clock_timestamp();
	BEGIN
		WHILE clock_timestamp() < t0 + interval '6 s' LOOP
			BEGIN
				INSERT INTO ids (id) SELECT uid_next() FROM generate_series(1, 200);
			EXCEPTION WHEN OTHERS THEN
				PERFORM pg_sleep(0.05);
			END;
			COMMIT;
			PERFORM pg_sleep(0.005);
		END LOOP;
	END $$});
my $m2_ids = $m2->safe_psql('postgres', 'SELECT id FROM ids');
# An ID's time unit (its delta) is id >> 10 under worker_bits 1, seq_bits 9.
my ($m2_first_ms, $m2_last_delta) = split /\|/, $m2->safe_psql('postgres',
	q{SELECT (extract(epoch FROM uid_timestamp(min(id))) * 1000)::bigint, max(id >> 10) FROM ids});
cmp_ok($m2->safe_psql('postgres', 'SELECT count(*) FROM ids'), '>', 1000, 'm2 issued under block 1');
cmp_ok($m2_last_delta, '>', $m1_ceiling, "m2's IDs lie above m1's ceiling, which the backup records");
$m2->stop('immediate');

# The registry is replaced by the backup, reached through the registry's
# connection string from here on.
replace_registry_with_backup($registry, 'old');
is( $registry->safe_psql('registry',
		"SELECT life = '$m1_life' AND ceiling_delta <= $m1_ceiling FROM uidgen.worker_block WHERE block = 1"),
	't', "the restored registry knows only of m1's lease of block 1");

# m3 is leased block 1 once the quarantine is over.
my $m3 = new_member_node('m3', $registry, conf => \@borrow);
$m3->safe_psql('postgres', 'CREATE TABLE ids (id bigint, at timestamptz DEFAULT clock_timestamp())');
poll_for($m3, 60, q{SELECT count(*) > 0 FROM uidgen.registry_status WHERE block = 1 AND lease_left_ms > 0})
  or die 'm3 was not leased block 1';
my $floor = $registry->safe_psql('registry', q{
	SELECT h.floor_delta FROM uidgen.worker_block b JOIN uidgen.worker_block_lease h USING (block, lease_id)
	 WHERE b.block = 1});
cmp_ok($floor, '>=', $m2_last_delta, "m3's lease starts above every ID m2 issued under the lease the registry lost");

# m3's clock steps back into the time m2 wrote in, just after m3 got its
# lease: its backend issues no ID at or below its lease's floor.
my $s3 = $m3->background_psql('postgres', on_error_stop => 0);
$s3->query_safe('SELECT 1');
my $offset_ms = int($m2_first_ms + 1000 - time * 1000);
$m3->append_conf('postgresql.conf', "uidgen.debug_clock_offset = '${offset_ms}ms'\n");
$m3->reload;
my $m3_errors = '';
my $until = time + 4;
while (time < $until)
{
	my (undef, $ret) = $s3->query('INSERT INTO ids (id) SELECT uid_next() FROM generate_series(1, 200)');
	if ($ret != 0)
	{
		$m3_errors .= join('', $s3->{stderr} =~ /(ERROR:.*\n)/g);
		$s3->{stderr} = '';
	}
	select(undef, undef, undef, 0.005);
}
$s3->quit;
my $behind = $m3->safe_psql('postgres',
	q{SELECT coalesce(min(extract(epoch FROM uid_timestamp(id) - at)), 0)::int FROM ids});
note("m3's IDs, at most ${behind} s from when it stored them; its errors:\n$m3_errors");
ok($behind < -2 || $m3_errors =~ /clock|floor|moved backwards|ceiling|lease/,
	"the step reached m3's backend (IDs ${behind} s behind, or an error)");
my $m3_ids = $m3->safe_psql('postgres', 'SELECT id FROM ids');
is($m3->safe_psql('postgres', "SELECT count(*) FROM ids WHERE id >> 10 <= $floor"), '0',
	"m3 issued nothing at or below its lease's floor");
is(duplicate_ids($m2_ids, $m3_ids), 0, 'no ID of m2 was issued again by m3');

done_testing();
