#!/usr/bin/perl
# scripts/check-design-ids.pl: the tree cites docs/design.md only by what it
# defines.  Run by make test (the job "design-ids").
#
# docs/design.md defines each invariant and assumption once, as a list item
# that opens with its ID in bold ("- **INV-3 Session order.**", "- **ASM-2
# ..."); code, tests and docs cite those IDs, never a section's number or
# title, which change when the text is reorganised.  This fails when:
#
#  1. docs/design.md is longer than 450 lines (it is read in one sitting;
#     mechanics go to the READMEs of src/'s folders), or defines an ID twice;
#  2. a file of the tree cites an INV-n or ASM-n that docs/design.md does not
#     define;
#  3. a file cites docs/design.md by a section number ("design.md section
#     8.6", "design 5.1", "design.md §8"), by an invariant's number
#     ("invariant 3"), or by a title in quotes ("docs/design.md, \"Leases\"");
#  4. a link to docs/design.md names an anchor that none of its headings
#     makes (GitHub's rule: lower case, punctuation dropped, blanks to "-");
#  5. the list of README.md's "Guarantees" and that of docs/design.md's "The
#     guarantee" differ in anything but links and line breaks: the README
#     promises in the design's words.
#
# Prints each violation and exits 1 if there is one.
use strict;
use warnings;
use File::Find ();

chdir(($0 =~ m{(.*)/scripts/}) ? $1 : '.') or die "cannot chdir: $!";

my $design = 'docs/design.md';
my $max_lines = 450;
my @violations;

open my $fh, '<', $design or die "$design: $!";
my @lines = <$fh>;
close $fh;

push @violations, sprintf('%s: %d lines, more than %d', $design, scalar @lines, $max_lines)
  if @lines > $max_lines;

my (%defined, %anchors);
for my $n (0 .. $#lines)
{
	my $line = $lines[$n];
	if ($line =~ /^\s*[-*]\s+\*\*((?:INV|ASM)-\d+)\b/)
	{
		push @violations, sprintf('%s:%d: %s is defined twice (first on line %d)', $design, $n + 1, $1,
			$defined{$1})
		  if $defined{$1};
		$defined{$1} //= $n + 1;
	}
	if ($line =~ /^#+\s+(.*?)\s*$/)
	{
		(my $slug = lc $1) =~ s/[^\w\- ]//g;
		$slug =~ tr/ /-/;
		$anchors{$slug} = 1;
	}
}
push @violations, "$design: defines no INV-n or ASM-n" unless %defined;

# The tree's text files, as make test sees them; not build output, and not
# the records of past runs (test/bench/results, test/nemesis/failures).
my @files = grep { -f } qw(README.md CHANGELOG.md Makefile META.json);
File::Find::find(
	{
		no_chdir => 1,
		wanted => sub {
			if (-d $_)
			{
				$File::Find::prune = 1
				  if m{/(?:results|failures|tmp_check|build|\.git)$};
				return;
			}
			push @files, $_ if -f $_ && !-B $_;
		},
	},
	grep { -d } qw(src test sql scripts docs model debian .ci));

# A citation by section may run over two lines ("docs/design.md section" and
# "2.3" in a comment), so the patterns look at each line with the next one
# joined to it, less its comment leader, and report the line a match starts on.
my $sep = qr/[\s,()`\[\]]*/;
my @by_section = (
	qr/design(?:\.md)?$sep(?:sections?\s+|§\s*)\d/i,	# design.md section 8.6, design.md §8
	qr/design(?:\.md)?$sep\d+\.\d+\b/i,			# design 5.1, design.md 8.0
	qr/design\.md$sep"/i,						# docs/design.md, "Leases"
	qr/\binvariants?\s+\d/i,					# invariant 3
);

for my $file (sort @files)
{
	next if $file eq 'scripts/check-design-ids.pl';	# its examples
	open my $in, '<', $file or die "$file: $!";
	my @text = <$in>;
	close $in;
	for my $i (0 .. $#text)
	{
		my ($line, $n) = ($text[$i], $i + 1);
		chomp $line;
		while ($line =~ /\b((?:INV|ASM)-\d+)\b/g)
		{
			push @violations, "$file:$n: $1 is not defined in $design" unless $defined{$1};
		}
		next if $file eq $design;
		my $next = $i < $#text ? $text[$i + 1] : '';
		$next =~ s{^\s*(?:#|--|\*|//|;)?\s*}{};
		my $joined = "$line $next";
		for my $pattern (@by_section)
		{
			next unless $joined =~ $pattern && $-[0] < length $line;
			push @violations, "$file:$n: cites $design by a section's number or title, or an invariant by number; cite an INV-n or ASM-n";
			last;
		}
		while ($line =~ /design\.md#([^)\s>"]+)/g)
		{
			push @violations, "$file:$n: $design has no heading for #$1" unless $anchors{$1};
		}
	}
}

# The list (from its first "- " line to the next heading) under a heading,
# without links and line breaks.
sub promise_list
{
	my ($file, $heading) = @_;
	open my $in, '<', $file or die "$file: $!";
	my ($in_section, $text) = (0, '');
	while (my $line = <$in>)
	{
		if ($line =~ /^## /)
		{
			$in_section = $line =~ /^## \Q$heading\E\s*$/;
			next;
		}
		next unless $in_section;
		next if $text eq '' && $line !~ /^- /;
		$text .= $line;
	}
	close $in;
	$text =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;
	$text =~ s/\s+/ /g;
	$text =~ s/^ | $//g;
	return $text;
}

my $designed = promise_list($design, 'The guarantee');
my $promised = promise_list('README.md', 'Guarantees');
push @violations, "$design: no list under \"## The guarantee\"" if $designed eq '';
if ($designed ne $promised)
{
	my $same = 0;
	$same++ while $same < length $designed && $same < length $promised
	  && substr($designed, $same, 1) eq substr($promised, $same, 1);
	push @violations,
	  sprintf("README.md: its Guarantees differ from %s's \"The guarantee\" from \"...%s\" on", $design,
		substr($promised, $same > 20 ? $same - 20 : 0, 60));
}

if (@violations)
{
	print "$_\n" for @violations;
	printf "check-design-ids: %d violation(s)\n", scalar @violations;
	exit 1;
}
printf "check-design-ids: %s, %d lines, defines %d IDs; every citation in the tree exists, and the "
  . "README's guarantees are the design's\n", $design, scalar @lines, scalar keys %defined;
