# Scope server on a streaming standby and after its promotion.  The standby
# refuses uid_next() with SQLSTATE 25006 (read_only_sql_transaction) and
# starts no generator; once promoted, its keeper claims a worker and never
# issues an ID the old primary committed: a worker of the old primary's
# (its server worker, leaked by the immediate shutdown) is reused only above
# what it issued.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $primary = new_uidgen_node('scope_primary', scope => 'server', init => { allows_streaming => 1 },
	conf => ["uidgen.max_borrow = '1s'"]);
$primary->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), phase int DEFAULT 1)');
my $standby = new_streaming_standby($primary, 'scope_standby');
is($standby->safe_psql('postgres', 'SHOW uidgen.scope'), 'server', 'the standby runs with scope server too');

# The primary generates: writers, a churning load, and a session that stays.
my @writers = start_writers($primary, 't', 1, 2);
my ($code, $f) = run_load($primary, '--mode', 'churn', '--method', 'insert', '--table', 't',
	'--connections', '4', '--ids', '10000', '--per-connection', '500', '--fetch', '100');
is($code, 0, 'primary: the load client found nothing wrong, nor did the primary key');
my $s = $primary->background_psql('postgres');
$s->query_safe('INSERT INTO t DEFAULT VALUES');
stop_writers($primary, @writers);
my $g = server_generator($primary);
ok(defined $g, "the primary's generator issues under worker $g->{worker}");
$primary->wait_for_catchup($standby);

# The standby refuses, with the SQLSTATE of a read-only transaction.
my $err = psql_error($standby, 'postgres', 'SELECT uid_next()');
like($err, qr/ERROR:\s+25006:/, 'the standby refuses uid_next() with SQLSTATE 25006');
like(psql_error($standby, 'postgres', 'SELECT uid_next_batch(10)'), qr/ERROR:\s+25006:/,
	'and uid_next_batch()');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM uidgen.server_generator'), '0',
	'the standby has no generator');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'uidgen keeper%'}),
	'0', 'nor a keeper');
my $committed = $primary->safe_psql('postgres', 'SELECT count(*) FROM t');
is($standby->safe_psql('postgres', "SELECT count(*) FROM t WHERE uid_worker_id(id) >= 0"), $committed,
	"the standby has and decodes the primary's $committed IDs");

# Fail over: the old primary stops for good, its session still connected.
$primary->stop('immediate');
$s->quit;
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'promotion failed';

$standby->safe_psql('postgres', 'ALTER TABLE t ALTER phase SET DEFAULT 2');
is($standby->safe_psql('postgres', 'BEGIN READ ONLY; SELECT uid_next() > 0; COMMIT'), 't',
	'promoted: the first ID, in a read-only transaction');
($code, $f) = run_load($standby, '--mode', 'churn', '--method', 'insert', '--table', 't',
	'--connections', '4', '--ids', '10000', '--per-connection', '500', '--fetch', '100');
is($code, 0, 'promoted: the load client found nothing wrong, nor did the primary key');
@writers = start_writers($standby, 't', 2, 2);
stop_writers($standby, @writers);
my $h = server_generator($standby);
ok(defined $h, "promoted: a generator under worker $h->{worker}");

my ($rows, $distinct) = split /\|/, $standby->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM t');
is($rows, $distinct, "no ID of the promoted server collides with one the old primary committed ($rows IDs)");
is(worker_order_violations($standby, 't', 'phase'), '',
	'a worker the promoted server took over issued only above the old primary\'s IDs');
diag("standby and promotion: $rows IDs stored, " . ($rows - $distinct) . ' duplicates');

$standby->stop;
done_testing();
