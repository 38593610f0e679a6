# uid_next() in a session whose session_replication_role is replica: a
# logical replication apply worker filling a DEFAULT uid_next() column that
# the publisher does not send, or a bulk load that turns triggers off that
# way.  uidgen's tables skip rows written in replica mode (so that a
# publication's rows never land over local ones); the session's own claim,
# time reservation and release must not be skipped with them, or its
# worker looks free and unused while it is not.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $pub = new_uidgen_node('publisher', init => { allows_streaming => 'logical' });
my $sub = new_uidgen_node('subscriber');

# ---- a session in replica mode ---------------------------------------------

# Four sequence bits: 16 IDs a millisecond, so that a session taking many
# IDs at once borrows seconds of future time, however busy the machine.
$sub->safe_psql('postgres', 'SELECT uid_configure(worker_bits => 18, seq_bits => 4)');
# A worker claimed and released, for the next session to reuse.
$sub->safe_psql('postgres', 'SELECT uid_next()');
my $s = $sub->background_psql('postgres');
$s->query_safe('SET session_replication_role = replica');
$s->query_safe('SELECT uid_next()');
my $worker = $s->query_safe('SELECT uid_current_worker()');
my $pid = $s->query_safe('SELECT pg_backend_pid()');
is($sub->safe_psql('postgres', "SELECT status, pid FROM uidgen.worker_node WHERE id = $worker"), "active|$pid",
	"the worker ($worker) of a session in replica mode is active in uidgen.worker_node, with its pid");
# 80,000 IDs: five seconds of them (uidgen.max_borrow allows 10).
$s->query_safe('CREATE TABLE replica_ids AS SELECT x AS id FROM uid_next_batch(80000) x');
note('the session in replica mode issued up to '
	. $s->query_safe('SELECT uid_timestamp(max(id)) - clock_timestamp() FROM replica_ids') . ' ahead of the clock');
$s->quit;
$sub->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid")
  or die "the session in replica mode did not end";
# The next session may reuse that worker, but only above what it issued.
$sub->safe_psql('postgres', 'CREATE TABLE next_ids AS SELECT x AS id FROM uid_next_batch(80000) x');
my $next_worker = $sub->safe_psql('postgres', 'SELECT DISTINCT uid_worker_id(id) FROM next_ids');
note("the next session has worker $next_worker");
is($sub->safe_psql('postgres', 'SELECT count(*) FROM replica_ids JOIN next_ids USING (id)'), '0',
	'the next session reissues none of the 80,000 IDs of the session in replica mode');
is($sub->safe_psql('postgres', "SELECT $next_worker <> $worker OR (SELECT min(id) FROM next_ids) > (SELECT max(id) FROM replica_ids)"),
	't', "if it reuses worker $worker, it starts above the last ID of the session in replica mode");

# ---- an apply worker filling DEFAULT uid_next() ----------------------------

$pub->safe_psql('postgres', q{
	CREATE TABLE events (id bigint PRIMARY KEY DEFAULT uid_next(), batch int NOT NULL);
	CREATE PUBLICATION p FOR TABLE events});
$sub->safe_psql('postgres', q{
	CREATE TABLE events (id bigint PRIMARY KEY, batch int NOT NULL, stamp bigint UNIQUE DEFAULT uid_next());
	CREATE TABLE own (id bigint PRIMARY KEY DEFAULT uid_next())});
my $pub_connstr = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION s CONNECTION '$pub_connstr' PUBLICATION p");
$sub->wait_for_subscription_sync($pub, 's');

finish_pgbench(
	start_pgbench($pub, 'INSERT INTO events (batch) SELECT 1 FROM generate_series(1, 100);', '--client=2', '--transactions=50'),
	start_pgbench($sub, 'INSERT INTO own SELECT FROM generate_series(1, 100);', '--connect', '--client=2', '--transactions=50'));
$pub->wait_for_catchup('s');
is($sub->safe_psql('postgres', 'SELECT count(*), count(stamp) FROM events'), '10000|10000',
	'the apply worker stamped the 10000 rows it applied');
my $apply_pid = $sub->safe_psql('postgres', q{SELECT pid FROM pg_stat_subscription WHERE subname = 's' AND relid IS NULL});
my $apply_worker = $sub->safe_psql('postgres', 'SELECT DISTINCT uid_worker_id(stamp) FROM events');
is($sub->safe_psql('postgres', "SELECT status, pid FROM uidgen.worker_node WHERE id = $apply_worker"),
	"active|$apply_pid", "the apply worker's worker ($apply_worker) is active in uidgen.worker_node, with its pid");
is(duplicate_ids($sub->safe_psql('postgres', 'SELECT stamp FROM events'), $sub->safe_psql('postgres', 'SELECT id FROM own')),
	0, "no stamp of the apply worker is an ID of the subscriber's sessions");

$sub->stop;
$pub->stop;
done_testing();
