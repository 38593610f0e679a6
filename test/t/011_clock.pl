# The server's clock moved backwards and forwards (libfaketime), while
# generating and across a restart: the cached generator keeps going with no
# duplicate; the default generator waits within uidgen.max_backwards_wait
# and errors past it with the documented message.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

sub set_clock { set_fake_clock(@_) }
set_clock('+0');

my $node = PostgreSQL::Test::Cluster->new('clock');
$node->init;
$node->append_conf('postgresql.conf', "log_min_messages = warning\n");
sub start_faked { start_with_fake_clock($node) }
start_faked();
$node->safe_psql('postgres', 'CREATE EXTENSION uidgen');
$node->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY, step text)');

# One session through the whole cached scenario.
my $s = $node->background_psql('postgres');
$s->query_safe("INSERT INTO t SELECT uid_next(), 'start' FROM generate_series(1, 2000)");
set_clock('-5');
my ($low, $high) = clock_offset($node);
ok($low > -7 && $high < -3, sprintf("the server's clock is 5 s behind (offset %.2f to %.2f s)", $low, $high));
$s->query_safe("INSERT INTO t SELECT uid_next(), 'back 5s' FROM generate_series(1, 20000)");
set_clock('+3');
$s->query_safe("INSERT INTO t SELECT uid_next(), 'forward 3s' FROM generate_series(1, 20000)");
set_clock('+0');
$s->query_safe("INSERT INTO t SELECT uid_next(), 'back to 0' FROM generate_series(1, 20000)");
is($s->query_safe(q{
	SELECT bool_and(id > prev) FROM (SELECT id, lag(id) OVER (ORDER BY ctid) AS prev FROM t) s
	 WHERE prev IS NOT NULL}), 't', 'cached: IDs kept increasing through the jumps');
is($s->query_safe('SELECT count(*) FROM t'), '62000', 'cached: no error, no duplicate (primary key)');
$s->quit;

# Across a restart: a worker released 8 s in the future is not reused when the
# server comes back with the clock 8 s earlier.
set_clock('+8');
my $future_worker = $node->safe_psql('postgres',
	"INSERT INTO t SELECT uid_next(), 'future' FROM generate_series(1, 1000); SELECT uid_current_worker()");
$node->stop;
set_clock('+0');
start_faked();
my $after = $node->safe_psql('postgres',
	"INSERT INTO t SELECT uid_next(), 'after restart' FROM generate_series(1, 1000); SELECT uid_current_worker()");
isnt($after, $future_worker, "worker $future_worker, released in the future, is not reused yet");
is($node->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM t'), 't', 'no duplicate after restart');

# The default generator: waits for a clock up to max_backwards_wait behind, errors beyond.
my $d = $node->background_psql('postgres', on_error_stop => 0);
$d->query_safe("SET uidgen.generator = 'default'; SET uidgen.max_backwards_wait = '4s'");
$d->query_safe("INSERT INTO t SELECT uid_next(), 'default' FROM generate_series(1, 1000)");
set_clock('-2');
my $start = time;
$d->query_safe("INSERT INTO t SELECT uid_next(), 'default waited' FROM generate_series(1, 10)");
cmp_ok(time - $start, '>=', 1, 'default: waited for a clock 2 s behind');
set_clock('-12');
my ($out, $ret) = $d->query("SELECT uid_next()");
like($d->{stderr}, qr/clock moved backwards by \d+ milliseconds/, 'default: clock 10 s behind is an error');
like($d->{stderr}, qr/uidgen\.generator/, 'with a hint naming the cached generator');
$d->{stderr} = '';
$d->query_safe("SET uidgen.generator = 'cached'");
$d->query_safe("INSERT INTO t SELECT uid_next(), 'cached again' FROM generate_series(1, 1000)");
is($d->query_safe('SELECT count(*) = count(DISTINCT id) FROM t'), 't', 'switching back to cached keeps going');
$d->quit;
set_clock('+0');

$node->stop;
done_testing();
