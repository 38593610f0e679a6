# uid_next_block(n) in both scopes, across sessions at once: blocks of many
# sizes interleaved with uid_next() and uid_next_batch(), from concurrent
# sessions; no ID twice, every session's calls strictly increasing, every
# block in one time unit of one worker.  In scope server also after a
# session borrowed a private worker, and in an extension created in
# another schema.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('next_block', scope => 'backend');

# Each session runs this many turns of a block, single IDs or a batch, recording every call.
my $turns = 1500;
my $loop = sub {
	my ($session, $seed, $schema) = @_;
	return qq{
		SELECT setseed($seed);
		DO \$\$
		DECLARE
			n int;
			k int;
		BEGIN
			FOR i IN 1 .. $turns LOOP
				k := floor(random() * 4)::int;
				IF k = 0 THEN
					INSERT INTO issued (session, first, n) VALUES ($session, $schema.uid_next(), 1);
				ELSIF k = 1 THEN
					INSERT INTO issued (session, first, n)
					SELECT $session, b, 1 FROM $schema.uid_next_batch(1 + floor(random() * 20)::int) b;
				ELSE
					n := CASE WHEN random() < 0.1 THEN 1 + floor(random() * 512)::int
					          ELSE 1 + floor(random() * 50)::int END;
					INSERT INTO issued (session, first, n) VALUES ($session, $schema.uid_next_block(n), n);
				END IF;
			END LOOP;
		END
		\$\$;};
};

# Runs $sessions sessions at once and checks what they issued.
my $check = sub {
	my ($label, $db, $schema, $sessions) = @_;
	$node->safe_psql($db, 'DROP TABLE IF EXISTS issued; CREATE TABLE issued (seq bigserial, session int, first bigint, n int)');
	# Not stopping at an error: the loop's end is echoed whatever happened, and
	# the error is reported below rather than waited out until the timeout.
	my @handles = map {
		my $s = $_;
		$node->background_psql($db, on_error_stop => 0)
	} 1 .. $sessions;
	my $i = 0;
	# Started together: each loop is written to its psql and sent at once, and
	# the loops run side by side.  Not query_until() with an echo at the start:
	# it clears what the session printed so far, so a loop that ended before
	# it returned took its "done" (and its errors) with it.
	for my $h (@handles)
	{
		$i++;
		$h->{stdin} .= $loop->($i, 0.1 * $i, $schema) . "\n\\echo done $i\n";
		$h->{run}->pump_nb;
	}
	$i = 0;
	my @errors;
	for my $h (@handles)
	{
		$i++;
		$h->query_until(qr/done $i\b/, '');
		push @errors, "session $i: $1" while $h->{stderr} =~ /(ERROR:[^\n]*)/g;
		$h->quit;
	}
	is(join("\n", @errors), '', "$label: no session's loop met an error");
	is($node->safe_psql($db, 'SELECT count(DISTINCT session) FROM issued'), $sessions, "$label: $sessions sessions issued");
	is($node->safe_psql($db, q{
		SELECT count(*) FROM (
			SELECT first, lag(first + n - 1) OVER (PARTITION BY session ORDER BY seq) AS prev_top FROM issued) t
		 WHERE first <= prev_top}), '0', "$label: every session's IDs and blocks strictly increase");
	is($node->safe_psql($db, q{
		SELECT count(*) - count(DISTINCT id) FROM (SELECT first + g AS id FROM issued, generate_series(0, n - 1) g) t}),
		'0', "$label: no ID twice across sessions");
	is($node->safe_psql($db, qq{
		SELECT count(*) FROM issued
		 WHERE $schema.uid_timestamp(first) <> $schema.uid_timestamp(first + n - 1)
		    OR $schema.uid_worker_id(first) <> $schema.uid_worker_id(first + n - 1)}),
		'0', "$label: every block in one time unit of one worker");
	cmp_ok($node->safe_psql($db, 'SELECT count(*) FROM issued WHERE n > 100'), '>', 0, "$label: large blocks among them");
};

$check->('scope backend', 'postgres', 'public', 4);

set_scope($node, 'server');
is($node->safe_psql('postgres', 'SHOW uidgen.scope'), 'server', 'now scope server');
$check->('scope server', 'postgres', 'public', 4);

# A session with a private worker borrowed from the keeper: its block comes
# from the shared cursor, above everything it issued under the private worker.
my $b = $node->background_psql('postgres');
my ($borrowed, $keeper) = borrow_private_worker($node, $b, 'SELECT count(uid_next()) FROM generate_series(1, 200000)');
isnt($borrowed, $keeper->{worker}, "the session borrowed private worker $borrowed");
my $last = $b->query_safe('SELECT uid_next()');
my $block = $b->query_safe('SELECT uid_next_block(100)');
cmp_ok($block, '>', $last, 'a block after borrowing starts above the last ID issued');
is($b->query_safe("SELECT uid_worker_id($block)"), $keeper->{worker}, 'and comes from the shared worker');
cmp_ok($b->query_safe('SELECT uid_next()'), '>', $block + 99, 'the next ID is above the block');
$b->quit;

# An extension created in another schema, scope server.
$node->safe_psql('postgres', 'CREATE DATABASE app_db');
$node->safe_psql('app_db', 'CREATE SCHEMA app; CREATE EXTENSION uidgen SCHEMA app');
$check->('schema app, scope server', 'app_db', 'app', 2);

done_testing();
