#!/usr/bin/perl
# scripts/assemble-sql.pl: the extension's scripts, assembled from the
# subsystems' SQL sources.
#
# A script under sql/ that has a template beside it (sql/NAME.sql.in) is
# made from the template: each line "-- @include PATH" is replaced by the
# file PATH (from the top of the tree, a source of a subsystem's folder such
# as src/registry/sql/registry_calls.sql), which keeps each subsystem's SQL
# in its own room while PostgreSQL installs one script.  The scripts stay
# committed, so that a packager needs no Perl and a reviewer sees the whole
# script, as Citus does with its sql/udfs/*/latest.sql.
#
#   scripts/assemble-sql.pl            rewrites every assembled script
#   scripts/assemble-sql.pl --check    fails (naming the scripts) when one
#                                      differs from what its template makes;
#                                      run by make test (the job
#                                      "sql-assembled")
use strict;
use warnings;

use File::Basename qw(dirname);

chdir(dirname(__FILE__) . '/..') or die "assemble-sql: $!\n";
my $check = @ARGV && $ARGV[0] eq '--check';

sub slurp
{
	my ($path) = @_;
	open my $fh, '<', $path or die "assemble-sql: cannot read $path: $!\n";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

sub assemble
{
	my ($template) = @_;
	my $out = '';
	for my $line (split /^/, slurp($template))
	{
		if ($line =~ /^-- \@include (\S+)\s*$/)
		{
			my $text = slurp($1);
			$text .= "\n" unless $text =~ /\n\z/;
			$out .= $text;
		}
		else
		{
			$out .= $line;
		}
	}
	return $out;
}

my @stale;
for my $template (sort glob('sql/*.sql.in'))
{
	(my $script = $template) =~ s/\.in$//;
	my $made = assemble($template);
	if ($check)
	{
		push @stale, $script unless -e $script && slurp($script) eq $made;
		next;
	}
	open my $fh, '>', $script or die "assemble-sql: cannot write $script: $!\n";
	print $fh $made;
	close $fh;
}
if (@stale)
{
	print "assemble-sql: $_ is not what its template makes; run scripts/assemble-sql.pl (make sql)\n" for @stale;
	exit 1;
}
print "assemble-sql: every assembled script is what its template makes\n" if $check;
