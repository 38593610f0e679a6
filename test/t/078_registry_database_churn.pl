# Database churn under a registry, scope backend: databases created, used and
# dropped one after another never run out of the server's grants or blocks,
# however many there were since the server started.  A dropped database's
# workers go to the next databases, each above the last unit the dropped
# database's sessions noted at their exit; no ID is issued twice.
#
# Always: a registry that lets a system hold 2 blocks of 4 workers (8
# grants), and 20 databases.  With UIDGEN_STRESS (make test-stress): the
# default rules, 16 blocks of 8 (128 grants), and 260 databases, about four
# minutes here (each DROP DATABASE waits for a checkpoint).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

# With UIDGEN_CHURN=N (make test-churn: 1,000): the default rules and N databases.
my $stress = $ENV{UIDGEN_STRESS} || $ENV{UIDGEN_CHURN};
my ($blocks, $block_size) = $stress ? (16, 8) : (2, 4);
my $churned = $ENV{UIDGEN_CHURN} || ($stress ? 2 * $blocks * $block_size + 4 : 20);

my $registry = new_registry_node('registry', member => 0, conf => [ 'max_connections = 100' ]);
$registry->safe_psql('registry',
	"SELECT uid_registry_configure(max_system_blocks => $blocks, block_size => $block_size)");
$registry->append_conf('postgresql.conf', join("\n", registry_conf($registry)) . "\n");
$registry->reload;
wait_for_registry($registry);

$registry->safe_psql('postgres', 'CREATE DATABASE churn_template');
$registry->safe_psql('churn_template', 'CREATE EXTENSION uidgen');

# Creates, uses and drops $churned databases in turn; returns how many
# issued, and the first error.
my @ids;
sub churn
{
	my ($prefix) = @_;
	my ($issued, $first_error) = (0, '');
	my $started = time;
	for my $i (1 .. $churned)
	{
		$registry->safe_psql('postgres', "CREATE DATABASE ${prefix}_$i TEMPLATE churn_template");
		my ($out, $err);
		my $ret = $registry->psql("${prefix}_$i", 'SELECT uid_next() FROM generate_series(1, 3)',
			stdout => \$out, stderr => \$err);
		if ($ret == 0)
		{
			push @ids, split /\n/, $out;
			$issued++;
		}
		else
		{
			$first_error ||= "database $i: $err";
		}
		# WITH (FORCE): in scope server the database's keeper is connected to it.
		$registry->safe_psql('postgres', "DROP DATABASE ${prefix}_$i WITH (FORCE)");
	}
	diag("$churned databases created, used and dropped in " . (time - $started) . ' s');
	return ($issued, $first_error);
}

my $grants = $blocks * $block_size;
my ($issued, $first_error) = churn('churn');
is($issued, $churned, "scope backend: $churned databases (grants for $grants) created, used and dropped: each issued")
  or diag("the first error: $first_error");
is(scalar(@ids), 3 * $issued, 'three IDs each');
is(duplicate_ids(\@ids), 0, 'no ID issued twice among ' . scalar(@ids));

# Scope server: each database's keeper holds its worker and notes its last
# unit at its exit, when DROP DATABASE ... WITH (FORCE) ends it.
$registry->append_conf('postgresql.conf', "uidgen.scope = 'server'\n");
$registry->reload;
($issued, $first_error) = churn('kept');
is($issued, $churned, "scope server: $churned more databases created, used and dropped: each issued")
  or diag("the first error: $first_error");
is(duplicate_ids(\@ids), 0, 'no ID issued twice among all ' . scalar(@ids) . ' of both scopes');

my $workers = $registry->safe_psql('postgres',
	'SELECT count(DISTINCT uid_worker_id(id)) FROM unnest(\'{' . join(',', @ids) . '}\'::bigint[]) id');
cmp_ok($workers, '<=', $grants, "from $workers workers: those of dropped databases went to others");

my $held = $registry->safe_psql('postgres', 'SELECT count(DISTINCT block) FROM uidgen.registry_status WHERE block IS NOT NULL');
cmp_ok($held, '<=', $blocks, "the server holds $held blocks, within its limit of $blocks");
is($registry->safe_psql('postgres', q{SELECT agent_status FROM uidgen.registry_status LIMIT 1}), 'ready',
	'its agent is ready');

$registry->stop;
done_testing();
