# uid_safe_horizon(): a polling reader that reads WHERE id > last AND
# id <= uid_safe_horizon() sees every committed row exactly once, while
# writers of both scopes hold transactions open, roll back, issue their
# first ID in a subtransaction that aborts, and two-phase commit; 10^6 rows.
# A reader beside it that trusts max(id) instead loses rows: the load is one
# where a wrong horizon would show.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $total_rows = 1_000_000;

# Preloaded, as scope server needs on 15; backend scope first.
my $node = new_uidgen_node('horizon', scope => 'backend');
$node->safe_psql('postgres', q{
	CREATE TABLE events (id bigint PRIMARY KEY DEFAULT uid_next(), writer int NOT NULL);
	CREATE TABLE seen (id bigint NOT NULL, pass int NOT NULL);
	CREATE TABLE naive_seen (id bigint NOT NULL);
	CREATE TABLE stop_writers ();
	CREATE TABLE stop_reader ();
	CREATE TABLE reader_fault (what text NOT NULL);
});

# A writer: the body of one transaction, repeated until stop_writers has a row.
sub start_writer
{
	my ($body) = @_;
	return start_sql_loop($node, qq{
		DO \$\$ BEGIN
			WHILE NOT EXISTS (SELECT FROM stop_writers) LOOP
				$body
			END LOOP;
		END \$\$});
}

my @writers;
sub start_writers_of_scope
{
	my ($w) = @_;
	push @writers,
	  # Bulk, committing after a pause; one in ten rolled back.
	  (map {
		start_writer(qq{
			INSERT INTO events (writer) SELECT $w + $_ FROM generate_series(1, 1 + (random() * 3000)::int);
			PERFORM pg_sleep(random() * 0.1);
			IF random() < 0.1 THEN ROLLBACK; ELSE COMMIT; END IF;})
	  } 1 .. 2),
	  # Holds its first, lowest ID open for up to 1.5 s while everyone else commits.
	  start_writer(qq{
		INSERT INTO events (writer) VALUES ($w + 3);
		PERFORM pg_sleep(0.5 + random());
		INSERT INTO events (writer) SELECT $w + 3 FROM generate_series(1, 500);
		COMMIT;}),
	  # Its first ID is in a subtransaction that aborts; the transaction goes on issuing.
	  start_writer(qq{
		BEGIN
			INSERT INTO events (writer) SELECT $w + 4 FROM generate_series(1, 10);
			RAISE EXCEPTION 'undone';
		EXCEPTION WHEN raise_exception THEN NULL;
		END;
		INSERT INTO events (writer) VALUES ($w + 4);
		PERFORM pg_sleep(0.3 + random() * 0.5);
		INSERT INTO events (writer) SELECT $w + 4 FROM generate_series(1, 200);
		COMMIT;});
}

# The reader: the horizon in one statement, the rows in the next (whose
# snapshot is taken after it).  The naive reader beside it takes max(id).
my $reader = start_sql_loop($node, q{
	DO $$ DECLARE
		last bigint := 0;
		h bigint;
		naive_last bigint := 0;
		naive_h bigint;
		pass int := 0;
		stopping boolean := false;
	BEGIN
		WHILE NOT stopping LOOP
			stopping := EXISTS (SELECT FROM stop_reader);
			pass := pass + 1;
			h := uid_safe_horizon();
			IF h < last THEN
				INSERT INTO reader_fault VALUES (format('the horizon went back from %s to %s', last, h));
			END IF;
			INSERT INTO seen SELECT id, pass FROM events WHERE id > last AND id <= h;
			last := greatest(last, h);
			naive_h := coalesce((SELECT max(id) FROM events), 0);
			INSERT INTO naive_seen SELECT id FROM events WHERE id > naive_last AND id <= naive_h;
			naive_last := greatest(naive_last, naive_h);
			COMMIT;
			PERFORM pg_sleep(0.02);
		END LOOP;
	END $$});

start_writers_of_scope(0);
$node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM events WHERE writer = 4')
  or die 'the backend scope writers did not get going';

# Two-phase commit: prepared with IDs that only its COMMIT PREPARED makes
# visible, long after.  The session commits once first (a worker's claim
# cannot be prepared: docs/reference.md).
sub prepare_held
{
	my ($name, $writer) = @_;
	my $s = $node->background_psql('postgres');
	$s->query_safe("INSERT INTO events (writer) VALUES ($writer)");
	my $first = $s->query_safe(qq{
		BEGIN;
		WITH i AS (INSERT INTO events (writer) SELECT $writer FROM generate_series(1, 1000) RETURNING id)
		SELECT min(id) FROM i;});
	$s->query_safe("PREPARE TRANSACTION '$name'");
	$s->quit;
	return $first;
}
my $prepared_backend = prepare_held('held_backend', 90);

# New sessions from here take the server-wide generator; the first ones keep theirs.
$node->adjust_conf('postgresql.conf', 'uidgen.scope', "'server'");
$node->reload;
$node->poll_query_until('postgres', q{SELECT current_setting('uidgen.scope') = 'server'})
  or die 'the reload did not reach new sessions';
start_writers_of_scope(100);
$node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM events WHERE writer = 104')
  or die 'the server scope writers did not get going';
my $prepared_server = prepare_held('held_server', 190);
is($node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.server_generator'), '1',
	'the server-wide generator issues beside the backends');

# Half the rows later, the prepared transactions still hold the horizon back.
$node->poll_query_until('postgres', 'SELECT count(*) >= ' . ($total_rows / 2) . ' FROM events', 't')
  or die 'the writers stalled';
cmp_ok($node->safe_psql('postgres', 'SELECT uid_safe_horizon()'), '<', $prepared_backend,
	'the horizon stays below the first ID of a transaction prepared long ago (backend scope)');
cmp_ok($node->safe_psql('postgres', 'SELECT uid_safe_horizon()'), '<', $prepared_server,
	'and of one prepared in scope server');
is($node->safe_psql('postgres', 'SELECT count(*) FROM seen WHERE id >= ' . $prepared_backend), '0',
	'the reader has read nothing above the prepared transaction');
$node->safe_psql('postgres', "COMMIT PREPARED 'held_backend'");
$node->safe_psql('postgres', "COMMIT PREPARED 'held_server'");

$node->poll_query_until('postgres', "SELECT count(*) >= $total_rows FROM events", 't')
  or die 'the writers stalled';
$node->safe_psql('postgres', 'INSERT INTO stop_writers DEFAULT VALUES');
finish_sql_loops(@writers);
$node->safe_psql('postgres', 'INSERT INTO stop_reader DEFAULT VALUES');
finish_sql_loops($reader);

my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM events');
cmp_ok($rows, '>=', $total_rows, "$rows rows committed");
is($node->safe_psql('postgres', 'SELECT count(*) FROM (SELECT id FROM events EXCEPT SELECT id FROM seen) m'),
	'0', 'the reader saw every committed row');
is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM seen'), '0', 'and each once');
is($node->safe_psql('postgres', 'SELECT count(*) FROM seen'), $rows, 'and nothing that never committed');
is($node->safe_psql('postgres', 'SELECT string_agg(what, E\'\n\') FROM reader_fault'), '',
	'the horizon never went back');
my $passes = $node->safe_psql('postgres', 'SELECT count(DISTINCT pass) FROM seen');
cmp_ok($passes, '>', 2, "the reader read in $passes passes");
my $lost = $node->safe_psql('postgres',
	'SELECT count(*) FROM (SELECT id FROM events EXCEPT SELECT id FROM naive_seen) m');
cmp_ok($lost, '>', 0, "a reader trusting max(id) lost $lost rows of the same load");

# Nothing open: the horizon follows the clock, and stays below the next ID.
my ($horizon, $floor) = split /\|/, $node->safe_psql('postgres',
	q{SELECT uid_safe_horizon(), uid_min(clock_timestamp() - interval '1 s')});
cmp_ok($horizon, '>=', $floor, 'with nothing open the horizon follows the clock');
is($node->safe_psql('postgres', 'SELECT uid_safe_horizon() < uid_next()'), 't', 'an ID issued after it lies above it');

# The reference's example, as written there: the row shows once the horizon passed it.
my $doc = doc_sql_blocks('docs/reference.md', '## Polling readers and the safe horizon');
$node->safe_psql('postgres', $doc->{'horizon-setup'});
$node->poll_query_until('postgres', 'SELECT uid_safe_horizon() >= max(id) FROM public.outbox')
  or die 'the horizon did not pass the row';
like($node->safe_psql('postgres', $doc->{'horizon-poll'}), qr/\{"event": "created"\}/,
	'the reference example reads the row');
is($node->safe_psql('postgres', 'SELECT last >= (SELECT max(id) FROM public.outbox) FROM public.outbox_cursor'),
	't', 'and moves its cursor past it');

$node->stop;
done_testing();
