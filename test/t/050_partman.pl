# pg_partman (4.7, Debian's postgresql-15-partman) partitioning a table by
# its uid_next() key, one partition a day: id-based native partitioning
# whose interval is uid_interval('1 day').  Partitions start at multiples of
# the interval from 0, which under the default layout (epoch at midnight
# UTC) are uid_min() of UTC midnights.  Back-filled rows of past days and
# new rows land in their days' partitions, run_maintenance() premakes the
# days ahead, and retention drops old days, counting back from the largest
# ID in the set rather than from now() (docs/partitioning-and-text.md).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

# Debian packages pg_partman for its PostgreSQL 15 (scripts/lib.sh installs
# it); a server built from source has none.
my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
plan skip_all => "pg_partman is not installed in this server's extension directory ($sharedir/extension)"
  unless -e "$sharedir/extension/pg_partman.control";

my $node = new_uidgen_node('partman');
my $day = $node->safe_psql('postgres', "SELECT uid_interval('1 day')");
is($day, 86_400_000 << 22, "uid_interval('1 day') is 86,400,000 milliseconds of 2^22 IDs");

$node->safe_psql('postgres', q{
	CREATE SCHEMA partman;
	CREATE EXTENSION pg_partman SCHEMA partman;
	CREATE TABLE events (id bigint PRIMARY KEY DEFAULT uid_next(), note text) PARTITION BY RANGE (id)});

# Four days back (for back-filled rows) to one day ahead, the rest by maintenance.
$node->safe_psql('postgres', q{
	SELECT partman.create_parent('public.events', 'id', 'native', uid_interval('1 day')::text,
	                             p_premake => 5, p_start_partition => uid_min(now() - interval '4 days')::text)});

# Each partition, as "day offset from today (UTC) : day of its first ID :
# whether it ends where the next day starts", oldest first.
my $partitions = q{
	SELECT string_agg(format('%s:%s:%s',
	                         (uid_timestamp(i.child_start_id) AT TIME ZONE 'UTC')::date
	                           - (now() AT TIME ZONE 'UTC')::date,
	                         uid_timestamp(i.child_start_id) = date_trunc('day', uid_timestamp(i.child_start_id), 'UTC'),
	                         i.child_end_id + 1 = uid_min(uid_timestamp(i.child_start_id) + interval '1 day')),
	                  ' ' ORDER BY i.child_start_id)
	  FROM partman.show_partitions('public.events') p,
	       partman.show_partition_info(p.partition_schemaname || '.' || p.partition_tablename, NULL, 'public.events') i};
my @made = split / /, $node->safe_psql('postgres', $partitions);
is(scalar(@made), 6, 'create_parent made six day partitions');
is_deeply([ map { (split /:/)[1] . (split /:/)[2] } @made ], [ ('tt') x 6 ],
	'each starts at uid_min() of a UTC midnight and ends below the next one');
like($made[0], qr/^-[45]:/, 'the first is four days back (the floor of uid_min(now() - 4 days))');
is($node->safe_psql('postgres', q{
	SELECT bool_and(i.child_start_id % uid_interval('1 day') = 0)
	  FROM partman.show_partitions('public.events') p,
	       partman.show_partition_info(p.partition_schemaname || '.' || p.partition_tablename, NULL, 'public.events') i}),
	't', "partition starts are multiples of uid_interval('1 day'): the epoch is midnight UTC");

# Back-filled rows of the four past days (IDs from uid_min() and uid_max() of
# their times, both ends of each day), and new ones from uid_next().
$node->safe_psql('postgres', q{
	INSERT INTO events
	SELECT uid_min(d + h * interval '1 hour'), 'back-filled'
	  FROM generate_series(date_trunc('day', now(), 'UTC') - interval '4 days',
	                       date_trunc('day', now(), 'UTC') - interval '1 day', interval '1 day') d,
	       generate_series(0, 23, 6) h
	UNION ALL
	SELECT uid_max(d + interval '1 day' - interval '1 ms'), 'back-filled, the last ID of its day'
	  FROM generate_series(date_trunc('day', now(), 'UTC') - interval '4 days',
	                       date_trunc('day', now(), 'UTC') - interval '1 day', interval '1 day') d;
	INSERT INTO events (note) SELECT 'new' FROM generate_series(1, 1000)});

# Every row is in the partition of its ID's UTC day; none fell to the default.
my $misplaced = q{
	SELECT count(*) FROM events e,
	       partman.show_partition_info('public.' || e.tableoid::regclass, NULL, 'public.events') i
	 WHERE i.child_start_id IS DISTINCT FROM uid_min(date_trunc('day', uid_timestamp(e.id), 'UTC'))};
is($node->safe_psql('postgres', 'SELECT count(*) FROM events'), 1020, '1,020 rows');
is($node->safe_psql('postgres', $misplaced), 0, "every row is in its ID's day");
is($node->safe_psql('postgres', 'SELECT count(*) FROM ONLY events_default'), 0, 'and none in the default partition');
is($node->safe_psql('postgres', q{
	SELECT count(DISTINCT tableoid) FROM events WHERE note LIKE 'back-filled%'}), 4,
	'the back-filled rows are in four past days');

# The first ID of the day holding the largest ID in the set less back, plus
# ahead days.
my $day_of = sub {
	my ($back, $ahead) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT m - m % uid_interval('1 day') + $ahead * uid_interval('1 day')
		  FROM (SELECT max(id) - $back AS m FROM events) x});
};
my $newest_start = q{
	SELECT max(i.child_start_id) FROM partman.show_partitions('public.events') p,
	       partman.show_partition_info(p.partition_schemaname || '.' || p.partition_tablename, NULL, 'public.events') i};
my $oldest_start = $newest_start =~ s/max\(/min(/r;

# Maintenance premakes five days past the day of the largest ID.
$node->safe_psql('postgres', q{SELECT partman.run_maintenance('public.events')});
is($node->safe_psql('postgres', $newest_start), $day_of->(0, 5),
	'run_maintenance() premade five days past the day of the largest ID');
is($node->safe_psql('postgres', $misplaced), 0, 'every row is still in its day');
my @after = split / /, $node->safe_psql('postgres', $partitions);
is_deeply([ grep { !/:t:t$/ } @after ], [], 'the new partitions are days too');

# Retention of two days, dropping the tables: a partition goes once its end
# is two days or more below the largest ID.
$node->safe_psql('postgres', q{
	UPDATE partman.part_config SET retention = uid_interval('2 days')::text, retention_keep_table = false
	 WHERE parent_table = 'public.events';
	SELECT partman.run_maintenance('public.events')});
my $kept_from = $day_of->("uid_interval('2 days')", 0);
is($node->safe_psql('postgres', $oldest_start), $kept_from,
	'retention dropped every day that ended two days before the largest ID');
is($node->safe_psql('postgres', "SELECT count(*) FROM events WHERE id < $kept_from"), 0, 'with their rows');
is($node->safe_psql('postgres', q{
	SELECT count(DISTINCT tableoid) || ' days, ' || count(*) || ' rows' FROM events WHERE note LIKE 'back-filled%'}),
	'2 days, 10 rows', 'the back-filled rows of the two days before today are left');
is($node->safe_psql('postgres', "SELECT count(*) FROM events WHERE note = 'new'"), 1000, "and kept today's");
is($node->safe_psql('postgres', $misplaced), 0, 'the rows left are in their days');

# Retention counts back from the largest ID, not from now(): one ID three
# days ahead (uid_min() of a later time, or a clock that ran ahead) drops
# today's partition, and premaking follows it.
$node->safe_psql('postgres', q{
	INSERT INTO events VALUES (uid_min(now() + interval '3 days'), 'from the future');
	SELECT partman.run_maintenance('public.events')});
is($node->safe_psql('postgres', $oldest_start), $day_of->("uid_interval('2 days')", 0),
	'after one ID three days ahead, retention counts two days back from it');
is($node->safe_psql('postgres', "SELECT count(*) FROM events WHERE note = 'new'"), 0,
	"so today's rows are gone although now() did not move");
is($node->safe_psql('postgres', $newest_start), $day_of->(0, 5),
	'and premaking counts from it too');

$node->stop;
done_testing();
