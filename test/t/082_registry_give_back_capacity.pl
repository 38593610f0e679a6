# Review of issue 34's give-back (8b866a2): a block given back is not
# renewed, but the registry counts it towards max_system_blocks until it is
# reusable (its lease's end plus max_borrow and the clock bound), while its
# workers are gone from the member at once.  Before the give-back, the
# dropped databases' workers went to the next databases (reusable grants);
# now a member at its system's limit that drops databases and creates as
# many has fewer workers than it had, and a new database's uid_next() fails
# until the given-back block lapses at the registry.
#
# A registry that lets a system hold 2 blocks of 2 workers: two databases
# take the first block's workers, the agent leases the second, both
# databases are dropped (the first block is given back), and three new
# databases issue one after another.  Expected: all three issue (4 workers,
# as before the give-back).  Measured: how long the third fails.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use UidgenTest;

my $registry = new_registry_node('registry', member => 0, lease_ttl => '20s');
$registry->safe_psql('registry', 'SELECT uid_registry_configure(max_system_blocks => 2, block_size => 2)');
$registry->append_conf('postgresql.conf', join("\n", registry_conf($registry)) . "\n");
$registry->reload;
wait_for_registry($registry);

$registry->safe_psql('postgres', 'CREATE DATABASE tenant_template');
$registry->safe_psql('tenant_template', 'CREATE EXTENSION uidgen');

my $held_sql = q{SELECT count(DISTINCT block) FROM uidgen.registry_status WHERE block IS NOT NULL AND lease_left_ms > 0};
my (@ids, @failed);

# Issues 10 IDs in a new database db; returns psql's exit code.
sub issue_in
{
	my ($db) = @_;
	my ($out, $err) = ('', '');
	my $ret = $registry->psql($db, 'SELECT uid_next() FROM generate_series(1, 10)', stdout => \$out, stderr => \$err);
	if ($ret == 0) { push @ids, split /\n/, $out; }
	else { push @failed, "$db: $err"; }
	return $ret;
}

for my $i (1 .. 2)
{
	$registry->safe_psql('postgres', "CREATE DATABASE old_$i TEMPLATE tenant_template");
	is(issue_in("old_$i"), 0, "database old_$i issues");
}
ok(poll_for($registry, 30, "SELECT ($held_sql) = 2"), 'its workers granted, the agent leases the second block')
  or diag($registry->safe_psql('postgres', 'SELECT block, workers_granted, lease_left_ms, error FROM uidgen.registry_status'));

$registry->safe_psql('postgres', "DROP DATABASE old_$_") for 1 .. 2;
ok(poll_for($registry, 30, "SELECT ($held_sql) = 1"), 'both dropped: the member gives the first block back');
my $counted = $registry->safe_psql('registry',
	q{SELECT count(*) FROM uidgen.worker_block WHERE reusable_after > now()});
diag("blocks the registry counts towards the system's limit of 2 right after the give-back: $counted");
diag('the registry shows: ' . $registry->safe_psql('registry',
	q{SELECT string_agg(block || ' ' || status || ' reusable in ' || round(extract(epoch FROM reusable_after - now())) || ' s', '; ' ORDER BY block) FROM uidgen.worker_block}));

# Three new databases, one after another, each alive (its grant stays).
my $started;
for my $i (1 .. 3)
{
	$registry->safe_psql('postgres', "CREATE DATABASE new_$i TEMPLATE tenant_template");
	my $t0 = time;
	my $ret = issue_in("new_$i");
	is($ret, 0, "new database new_$i issues, as before the give-back (4 workers for 3 databases)")
	  or diag(sprintf('after %.1f s: %s', time - $t0, $failed[-1]));
	$started //= $t0 if $ret != 0;
}

if (defined $started)
{
	# How long until new_3 issues again: the given-back block lapses at the registry.
	my $retries = 0;
	$retries++ until issue_in('new_3') == 0 || time - $started > 120;
	diag(sprintf('new_3 issued again %.1f s after its first failure, %d failed statements meanwhile', time - $started, $retries));
}

is(duplicate_ids(\@ids), 0, 'no ID issued twice among ' . scalar(@ids));
diag("failed statements: " . scalar(@failed));
diag("first failure: $failed[0]") if @failed;

$registry->stop;
done_testing();
