# Scope server under connection churn: 5,000 connections that each take a
# few IDs and disconnect register no worker of their own, all take their IDs
# from the server's one worker, and none repeats; and behind PgBouncer in
# transaction pooling, which sends DISCARD ALL after every transaction, each
# server backend's IDs keep increasing and none repeats.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('scope_churn', scope => 'server');
$node->safe_psql('postgres', 'CREATE TABLE churn_t (id bigint PRIMARY KEY DEFAULT uid_next())');
$node->safe_psql('postgres', 'SELECT uid_next()');
my $g = server_generator($node);
my $rows_before = $node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node');

# ---- 5,000 connections -------------------------------------------------------

my ($code, $f) = run_load($node, '--mode', 'churn', '--method', 'mixed', '--table', 'churn_t',
	'--connections', '8', '--ids', '12500', '--per-connection', '20', '--fetch', '10');
is($code, 0, 'churn: the client found nothing wrong, nor did the primary key');
is($f->{duplicates}, '0', "churn: no duplicate among $f->{ids} IDs");
is($f->{non_increasing}, '0', 'churn: increasing in each session');
cmp_ok($f->{connections}, '>=', 5000, "churn: $f->{connections} connections");
is($f->{distinct_workers}, '1', 'churn: every ID came from one worker');
is($node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node'), $rows_before,
	"churn: $f->{connections} connections registered no worker");
my $h = server_generator($node);
is($h->{worker}, $g->{worker}, "churn: the worker is the server's ($g->{worker})");
is($h->{keeper_pid}, $g->{keeper_pid}, 'churn: the same keeper throughout');
cmp_ok($h->{ids_issued} - $g->{ids_issued}, '>=', 100000, 'churn: the view counts the 100,000 IDs');
diag("churn: $f->{connections} connections, $f->{ids_per_second} IDs/s, "
	. ($h->{chunks} - $g->{chunks}) . ' chunks, ' . ($h->{ids_dropped} - $g->{ids_dropped}) . ' IDs dropped');

# ---- PgBouncer, transaction pooling, DISCARD ALL ---------------------------

# Four server connections for 16 clients; n (a sequence) gives the order in
# which each backend made its rows.
my $bouncer = start_pgbouncer($node, pool_size => 4);
my @via_bouncer = ('-h', $bouncer->{host}, '-p', $bouncer->{port});
$node->safe_psql('postgres', q{
	CREATE TABLE pooled (n bigserial, id bigint PRIMARY KEY DEFAULT uid_next(), pid int DEFAULT pg_backend_pid())});

# The reset really runs between transactions: a session setting made in one
# is gone in the next, on the same (only) server connection.
my $one = start_pgbouncer($node, pool_size => 1);
my @via_one = ('-h', $one->{host}, '-p', $one->{port});
$node->command_ok([ 'psql', '-X', @via_one, '-d', 'postgres', '-c', "SET uidgen_test.mark = 'set'" ],
	'a session setting through PgBouncer');
$node->command_like([ 'psql', '-X', '-At', @via_one, '-d', 'postgres', '-c',
	"SELECT coalesce(current_setting('uidgen_test.mark', true), '') = ''" ],
	qr/^t$/, 'is gone in the next transaction: PgBouncer sends DISCARD ALL');
stop_pgbouncer($one);

my $script = PostgreSQL::Test::Utils::tempdir() . '/pooled.sql';
PostgreSQL::Test::Utils::append_to_file($script, q{
INSERT INTO pooled (n) SELECT nextval('pooled_n_seq') FROM generate_series(1, 5);
BEGIN;
INSERT INTO pooled DEFAULT VALUES;
SELECT uid_next();
INSERT INTO pooled DEFAULT VALUES;
COMMIT;
});
$node->command_checks_all(
	[ 'pgbench', '--no-vacuum', '--client=16', '--jobs=2', '--transactions=150', '--connect', @via_bouncer,
	  '--file', $script, 'postgres' ],
	0, [qr{processed: 2400/2400}], [], 'pgbench through PgBouncer, a new client connection per transaction');
$node->command_checks_all(
	[ 'pgbench', '--no-vacuum', '--client=16', '--jobs=2', '--transactions=150', @via_bouncer,
	  '--file', $script, 'postgres' ],
	0, [qr{processed: 2400/2400}], [], 'pgbench through PgBouncer, long-lived client connections');
stop_pgbouncer($bouncer);

my ($rows, $distinct, $backends) = split /\|/, $node->safe_psql('postgres',
	'SELECT count(*), count(DISTINCT id), count(DISTINCT pid) FROM pooled');
is($rows, 4800 * 7, "pooled: every row committed ($rows from $backends server backends)");
is($distinct, $rows, 'pooled: no duplicate');
cmp_ok($backends, '<=', 8, 'pooled: through a few server backends, each serving many clients');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT id, lag(id) OVER (PARTITION BY pid ORDER BY n) AS prev FROM pooled) x
	 WHERE id <= prev}), '0', 'pooled: each server backend\'s IDs increased through DISCARD ALL after every transaction');
is($node->safe_psql('postgres', "SELECT count(*) FROM pooled WHERE uid_worker_id(id) <> $g->{worker}"), '0',
	'pooled: every ID from the server\'s worker');
is($node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node'), $rows_before,
	'pooled: no backend registered a worker');

$node->stop;
done_testing();
