# Load: many connections, long-lived and churning, through uid_next(),
# uid_next_batch() and INSERT ... DEFAULT uid_next(), committing and rolling
# back.  The load client checks every ID it receives; the table's primary key
# checks every committed one.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('load');
$node->safe_psql('postgres', 'CREATE TABLE load_t (id bigint PRIMARY KEY DEFAULT uid_next())');

sub check_run
{
	my ($name, $code, $figures) = @_;
	is($code, 0, "$name: the client found nothing wrong");
	is($figures->{duplicates}, '0', "$name: no duplicate among $figures->{ids} IDs");
	is($figures->{non_positive} + $figures->{non_increasing}, 0, "$name: all positive and increasing per session");
}

# Steady: 8 connections x 200,000 IDs.
my ($code, $f) = run_load($node, '--mode', 'steady', '--method', 'next', '--connections', '8', '--ids', '200000');
check_run('steady', $code, $f);
is($f->{ids}, '1600000', 'steady: 1,600,000 IDs');
diag("steady: $f->{ids} IDs at $f->{ids_per_second} IDs/s over $f->{distinct_workers} workers");

# Steady through the other two ways of getting IDs, into a unique table.
($code, $f) = run_load($node, '--mode', 'steady', '--method', 'mixed', '--connections', '8', '--ids', '20000',
	'--table', 'load_t');
check_run('mixed methods', $code, $f);

# Commit and rollback: rolled-back IDs count too.
($code, $f) = run_load($node, '--mode', 'rollback', '--method', 'mixed', '--connections', '8', '--ids', '20000',
	'--fetch', '200', '--table', 'load_t');
check_run('rollback', $code, $f);
cmp_ok($f->{rolled_back_ids}, '>', 0, "rollback: $f->{rolled_back_ids} IDs were rolled back");
is($node->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM load_t'), 't', 'table: unique');

# Churn: 2,000 connections that each take 20 IDs and disconnect (5,000 did
# not fit the client's 600 s beside the rest of the suite on 2 cores).
my $rows_before = $node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node');
($code, $f) = run_load($node, '--mode', 'churn', '--method', 'next', '--connections', '8', '--ids', '5000',
	'--per-connection', '20', '--fetch', '20');
check_run('churn', $code, $f);
cmp_ok($f->{connections}, '>=', 2000, "churn: $f->{connections} connections");
my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node') - $rows_before;
cmp_ok($rows, '<=', 4 * $f->{peak_active_workers} + 8,
	"churn: $f->{connections} connections needed $rows new worker rows (peak $f->{peak_active_workers} at once)");
diag("churn: $f->{connections} connections, $rows new worker rows, peak $f->{peak_active_workers}, "
	. "$f->{distinct_workers} distinct workers, $f->{ids_per_second} IDs/s");
# (Rows the claim pool holds ahead read active, in its name: no session's.)
is($node->safe_psql('postgres', q{SELECT count(*) FROM uidgen.worker_node
	WHERE status = 'active' AND application_name <> 'uidgen claim pool'}), '0',
	'churn: every worker released');

$node->stop;
done_testing();
