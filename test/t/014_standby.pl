# A streaming standby refuses uid_next() with a clear error (it cannot
# register), decodes IDs, and after promotion never issues an ID that the
# old primary committed.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $primary = new_uidgen_node('primary', init => { allows_streaming => 1 },
	conf => ["uidgen.max_borrow = '1s'"]);
$primary->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), node text)');
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

# Sessions on the primary keep their workers while the standby takes over.
my $s = $primary->background_psql('postgres');
$s->query_safe(q{INSERT INTO t (node) SELECT 'primary' FROM generate_series(1, 5000)});
$primary->pgbench('--no-vacuum --client=4 --transactions=50', 0, [qr{processed: 200/200}], [],
	'the primary generates', { 'p' => q{INSERT INTO t (node) SELECT 'primary' FROM generate_series(1, 10);} });
$primary->wait_for_catchup($standby);

my ($ret, $out, $err) = $standby->psql('postgres', 'SELECT uid_next()');
like($err, qr/cannot execute uid_next\(\) in a read-only transaction/, 'standby refuses uid_next()');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM t WHERE uid_worker_id(id) > 0}), '7000',
	'the standby decodes IDs');

# Fail over: the old primary stops for good, the standby is promoted.
$s->quit;
$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'promotion failed';

$standby->pgbench('--no-vacuum --connect --client=4 --transactions=100', 0, [qr{processed: 400/400}], [],
	'the promoted standby generates', { 's' => q{INSERT INTO t (node) SELECT 'promoted' FROM generate_series(1, 10);} });
is($standby->safe_psql('postgres', q{SELECT count(*), count(DISTINCT id) FROM t}), '11000|11000',
	'no ID of the promoted standby collides with one the old primary committed');
is($standby->safe_psql('postgres', q{
	SELECT count(*) FROM t p JOIN t n ON uid_worker_id(p.id) = uid_worker_id(n.id)
	 WHERE p.node = 'primary' AND n.node = 'promoted' AND n.id <= p.id}), '0',
	'a worker the promoted server took over issued only IDs above the old primary\'s');

$standby->stop;
done_testing();
