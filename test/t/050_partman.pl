# pg_partman (4.7, Debian's postgresql-15-partman) partitioning a table by
# its uid_next() key, a partition a day, by the recipe of
# docs/partitioning-and-text.md: the test runs the SQL blocks of its section
# "pg_partman" as they are written there (doc_sql_blocks), on a server clock
# that it moves ahead by whole days (libfaketime) from noon UTC, so that no
# day ends while a step runs.  Back-filled rows of past days (uid_min(),
# uid_max()) and new ones (uid_next()) land in their days' partitions, none
# in the default one; maintenance premakes 7 days past the day of the
# largest ID, and retention drops the days that end 90 days or more below
# the largest ID, not below now(); a row whose day has no partition waits
# in the default partition, where it stops maintenance until
# partition_data_proc() moves it.  And the README's example of native
# partitioning by day, run as written there.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

# Debian packages pg_partman 4.7 for its PostgreSQL 15 (scripts/lib.sh
# installs it); a server built from source has none, or pg_partman 5 when
# make test-all is given its source, whose recipe test 051 runs.
my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
my $control = "$sharedir/extension/pg_partman.control";
plan skip_all => "pg_partman is not installed in this server's extension directory ($sharedir/extension)"
  unless -e $control;
my ($partman_version) = slurp_file($control) =~ /^default_version\s*=\s*'([^']*)'/m;
plan skip_all => "pg_partman $partman_version is installed: this is the recipe for 4.x (051 runs 5.x's)"
  unless $partman_version =~ /^4\./;

my $recipe = doc_sql_blocks('docs/partitioning-and-text.md', '### pg_partman');
is_deeply([ sort keys %$recipe ], [qw(partman-backfill partman-maintenance partman-move-default partman-setup)],
	'the section shows four SQL blocks, all run here');

# Day 0 is the UTC day of the next noon; day n, n days later, at the same
# time of day plus the time the test took.
sub go_to_day { set_fake_clock(partman_day_offset($_[0])) }
go_to_day(0);
my $node = new_uidgen_node('partman', fake_clock => 1);

# The README's native partitioning by day, in a database of its own.
my $readme = doc_sql_blocks('README.md', '## Partitioning by time');
$node->safe_psql('postgres', 'CREATE DATABASE readme');
$node->safe_psql('readme', 'CREATE EXTENSION uidgen');
$node->safe_psql('readme', $readme->{native});
is($node->safe_psql('readme', q{
	INSERT INTO public.events (id) VALUES (uid_min('2026-12-01 00:00+00')), (uid_max('2026-12-01 23:59:59.999+00'))
	RETURNING tableoid::regclass}), "events_20261201\nevents_20261201",
	"README: the first and the last ID of 2026-12-01 are in its partition");
like(psql_error($node, 'readme', q{INSERT INTO public.events (id) VALUES (uid_min('2026-12-02 00:00+00'))}),
	qr/no partition of relation "events" found for row/, 'and the first of the next day is not');

sub run_recipe { $node->safe_psql('postgres', $recipe->{ $_[0] }) }
run_recipe('partman-setup');

my $day_ids = $node->safe_psql('postgres', "SELECT uid_interval('1 day')");
is($day_ids, 86_400_000 << 22, "uid_interval('1 day') is 86,400,000 milliseconds of 2^22 IDs");
my $day0 = $node->safe_psql('postgres', "SELECT uid_min(date_trunc('day', now(), 'UTC'))");

# Every partition as "day:rows", oldest first (UidgenTest.pm).
sub partitions { partman_partitions($node, $day0, $day_ids) }
sub days { partman_days(@_) }
sub default_rows { partman_default_rows($node) }
sub new_rows { partman_new_rows($node, $_[0]) }
# Three back-filled rows of each given day: the first ID of its midnight,
# one of its noon and the last ID of its last millisecond.
sub back_fill
{
	my $days = join ',', @_;
	$node->safe_psql('postgres', qq{
		INSERT INTO public.events (id, payload)
		SELECT id, jsonb_build_object('back-filled', d)
		  FROM unnest(ARRAY[$days]) d,
		       LATERAL (SELECT uid_timestamp($day0) + d * interval '1 day' AS midnight) m,
		       LATERAL (VALUES (uid_min(midnight)), (uid_min(midnight + interval '12 hours')),
		                       (uid_max(midnight + interval '1 day' - interval '1 ms'))) v(id)});
}

is(partitions(), days({}, 0 .. 7), "create_parent() made day 0's partition and the next 7 days', each a UTC day");

new_rows(1000);
run_recipe('partman-maintenance');
is(partitions(), days({ 0 => 1000 }, 0 .. 7),
	"new rows are in day 0's partition; maintenance found 7 days made past it");
is(default_rows(), 0, 'and none in the default partition');

# Back-filling with the partitions made first.
run_recipe('partman-backfill');
back_fill(-30, -10, -1);
my %rows = (-30 => 3, -10 => 3, -1 => 3, 0 => 1000);
is(partitions(), days(\%rows, -30 .. 7), 'the 30 days before day 0 have partitions, the back-filled rows are in theirs');
is(default_rows(), 0, 'and none in the default partition');

# Back-filling through the default partition.
back_fill(-91, -90);
is(default_rows(), 6, 'rows of days with no partition are in the default partition');
is($node->safe_psql('postgres', q{SELECT default_table || ': ' || count FROM partman.check_default()}),
	'public.events_default: 6', 'partman.check_default() reports them');
run_recipe('partman-move-default');
is(partitions(), days({ %rows, -91 => 3, -90 => 3 }, -91, -90, -30 .. 7),
	'partition_data_proc() made their days and moved them there');
is(default_rows(), 0, 'leaving the default partition empty');

# Retention: 90 days counted back from the largest ID, day 0's newest row.
run_recipe('partman-maintenance');
is(partitions(), days({ %rows, -90 => 3 }, -90, -30 .. 7),
	'maintenance dropped day -91 and its rows (ended 90 days and 12 hours before the largest ID) and kept day -90');

# One ID 2 days ahead of the clock moves both windows.
$node->safe_psql('postgres', q{INSERT INTO public.events (id, payload) VALUES (uid_min(now() + interval '2 days'), '{}')});
run_recipe('partman-maintenance');
$rows{2} = 1;
is(partitions(), days(\%rows, -30 .. 9),
	'after one ID of day 2, maintenance dropped day -90 on day 0, and premade days 8 and 9');

# Three days later.
go_to_day(3);
new_rows(500);
run_recipe('partman-maintenance');
$rows{3} = 500;
is(partitions(), days(\%rows, -30 .. 10), "on day 3 new rows are in day 3's partition and maintenance premade day 10");

# Day 100, the table idle since day 3.
go_to_day(100);
run_recipe('partman-maintenance');
is(partitions(), days(\%rows, -30 .. 10),
	'on day 100 maintenance dropped and made nothing: both count from the largest ID, of day 3, not from now()');

# Its first row has no partition.
new_rows(1);
is(default_rows(), 1, "day 100's first row is in the default partition");
like(psql_error($node, 'postgres', $recipe->{'partman-maintenance'}),
	qr/updated partition constraint for default partition "events_default" would be violated by some row/,
	'maintenance fails: it cannot attach a partition for that row while the row is in the default partition');
is(partitions(), days(\%rows, -30 .. 10), 'and made and dropped nothing');
run_recipe('partman-move-default');
run_recipe('partman-maintenance');
is(partitions(), days({ 100 => 1 }, 10, 100 .. 107),
	'after partition_data_proc(), maintenance premade days 101 to 107 and dropped the days that ended '
	  . '90 days before the row of day 100; days 11 to 99 have no partition');
is(default_rows(), 0, 'and the default partition is empty');

$node->stop;
done_testing();
