# The layout of a member database whose first claim rolled back (INV-7,
# INV-19 of docs/design.md).  A session's first worker comes from the registry's
# blocks in a transaction that rolls back: no row of uidgen.worker_node
# shows the claim, and a worker from the blocks takes no id from the
# database's sequence, yet the session keeps its worker and has issued IDs
# under the layout (a client has them; the session issues more in its next
# transactions).  uid_configure must refuse another layout then, as it does
# once a worker has registered: IDs of two layouts in one database decode
# wrongly, and the same bits can mean two workers.  Before the fix it
# changed the layout.  And a first claim that adopted a fleet's layout and
# rolled back leaves the database free to adopt it again.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry', member => 0);
my $m = new_member_node('m', $registry);
wait_for_registry($m);
$m->safe_psql('postgres', 'CREATE DATABASE d');
$m->safe_psql('d', 'CREATE EXTENSION uidgen');

# Session A: its first ID, in a transaction that rolls back; the session lives on.
my $a = $m->background_psql('d');
my $first = $a->query_safe('BEGIN; SELECT uid_next()');
$a->query_safe('ROLLBACK');
like($first, qr/^\d+$/, 'session A issued an ID under a first claim that rolled back');
is($m->safe_psql('d', 'SELECT count(*) FROM uidgen.worker_node'), '0', 'no row shows its claim');
my $layout = $m->safe_psql('d', 'SELECT time_bits || \'/\' || worker_bits || \'/\' || seq_bits FROM uid_layout()');

# Another layout, from another session.
my ($ret, $out, $err) = $m->psql('d', 'SELECT uid_configure(time_bits => 40, worker_bits => 14, seq_bits => 9)');
isnt($ret, 0, 'uid_configure refuses another layout');
like($err, qr/cannot change the layout once workers have registered/, 'naming the workers that registered');
is($m->safe_psql('d', 'SELECT time_bits || \'/\' || worker_bits || \'/\' || seq_bits FROM uid_layout()'), $layout,
	"the layout is still $layout");
is($m->safe_psql('d', 'SELECT configurable FROM uid_layout()'), 'f', 'and uid_layout() says it cannot change');

# Session A goes on under its worker: its next ID is above its first, in the same layout.
my $next = $a->query_safe('SELECT uid_next()');
cmp_ok($next, '>', $first, 'session A issues on, above its first ID');
is($a->query_safe("SELECT uid_worker_id($next) = uid_worker_id($first)"), 't', 'under the same worker');
$a->quit;

# A fleet whose layout is not the default: the first claim adopts the
# registry's layout in its own transaction, and the rollback undoes that
# too.  The database must not stay fixed at the layout it had before, or
# it refuses the registry's for good (every claim 55000).
my $registry2 = new_registry_node('registry2', member => 0);
$registry2->safe_psql('registry', 'SELECT uid_configure(worker_bits => 10, seq_bits => 12)');
my $m2 = new_member_node('m2', $registry2);
wait_for_registry($m2);
$m2->safe_psql('postgres', 'CREATE DATABASE d');
$m2->safe_psql('d', 'CREATE EXTENSION uidgen');
my $b = $m2->background_psql('d');
my $b_pid = $b->query_safe('SELECT pg_backend_pid()');
like($b->query_safe('BEGIN; SELECT uid_next()'), qr/^\d+$/, 'a first claim under a fleet layout of 10 worker bits');
$b->query_safe('ROLLBACK');
$b->quit;
# Its exit release is what fixed the database at the layout before.
$m2->poll_query_until('d', "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $b_pid)")
  or die 'session B did not leave';
($ret, $out, $err) = $m2->psql('d', 'SELECT uid_next() > 0');
is($out, 't', 'after its rollback, the next session of the database issues');
is($err, '', 'without an error');
is($m2->safe_psql('d', 'SELECT worker_bits || \'/\' || seq_bits FROM uid_layout()'), '10/12',
	"under the registry's layout");

done_testing();
