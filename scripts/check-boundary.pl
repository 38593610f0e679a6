#!/usr/bin/perl
# scripts/check-boundary.pl: the C++/PostgreSQL boundary holds by
# construction (INV-15 of docs/design.md).  Run by make test.
#
# A PostgreSQL error is a longjmp, which skips the destructors of every frame
# between the ereport and the sigsetjmp that catches it.  That is defined
# behaviour only when none of those frames holds an object whose destructor
# is not trivial.  Outside src/core any frame may be longjmped over, so this
# checks that no such object can be there:
#
#  1. outside src/core, no standard library type with a destructor is named
#     (std::string, std::vector, ...), nor a core function that returns one
#     (Layout::describe, format_utc; Layout::describe_text is the plain form);
#  2. every class or struct defined under src/, and every one of src/core's
#     named outside it, has static_assert(std::is_trivially_destructible_v<T>)
#     beside it, which the compiler then proves; exempt are exception types
#     (thrown, never a frame's local: PostgreSQL code never runs while one is
#     caught, rule 3) and the two interfaces whose destructor is protected
#     (Clock, TimeReservation: only their implementations are ever objects);
#  3. no catch block calls PostgreSQL (ereport, elog, pg_call, a re-throw of
#     a PostgreSQL error): an exception being handled has a destructor.
#
# Prints each violation and exits 1 if there is one.
use strict;
use warnings;
use File::Find ();

chdir(($0 =~ m{(.*)/scripts/}) ? $1 : '.') or die "cannot chdir: $!";

my (@files, @violations);
File::Find::find(sub { push @files, $File::Find::name if /\.(cpp|hpp)$/ }, 'src');
@files = sort @files;

# The text of a file without comments, string and character literals (their
# places kept, so that offsets and line numbers stay right).
sub code_of
{
	my ($path) = @_;
	open my $fh, '<', $path or die "$path: $!";
	my $text = do { local $/; <$fh> };
	$text =~ s{(/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')}{
		my $m = $1; (my $blank = $m) =~ s/[^\n]/ /g; $blank }gse;
	return $text;
}

sub line_of { my ($text, $pos) = @_; return 1 + (substr($text, 0, $pos) =~ tr/\n//) }

my %code = map { $_ => code_of($_) } @files;
my $all = join "\n", values %code;

# ---- 1. no standard library type with a destructor outside src/core -------
my $denied = qr/\bstd::(?:string|wstring|vector|unique_ptr|shared_ptr|function|map|multimap|unordered_map|set|unordered_set|list|deque|ostringstream|stringstream|istringstream|any|variant)\b|\bto_string\s*\(|\.describe\s*\(|\bformat_utc\s*\(/;
for my $file (grep { !m{^src/core/} } @files)
{
	my $text = $code{$file};
	while ($text =~ /$denied/g)
	{
		push @violations, sprintf('%s:%d: "%s" outside src/core: a destructor a PostgreSQL error would skip',
			$file, line_of($text, $-[0]), $&);
	}
}

# ---- 2. every type trivially destructible, asserted -------------------------
my %exempt = (Clock => 'an interface', TimeReservation => 'an interface');
my %thrown = map { $_ => 1 } ($all =~ /\bthrow\s+(\w+)/g);
my %defined;	# name => file:line
for my $file (@files)
{
	my $text = $code{$file};
	while ($text =~ /(?<!enum )\b(?:class|struct)\s+(\w+)\s*(?:final\s*)?(?::[^{;]*)?\{/g)
	{
		my $name = $1;
		my $where = "$file:" . line_of($text, $-[0]);
		my $header = substr($text, $-[0], $+[0] - $-[0]);
		next if $header =~ /\b(?:std::exception|std::runtime_error|Error)\b/;	# an exception type
		$defined{$name} //= $where;
	}
}
my $outside = join "\n", map { $code{$_} } grep { !m{^src/core/} } @files;
my %asserted = map { $_ => 1 } ($all =~ /static_assert\s*\(\s*std::is_trivially_destructible_v\s*<\s*([\w:]+?)\s*>/g);
for my $name (sort keys %defined)
{
	my $where = $defined{$name};
	next if $exempt{$name} || $thrown{$name};
	# A type of src/core concerns the boundary only if code outside it names it.
	next if $where =~ m{^src/core/} && $outside !~ /\b\Q$name\E\b/;
	next if grep { /(?:^|::)\Q$name\E$/ } keys %asserted;
	push @violations, "$where: $name has no static_assert(std::is_trivially_destructible_v<$name>)";
}

# ---- 3. no PostgreSQL call while an exception is handled -------------------
for my $file (@files)
{
	my $text = $code{$file};
	while ($text =~ /\bcatch\s*\([^)]*\)\s*\{/g)
	{
		my ($start, $depth, $pos) = ($+[0], 1, $+[0]);
		while ($depth > 0 && $pos < length $text)
		{
			my $c = substr($text, $pos++, 1);
			$depth++ if $c eq '{';
			$depth-- if $c eq '}';
		}
		my $body = substr($text, $start, $pos - $start);
		if ($body =~ /\b(ereport|elog|pg_call|with_spi|raise_saved_error|ReThrowError|PG_RE_THROW)\b/)
		{
			push @violations, sprintf('%s:%d: %s inside a catch block: the exception being handled has a destructor',
				$file, line_of($text, $start + $-[0]), $1);
		}
		pos($text) = $pos;
	}
}

print "$_\n" for @violations;
if (@violations)
{
	printf "check-boundary: %d violation(s)\n", scalar @violations;
	exit 1;
}
printf "check-boundary: %d types trivially destructible, no destructor outside src/core, no PostgreSQL call in a catch block\n",
	scalar(grep { !$exempt{$_} && !$thrown{$_} } keys %defined);
